/**
 * PostgreSQL planner statistics of this schema's tables: which have changed by a large share since
 * they were last analyzed (by anyone: autovacuum or this job), and ANALYZE of one of them.
 */
import { type Kysely, sql } from 'kysely';
import type { DB } from './tables.ts';

export class PgTableStats {
  constructor(private readonly db: Kysely<DB>) {}

  /**
   * Tables of the current schema whose rows changed (inserted, updated, deleted) since their last
   * analyze by at least `minRows` and by at least `share` of their live rows, most changed first.
   */
  async stale(minRows: number, share: number): Promise<string[]> {
    const { rows } = await sql<{ relname: string }>`
      select relname from pg_stat_user_tables
      where schemaname = current_schema()
        and n_mod_since_analyze >= ${minRows}
        and n_mod_since_analyze >= ${share}::float8 * n_live_tup
      order by n_mod_since_analyze desc`.execute(this.db);
    return rows.map((r) => r.relname);
  }

  /** ANALYZE one table of the current schema (a name `stale` gave). */
  async analyze(table: string): Promise<void> {
    await sql`analyze ${sql.id(table)}`.execute(this.db);
  }
}
