/**
 * Pure logic of experiments (issue #34): the id of a row's trace, what a trace says about its row,
 * aggregate metrics with buckets, and the rank of experiments run over the same dataset.
 */
import { createHash } from 'node:crypto';
import { DERIVED_METRICS, PROMOTED_METRICS } from './records.ts';

/** Task type of a prompt experiment (the hosted `TaskType` 16). */
export const EXPERIMENT_TASK_TYPE = 16;
export const PLAYGROUND_RUN = 'playground_run';

/**
 * The trace id of a job's row: derived from both, so a job resumed after a crash writes the same id
 * again (an overwrite, never a second trace). Formatted as a version-4-shaped UUID.
 */
export function rowTraceId(jobId: string, rowId: string, salt = 'trace'): string {
  const h = createHash('sha256').update(`${salt}\u0000${jobId}\u0000${rowId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((Number.parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const NOT_SCORES = new Set<string>([...PROMOTED_METRICS, ...DERIVED_METRICS]);

/** A trace and its llm spans as read back from the records table. */
export interface ExperimentRecord {
  id: string;
  type: string;
  trace_id: string | null;
  created_at: number;
  metrics: unknown;
  dataset_metadata: unknown;
  input_text: string | null;
  output_text: string | null;
  error_message: string | null;
  duration_ns: number | null;
  num_input_tokens: number | null;
  num_output_tokens: number | null;
  model: string | null;
  body: unknown;
}

/** One experiment row: what the comparison and the metrics read. */
export interface RowResult {
  trace_id: string;
  row_id: string | null;
  row_index: number | null;
  input: string | null;
  output: string | null;
  ground_truth: string | null;
  error: string | null;
  /** Scorer values (trace and its spans; a span's value wins for the same name). */
  scores: Record<string, number>;
  cost: number | null;
  latency_ms: number | null;
  tokens: number;
  created_at: number;
}

const obj = (v: unknown): Record<string, any> => {
  if (v === null || v === undefined) return {};
  if (typeof v === 'string') {
    try {
      return JSON.parse(v) ?? {};
    } catch {
      return {};
    }
  }
  return v as Record<string, any>;
};

/** Records (traces and their llm spans, any order) → one result per trace. */
export function rowResults(records: ExperimentRecord[]): RowResult[] {
  const out = new Map<string, RowResult>();
  for (const r of records)
    if (r.type === 'trace') {
      const dm = obj(r.dataset_metadata);
      const body = obj(r.body);
      const m = obj(r.metrics);
      const scores: Record<string, number> = {};
      for (const [k, v] of Object.entries(m)) if (!NOT_SCORES.has(k) && typeof v === 'number') scores[k] = v;
      out.set(r.id, {
        trace_id: r.id,
        row_id: dm.dataset_row_id != null ? String(dm.dataset_row_id) : null,
        row_index: dm.dataset_row_index != null ? Number(dm.dataset_row_index) : null,
        input: r.input_text,
        output: r.output_text,
        ground_truth: typeof body.dout === 'string' ? body.dout : null,
        error: r.error_message,
        scores,
        cost: null,
        latency_ms: r.duration_ns != null ? Number(r.duration_ns) / 1e6 : null,
        tokens: 0,
        created_at: Number(r.created_at),
      });
    }
  for (const r of records)
    if (r.type === 'llm' && r.trace_id && out.has(r.trace_id)) {
      const t = out.get(r.trace_id) as RowResult;
      const m = obj(r.metrics);
      if (typeof m.cost === 'number') t.cost = (t.cost ?? 0) + m.cost;
      t.tokens += Number(r.num_input_tokens ?? 0) + Number(r.num_output_tokens ?? 0);
      for (const [k, v] of Object.entries(m))
        if (!NOT_SCORES.has(k) && typeof v === 'number') t.scores[k] = v;
      if (!t.error && r.error_message) t.error = r.error_message;
    }
  return [...out.values()].sort(
    (a, b) => (a.row_index ?? Number.MAX_SAFE_INTEGER) - (b.row_index ?? Number.MAX_SAFE_INTEGER),
  );
}

/** Ten equal-width buckets between the smallest and largest value, keyed by their lower bound. */
export function buckets(values: number[]): Record<string, number> {
  if (!values.length) return {};
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === hi) return { [String(lo)]: values.length };
  const width = (hi - lo) / 10;
  const out: Record<string, number> = {};
  for (let i = 0; i < 10; i++) out[String(+(lo + i * width).toPrecision(6))] = 0;
  const keys = Object.keys(out);
  for (const v of values) out[keys[Math.min(9, Math.floor((v - lo) / width))]]++;
  return out;
}

export interface MetricSummary {
  name: string;
  average: number | null;
  buckets: Record<string, number>;
}

/** Each score, cost and latency over the rows: average and buckets (the hosted `BucketedMetric`). */
export function metricSummaries(rows: RowResult[]): MetricSummary[] {
  const values = new Map<string, number[]>();
  const add = (k: string, v: number | null) => {
    if (v === null || !Number.isFinite(v)) return;
    const l = values.get(k);
    if (l) l.push(v);
    else values.set(k, [v]);
  };
  for (const r of rows) {
    for (const [k, v] of Object.entries(r.scores)) add(k, v);
    add('cost', r.cost);
    add('latency_ms', r.latency_ms);
  }
  return [...values.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, vs]) => ({
      name,
      average: vs.reduce((s, v) => s + v, 0) / vs.length,
      buckets: buckets(vs),
    }));
}

/** Names that are not scores in a record's metrics (token counts, durations, cost). */
export const NOT_SCORE_NAMES: readonly string[] = [...NOT_SCORES];

/** What the store counts of one metric (store/experiments.ts metricStats). */
export interface MetricCounts {
  name: string;
  count: number;
  sum: number;
  lo: number;
  hi: number;
  /** Values per bucket 0..9 (equal widths between lo and hi; all in 0 when lo = hi). */
  buckets: Map<number, number>;
}

/** The summaries metricSummaries makes from the values, made from the store's counts instead. */
export function summariesFromCounts(stats: MetricCounts[]): MetricSummary[] {
  return [...stats]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((m) => {
      let out: Record<string, number>;
      if (m.lo === m.hi) out = { [String(m.lo)]: m.count };
      else {
        // The same keys as buckets(): the lower bounds, rounded to 6 significant digits.
        const width = (m.hi - m.lo) / 10;
        out = {};
        for (let i = 0; i < 10; i++) out[String(+(m.lo + i * width).toPrecision(6))] = 0;
        const keys = Object.keys(out);
        for (const [b, n] of m.buckets) out[keys[Math.min(9, Math.max(0, b))]] += n;
      }
      return { name: m.name, average: m.count ? m.sum / m.count : null, buckets: out };
    });
}

/** The hosted `aggregate_metrics` from summaries and counts of rows. */
export function aggregateFromSummaries(
  summaries: MetricSummary[],
  stats: MetricCounts[],
  rows: { rows: number; errors: number },
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of summaries) if (m.average !== null) out[`average_${m.name}`] = m.average;
  out.total_cost = stats.find((m) => m.name === 'cost')?.sum ?? 0;
  out.num_rows = rows.rows;
  out.num_errors = rows.errors;
  return out;
}

/** The mean of the score averages (cost and latency are not scores): higher is better. */
export function rankingFromSummaries(summaries: MetricSummary[]): number | null {
  const scores = summaries.filter((m) => m.name !== 'cost' && m.name !== 'latency_ms');
  if (!scores.length) return null;
  return scores.reduce((s, m) => s + (m.average ?? 0), 0) / scores.length;
}

/** Ranks (1 = best) of experiments by ranking score; the winner is rank 1 of two or more. */
export function ranks(
  scores: Map<string, number | null>,
): Map<string, { rank: number | null; winner: boolean }> {
  const scored = [...scores.entries()].filter(([, s]) => s !== null) as [string, number][];
  scored.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const out = new Map<string, { rank: number | null; winner: boolean }>();
  for (const id of scores.keys()) out.set(id, { rank: null, winner: false });
  for (const [i, [id]] of scored.entries())
    out.set(id, { rank: i + 1, winner: i === 0 && scored.length > 1 });
  return out;
}
