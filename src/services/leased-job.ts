/**
 * A background job that runs, every `intervalMs`, in the one process holding its lease (store/leases.ts)
 * among those sharing the database. Work goes in small steps and asks `stillHeld` between them: a
 * holder that lost its lease (it stalled past the lease's time) stops, so two processes overlap for a
 * step at most. `stop` ends the current step at its next safe point and gives the lease up.
 */
import type { Leases } from '../store/leases.ts';

export type JobOutcome = 'done' | 'not_leader' | 'failed' | 'stopped';

export type JobWork = (signal: AbortSignal, stillHeld: () => Promise<boolean>) => Promise<'done' | 'stopped'>;

export class LeasedJob {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<JobOutcome> | null = null;
  private readonly stopping = new AbortController();

  constructor(
    readonly name: string,
    private readonly leases: Leases,
    private readonly intervalMs: number,
    private readonly work: JobWork,
    private readonly onOutcome: (outcome: JobOutcome, err?: unknown) => void = () => {},
  ) {}

  start(): void {
    if (this.timer || this.stopping.signal.aborted) return;
    this.schedule(Math.min(this.intervalMs, 1000));
  }

  private schedule(ms: number) {
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runOnce().then(() => {
        if (!this.stopping.signal.aborted) this.schedule(this.intervalMs);
      });
    }, ms);
    this.timer.unref();
  }

  /** One pass now (unless one is under way: then that one's outcome). */
  runOnce(): Promise<JobOutcome> {
    this.current ??= this.pass().finally(() => {
      this.current = null;
    });
    return this.current;
  }

  private async pass(): Promise<JobOutcome> {
    const signal = this.stopping.signal;
    let outcome: JobOutcome;
    let error: unknown;
    try {
      if (signal.aborted) outcome = 'stopped';
      else if (!(await this.leases.hold(this.name))) outcome = 'not_leader';
      else outcome = await this.work(signal, () => this.leases.hold(this.name));
    } catch (err) {
      outcome = 'failed';
      error = err;
    }
    this.onOutcome(outcome, error);
    return outcome;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
    await this.leases.release(this.name).catch(() => {});
  }
}
