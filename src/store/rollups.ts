/**
 * Dashboard rollups in the store (migration 030, domain/rollups.ts): ingestion's upserts (one per
 * log stream, hour, dim and value per batch, merged by `rollup_merge`), the dashboard read (stored
 * hours plus the records of the range's partial hours and of dirty hours, in one snapshot), and the
 * recompute of dirty hours and whole log streams from their records.
 *
 * On PostgreSQL a recompute takes the log stream's advisory lock and ingestion a shared one before
 * it upserts, so that no batch's delta lands between a recompute's read of the records and its
 * write (a batch still uncommitted when the recompute read adds its delta after it).
 */
import { type Kysely, sql } from 'kysely';
import {
  DimValues,
  ROLLUP_BUCKET_US,
  ROLLUP_RECORD_COLUMNS,
  RollupBatch,
  type RollupData,
  type RollupDelta,
  type RollupRecord,
} from '../domain/rollups.ts';
import type { Store } from './db.ts';
import type { DB } from './tables.ts';

/** More dirty hours than this in a range: the dashboard scans instead. */
export const MAX_DIRTY_HOURS = 200;

/** The SQLite upsert of one delta (its data merged by the `rollup_merge` function). */
export const SQLITE_ROLLUP_UPSERT = `insert into rollups (run_id, dim, hour, value, data) values (?, ?, ?, ?, ?)
  on conflict (run_id, dim, hour, value) do update set data = rollup_merge(data, excluded.data)`;
export const SQLITE_DIRTY = 'insert into rollup_dirty (run_id, hour) values (?, ?) on conflict do nothing';
export const SQLITE_OVERFLOW =
  'insert into rollup_overflow (run_id, dim) values (?, ?) on conflict do nothing';
export const SQLITE_GAP = 'insert into rollup_gaps (run_id) values (?) on conflict do nothing';

/** What a dashboard read found: a reason to scan instead, or the rows and records to compute from. */
export type RollupRead =
  | { reason: string; pending?: 'rebuild' | 'recompute' }
  | { rows: RollupDelta[]; records: RollupRecord[]; dirty: number[] };

const pgLock = (runId: string, shared: boolean) =>
  shared
    ? sql`select pg_advisory_xact_lock_shared(hashtext(${`rollups:${runId}`}))`
    : sql`select pg_advisory_xact_lock(hashtext(${`rollups:${runId}`}))`;

/** PostgreSQL: a batch's rollup writes on the ingest transaction's client. */
export async function pgWriteRollups(
  client: { query: (text: string, values?: unknown[]) => Promise<unknown> },
  batch: RollupBatch,
  runIds: string[],
): Promise<void> {
  if (batch.empty) return;
  for (const runId of [...new Set(runIds)].sort())
    await client.query('select pg_advisory_xact_lock_shared(hashtext($1))', [`rollups:${runId}`]);
  const list = batch.list();
  for (let i = 0; i < list.length; i += 1000) {
    const values: unknown[] = [];
    const tuples = list.slice(i, i + 1000).map((d) => {
      const b = values.length;
      values.push(d.run_id, d.dim, d.hour, d.value, JSON.stringify(d.data));
      return `($${b + 1}, $${b + 2}, $${b + 3}::bigint, $${b + 4}, $${b + 5}::jsonb)`;
    });
    await client.query(
      `insert into rollups as r (run_id, dim, hour, value, data) values ${tuples.join(', ')}
       on conflict (run_id, dim, hour, value) do update set data = rollup_merge(r.data, excluded.data)`,
      values,
    );
  }
  for (const d of batch.dirtyHours())
    await client.query('insert into rollup_dirty (run_id, hour) values ($1, $2) on conflict do nothing', [
      d.run_id,
      d.hour,
    ]);
  for (const o of batch.overflowList())
    await client.query('insert into rollup_overflow (run_id, dim) values ($1, $2) on conflict do nothing', [
      o.run_id,
      o.dim,
    ]);
}

const parseData = (v: unknown): RollupData => (typeof v === 'string' ? JSON.parse(v) : (v as RollupData));

export class RollupsRepo {
  constructor(private readonly store: Store) {}

  private get db(): Kysely<DB> {
    return this.store.db;
  }

