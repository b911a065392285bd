/**
 * Dashboard rollups in the store (migration 032, domain/rollups.ts): ingestion's upserts (one per
 * count row and metric row a batch touches, added in SQL), the dashboard read (counts of a dim, then
 * the metric rows of the values shown, plus the records of the range's partial hours and of dirty
 * hours, in one snapshot), the recompute of dirty hours and whole log streams from their records,
 * and the building of days' rows from their hours' (migration 035; read for daily buckets).
 *
 * On PostgreSQL a recompute takes the log stream's advisory lock and ingestion a shared one before
 * it upserts, so that no batch's delta lands between a recompute's read of the records and its
 * write (a batch still uncommitted when the recompute read adds its delta after it).
 */
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { decodeArraySend, decodeBins, encodeBins } from '../domain/ddsketch.ts';
import {
  ANY_VALUE,
  type Agg,
  COUNT_COL,
  type CountRow,
  DimValues,
  ROLLUP_BUCKET_US,
  ROLLUP_DAY_US,
  ROLLUP_RECORD_COLUMNS,
  type MetricRow,
  type ReadRow,
  RollupBatch,
  type RollupRecord,
  SCALAR_METRICS,
  type ScalarRow,
  columnBins,
  dayDim,
  dayOf,
  groupCounts,
  isScalarMetric,
  joinBins,
  keptKey,
  rollupSegments,
  scalarColumns,
  subtractive,
  sumIntoDays,
} from '../domain/rollups.ts';
import type { InlineTallies } from '../domain/scoring-plan.ts';
import { inSnapshot, type Store } from './db.ts';
import { retryTransient } from './retry.ts';
import type { DB } from './tables.ts';

/**
 * Ranges of at most this many hours may read their rollup rows hour by hour (listed), longer ones
 * read them as a range.
 */
const MAX_LISTED_HOURS = 4000;
/**
 * A listed read seeks each (hour, value) shown; a range reads every row of the dim in the range, the
 * values not shown too. A seek costs a little more than a row read in order (SQLite, a dashboard
 * over 2,400 hours of 10 shown values out of 101: 24,000 seeks 12 ms, the range's 12,238 rows
 * 4.9 ms), and the range reads its rows together: it is read unless the seeks are fewer than its rows
 * by this factor.
 */
const SEEK_COST_IN_ROWS = 2;

/** A log stream's deltas claimed at once by a fold of its own. */
const CLAIM_CHUNK = 100;

/**
 * More parts than this (runs of built days, and the hours between) in a range: it reads hour rows
 * only (each part costs a query a table).
 */
const MAX_SEGMENTS = 16;

/** A day's rows are built once it has been left unchanged this long (µs). */
const DAY_QUIET_US = 60_000_000;

/** Days built in one transaction. */
const DAYS_PER_TRANSACTION = 8;

type Segment = { days: boolean; lo: number; hi: number };

/** Records read at once by a recompute of an hour. */
const REWRITE_PAGE = 2000;

/** More dirty hours than this in a range: the dashboard scans instead. */
export const MAX_DIRTY_HOURS = 200;
/**
 * More records than this in a range's partial and dirty hours: the dashboard scans instead (on the
 * reader threads, a bucket at a time) rather than hold them all on the main thread at once (after a
 * rule scorer rescored 300,000 records packed in a few hours, the first dashboard read them all:
 * about 250 MB more for 10 s).
 */
const MAX_RECORDS_READ = 20_000;

const COUNT_COLUMNS = '(run_id, dim, hour, value, n)';
const METRIC_COLUMNS = '(run_id, dim, value, col, hour, c, s, t, lo, hi, bins)';

/** SQLite upserts of `rows` count rows / metric rows in one statement (the writer has rollup_bins_merge). */
const sqlCache = new Map<string, string>();
const cached = (key: string, make: () => string) => {
  let s = sqlCache.get(key);
  if (s === undefined) {
    s = make();
    sqlCache.set(key, s);
  }
  return s;
};
const sqliteCountUpsert = (rows: number) =>
  cached(
    `c${rows}`,
    () => `insert into rollup_counts ${COUNT_COLUMNS} values ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?)').join(', ')}
  on conflict (run_id, dim, hour, value) do update set n = n + excluded.n`,
  );
const sqliteMetricUpsert = (rows: number) =>
  cached(
    `m${rows}`,
    () => `insert into rollups ${METRIC_COLUMNS} values ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
  on conflict (run_id, dim, col, hour, value) do update set c = c + excluded.c, s = s + excluded.s,
  t = t + excluded.t, lo = coalesce(min(lo, excluded.lo), lo, excluded.lo),
  hi = coalesce(max(hi, excluded.hi), hi, excluded.hi), bins = rollup_bins_merge(bins, excluded.bins)`,
  );
/**
 * The upsert of scalar rows carrying the columns `cols` (SCALAR_METRICS indexes) only: counts and
 * sums add, min and max, sketches merged. A batch's rows mostly carry a few of the ten columns (a
 * trace's duration, completeness and children), so each statement names only those.
 */
