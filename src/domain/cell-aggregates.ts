/**
 * Widget aggregates per (bucket, group) cell computed from the matching records' values, with a
 * hash table rather than SQL's GROUP BY.
 *
 * SQLite has no hash aggregation: GROUP BY sorts every matching row, which over 1,000,000 records
 * costs more than the scan itself. The SQLite reader therefore reads each bucket's values as JSON
 * arrays (one aggregate call per column, no sort) and groups them here. The definitions are those
 * of the SQL (store/widget-cells.ts) and of `aggregate` (domain/dashboards.ts).
 */
import { percentileIndex } from './dashboards.ts';

/** One aggregate column of a cell: what it computes over which metric (index into the value lists). */
export interface AggregateSpec {
  name: string;
  /** `total`: a sum that is 0 without values (a count kept per record: annotations). */
  op: 'n' | 'count' | 'sum' | 'total' | 'min' | 'max' | 'true' | 'percentile';
  metric: number;
  percent?: number;
}

/**
 * The values of one read: per record its bucket (or one bucket for all), group and metric values
 * (NaN for SQL NULL); null for a metric never NULL that is only counted (its count is the record
 * count).
 */
export interface CellValues {
  bucket: number | ArrayLike<number>;
  groups: ArrayLike<unknown>;
  metrics: readonly (Float64Array | null)[];
}

/** Cells in columns: bucket, group and, per aggregate spec, the values (NaN for SQL NULL). */
export interface CellTable {
  b: number[];
  g: unknown[];
  values: Float64Array[];
}

/** A JSON array of numbers and nulls as a Float64Array with NaN for null. */
export function numbers(list: readonly (number | null)[]): Float64Array {
  const out = new Float64Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const v = list[i];
    out[i] = v === null ? Number.NaN : v;
  }
  return out;
}

/**
 * The cells of `values`, with their aggregates in the order of `specs`. A cell exists for each
 * (bucket, group) with at least one record.
 */
export function aggregateCells(specs: readonly AggregateSpec[], values: CellValues): CellTable {
  const { bucket, groups, metrics } = values;
  const rows = groups.length;
  // Cell of each record, and the (bucket, group) of each cell.
  const cellOf = new Int32Array(rows);
  const cellBucket: number[] = [];
  const cellGroup: unknown[] = [];
  const index = new Map<number, Map<unknown, number>>();
  // Consecutive records mostly share a bucket: look its table of groups up once per run of them.
  let lastBucket = Number.NaN;
  let inBucket = new Map<unknown, number>();
  for (let i = 0; i < rows; i++) {
    const b = typeof bucket === 'number' ? bucket : bucket[i];
    if (b !== lastBucket) {
      lastBucket = b;
      inBucket = index.get(b) ?? new Map();
      index.set(b, inBucket);
    }
    const g = groups[i] ?? null;
    let c = inBucket.get(g);
    if (c === undefined) {
      c = cellBucket.length;
      inBucket.set(g, c);
      cellBucket.push(b);
      cellGroup.push(g);
    }
    cellOf[i] = c;
  }
  const cells = cellBucket.length;
  const sorted = new Map<number, { start: Int32Array; values: Float64Array }>();
  return {
    b: cellBucket,
    g: cellGroup,
    values: specs.map((spec) => computeColumn(spec, metrics[spec.metric] ?? null, cellOf, cells, sorted)),
  };
}

