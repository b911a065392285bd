/**
 * Dashboard rollups: per log stream, hour and group value, the aggregates that trends widgets need,
 * kept when records arrive (store/ingest.ts) so that a dashboard reads hours, not records.
 *
 * Two kinds of rows (migration 030, store/rollups.ts): a count row per (log stream, dim, hour,
 * value) holding `n`, the records; and a metric row per (log stream, dim, value, metric column,
 * hour) holding numbers: `c` the values, `s` their sum, `t` those equal to 1, `lo` and `hi` their
 * min and max, and `bins` their DDSketch (domain/ddsketch.ts, a short array of code/count pairs).
 * Counts, sums and bins add (in SQL, on upsert); lo and hi merge by min and max. A dashboard reads
 * the count rows to rank its groups, then only the metric rows of the groups it shows and the
 * columns its widgets need, and bins only of the columns a percentile widget asks for.
 *
 * Everything but min and max also subtracts: an update takes its old row's part off and adds the new
 * one, and marks the hour dirty (its min and max may be stale) so that readers compute it from the
 * records until it is recomputed.
 *
 * Groups (dims): '' (none, its one value 'null'), the scalar columns type, name and model,
 * `u:<key>` (a user metadata key, its text values) and `m:<key>` (a score, its number values). A
 * record without a text value of a metadata key (or a number of a score) is in that dim's null
 * group, which is not stored: it is the hour's '' rollup minus the dim's ANY_VALUE row (every record
 * that has a value), min and max aside (so keys first seen later still count right).
 */
import { jsonObject } from './json-object.ts';
import {
  type Sketch,
  addCode,
  addPairs,
  binCode,
  decodeBins,
  mergeBins,
  quantile,
  sketchPairs,
} from './ddsketch.ts';

/** The rollups' hour (µs). Dashboards whose interval is a multiple of it read rollups. */
export const ROLLUP_BUCKET_US = 3_600_000_000;

/**
 * A day (µs). A day's rows are the sums of its hours' rows (sumIntoDays), kept beside them under the
 * dim dayDim(dim) with `hour` the day's start: dashboards of daily buckets read them (migration 035).
 */
export const ROLLUP_DAY_US = 24 * ROLLUP_BUCKET_US;
export const DAY_DIM_PREFIX = 'day:';
export const dayDim = (dim: string) => DAY_DIM_PREFIX + dim;
export const dayOf = (at: number) => Math.floor(at / ROLLUP_DAY_US) * ROLLUP_DAY_US;

/** Record columns kept as metrics (numbers, or 0/1 for is_complete). */
export const SCALAR_METRICS = [
  'is_complete',
  'status_code',
  'duration_ns',
  'num_input_tokens',
  'num_output_tokens',
  'num_total_tokens',
  'num_cache_read_input_tokens',
  'num_cache_creation_input_tokens',
  'time_to_first_token_ns',
  'num_children',
] as const;

/** Scalar columns kept as groups. */
export const SCALAR_DIMS = ['type', 'name', 'model'] as const;

/** At most this many values of a group column (other than type) per log stream; beyond, it overflows. */
export const DIM_VALUE_CAP = 200;

/**
 * Longest group column, metric column and group value (its JSON text) kept in rollups, in
 * characters. They are keys of the rollup tables, and PostgreSQL refuses a B-tree entry past about
 * 2,700 bytes: three of these at 4 bytes a character stay under it. A longer column is not rolled up
 * (its dashboards scan); a longer value overflows its group column, as one past the cap does.
 */
export const ROLLUP_KEY_MAX_CHARS = 200;
export const keptKey = (s: string) => s.length <= ROLLUP_KEY_MAX_CHARS;

/** The metric column of the record count (count rows). */
export const COUNT_COL = '';

/** The value of a metadata key's or score's rows that hold every record with a value of it. */
export const ANY_VALUE = '*';

/** Whether a dim's null group is the '' rollup minus its ANY_VALUE rows (metadata keys, scores). */
export const subtractive = (dim: string) => dim.startsWith('u:') || dim.startsWith('m:');

/** What the rollups read of a record (JSON columns as text or parsed). */
export interface RollupRecord {
  run_id?: string;
  created_at: number | string;
  type: string;
  name: string;
  model: string | null;
  metrics: unknown;
  user_metadata: unknown;
  [column: string]: unknown;
}

/** The columns a RollupRecord needs. */
export const ROLLUP_RECORD_COLUMNS = [
  'run_id',
  'created_at',
  'type',
  'name',
  'model',
  'metrics',
  'user_metadata',
  ...SCALAR_METRICS,
] as const;

export const hourOf = (createdAt: number) => Math.floor(createdAt / ROLLUP_BUCKET_US) * ROLLUP_BUCKET_US;

/** The value of a group, as stored (JSON text). */
export const valueKey = (v: unknown) => JSON.stringify(v ?? null);

