/**
 * How many calls to one integration may be in flight at once. Each integration has its own limit, so
 * a busy one never holds up another's calls; within one, waiting calls are served project by project
 * in turn, so one project's burst does not starve another project's calls. The limit adapts: a 429
 * halves it and holds new calls until the provider's Retry-After has passed; each success raises it
 * by one again, up to the configured concurrency (additive increase, multiplicative decrease).
 */
interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

class IntegrationLimit {
  limit: number;
  inFlight = 0;
  pausedUntil = 0;
  private readonly queues = new Map<string, Waiter[]>();
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly max: number) {
    this.limit = max;
  }

  acquire(project: string, signal?: AbortSignal): Promise<void> {
    if (this.queues.size === 0 && this.inFlight < this.limit && Date.now() >= this.pausedUntil) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          this.remove(project, w);
          reject(signal.reason);
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      const q = this.queues.get(project);
      if (q) q.push(w);
      else this.queues.set(project, [w]);
      this.drain();
    });
  }

  release(outcome: 'ok' | 'rate_limited' | 'other', retryAfterMs: number | null): void {
    this.inFlight--;
    if (outcome === 'rate_limited') {
      this.limit = Math.max(1, Math.floor(this.limit / 2));
      if (retryAfterMs) this.pausedUntil = Math.max(this.pausedUntil, Date.now() + retryAfterMs);
    } else if (outcome === 'ok' && this.limit < this.max) {
      this.limit++;
    }
    this.drain();
  }

  get idle(): boolean {
    return this.inFlight === 0 && this.queues.size === 0;
  }

  private remove(project: string, w: Waiter) {
    const q = this.queues.get(project);
    if (!q) return;
    const i = q.indexOf(w);
    if (i >= 0) q.splice(i, 1);
    if (q.length === 0) this.queues.delete(project);
  }

  /** Lets waiting calls in, one project after another (the Map's order, each moved to the back once served). */
  private drain() {
    const wait = this.pausedUntil - Date.now();
    if (wait > 0) {
      if (!this.timer && this.queues.size) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.drain();
        }, wait);
      }
      return;
    }
    while (this.inFlight < this.limit && this.queues.size) {
      const [project, q] = this.queues.entries().next().value!;
      const w = q.shift()!;
      this.queues.delete(project);
      if (q.length) this.queues.set(project, q);
      if (w.onAbort) w.signal!.removeEventListener('abort', w.onAbort);
      this.inFlight++;
      w.resolve();
    }
  }
}

export class RateLimiter {
  private readonly limits = new Map<string, IntegrationLimit>();

  constructor(private readonly concurrency: number) {}

  private of(integrationId: string): IntegrationLimit {
    let l = this.limits.get(integrationId);
    if (!l) {
      l = new IntegrationLimit(this.concurrency);
      this.limits.set(integrationId, l);
    }
    return l;
  }

  /** Waits for a slot on the integration; the returned function gives it back with the attempt's outcome. */
  async acquire(
    integrationId: string,
    projectId: string | null,
    signal?: AbortSignal,
  ): Promise<(outcome: 'ok' | 'rate_limited' | 'other', retryAfterMs: number | null) => void> {
    const limit = this.of(integrationId);
    await limit.acquire(projectId ?? '', signal);
    let released = false;
    return (outcome, retryAfterMs) => {
      if (released) return;
      released = true;
      limit.release(outcome, retryAfterMs);
      // Forget integrations at rest and at full speed (nothing to remember).
      if (limit.idle && limit.limit === limit.max && limit.pausedUntil <= Date.now())
        this.limits.delete(integrationId);
    };
  }

  /** The current limit and calls in flight of an integration (tests and metrics). */
  state(integrationId: string): { limit: number; inFlight: number } {
    const l = this.limits.get(integrationId);
    return l ? { limit: l.limit, inFlight: l.inFlight } : { limit: this.concurrency, inFlight: 0 };
  }
}