function computeColumn(
  spec: AggregateSpec,
  v: Float64Array | null,
  cellOf: Int32Array,
  cells: number,
  sorted: Map<number, { start: Int32Array; values: Float64Array }>,
): Float64Array {
  const rows = cellOf.length;
  const out = new Float64Array(cells);
  if (spec.op === 'n' || v === null) {
    for (let i = 0; i < rows; i++) out[cellOf[i]]++;
    return out;
  }
  switch (spec.op) {
    case 'count':
    case 'true':
      for (let i = 0; i < rows; i++) {
        const x = v[i];
        if (spec.op === 'count' ? !Number.isNaN(x) : x === 1) out[cellOf[i]]++;
      }
      return out;
    case 'sum':
    case 'total': {
      // Kahan–Babuška–Neumaier, as SQLite's total(): the sum of many floats keeps its precision.
      const err = new Float64Array(cells);
      for (let i = 0; i < rows; i++) {
        const x = v[i];
        if (Number.isNaN(x)) continue;
        const c = cellOf[i];
        const s = out[c];
        const t = s + x;
        err[c] += Math.abs(s) >= Math.abs(x) ? s - t + x : x - t + s;
        out[c] = t;
      }
      for (let c = 0; c < cells; c++) out[c] += err[c];
      return out;
    }
    case 'min':
    case 'max': {
      out.fill(Number.NaN);
      const min = spec.op === 'min';
      for (let i = 0; i < rows; i++) {
        const x = v[i];
        if (Number.isNaN(x)) continue;
        const c = cellOf[i];
        const cur = out[c];
        if (Number.isNaN(cur) || (min ? x < cur : x > cur)) out[c] = x;
      }
      return out;
    }
    case 'percentile': {
      const s = sorted.get(spec.metric) ?? byCell(v, cellOf, cells);
      sorted.set(spec.metric, s);
      for (let c = 0; c < cells; c++) {
        const from = s.start[c];
        const n = s.start[c + 1] - from;
        out[c] =
          n > 0 ? select(s.values, from, from + n - 1, from + percentileIndex(n, spec.percent!)) : Number.NaN;
      }
      return out;
    }
    default:
      throw new Error(`unknown aggregate ${spec.op}`);
  }
}

/** The present values grouped by cell: cell c's at [start[c], start[c + 1]). */
function byCell(v: Float64Array, cellOf: Int32Array, cells: number) {
  const start = new Int32Array(cells + 1);
  for (let i = 0; i < cellOf.length; i++) if (!Number.isNaN(v[i])) start[cellOf[i] + 1]++;
  for (let c = 0; c < cells; c++) start[c + 1] += start[c];
  const values = new Float64Array(start[cells]);
  const at = start.slice(0, cells);
  for (let i = 0; i < cellOf.length; i++) {
    const x = v[i];
    if (!Number.isNaN(x)) values[at[cellOf[i]]++] = x;
  }
  return { start, values };
}

/**
 * The value that sorting a[lo..hi] would put at position k (Hoare's selection: linear time on
 * average, where a sort takes n log n). It reorders a[lo..hi] around k, which later selections
 * in the same range only speed up.
 */
export function select(a: Float64Array, lo: number, hi: number, k: number): number {
  let l = lo;
  let h = hi;
  while (l < h) {
    // Median of three as the pivot: sorted or constant runs stay linear.
    const m = (l + h) >>> 1;
    if (a[m] < a[l]) swap(a, m, l);
    if (a[h] < a[l]) swap(a, h, l);
    if (a[h] < a[m]) swap(a, h, m);
    const pivot = a[m];
    let i = l;
    let j = h;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        swap(a, i, j);
        i++;
        j--;
      }
    }
    if (k <= j) h = j;
    else if (k >= i) l = i;
    else return a[k];
  }
  return a[k];
}

