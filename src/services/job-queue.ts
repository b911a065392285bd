/**
 * The job queue: workers that run the jobs of store/jobs.ts in this process, for every kind of
 * background work. A feature registers a handler per kind and enqueues jobs by natural key; any
 * number of processes sharing the database run them, each job once at a time.
 *
 * A handler answers what became of its job:
 * - `done` (with a result), or `failed` (for good, with the reason);
 * - `retry` (with the reason): pending again after an exponential backoff with jitter, until its
 *   attempts run out, then `failed` with the last reason; a thrown error is a retry too;
 * - `wait` (with the reason and a delay): pending again without spending the attempt (paused, over
 *   budget, not ready yet).
 * While a handler runs, its lease is renewed every third of its length; a job whose lease was lost
 * gets an aborted signal and its answer is dropped (another worker has it).
 *
 * A kind registered `whenIdle` is claimed only when no job of the other kinds is due, one at a time:
 * work that makes more work (a batch of score tasks expanded into its tasks) waits until the work
 * it would add to is done.
 *
 * A kind registered with `pruneAfterMs` has its finished jobs deleted that long after they ended
 * (score tasks: a job per record and scorer would otherwise grow the table forever); its handler's
 * feature must then not rely on a finished job's key to keep it from running again.
 */
import { randomUUID } from 'node:crypto';
import type { Job, JobsRepo, NewJob } from '../store/jobs.ts';

export type JobAnswer =
  | { status: 'done'; result?: unknown }
  | { status: 'failed'; reason: string }
  | { status: 'retry'; reason: string; delayMs?: number }
  | { status: 'wait'; reason: string; delayMs: number };

/** Finished jobs deleted per statement, and how often (by default) a process prunes. */
const PRUNE_BATCH = 2000;
const PRUNE_EVERY_MS = 10 * 60_000;

export type JobHandler = (job: Job, signal: AbortSignal) => Promise<JobAnswer>;

export interface JobQueueOptions {
  /** Jobs run at once by this process. */
  concurrency: number;
  leaseMs: number;
  /** How often an idle worker looks for due jobs (an enqueue here wakes it at once). */
  pollMs: number;
  /** First retry delay; each next one doubles, with up to 50% jitter. */
  retryBaseMs: number;
  /** Longest retry delay. */
  retryMaxMs?: number;
  /** How often this process deletes the finished jobs of kinds registered with `pruneAfterMs`. */
  pruneEveryMs?: number;
}

export interface QueueEvents {
  /** A job ended (done, failed) or was rescheduled (retry, wait). */
  settled?(job: Job, answer: JobAnswer): void;
  /** A handler or the store failed outside a job's answer. */
  error?(err: unknown): void;
}

export class JobQueue {
  /** This worker's id, the owner of its leases. */
  readonly owner = randomUUID();
  private readonly handlers = new Map<string, JobHandler>();
  private readonly idleKinds = new Set<string>();
  private readonly pruneAfter = new Map<string, number>();
  private pruneTimer: NodeJS.Timeout | null = null;
  private readonly running = new Map<string, { job: Job; abort: AbortController }>();
  private timer: NodeJS.Timeout | null = null;
  private renewTimer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;
  private claiming: Promise<void> | null = null;
  private again = false;
  /** Runs whose jobs are not claimed (paused); asked before each claim. */
  pausedRuns: () => Promise<string[]> = async () => [];

  constructor(
    private readonly repo: JobsRepo,
    private readonly opts: JobQueueOptions,
    private readonly events: QueueEvents = {},
  ) {}

  /** Registers the handler of a kind (once per kind). */
  handle(kind: string, handler: JobHandler, opts: { whenIdle?: boolean; pruneAfterMs?: number } = {}): void {
    if (this.handlers.has(kind)) throw new Error(`a handler for ${kind} is registered already`);
    this.handlers.set(kind, handler);
    if (opts.whenIdle) this.idleKinds.add(kind);
    if (opts.pruneAfterMs !== undefined) this.pruneAfter.set(kind, opts.pruneAfterMs);
  }

  /**
   * Deletes the finished jobs of the kinds registered with `pruneAfterMs` that ended longer ago than
   * that, a batch at a time; answers how many. Any process may: a delete is the same from any.
   */
  async prune(batch = PRUNE_BATCH): Promise<number> {
    let n = 0;
    for (const [kind, afterMs] of this.pruneAfter) {
      for (;;) {
        const deleted = await this.repo.prune(kind, Date.now() - afterMs, batch);
        n += deleted;
        if (deleted < batch || this.stopped) break;
        // Let requests (and ingestion's next group commit) in between batches.
        await new Promise((r) => setImmediate(r));
      }
    }
    return n;
  }

  /** Adds jobs (idempotent by kind and key; `reset` re-runs finished ones) and wakes the worker. */
  async enqueue(jobs: NewJob[], opts: { reset?: boolean } = {}): Promise<number> {
    const n = await this.repo.enqueue(jobs, opts);
    if (n) this.kick();
    return n;
  }

