/**
 * PostgreSQL upkeep of this schema's tables: which have changed by a large share since they were last
 * analyzed, or hold many dead rows (by anyone: autovacuum or this job), and ANALYZE or VACUUM of one.
 */
import { type Kysely, sql } from 'kysely';
import type { DB } from './tables.ts';

export interface StaleTable {
  table: string;
  /** Dead rows past the threshold: vacuum (and analyze) rather than analyze only. */
  vacuum: boolean;
}

export class PgTableStats {
  constructor(private readonly db: Kysely<DB>) {}

  /**
   * Tables of the current schema whose rows changed (inserted, updated, deleted) since their last
   * analyze, or that hold dead rows, by at least `minRows` and `share` of their live rows.
   */
  async stale(minRows: number, share: number): Promise<StaleTable[]> {
    const { rows } = await sql<{ relname: string; vacuum: boolean }>`
      select relname, n_dead_tup >= greatest(${minRows}::float8, ${share}::float8 * n_live_tup) as vacuum
      from pg_stat_user_tables
      where schemaname = current_schema()
        and greatest(n_mod_since_analyze, n_dead_tup) >= greatest(${minRows}::float8, ${share}::float8 * n_live_tup)
      order by greatest(n_mod_since_analyze, n_dead_tup) desc`.execute(this.db);
    return rows.map((r) => ({ table: r.relname, vacuum: r.vacuum }));
  }

  /** ANALYZE, or VACUUM (ANALYZE), one table of the current schema (as `stale` named it). */
  async refresh(t: StaleTable): Promise<void> {
    if (t.vacuum) await sql`vacuum (analyze) ${sql.id(t.table)}`.execute(this.db);
    else await sql`analyze ${sql.id(t.table)}`.execute(this.db);
  }
}