function swap(a: Float64Array, i: number, j: number): void {
  const t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/** One read of a grouped scan: per record its bucket (or one for all), group index and metric values. */
interface ScanRead {
  bucket: number | Int32Array;
  group: Int32Array;
  metrics: (Float64Array | null)[];
}

/** The cells of the shown groups (`placeOf`: a group index's place among them, or -1) of read `r`. */
function shownCells(
  r: ScanRead,
  specs: readonly AggregateSpec[],
  shown: readonly unknown[],
  placeOf: Int32Array,
): CellTable {
  // Cell ids are dense: (bucket - first bucket) × shown groups + the group's place among them.
  const fixed = typeof r.bucket === 'number';
  let low = fixed ? (r.bucket as number) : Number.POSITIVE_INFINITY;
  let high = fixed ? (r.bucket as number) : Number.NEGATIVE_INFINITY;
  let total = 0;
  for (let i = 0; i < r.group.length; i++) {
    if (placeOf[r.group[i]] < 0) continue;
    total++;
    if (!fixed) {
      const b = (r.bucket as Int32Array)[i];
      if (b < low) low = b;
      if (b > high) high = b;
    }
  }
  if (total === 0) return { b: [], g: [], values: specs.map(() => new Float64Array(0)) };
  const width = shown.length;
  const cellOf = new Int32Array(total);
  const metrics = r.metrics.map((m) => (m ? new Float64Array(total) : null));
  const fixedCell = fixed ? ((r.bucket as number) - low) * width : -1;
  let at = 0;
  for (let i = 0; i < r.group.length; i++) {
    const k = placeOf[r.group[i]];
    if (k < 0) continue;
    cellOf[at] = (fixed ? fixedCell : ((r.bucket as Int32Array)[i] - low) * width) + k;
    for (let m = 0; m < metrics.length; m++) {
      const into = metrics[m];
      if (into !== null) into[at] = (r.metrics[m] as Float64Array)[i];
    }
    at++;
  }
  const dense = (high - low + 1) * width;
  const sorted = new Map<number, { start: Int32Array; values: Float64Array }>();
  const columns = specs.map((spec) =>
    computeColumn(spec, metrics[spec.metric] ?? null, cellOf, dense, sorted),
  );
  // Only the cells that have records.
  const present = new Uint8Array(dense);
  for (let i = 0; i < total; i++) present[cellOf[i]] = 1;
  const keep: number[] = [];
  for (let c = 0; c < dense; c++) if (present[c]) keep.push(c);
  return {
    b: keep.map((c) => low + Math.floor(c / width)),
    g: keep.map((c) => shown[c % width]),
    values: columns.map((col) => Float64Array.from(keep, (c) => col[c])),
  };
}

/**
 * A read is aggregated when added if its cells are at most 1 per this many records (counted as its
 * distinct groups times its buckets): its cells then take less memory than its records' values (a
 * few groups, as people group by type, model or a metadata key of few values), and the scan's memory
 * follows the cells, not the records in range (at 10,000,000 records, hundreds of MB). Reads of many
 * groups (a group per session) stay as values: most of their groups will not be shown, and a cell
 * costs more than a value.
 */
const AGGREGATE_AT_RATIO = 4;

/** A read aggregated when added: its cells (bucket, group index) with the scan's aggregates. */
interface ReadCells {
  bucket: Int32Array;
  group: Int32Array;
  values: Float64Array[];
}

/** How many buckets a read's records span, from its lowest to its highest (1 for one bucket). */
function bucketSpan(bucket: number | ArrayLike<number>): number {
  if (typeof bucket === 'number') return 1;
  let low = Number.POSITIVE_INFINITY;
  let high = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < bucket.length; i++) {
    if (bucket[i] < low) low = bucket[i];
    if (bucket[i] > high) high = bucket[i];
  }
  return bucket.length ? high - low + 1 : 1;
}