function scalarUpsert(cols: readonly number[], rows: number, pg: boolean): string {
  // SQLite's texts are few (column sets by chunk sizes up to 16) and kept; PostgreSQL's are not.
  const build = () => {
    const names: string[] = ['run_id', 'dim', 'value', 'hour'];
    const set: string[] = [];
    for (const i of cols) {
      const k = scalarColumns(SCALAR_METRICS[i]);
      names.push(k.c, k.s, k.t, k.lo, k.hi);
      const [lo, hi] = pg
        ? [`least(r.${k.lo}, excluded.${k.lo})`, `greatest(r.${k.hi}, excluded.${k.hi})`]
        : [
            `coalesce(min(r.${k.lo}, excluded.${k.lo}), r.${k.lo}, excluded.${k.lo})`,
            `coalesce(max(r.${k.hi}, excluded.${k.hi}), r.${k.hi}, excluded.${k.hi})`,
          ];
      set.push(
        `${k.c} = r.${k.c} + excluded.${k.c}`,
        `${k.s} = r.${k.s} + excluded.${k.s}`,
        `${k.t} = r.${k.t} + excluded.${k.t}`,
        `${k.lo} = ${lo}`,
        `${k.hi} = ${hi}`,
      );
    }
    names.push('bins');
    set.push(
      'bins = case when excluded.bins is null then r.bins else rollup_bins_merge(r.bins, excluded.bins) end',
    );
    let p = 0;
    const tuple = () => `(${names.map(() => (pg ? `$${++p}` : '?')).join(', ')})`;
    const tuples = Array.from({ length: rows }, tuple).join(', ');
    return `insert into rollup_scalars as r (${names.join(', ')}) values ${tuples}
  on conflict (run_id, dim, hour, value) do update set ${set.join(', ')}`;
  };
  return pg ? build() : cached(`s${cols.join(',')}x${rows}`, build);
}

/** PostgreSQL's upsert of scalar rows given as one array a column (`types`, the last the bins as text). */
function scalarUpsertPg(cols: readonly number[], types: readonly string[]): string {
  return cached(`sp${cols.join(',')}`, () => {
    const values = scalarUpsert(cols, 1, true);
    const names = values.slice(values.indexOf('(') + 1, values.indexOf(')'));
    const set = values.slice(values.indexOf('do update set'));
    const params = types.map((t, k) => `$${k + 1}::${t}[]`).join(', ');
    const aliases = types.map((_, k) => `a${k}`);
    const picked = aliases.map((a, k) => (k === aliases.length - 1 ? `${a}::int4[]` : a)).join(', ');
    return `insert into rollup_scalars as r (${names})
  select ${picked} from unnest(${params}) as u(${aliases.join(', ')})
  on conflict (run_id, dim, hour, value) ${set}`;
  });
}

/** A scalar row's arguments for the columns `cols`: bins as a blob (SQLite) or an array (PostgreSQL). */
function scalarArgs(r: ScalarRow, cols: readonly number[], pg: boolean, into: unknown[]): void {
  into.push(r.run_id, r.dim, r.value, r.hour);
  for (const i of cols) {
    const a = r.cols[i];
    if (a === null) into.push(0, 0, 0, null, null);
    else into.push(a.c, a.s, a.t, a.lo, a.hi);
  }
  const bins = joinBins(r.cols);
  into.push(pg ? bins : encodeBins(bins));
}

/** The SCALAR_METRICS indexes a row (or rows) carry. */
function columnsOf(rows: readonly ScalarRow[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < SCALAR_METRICS.length; i++) if (rows.some((r) => r.cols[i] !== null)) out.push(i);
  return out;
}

const SQLITE_DIRTY = 'insert into rollup_dirty (run_id, hour) values (?, ?) on conflict do nothing';
const SQLITE_OVERFLOW = 'insert into rollup_overflow (run_id, dim) values (?, ?) on conflict do nothing';
export const SQLITE_GAP = 'insert into rollup_gaps (run_id) values (?) on conflict do nothing';
export const SQLITE_DELTA = 'insert into rollup_deltas (run_id, body) values (?, ?)';

/** Rows of a SQLite statement at a time when a fold writes its upserts. */
const SQLITE_FOLD_CHUNK = 100;

/** SQLite: a batch's rollup writes as writer steps ([sql, args]), `chunk` rows a statement. */
function sqliteRollupSteps(batch: RollupBatch, chunk: number): [string, unknown[]][] {
  const steps: [string, unknown[]][] = [];
  // One writer, one transaction at a time: no lock order to keep, so no sort.
  const { counts, scalars, metrics } = batch.rows(false);
  for (let i = 0; i < counts.length; i += chunk) {
    const end = Math.min(counts.length, i + chunk);
    const args: unknown[] = [];
    for (let j = i; j < end; j++) {
      const r = counts[j];
      args.push(r.run_id, r.dim, r.hour, r.value, r.n);
    }
    steps.push([sqliteCountUpsert(end - i), args]);
  }
  // Rows grouped by the columns they carry, each group in statements naming only those.
  const groups = new Map<string, { cols: number[]; rows: ScalarRow[] }>();
  for (const r of scalars) {
    const cols = columnsOf([r]);
    const key = cols.join(',');
    let g = groups.get(key);
    if (!g) {
      g = { cols, rows: [] };
      groups.set(key, g);
    }
    g.rows.push(r);
  }
  const wide = Math.max(1, chunk >> 1);
  for (const { cols, rows } of groups.values())
    for (let i = 0; i < rows.length; i += wide) {
      const end = Math.min(rows.length, i + wide);
      const args: unknown[] = [];
      for (let j = i; j < end; j++) scalarArgs(rows[j], cols, false, args);
      steps.push([scalarUpsert(cols, end - i, false), args]);
    }
  for (let i = 0; i < metrics.length; i += chunk) {
    const end = Math.min(metrics.length, i + chunk);
    const args: unknown[] = [];
    for (let j = i; j < end; j++) {
      const r = metrics[j];
      args.push(r.run_id, r.dim, r.value, r.col, r.hour, r.c, r.s, r.t, r.lo, r.hi, encodeBins(r.bins));
    }
    steps.push([sqliteMetricUpsert(end - i), args]);
  }
  for (const d of batch.dirtyHours()) steps.push([SQLITE_DIRTY, [d.run_id, d.hour]]);
  for (const o of batch.overflowList()) steps.push([SQLITE_OVERFLOW, [o.run_id, o.dim]]);
  return steps;
}