/** A record's metric values as [column, value, sketch bin code] and its groups as [dim, value key]. */
export function recordFacts(r: RollupRecord): {
  parts: [string, number, number][];
  dims: [string, string][];
} {
  const parts: [string, number, number][] = [];
  for (const col of SCALAR_METRICS) {
    const v = r[col];
    if (v === null || v === undefined) continue;
    const x = Number(v);
    parts.push([col, x, binCode(x)]);
  }
  const dims: [string, string][] = [
    ['', 'null'],
    ['type', valueKey(r.type)],
    ['name', valueKey(r.name)],
    ['model', valueKey(r.model)],
  ];
  const metrics = jsonObject(r.metrics);
  if (metrics)
    for (const k in metrics) {
      const v = metrics[k];
      if (typeof v !== 'number' || !Number.isFinite(v) || !keptKey(`m:${k}`)) continue;
      parts.push([`m:${k}`, v, binCode(v)]);
      dims.push([`m:${k}`, valueKey(v)]);
    }
  const user = jsonObject(r.user_metadata);
  if (user)
    for (const k in user) {
      const v = user[k];
      if (typeof v === 'string' && keptKey(`u:${k}`)) dims.push([`u:${k}`, valueKey(v)]);
    }
  return { parts, dims };
}

type Facts = ReturnType<typeof recordFacts>;

/** Whether a record's facts after an update hold every group and metric value they held before. */
function putsBack(before: Facts, after: Facts): boolean {
  const groups = new Set(after.dims.map(([dim, value]) => `${dim}\u0000${value}`));
  if (!before.dims.every(([dim, value]) => groups.has(`${dim}\u0000${value}`))) return false;
  const values = new Map(after.parts.map(([col, v]) => [col, v]));
  return before.parts.every(([col, v]) => values.get(col) === v);
}

/** A record's metric values as RollupBatch.add reads them: record columns by index, metric keys by `m:<key>`. */
class RecordParts {
  readonly scalarAt: number[] = [];
  readonly scalarV: number[] = [];
  readonly scalarCode: number[] = [];
  readonly keyed: { name: string; v: number; code: number }[] = [];

  static of(r: RollupRecord): RecordParts {
    const p = new RecordParts();
    for (let i = 0; i < SCALAR_METRICS.length; i++) {
      const v = r[SCALAR_METRICS[i]];
      if (v === null || v === undefined) continue;
      const x = Number(v);
      p.scalarAt.push(i);
      p.scalarV.push(x);
      p.scalarCode.push(binCode(x));
    }
    const metrics = jsonObject(r.metrics);
    if (metrics)
      for (const k in metrics) {
        const v = metrics[k];
        if (typeof v !== 'number' || !Number.isFinite(v) || !keptKey(`m:${k}`)) continue;
        p.keyed.push({ name: `m:${k}`, v, code: binCode(v) });
      }
    return p;
  }
}

/** A record's value key in a dim ('null' when it has none). */
export function recordValue(r: RollupRecord, dim: string): string {
  if (dim === '') return 'null';
  const found = recordFacts(r).dims.find(([d]) => d === dim);
  return found ? found[1] : 'null';
}

/** A stored count row: the records of a (log stream, dim, hour, value). */
export interface CountRow {
  run_id: string;
  dim: string;
  hour: number;
  value: string;
  n: number;
}

/** A metric column's aggregates as stored: `c` values, `s` their sum, `t` those equal to 1, min, max, sketch. */
export interface Agg {
  c: number;
  s: number;
  t: number;
  lo: number | null;
  hi: number | null;
  /** The DDSketch as code/count pairs, codes ascending. */
  bins: number[];
}

/** A stored metric row of a score or metric key (`m:<key>`) over a (log stream, dim, value, hour). */
export interface MetricRow extends Agg {
  run_id: string;
  dim: string;
  value: string;
  col: string;
  hour: number;
}

/**
 * A stored row of the record columns' aggregates over a (log stream, dim, value, hour): one
 * aggregate per SCALAR_METRICS column (null where no record had it), in one row so that a batch
 * upserts one row per group rather than one per group and column.
 */
export interface ScalarRow {
  run_id: string;
  dim: string;
  value: string;
  hour: number;
  cols: (Agg | null)[];
}

/** The stored columns of a scalar metric's aggregate (migration 030): c_<col>, s_<col>, ... */
export const scalarColumns = (col: string) =>
  ({ c: `c_${col}`, s: `s_${col}`, t: `t_${col}`, lo: `lo_${col}`, hi: `hi_${col}` }) as const;

/**
 * A scalar row's sketches are kept in one list (one merge a row, not one per column): each code
 * carries its column's SCALAR_METRICS index above bit 18 (codes stay below 2^18), so the list stays
 * in ascending order column by column and merges as one sketch does.
 */
const COL_SHIFT = 2 ** 18;

/** The sketches of a scalar row's columns (SCALAR_METRICS order, null where absent) as one pair list. */
export function joinBins(cols: readonly (Agg | null)[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < cols.length; i++) {
    const a = cols[i];
    if (!a) continue;
    for (let k = 0; k < a.bins.length; k += 2) out.push(i * COL_SHIFT + a.bins[k], a.bins[k + 1]);
  }
  return out;
}