/** The pieces of one read as one read (their buckets and values in order). */
function joinReads(pieces: readonly ScanRead[]): ScanRead {
  const first = pieces[0];
  const join = <T extends Int32Array | Float64Array>(parts: T[], make: (n: number) => T): T => {
    let n = 0;
    for (const p of parts) n += p.length;
    const out = make(n);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  return {
    // A read of one bucket comes as pieces of that bucket; a read of several, as pieces with theirs.
    bucket:
      typeof first.bucket === 'number'
        ? first.bucket
        : join(
            pieces.map((p) => p.bucket as Int32Array),
            (n) => new Int32Array(n),
          ),
    group: join(
      pieces.map((p) => p.group),
      (n) => new Int32Array(n),
    ),
    metrics: first.metrics.map((m, k) =>
      m === null
        ? null
        : join(
            pieces.map((p) => p.metrics[k] as Float64Array),
            (n) => new Float64Array(n),
          ),
    ),
  };
}

/** How many distinct group indices (each below `groups`) `group` holds. */
function distinctGroups(group: Int32Array, groups: number): number {
  const met = new Uint8Array(groups);
  let n = 0;
  for (let i = 0; i < group.length; i++)
    if (met[group[i]] === 0) {
      met[group[i]] = 1;
      n++;
    }
  return n;
}

/**
 * The records a reader thread read, kept between the two steps of a grouped query: first the count
 * of records per group (to rank the groups over every thread's part), then the cells of the groups
 * shown. Groups that are not shown (a group per session, say) then cost a count, not a cell.
 *
 * Each read must hold every record of its buckets (a bucket is in one read only), as the reader
 * thread reads them: a read's cells are then whole, and can be aggregated as it is added. A read
 * may come in pieces (see add).
 */
export class GroupScan {
  private readonly index = new Map<unknown, number>();
  private readonly groups: unknown[] = [];
  private readonly counts: number[] = [];
  /** Group index of each code (a text group's place in the dictionary the reads use). */
  private codes: number[] | null = null;
  /** Reads kept as values, aggregated once the shown groups are known. */
  private readonly reads: ScanRead[] = [];
  /** Reads aggregated when added. */
  private readonly aggregated: ReadCells[] = [];
  /** The values the whole-range percentiles need of the aggregated reads' records. */
  private readonly totalsOnly: ScanRead[] = [];
  /** The pieces of a read not yet whole (see add). */
  private pieces: ScanRead[] = [];

  /**
   * `specs`: the cells' aggregates; `totalMetrics`: the metrics (value list indices) whose values
   * over the whole range `groupValues` hands over.
   */
  constructor(
    private readonly specs: readonly AggregateSpec[],
    private readonly totalMetrics: readonly number[],
  ) {}

  /**
   * Adds a read. A read too large for one statement comes in pieces, each added with `last` false
   * but the last: the pieces are kept as group indices and numbers (a few bytes a record, not the
   * JSON they came as) and joined once the read is whole.
   */
  add(values: CellValues, last = true): void {
    const { read, distinct } = this.indexed(values);
    if (last && this.pieces.length === 0) {
      this.take(read, distinct);
      return;
    }
    this.pieces.push(read);
    if (!last) return;
    const joined = joinReads(this.pieces);
    this.pieces = [];
    this.take(joined, distinctGroups(joined.group, this.groups.length));
  }

  /** A read's records with their group indices (groups met first here), and how many it has. */
  private indexed(values: CellValues): { read: ScanRead; distinct: number } {
    const rows = values.groups.length;
    const group = new Int32Array(rows);
    // A read (a bucket) has a few hundred distinct values at most as a rule: a small table of its
    // own finds them faster than the table of every group met.
    const local = new Map<unknown, number>();
    const codes = this.codes;
    const codesMet = codes ? new Uint8Array(codes.length) : null;
    let distinctCodes = 0;
    for (let i = 0; i < rows; i++) {
      const g = values.groups[i] ?? null;
      if (codes !== null && typeof g === 'number') {
        const coded = codes[g];
        this.counts[coded]++;
        group[i] = coded;
        if (codesMet![g] === 0) {
          codesMet![g] = 1;
          distinctCodes++;
        }
        continue;
      }
      let gi = local.get(g);
      if (gi === undefined) {
        gi = this.index.get(g);
        if (gi === undefined) {
          gi = this.groups.length;
          this.index.set(g, gi);
          this.groups.push(g);
          this.counts.push(0);
        }
        local.set(g, gi);
      }
      this.counts[gi]++;
      group[i] = gi;
    }
    const { bucket, metrics } = values;
    return {
      read: {
        bucket: typeof bucket === 'number' ? bucket : Int32Array.from(bucket),
        group,
        metrics: [...metrics],
      },
      distinct: local.size + distinctCodes,
    };
  }

  /** A whole read: aggregated now when it has few cells, else kept as values. */
  private take(read: ScanRead, distinct: number): void {
    const { bucket, group, metrics } = read;
    if (distinct * bucketSpan(bucket) * AGGREGATE_AT_RATIO <= group.length) {
      const t = aggregateCells(this.specs, { bucket, groups: group, metrics });
      this.aggregated.push({
        bucket: Int32Array.from(t.b),
        group: Int32Array.from(t.g as number[]),
        values: t.values,
      });
      if (this.totalMetrics.length)
        this.totalsOnly.push({
          bucket: -1,
          group,
          metrics: metrics.map((m, i) => (this.totalMetrics.includes(i) ? m : null)),
        });
      return;
    }
    this.reads.push(read);
  }

  /** Up to `limit` text values met at least `min` times, most met first. */
  frequent(limit: number, min: number): string[] {
    return this.groups
      .map((g, gi) => [g, this.counts[gi]] as const)
      .filter(([g, n]) => typeof g === 'string' && n >= min)
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([g]) => g as string);
  }

  /**
   * From now on a number among the read group values is a code: the place of a text value in
   * `dictionary` (whose values this scan has met). Only for groups whose values are all text.
   */
  useCodes(dictionary: readonly string[]): void {
    this.codes = dictionary.map((v) => this.index.get(v)!);
  }

  /** Every group met, with its record count. */
  groupCounts(): { groups: unknown[]; counts: Float64Array } {
    return { groups: this.groups, counts: Float64Array.from(this.counts) };
  }

  /**
   * The cells of the given groups, by bucket and then by place in `shown`. A read holds every record
   * of its cells, so reads kept as values are aggregated a read at a time: the copies and sorted
   * values a read needs are then the size of the read, not of the whole range.
   */
  cells(shown: readonly unknown[]): CellTable {
    const placeOf = this.placeOf(shown);
    const parts: CellTable[] = [];
    for (const r of this.reads) parts.push(shownCells(r, this.specs, shown, placeOf));
    for (const a of this.aggregated) {
      const keep: number[] = [];
      for (let c = 0; c < a.group.length; c++) if (placeOf[a.group[c]] >= 0) keep.push(c);
      parts.push({
        b: keep.map((c) => a.bucket[c]),
        g: keep.map((c) => shown[placeOf[a.group[c]]]),
        values: a.values.map((col) => Float64Array.from(keep, (c) => col[c])),
      });
    }
    return inCellOrder(parts, shown, this.specs.length);
  }

  /**
   * For each metric the scan was made for (`totalMetrics`), the shown groups' present values counted
   * by bin (`valueBin`): the first pass of a whole-range percentile (see `PercentilePlan`).
   */
  binCounts(shown: readonly unknown[]): BinCounts[] {
    const placeOf = this.placeOf(shown);
    return this.totalMetrics.map((metric) => {
      const byGroup = shown.map(() => new Map<number, number>());
      this.eachValue(metric, placeOf, (k, x) => {
        const bin = valueBin(x);
        byGroup[k].set(bin, (byGroup[k].get(bin) ?? 0) + 1);
      });
      return {
        metric,
        groups: byGroup.map((m) => ({
          bins: Float64Array.from(m.keys()),
          counts: Float64Array.from(m.values()),
        })),
      };
    });
  }

  /** For each ask, the values of its metric and shown group in its bin: the second pass. */
  binValues(shown: readonly unknown[], asks: readonly BinAsk[]): BinValues[] {
    const placeOf = this.placeOf(shown);
    const found = asks.map(() => new Map<number, number>());
    for (const metric of new Set(asks.map((a) => a.metric))) {
      // Per shown group, its asked bins' places in `asks`.
      const asked = shown.map(() => new Map<number, number>());
      asks.forEach((a, i) => {
        if (a.metric === metric) asked[a.group].set(a.bin, i);
      });
      this.eachValue(metric, placeOf, (k, x) => {
        const i = asked[k].get(valueBin(x));
        if (i !== undefined) found[i].set(x, (found[i].get(x) ?? 0) + 1);
      });
    }
    return found.map((m) => ({ values: Float64Array.from(m.keys()), counts: Float64Array.from(m.values()) }));
  }

  /** Calls `fn` with the shown place and value of each present value of `metric` of a shown group. */
  private eachValue(metric: number, placeOf: Int32Array, fn: (k: number, x: number) => void): void {
    for (const r of [...this.reads, ...this.totalsOnly]) {
      const v = r.metrics[metric];
      if (!v) continue;
      for (let i = 0; i < r.group.length; i++) {
        const k = placeOf[r.group[i]];
        if (k >= 0 && !Number.isNaN(v[i])) fn(k, v[i]);
      }
    }
  }

  /** Each group index's place among `shown`, or -1. */
  private placeOf(shown: readonly unknown[]): Int32Array {
    const place = new Map(shown.map((g, k) => [g, k]));
    return Int32Array.from(this.groups, (g) => place.get(g) ?? -1);
  }
}

