/**
 * PostgreSQL errors after which a transaction can simply run again: a deadlock it lost, or a
 * serialization failure. Neither happens on SQLite, whose writes take one lock in turn.
 */
const TRANSIENT = new Set(['40P01', '40001']);
/** A unique key another transaction inserted first: transient for writes that read before inserting. */
const UNIQUE_VIOLATION = '23505';

/**
 * Runs `work` (one whole transaction) again, up to 5 times, while it fails with a transient error;
 * with `uniqueRace`, a unique violation counts as one (the work reads what the winner inserted when
 * it runs again).
 */
export async function retryTransient<T>(
  work: () => Promise<T>,
  opts: { uniqueRace?: boolean } = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const code = (err as { code?: string }).code;
      const transient = !!code && (TRANSIENT.has(code) || (!!opts.uniqueRace && code === UNIQUE_VIOLATION));
      if (!transient || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
    }
  }
}