/** One column's pairs (codes as stored per column) out of a scalar row's joined list. */
export function columnBins(joined: ArrayLike<number>, index: number): number[] {
  const out: number[] = [];
  for (let k = 0; k + 1 < joined.length; k += 2) {
    const code = joined[k];
    if (Math.floor(code / COL_SHIFT) === index) out.push(code - index * COL_SHIFT, joined[k + 1]);
  }
  return out;
}

const SCALAR_INDEX = new Map<string, number>(SCALAR_METRICS.map((c, i) => [c, i]));

/** Whether a metric column is kept in the scalar rows (a record column) rather than as metric rows. */
export const isScalarMetric = (col: string) => SCALAR_INDEX.has(col);

/** A metric column's running aggregates. */
interface ColAcc {
  c: number;
  s: number;
  t: number;
  lo: number;
  hi: number;
  bins: Sketch;
}

const newCol = (): ColAcc => ({
  c: 0,
  s: 0,
  t: 0,
  lo: Number.POSITIVE_INFINITY,
  hi: Number.NEGATIVE_INFINITY,
  bins: new Map(),
});

/** Adds `b` into `a` (sign −1 takes it off, min and max aside). */
function addCol(a: ColAcc, b: ColAcc, sign = 1) {
  a.c += sign * b.c;
  a.s += sign * b.s;
  a.t += sign * b.t;
  if (sign > 0) {
    if (b.lo < a.lo) a.lo = b.lo;
    if (b.hi > a.hi) a.hi = b.hi;
  }
  for (const [code, n] of b.bins) addCode(a.bins, code, sign * n);
}

/**
 * The group values seen per log stream and dim in this process, to cap them: once a dim passes
 * DIM_VALUE_CAP values it overflows (stored, store/rollups.ts) and is no longer rolled up for that
 * log stream. At most `maxRuns` log streams are remembered (least recently used go); a forgotten one
 * starts counting again, so a dim holds at most a few times the cap before it overflows.
 */
export class DimValues {
  private readonly runs = new Map<string, Map<string, Set<string> | null>>();
  constructor(
    private readonly cap = DIM_VALUE_CAP,
    private readonly maxRuns = 1000,
  ) {}

  /** Whether the value is kept: false when the dim overflowed (now or before). `overflow` hears of a new overflow. */
  admit(runId: string, dim: string, value: string, overflow: (dim: string) => void): boolean {
    if (dim === '' || dim === 'type') return true;
    let dims = this.runs.get(runId);
    if (!dims) {
      dims = new Map();
      this.runs.set(runId, dims);
      if (this.runs.size > this.maxRuns) this.runs.delete(this.runs.keys().next().value as string);
    }
    let seen = dims.get(dim);
    if (seen === null) return false;
    if (!seen) {
      seen = new Set();
      dims.set(dim, seen);
    }
    if (seen.has(value)) return true;
    if (seen.size >= this.cap) {
      dims.set(dim, null);
      overflow(dim);
      return false;
    }
    seen.add(value);
    return true;
  }

  /** Whether the dim overflowed for this log stream (its values are no longer kept). */
  isOverflowed(runId: string, dim: string): boolean {
    return this.runs.get(runId)?.get(dim) === null;
  }

  /** Marks dims overflowed (read back from the store). */
  overflowed(runId: string, dim: string): void {
    let dims = this.runs.get(runId);
    if (!dims) {
      dims = new Map();
      this.runs.set(runId, dims);
    }
    dims.set(dim, null);
  }

  /** Forgets a log stream (its rollups were rebuilt). */
  forget(runId: string): void {
    this.runs.delete(runId);
  }
}

/**
 * A metric column's running aggregates in a batch: numbers, and its sketch bins as a short list of
 * (code, count) pairs (most groups see a few values a batch), a map once it grows.
 */
class BatchCol {
  c = 0;
  s = 0;
  t = 0;
  lo = Number.POSITIVE_INFINITY;
  hi = Number.NEGATIVE_INFINITY;
  private small: number[] = [];
  private big: Map<number, number> | null = null;

  add(v: number, code: number, sign: number): void {
    this.c += sign;
    this.s += sign * v;
    if (v === 1) this.t += sign;
    if (sign > 0) {
      if (v < this.lo) this.lo = v;
      if (v > this.hi) this.hi = v;
    }
    this.addBin(code, sign);
  }

  private addBin(code: number, count: number): void {
    const big = this.big;
    if (big) {
      big.set(code, (big.get(code) ?? 0) + count);
      return;
    }
    const small = this.small;
    for (let i = 0; i < small.length; i += 2)
      if (small[i] === code) {
        small[i + 1] += count;
        return;
      }
    if (small.length < 32) {
      small.push(code, count);
      return;
    }
    const m = new Map<number, number>();
    for (let i = 0; i < small.length; i += 2) m.set(small[i], small[i + 1]);
    m.set(code, count);
    this.big = m;
    this.small = [];
  }

