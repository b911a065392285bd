/**
 * Retention: records older than their run's `retention_days` (else their project's; null keeps them)
 * are deleted by a background job, as a delete by filter deletes them (store/record-deletes.ts: with
 * everything derived), in small batches, by the one process holding the job's lease. Expired are the
 * traces created before the cutoff (with their spans) and then the sessions created before it that
 * have no trace left; a session that spans the cutoff keeps its newer traces.
 */
import { DAY_US } from '../domain/ingest-plan.ts';
import { nowUs } from '../domain/time.ts';
import type { Leases } from '../store/leases.ts';
import type { RecordDeletes } from '../store/record-deletes.ts';
import type { RetentionRepo } from '../store/retention.ts';
import { LeasedJob } from './leased-job.ts';
import type { Metrics } from './metrics.ts';

export const RETENTION_JOB = 'retention';

/** Roots deleted per transaction: a batch holds SQLite's write lock for tens of milliseconds. */
export const RETENTION_BATCH = 200;

export class RetentionService {
  readonly job: LeasedJob;

  constructor(
    private readonly repo: RetentionRepo,
    private readonly deletes: RecordDeletes,
    leases: Leases,
    private readonly metrics: Metrics,
    intervalMs: number,
    private readonly batch = RETENTION_BATCH,
  ) {
    this.job = new LeasedJob(
      RETENTION_JOB,
      leases,
      intervalMs,
      (signal, stillHeld) => this.pass(signal, stillHeld),
      (outcome) => {
        metrics.retentionPasses.inc({ outcome });
        if (outcome === 'done') metrics.retentionLastPass.setToCurrentTime();
      },
    );
  }

  /** One pass over every run with a retention period. */
  private async pass(signal: AbortSignal, stillHeld: () => Promise<boolean>): Promise<'done' | 'stopped'> {
    for (const run of await this.repo.runs()) {
      const cutoff = nowUs() - run.days * DAY_US;
      for (const kind of ['trace', 'session'] as const) {
        for (;;) {
          if (signal.aborted || !(await stillHeld())) return 'stopped';
          const ids = await this.repo.expired(run.id, kind, cutoff, this.batch);
          if (!ids.length) break;
          const out = await this.deletes.deleteRoots(run.id, kind, ids);
          this.metrics.deleteBatches.inc({ reason: 'retention' });
          this.metrics.rootsDeleted.inc({ reason: 'retention', kind }, out.roots);
          this.metrics.recordsDeleted.inc({ reason: 'retention' }, out.records);
          // Let requests (and ingestion's next group commit) in between batches.
          await new Promise((r) => setImmediate(r));
          if (ids.length < this.batch) break;
        }
      }
    }
    return 'done';
  }
}
