/**
 * Requests a page will make, started before its code has loaded: a route's loader (routes.tsx)
 * starts them while the browser fetches the page's chunk, and the page's useApi takes the answer
 * under the same key instead of asking again. An answer that has come by the page's first render is
 * shown in that render (no loading state, no second render). An answer is taken once; one nobody
 * took within a few seconds is dropped (the page was left before it drew).
 */

export interface Request<T> {
  /** useApi's key for it. */
  key: string;
  load: () => Promise<T>;
}

/** A finished request's outcome. */
export type Settled<T> = { data: T } | { error: Error };

interface Started {
  answer: Promise<unknown>;
  at: number;
  settled?: Settled<unknown>;
}

const MAX_AGE_MS = 5_000;
const started = new Map<string, Started>();

export function prefetch(...requests: Request<unknown>[]): void {
  const now = performance.now();
  for (const [key, p] of started) if (now - p.at > MAX_AGE_MS) started.delete(key);
  for (const r of requests) {
    if (started.has(r.key)) continue;
    const entry: Started = { answer: r.load(), at: now };
    // Its failure is the taker's to show; nobody may take it.
    entry.answer.then(
      (data) => {
        entry.settled = { data };
      },
      (error: Error) => {
        entry.settled = { error };
      },
    );
    started.set(r.key, entry);
  }
}

const fresh = (p: Started | undefined) => p !== undefined && performance.now() - p.at <= MAX_AGE_MS;

/** The outcome of a request started for `key` that has already finished, without taking it. */
export function settledPrefetch<T>(key: string): Settled<T> | undefined {
  const p = started.get(key);
  return fresh(p) ? (p?.settled as Settled<T> | undefined) : undefined;
}

/** The answer a loader started for `key`, once; undefined when none is fresh. */
export function takePrefetched<T>(key: string): Promise<T> | undefined {
  const p = started.get(key);
  if (!p) return undefined;
  started.delete(key);
  return fresh(p) ? (p.answer as Promise<T>) : undefined;
}