  /**
   * The stored rollups of `dim` (and of '' when `withNone`) over the whole clean hours of
   * [startUs, endUs), and the records of the rest of the range, in one snapshot; or why the rollups
   * cannot answer.
   */
  async read(
    runId: string,
    dim: string,
    withNone: boolean,
    startUs: number,
    endUs: number,
  ): Promise<RollupRead> {
    const body = async (trx: Kysely<DB>): Promise<RollupRead> => {
      const gap = await trx
        .selectFrom('rollup_gaps')
        .select('run_id')
        .where('run_id', '=', runId)
        .executeTakeFirst();
      if (gap)
        return {
          reason: 'this log stream has records from before rollups were kept (rebuild under way)',
          pending: 'rebuild',
        };
      if (dim !== '' && dim !== 'type') {
        const over = await trx
          .selectFrom('rollup_overflow')
          .select('dim')
          .where('run_id', '=', runId)
          .where('dim', '=', dim)
          .executeTakeFirst();
        if (over) return { reason: 'the group_by column has too many values to keep rollups of' };
      }
      const H = ROLLUP_BUCKET_US;
      const fullStart = Math.ceil(startUs / H) * H;
      const fullEnd = Math.max(fullStart, Math.floor(endUs / H) * H);
      const dirty = (
        await trx
          .selectFrom('rollup_dirty')
          .select('hour')
          .where('run_id', '=', runId)
          .where('hour', '>=', fullStart)
          .where('hour', '<', fullEnd)
          .orderBy('hour')
          .execute()
      ).map((r) => Number(r.hour));
      if (dirty.length > MAX_DIRTY_HOURS)
        return {
          reason: `${dirty.length} hours of the range changed since their rollups were kept (recompute under way)`,
          pending: 'recompute',
        };
      const dims = withNone && dim !== '' ? [dim, ''] : [dim];
      const dirtySet = new Set(dirty);
      const rows: RollupDelta[] = [];
      if (fullEnd > fullStart) {
        const stored = await trx
          .selectFrom('rollups')
          .select(['dim', 'hour', 'value', 'data'])
          .where('run_id', '=', runId)
          .where('dim', 'in', dims)
          .where('hour', '>=', fullStart)
          .where('hour', '<', fullEnd)
          .execute();
        for (const r of stored) {
          const hour = Number(r.hour);
          if (dirtySet.has(hour)) continue;
          rows.push({ run_id: runId, dim: r.dim, hour, value: r.value, data: parseData(r.data) });
        }
      }
      // The rest from the records: the range's ends outside whole hours, and the dirty hours.
      const ranges: [number, number][] = [];
      const push = (lo: number, hi: number) => {
        if (hi <= lo) return;
        const last = ranges[ranges.length - 1];
        if (last && last[1] === lo) last[1] = hi;
        else ranges.push([lo, hi]);
      };
      if (fullEnd > fullStart) {
        push(startUs, fullStart);
        for (const h of dirty) push(h, h + H);
        push(fullEnd, endUs);
      } else push(startUs, endUs);
      const records: RollupRecord[] = [];
      for (const [lo, hi] of ranges) {
        const got = await trx
          .selectFrom('records')
          .select([...ROLLUP_RECORD_COLUMNS])
          .where('run_id', '=', runId)
          .where('created_at', '>=', lo)
          .where('created_at', '<', hi)
          .execute();
        for (const r of got) records.push(r as unknown as RollupRecord);
      }
      return { rows, records, dirty };
    };
    if (this.store.dialect === 'postgres')
      return this.db
        .transaction()
        .setIsolationLevel('repeatable read')
        .setAccessMode('read only')
        .execute(body);
    return this.db.transaction().execute(body);
  }

  /** The dirty hours of a log stream (oldest first, at most `limit`). */
  async dirtyHours(runId: string, limit: number): Promise<number[]> {
    const rows = await this.db
      .selectFrom('rollup_dirty')
      .select('hour')
      .where('run_id', '=', runId)
      .orderBy('hour')
      .limit(limit)
      .execute();
    return rows.map((r) => Number(r.hour));
  }