  /** Adds another column's aggregates (min and max included: both come from added records only). */
  absorb(o: BatchCol): void {
    this.c += o.c;
    this.s += o.s;
    this.t += o.t;
    if (o.lo < this.lo) this.lo = o.lo;
    if (o.hi > this.hi) this.hi = o.hi;
    if (o.big) for (const [code, n] of o.big) this.addBin(code, n);
    else for (let i = 0; i < o.small.length; i += 2) this.addBin(o.small[i], o.small[i + 1]);
  }

  /** The stored form; `any`: an ANY_VALUE row (its min and max are never read). */
  agg(any: boolean): Agg {
    let bins: number[];
    if (this.big) bins = sketchPairs(this.big);
    else {
      const small = this.small;
      if (small.length === 2) bins = small[1] === 0 ? [] : small;
      else {
        const order: number[] = [];
        for (let i = 0; i < small.length; i += 2) if (small[i + 1] !== 0) order.push(i);
        order.sort((a, b) => small[a] - small[b]);
        bins = new Array(order.length * 2);
        for (let k = 0; k < order.length; k++) {
          bins[2 * k] = small[order[k]];
          bins[2 * k + 1] = small[order[k] + 1];
        }
      }
    }
    return {
      c: this.c,
      s: this.s,
      t: this.t,
      lo: any || this.lo === Number.POSITIVE_INFINITY ? null : this.lo,
      hi: any || this.hi === Number.NEGATIVE_INFINITY ? null : this.hi,
      bins,
    };
  }
}

/** One group's running aggregates in a batch: record columns by SCALAR_METRICS index, metric keys by name. */
class BatchKey {
  n = 0;
  readonly scalars: (BatchCol | undefined)[] = new Array(SCALAR_METRICS.length);
  keyed: Map<string, BatchCol> | null = null;
  constructor(
    readonly run_id: string,
    readonly hour: number,
    readonly dim: string,
    readonly value: string,
  ) {}

  private col(name: string): BatchCol {
    const at = SCALAR_INDEX.get(name);
    let a: BatchCol | undefined;
    if (at !== undefined) {
      a = this.scalars[at];
      if (!a) {
        a = new BatchCol();
        this.scalars[at] = a;
      }
    } else {
      this.keyed ??= new Map();
      a = this.keyed.get(name);
      if (!a) {
        a = new BatchCol();
        this.keyed.set(name, a);
      }
    }
    return a;
  }

  /** A record's parts (RecordParts.of), the same as add(recordFacts(r).parts) without names looked up. */
  addParts(p: RecordParts, sign: number): void {
    this.n += sign;
    for (let i = 0; i < p.scalarAt.length; i++) {
      const at = p.scalarAt[i];
      let a = this.scalars[at];
      if (!a) {
        a = new BatchCol();
        this.scalars[at] = a;
      }
      a.add(p.scalarV[i], p.scalarCode[i], sign);
    }
    for (let i = 0; i < p.keyed.length; i++) {
      const k = p.keyed[i];
      this.keyed ??= new Map();
      let a = this.keyed.get(k.name);
      if (!a) {
        a = new BatchCol();
        this.keyed.set(k.name, a);
      }
      a.add(k.v, k.code, sign);
    }
  }

  /** Adds another group's aggregates. */
  absorb(o: BatchKey): void {
    this.n += o.n;
    o.scalars.forEach((a, i) => {
      if (a) this.col(SCALAR_METRICS[i]).absorb(a);
    });
    if (o.keyed) for (const [name, a] of o.keyed) this.col(name).absorb(a);
  }
}

/**
 * A record as a delta keeps it: created_at, type, name, model, metrics and user metadata (their JSON
 * texts as stored, unparsed), then the SCALAR_METRICS columns.
 */
type DeltaFacts = [number, string, string, string | null, unknown, unknown, ...(number | null)[]];

const json = (v: unknown) =>
  v === null || v === undefined ? 'null' : typeof v === 'string' ? v : JSON.stringify(v);

function factsText(r: RollupRecord): string {
  let out = `[${Number(r.created_at)},${JSON.stringify(r.type)},${JSON.stringify(r.name)},${JSON.stringify(r.model ?? null)},${json(r.metrics)},${json(r.user_metadata)}`;
  for (const col of SCALAR_METRICS) {
    const v = r[col];
    out += v === null || v === undefined ? ',null' : `,${Number(v)}`;
  }
  return `${out}]`;
}

function fromFacts(f: DeltaFacts): RollupRecord {
  const r: RollupRecord = {
    created_at: f[0],
    type: f[1],
    name: f[2],
    model: f[3],
    metrics: f[4],
    user_metadata: f[5],
  };
  for (let i = 0; i < SCALAR_METRICS.length; i++) r[SCALAR_METRICS[i]] = f[6 + i];
  return r;
}

/**
 * An ingestion transaction's rollup changes for one log stream, as the row it stores (folded into
 * the rollups later, RollupBatch.absorbDelta): its new records, and its updates as (old, new) pairs.
 * Only the columns rollups read, as text joined without parsing: the aggregation happens once, when
 * many transactions' deltas are folded together, not on the ingest path.
 */
