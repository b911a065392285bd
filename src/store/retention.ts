/**
 * Reads of the retention job: the runs a retention period applies to (a run's own `retention_days`,
 * else its project's) and, per run, the oldest expired roots: traces created before the cutoff, and
 * sessions created before it that have no trace left.
 */
import type { Kysely } from 'kysely';
import type { DB } from './tables.ts';

export interface RetainedRun {
  id: string;
  projectId: string;
  days: number;
}

export class RetentionRepo {
  constructor(private readonly db: Kysely<DB>) {}

  async runs(): Promise<RetainedRun[]> {
    const rows = await this.db
      .selectFrom('runs')
      .innerJoin('projects', 'projects.id', 'runs.project_id')
      .select([
        'runs.id',
        'runs.project_id',
        'runs.retention_days as own',
        'projects.retention_days as inherited',
      ])
      .where((eb) =>
        eb.or([eb('runs.retention_days', 'is not', null), eb('projects.retention_days', 'is not', null)]),
      )
      .orderBy('runs.id')
      .execute();
    return rows.map((r) => ({ id: r.id, projectId: r.project_id, days: Number(r.own ?? r.inherited) }));
  }

  /** Up to `limit` ids of `type` records of the run created before `cutoff` (µs), oldest first. */
  async expired(runId: string, type: 'trace' | 'session', cutoff: number, limit: number): Promise<string[]> {
    let q = this.db
      .selectFrom('records')
      .select('id')
      .where('run_id', '=', runId)
      .where('type', '=', type)
      .where('created_at', '<', cutoff);
    if (type === 'session') q = q.where('num_children', '=', 0);
    const rows = await q.orderBy('created_at').limit(limit).execute();
    return rows.map((r) => r.id);
  }
}