  /** Recomputes hours of a log stream from their records (their dirty marks go). */
  async recompute(runId: string, hours: readonly number[]): Promise<void> {
    if (!hours.length) return;
    await this.db.transaction().execute(async (trx) => {
      if (this.store.dialect === 'postgres') await pgLock(runId, false).execute(trx);
      const overflowed = await trx
        .selectFrom('rollup_overflow')
        .select('dim')
        .where('run_id', '=', runId)
        .execute();
      const dims = new DimValues(Number.POSITIVE_INFINITY);
      for (const o of overflowed) dims.overflowed(runId, o.dim);
      for (const hour of [...hours].sort((a, b) => a - b)) await this.recomputeHour(trx, runId, hour, dims);
    });
  }

  private async recomputeHour(trx: Kysely<DB>, runId: string, hour: number, dims: DimValues) {
    await trx.deleteFrom('rollups').where('run_id', '=', runId).where('hour', '=', hour).execute();
    const records = await trx
      .selectFrom('records')
      .select([...ROLLUP_RECORD_COLUMNS])
      .where('run_id', '=', runId)
      .where('created_at', '>=', hour)
      .where('created_at', '<', hour + ROLLUP_BUCKET_US)
      .execute();
    const batch = new RollupBatch(dims);
    for (const r of records) batch.add(runId, r as unknown as RollupRecord);
    const list = batch.list();
    for (let i = 0; i < list.length; i += 200)
      await trx
        .insertInto('rollups')
        .values(
          list.slice(i, i + 200).map((d) => ({
            run_id: d.run_id,
            dim: d.dim,
            hour: d.hour,
            value: d.value,
            data: JSON.stringify(d.data),
          })),
        )
        .execute();
    await trx.deleteFrom('rollup_dirty').where('run_id', '=', runId).where('hour', '=', hour).execute();
  }

  /**
   * Rebuilds a log stream's rollups from all its records (hour by hour, one transaction per
   * `hoursPerTransaction` hours with records), then clears its gap: for log streams whose records
   * came before rollups, and for records written around ingestion (the benchmark's).
   */
  async rebuild(runId: string, hoursPerTransaction = 24): Promise<void> {
    await this.db.deleteFrom('rollups').where('run_id', '=', runId).execute();
    await this.db.deleteFrom('rollup_overflow').where('run_id', '=', runId).execute();
    // A fresh count of every dim's values over the whole log stream decides its overflow.
    const dims = new DimValues(undefined, 1);
    let cursor = Number.NEGATIVE_INFINITY;
    for (;;) {
      const done = await this.db.transaction().execute(async (trx) => {
        if (this.store.dialect === 'postgres') await pgLock(runId, false).execute(trx);
        for (let k = 0; k < hoursPerTransaction; k++) {
          const next = await trx
            .selectFrom('records')
            .select((eb) => eb.fn.min('created_at').as('at'))
            .where('run_id', '=', runId)
            .where('created_at', '>=', Number.isFinite(cursor) ? cursor : -(2 ** 62))
            .executeTakeFirst();
          if (next?.at === null || next?.at === undefined) return true;
          const hour = Math.floor(Number(next.at) / ROLLUP_BUCKET_US) * ROLLUP_BUCKET_US;
          const batch = new RollupBatch(dims);
          const records = await trx
            .selectFrom('records')
            .select([...ROLLUP_RECORD_COLUMNS])
            .where('run_id', '=', runId)
            .where('created_at', '>=', hour)
            .where('created_at', '<', hour + ROLLUP_BUCKET_US)
            .execute();
          for (const r of records) batch.add(runId, r as unknown as RollupRecord);
          await trx.deleteFrom('rollups').where('run_id', '=', runId).where('hour', '=', hour).execute();
          const list = batch.list();
          for (let i = 0; i < list.length; i += 200)
            await trx
              .insertInto('rollups')
              .values(
                list.slice(i, i + 200).map((d) => ({
                  run_id: d.run_id,
                  dim: d.dim,
                  hour: d.hour,
                  value: d.value,
                  data: JSON.stringify(d.data),
                })),
              )
              .execute();
          for (const o of batch.overflowList())
            await trx
              .insertInto('rollup_overflow')
              .values({ run_id: o.run_id, dim: o.dim })
              .onConflict((oc) => oc.doNothing())
              .execute();
          await trx.deleteFrom('rollup_dirty').where('run_id', '=', runId).where('hour', '=', hour).execute();
          cursor = hour + ROLLUP_BUCKET_US;
        }
        return false;
      });
      if (done) break;
    }
    await this.db.deleteFrom('rollup_gaps').where('run_id', '=', runId).execute();
  }
}
