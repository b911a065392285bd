/**
 * Slows down repeated failed logins for one account or one address: after `free` failures within
 * the window, each further attempt must wait, doubling up to `maxDelayMs`. In memory and per process;
 * a success clears the account's count.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; first: number; blockedUntil: number }>();

  constructor(
    private readonly free = 5,
    private readonly windowMs = 15 * 60_000,
    private readonly maxDelayMs = 15 * 60_000,
  ) {}

  /** Milliseconds the caller must still wait, or 0. */
  waitFor(keys: string[], now = Date.now()): number {
    let wait = 0;
    for (const k of keys) {
      const f = this.failures.get(k);
      if (f && f.blockedUntil > now) wait = Math.max(wait, f.blockedUntil - now);
    }
    return wait;
  }

  fail(keys: string[], now = Date.now()): void {
    for (const k of keys) {
      let f = this.failures.get(k);
      if (!f || now - f.first > this.windowMs) {
        f = { count: 0, first: now, blockedUntil: 0 };
        this.failures.set(k, f);
      }
      f.count += 1;
      if (f.count >= this.free) {
        f.blockedUntil = now + Math.min(this.maxDelayMs, 1000 * 2 ** (f.count - this.free));
      }
    }
    if (this.failures.size > 100_000) this.prune(now);
  }

  succeed(keys: string[]): void {
    for (const k of keys) this.failures.delete(k);
  }

  private prune(now: number): void {
    for (const [k, f] of this.failures) {
      if (now - f.first > this.windowMs && f.blockedUntil < now) this.failures.delete(k);
    }
  }
}