export function rollupDelta(
  inserts: readonly RollupRecord[],
  updates: readonly [RollupRecord, RollupRecord][],
): string {
  const a = inserts.map(factsText).join(',');
  const r = updates.map(([before, after]) => `[${factsText(before)},${factsText(after)}]`).join(',');
  return `{"a":[${a}],"r":[${r}]}`;
}

/** A batch's rollup changes, merged per (log stream, hour, dim, value): one upsert per row. */
export class RollupBatch {
  /** By log stream and hour, dim, value. */
  private readonly hours = new Map<string, Map<string, Map<string, BatchKey>>>();
  readonly dirty = new Set<string>();
  readonly overflows = new Set<string>();

  constructor(private readonly dims: DimValues | null) {}

  get empty(): boolean {
    return this.hours.size === 0 && this.dirty.size === 0 && this.overflows.size === 0;
  }

  private keyOf(
    runId: string,
    hour: number,
    byDim: Map<string, Map<string, BatchKey>>,
    dim: string,
    value: string,
  ) {
    let byValue = byDim.get(dim);
    if (!byValue) {
      byValue = new Map();
      byDim.set(dim, byValue);
    }
    let k = byValue.get(value);
    if (!k) {
      k = new BatchKey(runId, hour, dim, value);
      byValue.set(value, k);
    }
    return k;
  }

  /**
   * The groups of the last hour asked for (a request's records mostly share their hour), also by
   * their raw values: most lookups then need no value key (a JSON text) made.
   */
  private last: {
    runId: string;
    hour: number;
    byDim: Map<string, Map<string, BatchKey>>;
    raw: Map<string, Map<unknown, BatchKey>>;
  } | null = null;
  private readonly rawByHour = new Map<string, Map<string, Map<unknown, BatchKey>>>();

  private hourOf(runId: string, hour: number) {
    const last = this.last;
    if (last && last.hour === hour && last.runId === runId) return last;
    const hk = `${runId}\u0000${hour}`;
    let byDim = this.hours.get(hk);
    if (!byDim) {
      byDim = new Map();
      this.hours.set(hk, byDim);
    }
    let raw = this.rawByHour.get(hk);
    if (!raw) {
      raw = new Map();
      this.rawByHour.set(hk, raw);
    }
    this.last = { runId, hour, byDim, raw };
    return this.last;
  }

  /** Adds (sign 1) or takes off (sign -1) a record's part. */
  add(runId: string, r: RollupRecord, sign = 1): void {
    const at = this.hourOf(runId, hourOf(Number(r.created_at)));
    const facts = RecordParts.of(r);
    this.into(at, facts, sign, '', null);
    this.into(at, facts, sign, 'type', r.type);
    this.into(at, facts, sign, 'name', r.name);
    this.into(at, facts, sign, 'model', r.model);
    for (let i = 0; i < facts.keyed.length; i++)
      this.into(at, facts, sign, facts.keyed[i].name, facts.keyed[i].v);
    const user = jsonObject(r.user_metadata);
    if (user)
      for (const k in user) {
        const v = user[k];
        if (typeof v === 'string' && keptKey(`u:${k}`)) this.into(at, facts, sign, `u:${k}`, v);
      }
  }

  /** A record's parts into its group of `dim` (unless the dim overflowed); `v` the raw value. */
  private into(
    at: NonNullable<RollupBatch['last']>,
    facts: RecordParts,
    sign: number,
    dim: string,
    v: unknown,
  ): void {
    let raw = at.raw.get(dim);
    if (!raw) {
      raw = new Map();
      at.raw.set(dim, raw);
    }
    // A group already in the batch was admitted (a dim that overflowed since is not read anyway).
    let k = raw.get(v);
    if (!k) {
      // A dim past the cap (ids new for every request) costs no value key per record.
      if (this.dims?.isOverflowed(at.runId, dim)) return;
      const value = dim === '' ? 'null' : valueKey(v);
      if (!keptKey(value)) {
        this.dims?.overflowed(at.runId, dim);
        this.overflowOf(at.runId)(dim);
        return;
      }
      if (this.dims && !this.dims.admit(at.runId, dim, value, this.overflowOf(at.runId))) return;
      k = this.keyOf(at.runId, at.hour, at.byDim, dim, value);
      raw.set(v, k);
    }
    k.addParts(facts, sign);
  }

  private readonly overflowFns = new Map<string, (dim: string) => void>();
  /** The callback that records a dim of `runId` overflowing (one per log stream, not one per call). */
  private overflowOf(runId: string): (dim: string) => void {
    let f = this.overflowFns.get(runId);
    if (!f) {
      f = (d) => this.overflows.add(`${runId}\u0000${d}`);
      this.overflowFns.set(runId, f);
    }
    return f;
  }