  /** Makes a run's pending jobs of a kind due now (its pause was lifted) and looks for them. */
  async wakeRun(runId: string, kind: string): Promise<void> {
    await this.repo.wake(runId, kind);
    this.kick();
  }

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.schedule(0);
    this.renewTimer = setInterval(() => void this.renew(), Math.max(10, this.opts.leaseMs / 3));
    this.renewTimer.unref();
    if (this.pruneAfter.size) {
      this.pruneTimer = setInterval(
        () => void this.prune().catch((err) => this.events.error?.(err)),
        this.opts.pruneEveryMs ?? PRUNE_EVERY_MS,
      );
      this.pruneTimer.unref();
    }
  }

  /** Looks for due jobs now (after an enqueue, or a paused run resumed). */
  kick(): void {
    if (this.started && !this.stopped) this.schedule(0);
  }

  private schedule(ms: number) {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.fill();
    }, ms);
    this.timer.unref();
  }

  /** Claims jobs up to the free slots and starts them; one claim at a time per process. */
  private fill(): Promise<void> {
    if (this.claiming) {
      this.again = true;
      return this.claiming;
    }
    this.claiming = (async () => {
      do {
        this.again = false;
        const free = this.opts.concurrency - this.running.size;
        if (free <= 0 || this.stopped) break;
        let jobs: Job[] = [];
        try {
          const skipRuns = await this.pausedRuns();
          const kinds = [...this.handlers.keys()];
          const busy = kinds.filter((k) => !this.idleKinds.has(k));
          // Asked before the claim: an idle job that ends during it may have enqueued work the
          // claim's clock did not yet count as due.
          const idleFree = this.idleKinds.size > 0 && !this.runningIdle();
          jobs = await this.repo.claim(this.owner, busy, free, this.opts.leaseMs, { skipRuns });
          if (jobs.length < free && idleFree)
            jobs.push(
              ...(await this.repo.claim(this.owner, [...this.idleKinds], 1, this.opts.leaseMs, { skipRuns })),
            );
        } catch (err) {
          this.events.error?.(err);
        }
        for (const job of jobs) this.run(job);
        if (jobs.length === free) this.again = true;
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.claiming = null;
      if (!this.stopped) this.schedule(this.opts.pollMs);
    });
    return this.claiming;
  }

  private runningIdle(): boolean {
    for (const { job } of this.running.values()) if (this.idleKinds.has(job.kind)) return true;
    return false;
  }

  private run(job: Job) {
    const abort = new AbortController();
    this.running.set(job.id, { job, abort });
    const handler = this.handlers.get(job.kind) as JobHandler;
    void (async () => {
      let answer: JobAnswer;
      try {
        answer = await handler(job, abort.signal);
      } catch (err) {
        answer = { status: 'retry', reason: err instanceof Error ? err.message : String(err) };
      }
      if (!abort.signal.aborted) await this.settle(job, answer);
    })()
      .catch((err) => this.events.error?.(err))
      .finally(() => {
        this.running.delete(job.id);
        this.kick();
      });
  }

  private async settle(job: Job, answer: JobAnswer) {
    const now = Date.now();
    if (answer.status === 'done') {
      await this.repo.settle(this.owner, job.id, { status: 'done', reason: null, result: answer.result });
    } else if (answer.status === 'failed') {
      await this.repo.settle(this.owner, job.id, { status: 'failed', reason: answer.reason });
    } else if (answer.status === 'wait') {
      await this.repo.settle(this.owner, job.id, {
        status: 'pending',
        reason: answer.reason,
        nextAt: now + answer.delayMs,
        refundAttempt: true,
      });
    } else if (job.attempts >= job.maxAttempts) {
      answer = {
        status: 'failed',
        reason: `${answer.reason} (attempt ${job.attempts} of ${job.maxAttempts})`,
      };
      await this.repo.settle(this.owner, job.id, { status: 'failed', reason: answer.reason });
    } else {
      const delay = answer.delayMs ?? retryDelay(job.attempts, this.opts.retryBaseMs, this.opts.retryMaxMs);
      answer = { ...answer, reason: `retry ${job.attempts} of ${job.maxAttempts - 1}: ${answer.reason}` };
      await this.repo.settle(this.owner, job.id, {
        status: 'pending',
        reason: answer.reason,
        nextAt: now + delay,
      });
    }
    this.events.settled?.(job, answer);
  }

  /** Renews the leases of the running jobs; a job whose lease is gone is aborted. */
  private async renew() {
    const ids = [...this.running.keys()];
    if (!ids.length) return;
    try {
      const held = await this.repo.renew(this.owner, ids, this.opts.leaseMs);
      for (const id of ids) if (!held.has(id)) this.running.get(id)?.abort.abort();
    } catch (err) {
      this.events.error?.(err);
    }
  }

  /** Jobs running in this process now. */
  get busy(): number {
    return this.running.size;
  }

  /** Stops claiming, aborts the running jobs and gives their leases back (pending again). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.renewTimer) clearInterval(this.renewTimer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.claiming;
    for (const { abort } of this.running.values()) abort.abort();
    await this.repo.releaseAll(this.owner).catch((err) => this.events.error?.(err));
  }
}

/** The wait before retry `attempt + 1`: base × 2^(attempt-1), up to max, plus up to 50% jitter. */
export function retryDelay(attempt: number, baseMs: number, maxMs = 2 * 3600_000): number {
  const d = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(d * (1 + Math.random() * 0.5));
}
