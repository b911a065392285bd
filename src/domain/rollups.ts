/**
 * Dashboard rollups: per log stream, hour and group value, the aggregates that trends widgets need,
 * kept when records arrive (store/ingest.ts) so that a dashboard reads hours, not records.
 *
 * A rollup's data is one flat object of numbers, so that two merge key by key in JavaScript or in
 * SQL (store/rollups.ts): `n` the records; per metric column `<col>|c` its values, `|s` their sum,
 * `|t` those equal to 1, `|lo` and `|hi` their min and max, and its DDSketch bins (`|z`, `|p<bin>`,
 * `|q<bin>`, domain/ddsketch.ts). Keys ending in `|lo` merge by min, `|hi` by max, all others add.
 * Everything but min and max also subtracts: an update takes its old row's part off and adds the new
 * one, and marks the hour dirty (its min and max may be stale) so that readers compute it from the
 * records until it is recomputed.
 *
 * Groups (dims): '' (none), the scalar columns type, name and model, `u:<key>` (a user metadata key,
 * its text values) and `m:<key>` (a score, its number values). A record without a text value of a
 * metadata key (or a number of a score) is in that dim's null group, which is not stored: it is the
 * hour's '' rollup minus the dim's stored values (min and max aside).
 */
import { type Sketch, addAt, emptySketch, quantile, sketchKey } from './ddsketch.ts';

/** The rollups' hour (µs). Dashboards whose interval is a multiple of it read rollups. */
export const ROLLUP_BUCKET_US = 3_600_000_000;

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

export type RollupData = Record<string, number>;

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

const parsed = (v: unknown): Record<string, unknown> | null => {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') {
    try {
      const o = JSON.parse(v);
      return o && typeof o === 'object' && !Array.isArray(o) ? o : null;
    } catch {
      return null;
    }
  }
  return typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
};

export const hourOf = (createdAt: number) => Math.floor(createdAt / ROLLUP_BUCKET_US) * ROLLUP_BUCKET_US;

/** The value of a group, as stored (JSON text). */
export const valueKey = (v: unknown) => JSON.stringify(v ?? null);

/** Merges `b` into `a` (min for `|lo`, max for `|hi`, sums for the rest); `sign` -1 subtracts (lo/hi skipped). */
export function mergeData(a: RollupData, b: RollupData, sign = 1): RollupData {
  for (const k in b) {
    const v = b[k];
    if (k.endsWith('|lo')) {
      if (sign < 0) continue;
      const cur = a[k];
      a[k] = cur === undefined || v < cur ? v : cur;
    } else if (k.endsWith('|hi')) {
      if (sign < 0) continue;
      const cur = a[k];
      a[k] = cur === undefined || v > cur ? v : cur;
    } else a[k] = (a[k] ?? 0) + sign * v;
  }
  return a;
}

/** `rollup_merge` of SQLite (migration 030 has PostgreSQL's): mergeData over JSON text. */
export function rollupMergeText(a: string, b: string): string {
  return JSON.stringify(mergeData(JSON.parse(a) as RollupData, JSON.parse(b) as RollupData));
}

/** A record's metric values (column, value, sketch key) and its groups as [dim, value key]. */
export function recordFacts(r: RollupRecord): {
  parts: [string, number, string][];
  dims: [string, string][];
} {
  const parts: [string, number, string][] = [];
  for (const col of SCALAR_METRICS) {
    const v = r[col];
    if (v === null || v === undefined) continue;
    const x = Number(v);
    parts.push([col, x, sketchKey(x)]);
  }
  const dims: [string, string][] = [
    ['', 'null'],
    ['type', valueKey(r.type)],
    ['name', valueKey(r.name)],
    ['model', valueKey(r.model)],
  ];
  const metrics = parsed(r.metrics);
  if (metrics)
    for (const k in metrics) {
      const v = metrics[k];
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      parts.push([`m:${k}`, v, sketchKey(v)]);
      dims.push([`m:${k}`, valueKey(v)]);
    }
  const user = parsed(r.user_metadata);
  if (user)
    for (const k in user) {
      const v = user[k];
      if (typeof v === 'string') dims.push([`u:${k}`, valueKey(v)]);
    }
  return { parts, dims };
}