  /**
   * An update: the old part off and the new one on. Min and max cannot be taken off, so the old
   * hour is dirty (its min and max may be stale) when the update takes a value off one of its rows:
   * a value changed or gone, a group left, the record moved to another hour. An update that only
   * adds (a judge's score written into a record, a metadata key set) puts back every value it takes
   * off and leaves the hour clean: under an LLM judge, marking those hours dirty had the recompute
   * read every hour of a 10,000,000-record log stream again and again.
   */
  replace(runId: string, before: RollupRecord, after: RollupRecord): void {
    const h0 = hourOf(Number(before.created_at));
    const h1 = hourOf(Number(after.created_at));
    const was = recordFacts(before);
    const is = recordFacts(after);
    if (h0 === h1 && JSON.stringify(was) === JSON.stringify(is)) return;
    this.add(runId, before, -1);
    this.add(runId, after, 1);
    if (h0 !== h1 || !putsBack(was, is)) this.dirty.add(`${runId}\u0000${h0}`);
  }

  /**
   * The batch's count, scalar and metric rows, ANY_VALUE rows of the subtractive dims included;
   * `sorted`: each list in the order of its key (PostgreSQL locks rows in this order).
   */
  rows(sorted = true): { counts: CountRow[]; scalars: ScalarRow[]; metrics: MetricRow[] } {
    const all: BatchKey[] = [];
    for (const byDim of this.hours.values())
      for (const [dim, byValue] of byDim) {
        let any: BatchKey | null = null;
        for (const k of byValue.values()) {
          all.push(k);
          if (!subtractive(dim)) continue;
          // The ANY_VALUE row: the sum of the dim's values (kept once, here, not per record).
          any ??= new BatchKey(k.run_id, k.hour, dim, ANY_VALUE);
          any.absorb(k);
        }
        if (any) all.push(any);
      }
    if (sorted) {
      const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
      all.sort(
        (a, b) => cmp(a.run_id, b.run_id) || cmp(a.dim, b.dim) || cmp(a.value, b.value) || a.hour - b.hour,
      );
    }
    const counts: CountRow[] = [];
    const scalars: ScalarRow[] = [];
    const metrics: MetricRow[] = [];
    for (const k of all) {
      counts.push({ run_id: k.run_id, dim: k.dim, hour: k.hour, value: k.value, n: k.n });
      const any = k.value === ANY_VALUE;
      let cols: (Agg | null)[] | null = null;
      for (let i = 0; i < SCALAR_METRICS.length; i++) {
        const a = k.scalars[i];
        if (!a) continue;
        cols ??= new Array(SCALAR_METRICS.length).fill(null);
        cols[i] = a.agg(any);
      }
      if (cols) scalars.push({ run_id: k.run_id, dim: k.dim, value: k.value, hour: k.hour, cols });
      if (k.keyed)
        for (const [col, a] of k.keyed)
          metrics.push({ run_id: k.run_id, dim: k.dim, value: k.value, col, hour: k.hour, ...a.agg(any) });
    }
    if (sorted) metrics.sort((a, b) => (a.col < b.col ? -1 : a.col > b.col ? 1 : 0)); // stable: keys stay in order
    return { counts, scalars, metrics };
  }

  /** Adds a stored delta (rollupDelta): its records on, its updates' old parts off and new ones on. */
  absorbDelta(runId: string, body: string): void {
    const d = JSON.parse(body) as { a: DeltaFacts[]; r: [DeltaFacts, DeltaFacts][] };
    for (const f of d.a) this.add(runId, fromFacts(f));
    for (const [before, after] of d.r) this.replace(runId, fromFacts(before), fromFacts(after));
  }

  /** The days whose hours the batch changes (ordered: PostgreSQL locks their marks in this order). */
  touchedDays(): { run_id: string; day: number }[] {
    const days = new Map<string, { run_id: string; day: number }>();
    for (const k of this.hours.keys()) {
      const [run_id, hour] = k.split('\u0000');
      const day = dayOf(Number(hour));
      days.set(`${run_id}\u0000${day}`, { run_id, day });
    }
    return [...days.values()].sort((a, b) =>
      a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : a.day - b.day,
    );
  }

  dirtyHours(): { run_id: string; hour: number }[] {
    return [...this.dirty].sort().map((k) => {
      const [run_id, hour] = k.split('\u0000');
      return { run_id, hour: Number(hour) };
    });
  }

