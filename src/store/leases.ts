/**
 * Leases on background jobs (table `leases`, migration 009): among the processes that share a
 * database, the one holding a job's lease runs it; the others wait until it lapses (its holder stopped
 * or stalled past the lease's time) and one of them takes it over. A holder renews its lease when half
 * of its time has passed, so a held lease costs a statement every `ttlMs / 2`.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { nowUs } from '../domain/time.ts';
import type { DB } from './tables.ts';

export const LEASE_TTL_MS = 30_000;

export class Leases {
  /** This holder's random id (one per store handle, so two servers in one process are two holders). */
  readonly holder = randomUUID();
  /** Leases this holder took, with when they lapse (epoch ms). */
  private readonly until = new Map<string, number>();

  constructor(
    private readonly db: Kysely<DB>,
    readonly ttlMs = LEASE_TTL_MS,
  ) {}

  /** Whether this holder holds `name` now, taking it when free or lapsed, renewing it when due. */
  async hold(name: string): Promise<boolean> {
    const now = Date.now();
    const until = this.until.get(name);
    if (until !== undefined && until - now > this.ttlMs / 2) return true;
    const expires = (now + this.ttlMs) * 1000;
    const row = await this.db
      .insertInto('leases')
      .values({ name, holder: this.holder, expires_at: expires })
      .onConflict((oc) =>
        oc
          .column('name')
          .doUpdateSet({ holder: this.holder, expires_at: expires })
          .where((eb) =>
            eb.or([eb('leases.holder', '=', this.holder), eb('leases.expires_at', '<', nowUs())]),
          ),
      )
      .returning('holder')
      .executeTakeFirst();
    if (row?.holder === this.holder) {
      this.until.set(name, now + this.ttlMs);
      return true;
    }
    this.until.delete(name);
    return false;
  }

  /** Whether this holder's lease on `name` is current (no statement). */
  holds(name: string): boolean {
    return (this.until.get(name) ?? 0) > Date.now();
  }

  /** Gives `name` up at once (shutdown), so another process takes it without waiting for it to lapse. */
  async release(name: string): Promise<void> {
    if (!this.until.delete(name)) return;
    await this.db.deleteFrom('leases').where('name', '=', name).where('holder', '=', this.holder).execute();
  }
}

const byDb = new WeakMap<Kysely<DB>, Leases>();

/** The leases of a store handle (one holder per handle). */
export function leasesOf(db: Kysely<DB>): Leases {
  let l = byDb.get(db);
  if (!l) {
    l = new Leases(db);
    byDb.set(db, l);
  }
  return l;
}