/** The cells of `parts` in one table, ordered by bucket and then by the group's place in `shown`. */
function inCellOrder(parts: readonly CellTable[], shown: readonly unknown[], columns: number): CellTable {
  const place = new Map(shown.map((g, k) => [g, k]));
  const rows: { b: number; k: number; part: CellTable; i: number }[] = [];
  for (const part of parts)
    for (let i = 0; i < part.b.length; i++) rows.push({ b: part.b[i], k: place.get(part.g[i])!, part, i });
  rows.sort((x, y) => x.b - y.b || x.k - y.k);
  return {
    b: rows.map((r) => r.b),
    g: rows.map((r) => r.part.g[r.i]),
    values: Array.from({ length: columns }, (_, col) =>
      Float64Array.from(rows, (r) => r.part.values[col][r.i]),
    ),
  };
}

/** Natural log of the ratio between a value bin's bounds. */
const LOG_BIN_RATIO = Math.log(1.02);

/**
 * A number's bin for whole-range percentiles: bins about 2% wide, in the order of their values (0
 * alone in bin 0, negative numbers in negative bins). Over every finite double, |bin| stays within
 * 2,400 and 76,000.
 */
export function valueBin(x: number): number {
  if (x === 0) return 0;
  const bin = 40_000 + Math.floor(Math.log(Math.abs(x)) / LOG_BIN_RATIO);
  return x > 0 ? bin : -bin;
}