  overflowList(): { run_id: string; dim: string }[] {
    return [...this.overflows].sort().map((k) => {
      const [run_id, dim] = k.split('\u0000');
      return { run_id, dim };
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Days

const lower = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
const higher = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

/** Two aggregates of the same column as one (counts and sums add, min and max, sketches merge). */
function addAgg(into: Agg | null, a: Agg): Agg {
  if (!into) return { ...a, bins: [...a.bins] };
  return {
    c: into.c + a.c,
    s: into.s + a.s,
    t: into.t + a.t,
    lo: lower(into.lo, a.lo),
    hi: higher(into.hi, a.hi),
    bins: mergeBins(into.bins, a.bins),
  };
}

/**
 * Stored hour rows of one day (hour dims only) summed into that day's rows: dims dayDim(dim), `hour`
 * the day's start.
 */
export function sumIntoDays(
  day: number,
  rows: { counts: readonly CountRow[]; scalars: readonly ScalarRow[]; metrics: readonly MetricRow[] },
): { counts: CountRow[]; scalars: ScalarRow[]; metrics: MetricRow[] } {
  const counts = new Map<string, CountRow>();
  for (const r of rows.counts) {
    const k = `${r.dim}\u0000${r.value}`;
    const got = counts.get(k);
    if (got) got.n += r.n;
    else counts.set(k, { run_id: r.run_id, dim: dayDim(r.dim), hour: day, value: r.value, n: r.n });
  }
  const scalars = new Map<string, ScalarRow>();
  for (const r of rows.scalars) {
    const k = `${r.dim}\u0000${r.value}`;
    let got = scalars.get(k);
    if (!got) {
      got = { run_id: r.run_id, dim: dayDim(r.dim), value: r.value, hour: day, cols: r.cols.map(() => null) };
      scalars.set(k, got);
    }
    for (let i = 0; i < r.cols.length; i++) {
      const a = r.cols[i];
      if (a) got.cols[i] = addAgg(got.cols[i], a);
    }
  }
  const metrics = new Map<string, MetricRow>();
  for (const r of rows.metrics) {
    const k = `${r.dim}\u0000${r.value}\u0000${r.col}`;
    const got = metrics.get(k);
    const { run_id, dim, value, col, hour: _, ...agg } = r;
    const sum = addAgg(got ?? null, agg);
    metrics.set(k, { run_id, dim: got ? got.dim : dayDim(dim), value, col, hour: day, ...sum });
  }
  return { counts: [...counts.values()], scalars: [...scalars.values()], metrics: [...metrics.values()] };
}

/**
 * How a dashboard reads the whole hours [fullStart, fullEnd): runs of the built days (ascending,
 * each inside the range) from day rows, the hours around and between them from hour rows.
 */
export function rollupSegments(
  fullStart: number,
  fullEnd: number,
  builtDays: readonly number[],
): { days: boolean; lo: number; hi: number }[] {
  const out: { days: boolean; lo: number; hi: number }[] = [];
  let at = fullStart;
  for (const d of builtDays) {
    if (d > at) out.push({ days: false, lo: at, hi: d });
    const last = out[out.length - 1];
    if (last?.days && last.hi === d) last.hi = d + ROLLUP_DAY_US;
    else out.push({ days: true, lo: d, hi: d + ROLLUP_DAY_US });
    at = d + ROLLUP_DAY_US;
  }
  if (fullEnd > at) out.push({ days: false, lo: at, hi: fullEnd });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading

/** A metric a dashboard needs, as the rollups keep it: `col` its metric column (COUNT_COL: records). */
export interface RollupMetric {
  key: string;
  col: string;
  needs: Set<'sum' | 'min' | 'max' | 'true'>;
  percentiles: Set<number>;
  totalPercentiles: Set<number>;
}

export interface RollupQuery {
  firstUs: number;
  sizeUs: number;
  buckets: number;
  /** The dim grouped by, '' for none. */
  dim: string;
  metrics: RollupMetric[];
}

/** A stored row as a dashboard reads it (count rows as col COUNT_COL with c = n; bins as stored). */
export interface ReadRow {
  dim: string;
  hour: number;
  value: string;
  col: string;
  c: number;
  s: number | null;
  t: number | null;
  lo: number | null;
  hi: number | null;
  bins: unknown;
}

/**
 * The records per group value key over the range: the stored counts of the dim's values over the
 * clean whole hours (for a subtractive dim with its ANY_VALUE, and `noneTotal` the '' dim's count)
 * and the records of the rest of the range.
 */
export function groupCounts(
  dim: string,
  stored: Map<string, number>,
  noneTotal: number,
  records: RollupRecord[],
): Map<string, number> {
  const counts = new Map(stored);
  if (subtractive(dim)) {
    const none = noneTotal - (counts.get(ANY_VALUE) ?? 0);
    counts.delete(ANY_VALUE);
    if (none !== 0) counts.set('null', none);
  }
  for (const r of records) {
    const v = recordValue(r, dim);
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  for (const [k, n] of counts) if (n <= 0) counts.delete(k);
  return counts;
}

/** A cell's (or a group's) running aggregates; min and max unknown for a null group by subtraction. */
interface CellAcc {
  n: number;
  cols: Map<string, ColAcc>;
  noMinMax: boolean;
}

function colOf(acc: CellAcc, col: string): ColAcc {
  let a = acc.cols.get(col);
  if (!a) {
    a = newCol();
    acc.cols.set(col, a);
  }
  return a;
}

/** A cell's aggregates (store/widget-cells.ts aggregateSpecs names); null when min/max are unknown. */
function cellOf(
  b: number,
  g: unknown,
  acc: CellAcc,
  metrics: RollupMetric[],
  totals: boolean,
): Record<string, unknown> | null {
  const row: Record<string, unknown> = { b, g, n: acc.n };
  for (const m of metrics) {
    if (m.col === COUNT_COL) {
      if (!totals) row[`${m.key}_n`] = acc.n;
      continue;
    }
    const a = acc.cols.get(m.col) ?? newCol();
    const c = a.c;
    if (!totals) {
      row[`${m.key}_n`] = c;
      if (m.needs.has('sum')) row[`${m.key}_sum`] = c > 0 ? a.s : null;
      if (m.needs.has('true')) row[`${m.key}_true`] = c > 0 ? a.t : null;
      for (const op of ['min', 'max'] as const) {
        if (!m.needs.has(op)) continue;
        if (c > 0 && acc.noMinMax) return null;
        const v = op === 'min' ? a.lo : a.hi;
        row[`${m.key}_${op}`] = c > 0 && Number.isFinite(v) ? v : null;
      }
    }
    const ps = totals ? m.totalPercentiles : m.percentiles;
    for (const p of ps) row[`${m.key}_p${p}`] = quantile(a.bins, p);
  }
  return row;
}

export interface RollupAnswer {
  cells: Record<string, unknown>[];
  /** Per shown group: whole-range percentiles (when a widget asks for them). */
  totals: Record<string, unknown>[];
}

/**
 * Widget cells of the shown groups (value keys) from stored rows of the clean whole hours (the
 * grouped dim's rows of those values; for a subtractive dim whose null group is shown, also the ''
 * dim's rows and the dim's ANY_VALUE rows) and the records of the rest of the range (parts of hours
 * at its ends, dirty hours). Null when a needed min or max is unknown.
 */
export function rollupCells(
  q: RollupQuery,
  shown: Set<string>,
  rows: ReadRow[],
  records: RollupRecord[],
): RollupAnswer | null {
  const byCell = new Map<string, CellAcc>();
  const byGroup = new Map<string, CellAcc>();
  const totalCols = new Set(q.metrics.filter((m) => m.totalPercentiles.size > 0).map((m) => m.col));
  const accOf = (into: Map<string, CellAcc>, key: string) => {
    let a = into.get(key);
    if (!a) {
      a = { n: 0, cols: new Map(), noMinMax: false };
      into.set(key, a);
    }
    return a;
  };
  const bucketOf = (at: number) => Math.floor((at - q.firstUs) / q.sizeUs);
  const nullBySubtraction = subtractive(q.dim) && shown.has('null');
  for (const r of rows) {
    const bucket = bucketOf(r.hour);
    if (bucket < 0 || bucket >= q.buckets) continue;
    let value: string;
    let sign = 1;
    if (r.dim === q.dim && r.value !== ANY_VALUE) value = r.value;
    else if (nullBySubtraction && r.dim === q.dim) {
      value = 'null';
      sign = -1;
    } else if (nullBySubtraction && r.dim === '') value = 'null';
    else continue;
    if (!shown.has(value)) continue;
    const cell = accOf(byCell, `${bucket}\u0000${value}`);
    const group = accOf(byGroup, value);
    if (value === 'null' && nullBySubtraction) {
      cell.noMinMax = true;
      group.noMinMax = true;
    }
    if (r.col === COUNT_COL) {
      cell.n += sign * r.c;
      group.n += sign * r.c;
      continue;
    }
    const part: ColAcc = {
      c: r.c,
      s: r.s ?? 0,
      t: r.t ?? 0,
      lo: r.lo ?? Number.POSITIVE_INFINITY,
      hi: r.hi ?? Number.NEGATIVE_INFINITY,
      bins: new Map(),
    };
    const a = colOf(cell, r.col);
    if (r.bins !== null && r.bins !== undefined) {
      const pairs = decodeBins(r.bins);
      addPairs(a.bins, pairs, sign);
      if (totalCols.has(r.col)) addPairs(colOf(group, r.col).bins, pairs, sign);
    }
    addCol(a, part, sign);
  }
  for (const r of records) {
    const value = recordValue(r, q.dim);
    if (!shown.has(value)) continue;
    const bucket = bucketOf(Number(r.created_at));
    if (bucket < 0 || bucket >= q.buckets) continue;
    const cell = accOf(byCell, `${bucket}\u0000${value}`);
    const group = accOf(byGroup, value);
    cell.n++;
    group.n++;
    for (const [col, v, code] of recordFacts(r).parts) {
      const a = colOf(cell, col);
      a.c++;
      a.s += v;
      if (v === 1) a.t++;
      if (v < a.lo) a.lo = v;
      if (v > a.hi) a.hi = v;
      addCode(a.bins, code, 1);
      if (totalCols.has(col)) addCode(colOf(group, col).bins, code, 1);
    }
  }
  const value = (key: string) => JSON.parse(key) as unknown;
  const cells: Record<string, unknown>[] = [];
  for (const [key, acc] of byCell) {
    if (acc.n <= 0) continue;
    const at = key.indexOf('\u0000');
    const cell = cellOf(Number(key.slice(0, at)), value(key.slice(at + 1)), acc, q.metrics, false);
    if (!cell) return null;
    cells.push(cell);
  }
  const totals: Record<string, unknown>[] = [];
  if (totalCols.size)
    for (const [key, acc] of byGroup) {
      if (acc.n <= 0) continue;
      totals.push(cellOf(-1, value(key), acc, q.metrics, true) as Record<string, unknown>);
    }
  return { cells, totals };
}