/** What a dashboard read found: a reason to scan instead, or what to compute the cells from. */
export type RollupRead =
  | { reason: string; pending?: 'rebuild' | 'recompute' }
  | {
      /** Records per group value key over the range. */
      counts: Map<string, number>;
      shown: Set<string>;
      rows: ReadRow[];
      records: RollupRecord[];
      dirty: number[];
    };

/** A statement runner: the ingest transaction's client, or a Kysely transaction's (rawRunner). */
type Runner = { query: (text: string, values?: unknown[]) => Promise<unknown> };

const rawRunner = (trx: Kysely<DB>): Runner => ({
  query: (text, values = []) => trx.executeQuery(CompiledQuery.raw(text, values)),
});

/** PostgreSQL: a batch's rollup upserts. */
async function pgWriteRollups(client: Runner, batch: RollupBatch): Promise<void> {
  if (batch.empty) return;
  // Each table's rows in key order (rows lock in it), as arrays a column (unnest): a statement of
  // a few parameters whatever the rows, which PostgreSQL parses and plans once.
  const { counts, scalars, metrics } = batch.rows();
  if (counts.length)
    await client.query(
      `insert into rollup_counts as r ${COUNT_COLUMNS}
       select * from unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::int8[])
       on conflict (run_id, dim, hour, value) do update set n = r.n + excluded.n`,
      [
        counts.map((r) => r.run_id),
        counts.map((r) => r.dim),
        counts.map((r) => r.hour),
        counts.map((r) => r.value),
        counts.map((r) => r.n),
      ],
    );
  if (scalars.length) {
    const cols = columnsOf(scalars);
    const arrays: unknown[][] = [
      scalars.map((r) => r.run_id),
      scalars.map((r) => r.dim),
      scalars.map((r) => r.value),
      scalars.map((r) => r.hour),
    ];
    const types = ['text', 'text', 'text', 'int8'];
    for (const i of cols) {
      const of = (f: (a: Agg) => unknown, absent: unknown) =>
        scalars.map((r) => {
          const a = r.cols[i];
          return a ? f(a) : absent;
        });
      arrays.push(
        of((a) => a.c, 0),
        of((a) => a.s, 0),
        of((a) => a.t, 0),
        of((a) => a.lo, null),
        of((a) => a.hi, null),
      );
      types.push('int8', 'float8', 'int8', 'float8', 'float8');
    }
    arrays.push(scalars.map((r) => `{${joinBins(r.cols).join(',')}}`));
    types.push('text');
    await client.query(scalarUpsertPg(cols, types), arrays);
  }
  if (metrics.length)
    await client.query(
      `insert into rollups as r ${METRIC_COLUMNS}
       select a, b, c, d, e, f, g, h, i, j, k::int4[] from unnest($1::text[], $2::text[], $3::text[], $4::text[],
         $5::int8[], $6::int8[], $7::float8[], $8::int8[], $9::float8[], $10::float8[], $11::text[])
         as u(a, b, c, d, e, f, g, h, i, j, k)
       on conflict (run_id, dim, col, hour, value) do update set c = r.c + excluded.c, s = r.s + excluded.s,
       t = r.t + excluded.t, lo = least(r.lo, excluded.lo), hi = greatest(r.hi, excluded.hi),
       bins = rollup_bins_merge(r.bins, excluded.bins)`,
      [
        metrics.map((r) => r.run_id),
        metrics.map((r) => r.dim),
        metrics.map((r) => r.value),
        metrics.map((r) => r.col),
        metrics.map((r) => r.hour),
        metrics.map((r) => r.c),
        metrics.map((r) => r.s),
        metrics.map((r) => r.t),
        metrics.map((r) => r.lo),
        metrics.map((r) => r.hi),
        metrics.map((r) => `{${r.bins.join(',')}}`),
      ],
    );
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

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class RollupsRepo {
  /** The group values this process has folded, to cap them (DimValues). */
  private readonly dims = new DimValues();
  /** Deltas this process folded (deleted) since it last vacuumed their table (`vacuumDeltas`). */
  private foldedSinceVacuum = 0;
  /** MAX_RECORDS_READ, settable for tests. */
  maxRecordsRead = MAX_RECORDS_READ;

  constructor(private readonly store: Store) {}

  /** When this thread last let the event loop turn during a rollup transaction (SQLite). */
  private lastTurn = 0;

  /**
   * SQLite: lets the event loop turn once a rollup transaction has held this thread for 20 ms since
   * the last turn. Its statements run on the main connection and block the thread while they run;
   * chained by awaits alone, a rewrite of a busy hour or a day's build held every request for 1 to 2
   * seconds in bench:memory's soak. Kysely's turn on the connection stays this transaction's meanwhile,
   * so no other statement can run inside it.
   */
  private async letRequestsIn(): Promise<void> {
    if (this.pg) return;
    const now = performance.now();
    if (now - this.lastTurn < 20) return;
    await new Promise((r) => setImmediate(r));
    this.lastTurn = performance.now();
  }

  private get db(): Kysely<DB> {
    return this.store.db;
  }

  private get pg(): boolean {
    return this.store.dialect === 'postgres';
  }

  /**
   * In one snapshot: the records per value of `dim` over [startUs, endUs) (stored counts of the clean
   * whole hours, records of the rest), the groups `pick` shows of them, and the rows of those groups
   * for the metric columns `cols` (bins only of `binCols`); or why the rollups cannot answer.
   * `days`: the buckets are whole days, so built days may be read from their day rows.
   */
  async read(
    runId: string,
    dim: string,
    startUs: number,
    endUs: number,
    cols: readonly string[],
    binCols: readonly string[],
    pick: (counts: Map<string, number>) => Set<string>,
    days = false,
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
      const whole = fullEnd > fullStart;

      // The rest from the records: the range's ends outside whole hours, and the dirty hours.
      const ranges: [number, number][] = [];
      const push = (lo: number, hi: number) => {
        if (hi <= lo) return;
        const last = ranges[ranges.length - 1];
        if (last && last[1] === lo) last[1] = hi;
        else ranges.push([lo, hi]);
      };
      if (whole) {
        push(startUs, fullStart);
        for (const h of dirty) push(h, h + H);
        push(fullEnd, endUs);
      } else push(startUs, endUs);
      const inRange = (lo: number, hi: number) =>
        trx
          .selectFrom('records')
          .where('run_id', '=', runId)
          .where('created_at', '>=', lo)
          .where('created_at', '<', hi);
      let toRead = 0;
      for (const [lo, hi] of ranges) {
        const capped = inRange(lo, hi)
          .select(sql<number>`1`.as('one'))
          .limit(this.maxRecordsRead + 1 - toRead)
          .as('capped');
        const got = await trx
          .selectFrom(capped)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        toRead += Number(got.n);
        if (toRead > this.maxRecordsRead)
          return {
            reason: `more than ${this.maxRecordsRead} records of the range are outside the rollups' clean whole hours${dirty.length ? ' (recompute under way)' : ''}`,
            ...(dirty.length ? { pending: 'recompute' as const } : {}),
          };
      }
      const records: RollupRecord[] = [];
      for (const [lo, hi] of ranges) {
        const got = await inRange(lo, hi)
          .select([...ROLLUP_RECORD_COLUMNS])
          .execute();
        for (const r of got) records.push(r as unknown as RollupRecord);
      }

      // Built days wholly inside the range, none of their hours dirty, are read from their day rows
      // when the buckets are whole days; the other whole hours from hour rows.
      let segments: Segment[] = whole ? [{ days: false, lo: fullStart, hi: fullEnd }] : [];
      if (whole && days) {
        const dayLo = Math.ceil(fullStart / ROLLUP_DAY_US) * ROLLUP_DAY_US;
        const dayHi = Math.floor(fullEnd / ROLLUP_DAY_US) * ROLLUP_DAY_US;
        if (dayHi > dayLo) {
          const dirtyDays = new Set(dirty.map(dayOf));
          const built = (
            await trx
              .selectFrom('rollup_days')
              .select('day')
              .where('run_id', '=', runId)
              .where('built', '=', 1)
              .where('day', '>=', dayLo)
              .where('day', '<', dayHi)
              .orderBy('day')
              .execute()
          )
            .map((r) => Number(r.day))
            .filter((d) => !dirtyDays.has(d));
          const parted = rollupSegments(fullStart, fullEnd, built);
          if (parted.length <= MAX_SEGMENTS) segments = parted;
        }
      }
      const dirtyIn = (seg: Segment) => dirty.filter((h) => h >= seg.lo && h < seg.hi);
      /** A query narrowed to a segment's rows of dim `d`: the day rows, or the clean hours' rows. */
      const inSegment = <Q>(q: Q, d: string, seg: Segment, hours?: number[]): Q => {
        const b = q as any;
        if (seg.days)
          return b.where('dim', '=', dayDim(d)).where('hour', '>=', seg.lo).where('hour', '<', seg.hi);
        if (hours) return b.where('dim', '=', d).where('hour', 'in', hours.length ? hours : [-1]);
        const ranged = b.where('dim', '=', d).where('hour', '>=', seg.lo).where('hour', '<', seg.hi);
        const skip = dirtyIn(seg);
        return skip.length ? ranged.where('hour', 'not in', skip) : ranged;
      };

      const stored = new Map<string, number>();
      let noneTotal = 0;
      /** Hour rows of the dim in the range's clean whole hours (what a range read goes through). */
      let dimRows = 0;
      const countsOf = async (d: string) => {
        const out: { value: string; n: number; rows: number; days: boolean }[] = [];
        for (const seg of segments) {
          const q = trx
            .selectFrom('rollup_counts')
            .select([
              'value',
              sql<number | string>`sum(n)`.as('n'),
              sql<number | string>`count(*)`.as('rows'),
            ])
            .where('run_id', '=', runId);
          for (const r of await inSegment(q, d, seg).groupBy('value').execute())
            out.push({ value: r.value, n: Number(r.n), rows: Number(r.rows), days: seg.days });
        }
        return out;
      };
      for (const r of await countsOf(dim)) {
        stored.set(r.value, (stored.get(r.value) ?? 0) + r.n);
        if (!r.days) dimRows += r.rows;
      }
      if (subtractive(dim)) for (const r of await countsOf('')) noneTotal += r.n;
      const counts = groupCounts(dim, stored, noneTotal, records);
      const shown = pick(counts);
      const rows: ReadRow[] = [];
      if (whole && shown.size) {
        const nullBySubtraction = subtractive(dim) && shown.has('null');
        const values = [...shown].filter((v) => !(nullBySubtraction && v === 'null'));
        if (nullBySubtraction) values.push(ANY_VALUE);
        // One query per dim (an OR of the two makes SQLite scan the log stream's rows by hour).
        const parts: [string, string[]][] = [[dim, values]];
        if (nullBySubtraction) parts.push(['', ['null']]);
        const metricCols = cols.filter((c) => c !== COUNT_COL);
        const scalarCols = metricCols.filter(isScalarMetric);
        const keyCols = metricCols.filter((c) => !isScalarMetric(c));
        const wanted: string[] = ['hour', 'value'];
        for (const col of scalarCols) {
          const k = scalarColumns(col);
          wanted.push(k.c, k.s, k.t, k.lo, k.hi);
        }
        const withBins = scalarCols.some((c) => binCols.includes(c));
        // PostgreSQL hands the bins over in binary (array_send): parsing an int4[]'s text cost 60 to
        // 100 ms a dashboard at 1M records, the '' rows' lists being long.
        const pg = this.pg;
        const stored = pg ? sql`array_send(bins)` : sql`bins`;
        const binsOf = (v: unknown) => (pg ? decodeArraySend(v) : decodeBins(v));
        const bins = binCols.length
          ? sql<unknown>`case when col in (${sql.join(binCols)}) then ${stored} end`
          : sql<unknown>`null`;
        // The clean whole hours: listed (the keys lead with the hour, so each (hour, value) is a
        // seek rather than a scan of every value's rows) when the values shown are few among the
        // dim's, or as a range (the '' dim has one value).
        const hourSegments = segments.filter((seg) => !seg.days);
        const hours = hourSegments.reduce((n, seg) => n + (seg.hi - seg.lo) / H, 0);
        const listed = hours <= MAX_LISTED_HOURS && hours * values.length * SEEK_COST_IN_ROWS < dimRows;
        const cleanOf = (seg: Segment) => {
          const skip = new Set(dirtyIn(seg));
          const clean: number[] = [];
          for (let h = seg.lo; h < seg.hi; h += H) if (!skip.has(h)) clean.push(h);
          return clean;
        };
        for (const [d, vs] of parts)
          for (const seg of segments) {
            const hoursOf = listed && d === dim && !seg.days ? cleanOf(seg) : undefined;
            const counted = trx
              .selectFrom('rollup_counts')
              .select(['hour', 'value', 'n'])
              .where('run_id', '=', runId)
              .where('value', 'in', vs);
            for (const r of await inSegment(counted, d, seg, hoursOf).execute())
              rows.push({
                dim: d,
                hour: Number(r.hour),
                value: r.value,
                col: COUNT_COL,
                c: Number(r.n),
                s: null,
                t: null,
                lo: null,
                hi: null,
                bins: null,
              });
            if (scalarCols.length) {
              const wide = trx
                .selectFrom('rollup_scalars')
                .select(wanted as any)
                .$if(withBins && !pg, (q: any) => q.select(sql`bins`.as('bins')))
                // PostgreSQL cuts each asked column's part out of the list (rollup_bins_column).
                .$if(withBins && pg, (q: any) =>
                  q.select(
                    scalarCols
                      .filter((c) => binCols.includes(c))
                      .map((c) => {
                        const i = (SCALAR_METRICS as readonly string[]).indexOf(c);
                        return sql`array_send(rollup_bins_column(bins, ${sql.lit(i)}))`.as(`bins_${i}`);
                      }),
                  ),
                )
                .where('run_id', '=', runId)
                .where('value', 'in', vs);
              for (const r of (await inSegment(wide, d, seg, hoursOf).execute()) as Record<
                string,
                unknown
              >[]) {
                const joined = withBins && !pg ? decodeBins(r.bins) : [];
                for (const col of scalarCols) {
                  const k = scalarColumns(col);
                  const c = Number(r[k.c]);
                  if (c === 0) continue;
                  rows.push({
                    dim: d,
                    hour: Number(r.hour),
                    value: r.value as string,
                    col,
                    c,
                    s: num(r[k.s]),
                    t: num(r[k.t]),
                    lo: num(r[k.lo]),
                    hi: num(r[k.hi]),
                    bins: binCols.includes(col)
                      ? (() => {
                          const i = (SCALAR_METRICS as readonly string[]).indexOf(col);
                          return columnBins(pg ? decodeArraySend(r[`bins_${i}`]) : joined, i);
                        })()
                      : null,
                  });
                }
              }
            }
            if (!keyCols.length) continue;
            const measured = trx
              .selectFrom('rollups')
              .select(['hour', 'value', 'col', 'c', 's', 't', 'lo', 'hi', bins.as('bins')])
              .where('run_id', '=', runId)
              .where('value', 'in', vs)
              .where('col', 'in', keyCols);
            for (const r of await inSegment(measured, d, seg, hoursOf).execute())
              rows.push({
                dim: d,
                hour: Number(r.hour),
                value: r.value,
                col: r.col,
                c: Number(r.c),
                s: num(r.s),
                t: num(r.t),
                lo: num(r.lo),
                hi: num(r.hi),
                bins: r.bins === null || r.bins === undefined ? null : binsOf(r.bins),
              });
          }
      }
      return { counts, shown, rows, records, dirty };
    };
    // What ingestion wrote so far is in the rows read (deltas of other processes' folds in flight too:
    // the fold waits for them).
    await this.fold({ runId });
    return inSnapshot(this.db, this.pg ? 'postgres' : 'sqlite', body);
  }

  /**
   * Folds stored deltas into the rollup rows: those of `runId` (all of them, waiting for any a
   * concurrent fold holds), or else the oldest `limit` no other fold holds. Answers how many.
   */
  async fold(opts: { runId?: string; limit?: number } = {}): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const batch = new RollupBatch(this.dims);
      const n = await this.claimDeltas(trx, batch, opts);
      await this.writeBatch(trx, batch);
      return n;
    });
  }

  /**
   * A run's inline scorer tallies (domain/scoring-plan.ts) from its rollups, its deltas folded first:
   * the type dim's counts and each name's metric column's value count over every hour (counts stay
   * exact in dirty hours). Null when the rollups cannot answer: the run has records from before they
   * were kept (or they are off), or a name is too long to be kept.
   */
  async inlineTallies(runId: string, names: string[]): Promise<InlineTallies | null> {
    if (!names.every((n) => keptKey(`m:${n}`))) return null;
    await this.fold({ runId });
    const gap = await this.db
      .selectFrom('rollup_gaps')
      .select('run_id')
      .where('run_id', '=', runId)
      .executeTakeFirst();
    if (gap) return null;
    const types = new Map<string, number>();
    const counts = await this.db
      .selectFrom('rollup_counts')
      .select(['value', sql<number | string>`sum(n)`.as('n')])
      .where('run_id', '=', runId)
      .where('dim', '=', 'type')
      .groupBy('value')
      .execute();
    for (const r of counts) types.set(JSON.parse(r.value), Number(r.n));
    const scored = new Map<string, number>();
    if (names.length) {
      const rows = await this.db
        .selectFrom('rollups')
        .select(['col', sql<number | string>`sum(c)`.as('c')])
        .where('run_id', '=', runId)
        .where('dim', '=', '')
        .where('value', '=', 'null')
        .where(
          'col',
          'in',
          names.map((n) => `m:${n}`),
        )
        .groupBy('col')
        .execute();
      for (const r of rows) scored.set(r.col.slice(2), Number(r.c));
    }
    return { types, scored };
  }

  /**
   * PostgreSQL: vacuums the deltas' table once deltas were folded since the last time. Each delta is
   * a request's records' facts (tens of KB, in TOAST) deleted once folded; its dead rows are below
   * the table-stats job's threshold (10,000 rows) and stayed: 73 MB after 100,000 records of 20
   * metadata keys (bench:ingest --profile metadata), a sixth of the store. SQLite reuses the pages.
   */
  async vacuumDeltas(): Promise<void> {
    if (!this.pg || this.foldedSinceVacuum === 0) return;
    this.foldedSinceVacuum = 0;
    await sql`vacuum rollup_deltas`.execute(this.db);
  }

  /**
   * Takes deltas off the store into `batch` (the first statement of a transaction: see recompute):
   * all of a log stream's, `CLAIM_CHUNK` at a time (a scorer's backlog leaves thousands, tens of KB
   * each), or else the oldest `limit`.
   */
  private async claimDeltas(
    trx: Kysely<DB>,
    batch: RollupBatch,
    opts: { runId?: string; limit?: number },
  ): Promise<number> {
    const take = async (claimed: { rows: { run_id: string; body: string }[] }) => {
      for (const r of claimed.rows) batch.absorbDelta(r.run_id, r.body);
      this.foldedSinceVacuum += claimed.rows.length;
      return claimed.rows.length;
    };
    if (opts.runId === undefined)
      return take(
        await sql<{ run_id: string; body: string }>`delete from rollup_deltas where id in (
          select id from rollup_deltas order by id limit ${opts.limit ?? 1000}
          ${this.pg ? sql`for update skip locked` : sql``}) returning run_id, body`.execute(trx),
      );
    let n = 0;
    for (;;) {
      const ids = await trx
        .selectFrom('rollup_deltas')
        .select('id')
        .where('run_id', '=', opts.runId)
        .orderBy('id')
        .limit(CLAIM_CHUNK)
        .execute();
      if (!ids.length) return n;
      // On PostgreSQL this waits for any a concurrent fold holds (and skips those it folded).
      n += await take(
        await sql<{ run_id: string; body: string }>`delete from rollup_deltas
          where id in (${sql.join(ids.map((r) => r.id))}) returning run_id, body`.execute(trx),
      );
      if (ids.length < CLAIM_CHUNK) return n;
    }
  }

  /** Upserts a batch's rows (adding to the stored ones); their days' rows are no longer current. */
  private async writeBatch(trx: Kysely<DB>, batch: RollupBatch): Promise<void> {
    if (batch.empty) return;
    if (this.pg) await pgWriteRollups(rawRunner(trx), batch);
    else
      for (const [text, args] of sqliteRollupSteps(batch, SQLITE_FOLD_CHUNK)) {
        await trx.executeQuery(CompiledQuery.raw(text, args));
        await this.letRequestsIn();
      }
    await this.daysChanged(trx, batch.touchedDays());
  }

  /**
   * Marks days whose hour rows changed (in the transaction that changes them): their day rows are
   * read no more until built again. On PostgreSQL this write to the mark is what a concurrent build
   * of the day conflicts with (buildDays), so it is made whatever the mark said.
   */
  private async daysChanged(trx: Kysely<DB>, days: readonly { run_id: string; day: number }[]) {
    const at = Date.now() * 1000;
    for (let i = 0; i < days.length; i += 500)
      await trx
        .insertInto('rollup_days')
        .values(
          days.slice(i, i + 500).map((d) => ({ run_id: d.run_id, day: d.day, built: 0, changed_at: at })),
        )
        .onConflict((oc) => oc.columns(['run_id', 'day']).doUpdateSet({ built: 0, changed_at: at }))
        .execute();
  }

  /**
   * Builds the rows of days left unchanged for `quietUs` (oldest change first, at most `limit`):
   * each day's dirty hours are recomputed from their records, then its hours' rows summed into its
   * day rows. Answers how many days were taken.
   */
  async buildDays(opts: { quietUs?: number; limit?: number } = {}): Promise<number> {
    const due = await this.db
      .selectFrom('rollup_days')
      .select(['run_id', 'day'])
      .where('built', '=', 0)
      .where('changed_at', '<=', Date.now() * 1000 - (opts.quietUs ?? DAY_QUIET_US))
      .orderBy('changed_at')
      .limit(opts.limit ?? 64)
      .execute();
    const byRun = new Map<string, number[]>();
    for (const r of due) byRun.set(r.run_id, [...(byRun.get(r.run_id) ?? []), Number(r.day)]);
    for (const [runId, days] of byRun)
      for (let i = 0; i < days.length; i += DAYS_PER_TRANSACTION) {
        const some = days.slice(i, i + DAYS_PER_TRANSACTION);
        await this.rewriting(runId, async (trx) => {
          const dims = await this.recomputeDims(trx, runId);
          for (const day of some) await this.buildDay(trx, runId, day, dims);
        });
      }
    return due.length;
  }

  /** Days whose rows wait to be built (GET /metrics). */
  async unbuiltDays(): Promise<number> {
    const r = await this.db
      .selectFrom('rollup_days')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('built', '=', 0)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /**
   * A day's rows from its hours' (in a rewriting transaction: a fold or a recompute of one of its
   * hours that commits meanwhile makes this one fail and run again on PostgreSQL; SQLite has one
   * writer).
   */
  private async buildDay(trx: Kysely<DB>, runId: string, day: number, dims: DimValues) {
    const end = day + ROLLUP_DAY_US;
    const dirty = await trx
      .selectFrom('rollup_dirty')
      .select('hour')
      .where('run_id', '=', runId)
      .where('hour', '>=', day)
      .where('hour', '<', end)
      .execute();
    for (const r of dirty) await this.rewriteHour(trx, runId, Number(r.hour), dims);
    await this.letRequestsIn();
    for (const table of ['rollup_counts', 'rollup_scalars', 'rollups'] as const)
      await trx
        .deleteFrom(table)
        .where('run_id', '=', runId)
        .where('hour', '=', day)
        .where('dim', 'like', `${dayDim('')}%`)
        .execute();
    const ofDay = <Q>(q: Q): Q =>
      (q as any)
        .where('run_id', '=', runId)
        .where('hour', '>=', day)
        .where('hour', '<', end)
        .where('dim', 'not like', `${dayDim('')}%`);
    const counts = (await ofDay(trx.selectFrom('rollup_counts').selectAll()).execute()).map((r) => ({
      ...r,
      hour: Number(r.hour),
      n: Number(r.n),
    }));
    const binsCol = this.pg ? sql`array_send(bins)` : sql`bins`;
    const binsOf = (v: unknown) => (this.pg ? decodeArraySend(v) : decodeBins(v));
    const scalars = (
      (await ofDay(
        trx
          .selectFrom('rollup_scalars')
          .select([
            'dim',
            'value',
            'hour',
            ...SCALAR_METRICS.flatMap((c) => Object.values(scalarColumns(c))),
          ] as any)
          .select(binsCol.as('bins')),
      ).execute()) as Record<string, unknown>[]
    ).map((r) => {
      const joined = binsOf(r.bins);
      return {
        run_id: runId,
        dim: r.dim as string,
        value: r.value as string,
        hour: Number(r.hour),
        cols: SCALAR_METRICS.map((col, i): Agg | null => {
          const k = scalarColumns(col);
          const c = Number(r[k.c]);
          if (c === 0) return null;
          return {
            c,
            s: Number(r[k.s]),
            t: Number(r[k.t]),
            lo: num(r[k.lo]),
            hi: num(r[k.hi]),
            bins: columnBins(joined, i),
          };
        }),
      };
    });
    const metrics = (
      await ofDay(
        trx
          .selectFrom('rollups')
          .select(['dim', 'value', 'col', 'hour', 'c', 's', 't', 'lo', 'hi'])
          .select(binsCol.as('bins')),
      ).execute()
    ).map((r) => ({
      run_id: runId,
      dim: r.dim,
      value: r.value,
      col: r.col,
      hour: Number(r.hour),
      c: Number(r.c),
      s: Number(r.s),
      t: Number(r.t),
      lo: num(r.lo),
      hi: num(r.hi),
      bins: r.bins === null || r.bins === undefined ? [] : Array.from(binsOf(r.bins)),
    }));
    await this.insertRows(trx, sumIntoDays(day, { counts, scalars, metrics }));
    await trx
      .updateTable('rollup_days')
      .set({ built: 1 })
      .where('run_id', '=', runId)
      .where('day', '=', day)
      .execute();
  }

  /**
   * A transaction that rewrites hours of a log stream from its records. It first folds the log
   * stream's deltas, in one snapshot with its reads of the records (repeatable read on PostgreSQL;
   * SQLite's first write takes the one write lock): a record is then either in what it reads or in a
   * delta folded after it, never both. Racing a concurrent fold or recompute, PostgreSQL fails it
   * (serialization, or a key both inserted), and it runs again.
   */
  private async rewriting(runId: string, body: (trx: Kysely<DB>) => Promise<void>): Promise<void> {
    const run = async (trx: Kysely<DB>) => {
      const batch = new RollupBatch(this.dims);
      await this.claimDeltas(trx, batch, { runId });
      await this.writeBatch(trx, batch);
      await body(trx);
    };
    if (!this.pg) return this.db.transaction().execute(run);
    await retryTransient(() => this.db.transaction().setIsolationLevel('repeatable read').execute(run), {
      uniqueRace: true,
    });
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
    await this.rewriting(runId, async (trx) => {
      const dims = await this.recomputeDims(trx, runId);
      for (const hour of [...hours].sort((a, b) => a - b)) await this.rewriteHour(trx, runId, hour, dims);
    });
  }

  /** A recompute's dim caps: uncapped, but the log stream's overflowed dims stay out. */
  private async recomputeDims(trx: Kysely<DB>, runId: string): Promise<DimValues> {
    const overflowed = await trx
      .selectFrom('rollup_overflow')
      .select('dim')
      .where('run_id', '=', runId)
      .execute();
    const dims = new DimValues(Number.POSITIVE_INFINITY);
    for (const o of overflowed) dims.overflowed(runId, o.dim);
    return dims;
  }

  /** Replaces an hour's rollups by those of its records; its dirty mark goes, its day is changed. */
  private async rewriteHour(trx: Kysely<DB>, runId: string, hour: number, dims: DimValues) {
    for (const table of ['rollup_counts', 'rollup_scalars', 'rollups'] as const)
      await trx
        .deleteFrom(table)
        .where('run_id', '=', runId)
        .where('hour', '=', hour)
        .where('dim', 'not like', `${dayDim('')}%`)
        .execute();
    // The hour's records a page at a time, in (created_at, id) order: an hour may hold hundreds of
    // thousands, and only their aggregates are kept.
    const page = (from: { at: number; id: string } | null) =>
      trx
        .selectFrom('records')
        .select([...ROLLUP_RECORD_COLUMNS, 'id'])
        .where('run_id', '=', runId)
        .where('created_at', '>=', hour)
        .where('created_at', '<', hour + ROLLUP_BUCKET_US)
        .$if(from !== null, (q) =>
          q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(from!.at, from!.id))),
        )
        .orderBy('created_at')
        .orderBy('id')
        .limit(REWRITE_PAGE)
        .execute();
    const batch = new RollupBatch(dims);
    for (let rows = await page(null); ; ) {
      for (const r of rows) batch.add(runId, r as unknown as RollupRecord);
      await this.letRequestsIn();
      if (rows.length < REWRITE_PAGE) break;
      const last = rows[rows.length - 1];
      rows = await page({ at: Number(last.created_at), id: last.id });
    }
    await this.insertRows(trx, batch.rows());
    for (const o of batch.overflowList())
      await trx
        .insertInto('rollup_overflow')
        .values({ run_id: o.run_id, dim: o.dim })
        .onConflict((oc) => oc.doNothing())
        .execute();
    await trx.deleteFrom('rollup_dirty').where('run_id', '=', runId).where('hour', '=', hour).execute();
    await this.daysChanged(trx, [{ run_id: runId, day: dayOf(hour) }]);
  }

  /** Inserts rows (none of them stored yet). */
  private async insertRows(
    trx: Kysely<DB>,
    { counts, scalars, metrics }: { counts: CountRow[]; scalars: ScalarRow[]; metrics: MetricRow[] },
  ) {
    for (let i = 0; i < counts.length; i += 500) {
      await trx
        .insertInto('rollup_counts')
        .values(counts.slice(i, i + 500))
        .execute();
      await this.letRequestsIn();
    }
    const bins = (pairs: number[]) =>
      (this.pg ? sql`${pairs}::int4[]` : encodeBins(pairs)) as unknown as Buffer;
    for (let i = 0; i < scalars.length; i += 100) {
      await trx
        .insertInto('rollup_scalars')
        .values(
          scalars.slice(i, i + 100).map((r) => {
            const row: Record<string, unknown> = {
              run_id: r.run_id,
              dim: r.dim,
              value: r.value,
              hour: r.hour,
            };
            SCALAR_METRICS.forEach((col, j) => {
              const k = scalarColumns(col);
              const a: Agg | null = r.cols[j];
              row[k.c] = a?.c ?? 0;
              row[k.s] = a?.s ?? 0;
              row[k.t] = a?.t ?? 0;
              row[k.lo] = a?.lo ?? null;
              row[k.hi] = a?.hi ?? null;
            });
            row.bins = bins(joinBins(r.cols));
            return row as never;
          }),
        )
        .execute();
      await this.letRequestsIn();
    }
    for (let i = 0; i < metrics.length; i += 200) {
      await trx
        .insertInto('rollups')
        .values(metrics.slice(i, i + 200).map((r) => ({ ...r, bins: bins(r.bins) })))
        .execute();
      await this.letRequestsIn();
    }
  }

  /**
   * Rebuilds a log stream's rollups from all its records (hour by hour, one transaction per
   * `hoursPerTransaction` hours with records), then clears its gap: for log streams whose records
   * came before rollups, and for records written around ingestion (the benchmark's).
   */
  async rebuild(runId: string, hoursPerTransaction = 24): Promise<void> {
    await this.db.deleteFrom('rollup_counts').where('run_id', '=', runId).execute();
    await this.db.deleteFrom('rollups').where('run_id', '=', runId).execute();
    await this.db.deleteFrom('rollup_scalars').where('run_id', '=', runId).execute();
    await this.db.deleteFrom('rollup_overflow').where('run_id', '=', runId).execute();
    await this.db.deleteFrom('rollup_days').where('run_id', '=', runId).execute();
    // A fresh count of every dim's values over the whole log stream decides its overflow.
    const dims = new DimValues(undefined, 1);
    let cursor = Number.NEGATIVE_INFINITY;
    for (let done = false; !done; ) {
      // Where this transaction got to, kept once it commits (a retried one starts over).
      let reached = cursor;
      await this.rewriting(runId, async (trx) => {
        reached = cursor;
        done = false;
        for (let k = 0; k < hoursPerTransaction; k++) {
          const next = await trx
            .selectFrom('records')
            .select((eb) => eb.fn.min('created_at').as('at'))
            .where('run_id', '=', runId)
            .where('created_at', '>=', Number.isFinite(reached) ? reached : -(2 ** 62))
            .executeTakeFirst();
          if (next?.at === null || next?.at === undefined) {
            done = true;
            return;
          }
          const hour = Math.floor(Number(next.at) / ROLLUP_BUCKET_US) * ROLLUP_BUCKET_US;
          await this.rewriteHour(trx, runId, hour, dims);
          reached = hour + ROLLUP_BUCKET_US;
        }
      });
      cursor = reached;
    }
    await this.db.deleteFrom('rollup_gaps').where('run_id', '=', runId).execute();
  }
}