/** A metric's values counted by bin, per shown group (see GroupScan.binCounts). */
export interface BinCounts {
  metric: number;
  groups: { bins: Float64Array; counts: Float64Array }[];
}

/** The values wanted of one bin: of a metric, of the shown group at place `group`. */
export interface BinAsk {
  metric: number;
  group: number;
  bin: number;
}

/** The distinct values found in an asked bin, and how many times each. */
export interface BinValues {
  values: Float64Array;
  counts: Float64Array;
}

type TotalRow = { b: number; g: unknown; [name: string]: unknown };

/**
 * Exact whole-range percentiles per shown group from scans split over threads, without moving every
 * value to one thread (at 10,000,000 records that was 80 MB on the main thread, and as much again
 * gathered on the readers). Pass one: each thread's counts by value bin (`binCounts`) give the bin
 * of the wanted rank and the rank within it (`asks`). Pass two: each thread's values in those bins
 * (`binValues`), merged and walked to the rank (`rows`).
 */
export class PercentilePlan {
  /** The bins each thread is asked for. */
  readonly asks: BinAsk[] = [];
  /** The percentile specs. */
  private readonly percentiles: AggregateSpec[];
  /** Per shown group and percentile spec: the ask and the rank within its bin, or null (no values). */
  private readonly wanted: ({ ask: number; rank: number } | null)[][];

  constructor(
    specs: readonly AggregateSpec[],
    private readonly shown: readonly unknown[],
    parts: readonly (readonly BinCounts[])[],
  ) {
    const percentiles = specs.filter((s) => s.op === 'percentile');
    this.percentiles = percentiles;
    const askAt = new Map<string, number>();
    this.wanted = shown.map((_, k) =>
      percentiles.map((spec) => {
        const merged = new Map<number, number>();
        for (const part of parts)
          for (const m of part) {
            if (m.metric !== spec.metric) continue;
            const { bins, counts } = m.groups[k];
            for (let i = 0; i < bins.length; i++) merged.set(bins[i], (merged.get(bins[i]) ?? 0) + counts[i]);
          }
        let n = 0;
        for (const c of merged.values()) n += c;
        if (n === 0) return null;
        let rank = percentileIndex(n, spec.percent!);
        for (const bin of [...merged.keys()].sort((a, b) => a - b)) {
          const c = merged.get(bin)!;
          if (rank >= c) {
            rank -= c;
            continue;
          }
          const key = `${spec.metric} ${k} ${bin}`;
          let ask = askAt.get(key);
          if (ask === undefined) {
            ask = this.asks.push({ metric: spec.metric, group: k, bin }) - 1;
            askAt.set(key, ask);
          }
          return { ask, rank };
        }
        throw new Error('a percentile rank beyond its count');
      }),
    );
  }

  /** Rows `{ b: -1, g, <name>: value }` for the percentile specs, from each thread's `binValues`. */
  rows(found: readonly (readonly BinValues[])[]): TotalRow[] {
    return this.shown.map((g, k) => {
      const row: TotalRow = { b: -1, g };
      this.percentiles.forEach((spec, j) => {
        const w = this.wanted[k][j];
        row[spec.name] =
          w === null
            ? null
            : valueAtRank(
                found.map((f) => f[w.ask]),
                w.rank,
              );
      });
      return row;
    });
  }
}

/** The value at `rank` (from 0) among the values of `parts`, each counted as many times as said. */
function valueAtRank(parts: readonly BinValues[], rank: number): number {
  const merged = new Map<number, number>();
  for (const p of parts)
    for (let i = 0; i < p.values.length; i++)
      merged.set(p.values[i], (merged.get(p.values[i]) ?? 0) + p.counts[i]);
  let left = rank;
  for (const value of [...merged.keys()].sort((a, b) => a - b)) {
    left -= merged.get(value)!;
    if (left < 0) return value;
  }
  throw new Error('a percentile rank beyond its bin');
}