/** One record's part of a rollup, and its groups as [dim, value key]. */
export function recordPart(r: RollupRecord): { data: RollupData; dims: [string, string][] } {
  const { parts, dims } = recordFacts(r);
  const data: RollupData = { n: 1 };
  for (const [col, v, bin] of parts) {
    data[`${col}|c`] = 1;
    data[`${col}|s`] = v;
    if (v === 1) data[`${col}|t`] = 1;
    data[`${col}|lo`] = v;
    data[`${col}|hi`] = v;
    data[`${col}|${bin}`] = 1;
  }
  return { data, dims };
}

/** A metric column's running aggregates in a batch. */
interface ColAcc {
  c: number;
  s: number;
  t: number;
  lo: number;
  hi: number;
  bins: Map<string, number>;
}

/** One key's running aggregates in a batch (numbers, not the flat data: cheaper per record). */
interface KeyAcc {
  delta: Omit<RollupDelta, 'data'>;
  n: number;
  cols: Map<string, ColAcc>;
}

function flatData(k: KeyAcc): RollupData {
  const data: RollupData = { n: k.n };
  for (const [col, a] of k.cols) {
    data[`${col}|c`] = a.c;
    data[`${col}|s`] = a.s;
    if (a.t !== 0) data[`${col}|t`] = a.t;
    if (a.lo !== Number.POSITIVE_INFINITY) data[`${col}|lo`] = a.lo;
    if (a.hi !== Number.NEGATIVE_INFINITY) data[`${col}|hi`] = a.hi;
    for (const [bin, c] of a.bins) if (c !== 0) data[`${col}|${bin}`] = c;
  }
  return data;
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

export interface RollupDelta {
  run_id: string;
  hour: number;
  dim: string;
  value: string;
  data: RollupData;
}

/** A batch's rollup changes, merged per (log stream, hour, dim, value): one upsert each. */
export class RollupBatch {
  private readonly deltas = new Map<string, KeyAcc>();
  readonly dirty = new Set<string>();
  readonly overflows = new Set<string>();

  constructor(private readonly dims: DimValues | null) {}

  get empty(): boolean {
    return this.deltas.size === 0 && this.dirty.size === 0 && this.overflows.size === 0;
  }

  /** Adds (sign 1) or takes off (sign -1) a record's part. */
  add(runId: string, r: RollupRecord, sign = 1): void {
    const hour = hourOf(Number(r.created_at));
    const { parts, dims } = recordFacts(r);
    for (const [dim, value] of dims) {
      if (this.dims && !this.dims.admit(runId, dim, value, (d) => this.overflows.add(`${runId}\u0000${d}`)))
        continue;
      const key = `${runId}\u0000${hour}\u0000${dim}\u0000${value}`;
      let k = this.deltas.get(key);
      if (!k) {
        k = { delta: { run_id: runId, hour, dim, value }, n: 0, cols: new Map() };
        this.deltas.set(key, k);
      }
      k.n += sign;
      for (const [col, v, bin] of parts) {
        let a = k.cols.get(col);
        if (!a) {
          a = {
            c: 0,
            s: 0,
            t: 0,
            lo: Number.POSITIVE_INFINITY,
            hi: Number.NEGATIVE_INFINITY,
            bins: new Map(),
          };
          k.cols.set(col, a);
        }
        a.c += sign;
        a.s += sign * v;
        if (v === 1) a.t += sign;
        if (sign > 0) {
          if (v < a.lo) a.lo = v;
          if (v > a.hi) a.hi = v;
        }
        a.bins.set(bin, (a.bins.get(bin) ?? 0) + sign);
      }
    }
  }

  /** An update: the old part off and the new one on; the hour is dirty when anything kept changed. */
  replace(runId: string, before: RollupRecord, after: RollupRecord): void {
    const a = recordPart(before);
    const b = recordPart(after);
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    this.add(runId, before, -1);
    this.add(runId, after, 1);
    this.dirty.add(`${runId}\u0000${hourOf(Number(after.created_at))}`);
  }

  /** The deltas, sorted by key (PostgreSQL locks rows in this order). */
  list(): RollupDelta[] {
    return [...this.deltas.entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([, k]) => ({ ...k.delta, data: flatData(k) }));
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
// Reading

/** A metric a dashboard needs, as the rollups keep it: `col` its data prefix, or '#n' for the record count. */
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

/** A group's accumulated data, and whether its min and max are unknown (null groups by subtraction). */
interface Acc {
  data: RollupData;
  noMinMax: boolean;
}

function accumulate(into: Map<string, Acc>, key: string, data: RollupData, noMinMax: boolean) {
  const a = into.get(key);
  if (a) {
    mergeData(a.data, data);
    a.noMinMax ||= noMinMax;
  } else into.set(key, { data: mergeData({}, data), noMinMax });
}

function sketchOf(data: RollupData, col: string): Sketch {
  const s = emptySketch();
  const prefix = `${col}|`;
  for (const k in data) {
    if (!k.startsWith(prefix)) continue;
    const rest = k.slice(prefix.length);
    if (rest === 'z' || rest[0] === 'p' || rest[0] === 'q') addAt(s, rest, data[k]);
  }
  return s;
}

/** A cell's aggregates (store/widget-cells.ts aggregateSpecs names) from rollup data; null when min/max are unknown. */
function cellOf(
  b: number,
  g: unknown,
  acc: Acc,
  metrics: RollupMetric[],
  totals: boolean,
): Record<string, unknown> | null {
  const d = acc.data;
  const row: Record<string, unknown> = { b, g, n: d.n ?? 0 };
  for (const m of metrics) {
    if (m.col === '#n') {
      if (!totals) row[`${m.key}_n`] = d.n ?? 0;
      continue;
    }
    const c = d[`${m.col}|c`] ?? 0;
    if (!totals) {
      row[`${m.key}_n`] = c;
      if (m.needs.has('sum')) row[`${m.key}_sum`] = c > 0 ? (d[`${m.col}|s`] ?? 0) : null;
      if (m.needs.has('true')) row[`${m.key}_true`] = c > 0 ? (d[`${m.col}|t`] ?? 0) : null;
      for (const op of ['min', 'max'] as const) {
        if (!m.needs.has(op)) continue;
        if (c > 0 && acc.noMinMax) return null;
        row[`${m.key}_${op}`] = c > 0 ? (d[`${m.col}|${op === 'min' ? 'lo' : 'hi'}`] ?? null) : null;
      }
    }
    const ps = totals ? m.totalPercentiles : m.percentiles;
    if (ps.size) {
      const s = sketchOf(d, m.col);
      for (const p of ps) row[`${m.key}_p${p}`] = quantile(s, p);
    }
  }
  return row;
}

/**
 * The part of rollup data that cells (or, for `totals`, the whole-range percentiles and group counts)
 * need: `n`, and per metric column its aggregates and, when percentiles are wanted, its bins.
 */
function keyFilter(metrics: RollupMetric[], totals: boolean): (d: RollupData) => RollupData {
  const want = new Map<string, boolean>();
  for (const m of metrics) {
    if (m.col === '#n') continue;
    const bins = (totals ? m.totalPercentiles : m.percentiles).size > 0;
    if (totals && !bins) continue;
    want.set(m.col, (want.get(m.col) ?? false) || bins);
  }
  return (d) => {
    const out: RollupData = { n: d.n ?? 0 };
    if (want.size === 0) return out;
    for (const k in d) {
      const at = k.lastIndexOf('|');
      if (at < 0) continue;
      const bins = want.get(k.slice(0, at));
      if (bins === undefined) continue;
      const stat = k.slice(at + 1);
      const isBin = stat === 'z' || stat[0] === 'p' || stat[0] === 'q';
      if (isBin ? bins : !totals) out[k] = d[k];
    }
    return out;
  };
}

export interface RollupAnswer {
  /** Per (bucket, group value key): cells; per group: whole-range totals (percentiles). */
  counts: Map<unknown, number>;
  cells: Record<string, unknown>[];
  totals: Record<string, unknown>[];
}

/**
 * Widget cells from stored rollup rows of the clean whole hours (the grouped dim's and, for a dim
 * with a null group by subtraction, the '' dim's) and the records of the rest of the range (parts of
 * hours at its ends, dirty hours). Null when a needed min or max is unknown.
 */
export function rollupCells(
  q: RollupQuery,
  rows: RollupDelta[],
  records: RollupRecord[],
): RollupAnswer | null {
  const byCell = new Map<string, Acc>();
  const byGroup = new Map<string, Acc>();
  const bucketOf = (at: number) => Math.floor((at - q.firstUs) / q.sizeUs);
  // Only the keys the metrics need (a row holds every metric's aggregates and sketch bins); the
  // group totals need the counts, and the bins of whole-range percentiles.
  const cellKeys = keyFilter(q.metrics, false);
  const totalKeys = keyFilter(q.metrics, true);
  const add = (bucket: number, value: string, data: RollupData, noMinMax: boolean) => {
    if (bucket < 0 || bucket >= q.buckets) return;
    accumulate(byCell, `${bucket}\u0000${value}`, cellKeys(data), noMinMax);
    accumulate(byGroup, value, totalKeys(data), noMinMax);
  };
  const subtractive = q.dim.startsWith('u:') || q.dim.startsWith('m:');
  const rest = new Map<number, RollupData>();
  const restKeys = (d: RollupData) => Object.assign(cellKeys(d), totalKeys(d));
  for (const r of rows) {
    if (r.dim === q.dim) {
      add(bucketOf(r.hour), r.value, r.data, false);
      if (subtractive) mergeData(rest.get(r.hour) ?? rest.set(r.hour, {}).get(r.hour)!, restKeys(r.data), -1);
    } else if (subtractive && r.dim === '') {
      mergeData(rest.get(r.hour) ?? rest.set(r.hour, {}).get(r.hour)!, restKeys(r.data));
    }
  }
  for (const [hour, data] of rest) if ((data.n ?? 0) !== 0) add(bucketOf(hour), 'null', data, true);
  for (const r of records) {
    const { data, dims } = recordPart(r);
    const dim = dims.find(([d]) => d === q.dim);
    add(bucketOf(Number(r.created_at)), dim ? dim[1] : 'null', data, false);
  }
  const counts = new Map<unknown, number>();
  const value = (key: string) => JSON.parse(key) as unknown;
  for (const [key, acc] of byGroup) if ((acc.data.n ?? 0) > 0) counts.set(value(key), acc.data.n);
  const cells: Record<string, unknown>[] = [];
  for (const [key, acc] of byCell) {
    if ((acc.data.n ?? 0) <= 0) continue;
    const at = key.indexOf('\u0000');
    const cell = cellOf(Number(key.slice(0, at)), value(key.slice(at + 1)), acc, q.metrics, false);
    if (!cell) return null;
    cells.push(cell);
  }
  const totals: Record<string, unknown>[] = [];
  if (q.metrics.some((m) => m.totalPercentiles.size > 0))
    for (const [key, acc] of byGroup) {
      if ((acc.data.n ?? 0) <= 0) continue;
      totals.push(cellOf(-1, value(key), acc, q.metrics, true)!);
    }
  return { counts, cells, totals };
}
