/**
 * How long to wait before the next attempt of a model call: exponential backoff with jitter (half
 * fixed, half random, so waits grow but concurrent callers spread out), or the provider's Retry-After
 * when it says more.
 */
export function backoffMs(
  failedAttempts: number,
  baseMs: number,
  retryAfterMs: number | null,
  random = Math.random,
): number {
  const exp = baseMs * 2 ** Math.max(0, failedAttempts - 1);
  const jittered = exp / 2 + (random() * exp) / 2;
  return Math.round(retryAfterMs === null ? jittered : Math.max(retryAfterMs, jittered));
}
