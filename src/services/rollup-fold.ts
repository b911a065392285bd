/**
 * Folds the dashboard rollups' deltas (store/rollups.ts) into their rows in the background: ingestion
 * stores each transaction's rollup changes as one row, and this job adds many transactions' changes
 * to the rollup rows in one upsert a row, in the one process holding its lease. A dashboard folds its
 * log stream's deltas itself before it reads, so what it shows never waits for this job. It then
 * builds the day rows of days whose hours have not changed for a minute (RollupsRepo.buildDays).
 */
import type { Leases } from '../store/leases.ts';
import type { RollupsRepo } from '../store/rollups.ts';
import { LeasedJob } from './leased-job.ts';

export const ROLLUP_FOLD_JOB = 'rollup-fold';

/** Deltas folded in one transaction. */
const FOLD_LIMIT = 2000;

/** Days built between checks of the lease. */
const DAYS_LIMIT = 64;

export class RollupFoldService {
  readonly job: LeasedJob;

  constructor(
    private readonly repo: RollupsRepo,
    leases: Leases,
    // The longer, the more transactions' changes an upsert carries (dashboards fold their own first).
    intervalMs = 5000,
  ) {
    this.job = new LeasedJob(ROLLUP_FOLD_JOB, leases, intervalMs, (signal, stillHeld) =>
      this.pass(signal, stillHeld),
    );
  }

  private async pass(signal: AbortSignal, stillHeld: () => Promise<boolean>): Promise<'done' | 'stopped'> {
    while ((await this.repo.fold({ limit: FOLD_LIMIT })) === FOLD_LIMIT)
      if (signal.aborted || !(await stillHeld())) return 'stopped';
    // Drained: the folded deltas' dead rows go (PostgreSQL), at most once a pass.
    await this.repo.vacuumDeltas();
    // Then the day rows of days left unchanged for a while.
    while ((await this.repo.buildDays({ limit: DAYS_LIMIT })) === DAYS_LIMIT)
      if (signal.aborted || !(await stillHeld())) return 'stopped';
    return 'done';
  }
}
