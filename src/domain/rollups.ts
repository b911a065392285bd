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
import { type Sketch, addCode, addPairs, binCode, decodeBins, quantile, sketchPairs } from './ddsketch.ts';

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
  const metrics = parsed(r.metrics);
  if (metrics)
    for (const k in metrics) {
      const v = metrics[k];
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      parts.push([`m:${k}`, v, binCode(v)]);
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

/** A stored metric row: a metric column's aggregates over a (log stream, dim, value, hour). */
export interface MetricRow {
  run_id: string;
  dim: string;
  value: string;
  col: string;
  hour: number;
  c: number;
  s: number;
  t: number;
  lo: number | null;
  hi: number | null;
  /** The DDSketch as code/count pairs, codes ascending. */
  bins: number[];
}

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

/** One key's running aggregates in a batch. */
interface KeyAcc {
  run_id: string;
  hour: number;
  dim: string;
  value: string;
  n: number;
  cols: Map<string, ColAcc>;
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

/** A batch's rollup changes, merged per (log stream, hour, dim, value): one upsert per row. */
export class RollupBatch {
  private readonly keys = new Map<string, KeyAcc>();
  readonly dirty = new Set<string>();
  readonly overflows = new Set<string>();

  constructor(private readonly dims: DimValues | null) {}

  get empty(): boolean {
    return this.keys.size === 0 && this.dirty.size === 0 && this.overflows.size === 0;
  }

  /** Adds (sign 1) or takes off (sign -1) a record's part. */
  add(runId: string, r: RollupRecord, sign = 1): void {
    const hour = hourOf(Number(r.created_at));
    const { parts, dims } = recordFacts(r);
    for (const [dim, value] of dims) {
      if (this.dims && !this.dims.admit(runId, dim, value, (d) => this.overflows.add(`${runId}\u0000${d}`)))
        continue;
      const key = `${runId}\u0000${hour}\u0000${dim}\u0000${value}`;
      let k = this.keys.get(key);
      if (!k) {
        k = { run_id: runId, hour, dim, value, n: 0, cols: new Map() };
        this.keys.set(key, k);
      }
      k.n += sign;
      for (const [col, v, code] of parts) {
        let a = k.cols.get(col);
        if (!a) {
          a = newCol();
          k.cols.set(col, a);
        }
        a.c += sign;
        a.s += sign * v;
        if (v === 1) a.t += sign;
        if (sign > 0) {
          if (v < a.lo) a.lo = v;
          if (v > a.hi) a.hi = v;
        }
        a.bins.set(code, (a.bins.get(code) ?? 0) + sign);
      }
    }
  }

  /** An update: the old part off and the new one on; the hour is dirty when anything kept changed. */
  replace(runId: string, before: RollupRecord, after: RollupRecord): void {
    const h0 = hourOf(Number(before.created_at));
    const h1 = hourOf(Number(after.created_at));
    if (h0 === h1 && JSON.stringify(recordFacts(before)) === JSON.stringify(recordFacts(after))) return;
    this.add(runId, before, -1);
    this.add(runId, after, 1);
    this.dirty.add(`${runId}\u0000${h0}`);
    this.dirty.add(`${runId}\u0000${h1}`);
  }

  /**
   * The batch's count and metric rows, each list sorted by its key (PostgreSQL locks rows in this
   * order), with the ANY_VALUE rows of the subtractive dims.
   */
  rows(): { counts: CountRow[]; metrics: MetricRow[] } {
    const any = new Map<string, KeyAcc>();
    for (const k of this.keys.values()) {
      if (!subtractive(k.dim)) continue;
      const key = `${k.run_id}\u0000${k.hour}\u0000${k.dim}`;
      let a = any.get(key);
      if (!a) {
        a = { run_id: k.run_id, hour: k.hour, dim: k.dim, value: ANY_VALUE, n: 0, cols: new Map() };
        any.set(key, a);
      }
      a.n += k.n;
      for (const [col, c] of k.cols) {
        let into = a.cols.get(col);
        if (!into) {
          into = newCol();
          a.cols.set(col, into);
        }
        addCol(into, c);
      }
    }
    const all = [...this.keys.values(), ...any.values()];
    const counts: CountRow[] = all.map((k) => ({
      run_id: k.run_id,
      dim: k.dim,
      hour: k.hour,
      value: k.value,
      n: k.n,
    }));
    const metrics: MetricRow[] = [];
    for (const k of all)
      for (const [col, a] of k.cols)
        metrics.push({
          run_id: k.run_id,
          dim: k.dim,
          value: k.value,
          col,
          hour: k.hour,
          c: a.c,
          s: a.s,
          t: a.t,
          // The ANY_VALUE rows' min and max are never read (the null group's are not known).
          lo: k.value === ANY_VALUE || a.lo === Number.POSITIVE_INFINITY ? null : a.lo,
          hi: k.value === ANY_VALUE || a.hi === Number.NEGATIVE_INFINITY ? null : a.hi,
          bins: sketchPairs(a.bins),
        });
    const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
    counts.sort(
      (a, b) => cmp(a.run_id, b.run_id) || cmp(a.dim, b.dim) || a.hour - b.hour || cmp(a.value, b.value),
    );
    metrics.sort(
      (a, b) =>
        cmp(a.run_id, b.run_id) ||
        cmp(a.dim, b.dim) ||
        cmp(a.value, b.value) ||
        cmp(a.col, b.col) ||
        a.hour - b.hour,
    );
    return { counts, metrics };
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
