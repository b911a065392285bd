/**
 * Planner statistics and dead rows kept in check on PostgreSQL. Search and ingestion plans depend on
 * statistics: without them, on a store grown to 900,000 records, the lookup of sessions by external
 * id read every session of the log stream (0.3 s per ingest request, growing with the stream). The
 * text index's queue is written and emptied all the time: without vacuums, its dead rows made up
 * nine tenths of its pages. Autovacuum does both when it is on (it is off on some servers) and at
 * its own pace; this job, in the one process holding its lease, analyzes every table that changed by
 * at least a tenth of its rows (and 10,000 rows) since anyone last did, and vacuums one with that
 * many dead rows. It looks every 10 s (a read of pg_stat_user_tables): the share, not the pace, sets
 * how often a growing table is analyzed, and a new store's first minute of ingestion had none
 * (bench:ingest --profile metadata, PostgreSQL, 100,000 records in 27 s: the lookup by external id
 * took 5.8 s of the database's time, 1.2 s with statistics from the 10th second on; each ANALYZE of
 * `records` took 1.7 s).
 */
import type { Leases } from '../store/leases.ts';
import type { PgTableStats } from '../store/table-stats.ts';
import { LeasedJob } from './leased-job.ts';

export const TABLE_STATS_JOB = 'table-stats';

export class TableStatsService {
  readonly job: LeasedJob;

  constructor(
    private readonly repo: PgTableStats,
    leases: Leases,
    intervalMs = 10_000,
    private readonly threshold = { minRows: 10_000, share: 0.1 },
  ) {
    this.job = new LeasedJob(TABLE_STATS_JOB, leases, intervalMs, (signal, stillHeld) =>
      this.pass(signal, stillHeld),
    );
  }

  private async pass(signal: AbortSignal, stillHeld: () => Promise<boolean>): Promise<'done' | 'stopped'> {
    for (const table of await this.repo.stale(this.threshold.minRows, this.threshold.share)) {
      if (signal.aborted || !(await stillHeld())) return 'stopped';
      await this.repo.refresh(table);
    }
    return 'done';
  }
}
