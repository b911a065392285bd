/**
 * Pure logic of trends dashboards: relative time windows, the time range a dashboard covers,
 * bucket boundaries, and the definitions of the widget aggregations (percentile rank, averages,
 * percentages) shared by the SQL and the TypeScript computations.
 */
import type { ErrorItem } from './errors.ts';

export const AGGREGATIONS = [
  'Count',
  'Sum',
  'Average',
  'Min',
  'Max',
  'P50',
  'P90',
  'P95',
  'P99',
  'PercentageFalse',
  'PercentageTrue',
] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export const WIDGET_TYPES = ['bar_chart', 'line_chart', 'number', 'table'] as const;

/** Percentile aggregations and the percent they stand for. */
export const PERCENTILES: Partial<Record<Aggregation, number>> = { P50: 50, P90: 90, P95: 95, P99: 99 };

/** What kind of metric column an aggregation needs. */
export function aggregationNeeds(agg: Aggregation): 'any' | 'number' | 'boolean' {
  if (agg === 'Count') return 'any';
  if (agg === 'PercentageTrue' || agg === 'PercentageFalse') return 'boolean';
  return 'number';
}

export const RELATIVE_TIME_PATTERN = '^last_\\d+_(seconds?|minutes?|hours?|days?|weeks?|months?)$';
const RELATIVE_TIME = /^last_(\d+)_(second|minute|hour|day|week|month)s?$/;

const UNIT_SECONDS: Record<string, number> = {
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  week: 7 * 86_400,
  // decisions.md: a month counts as 30 days.
  month: 30 * 86_400,
};

/** "5 years" is 1,826 days (decisions.md). */
export const MAX_WINDOW_SECONDS = 1826 * 86_400;

/** Largest interval: one bucket for the longest window. */
export const MAX_INTERVAL_MINS = MAX_WINDOW_SECONDS / 60;

/** Absolute bounds of start_time / end_time (epoch seconds): 1970-01-01 to 9999-12-31T23:59:59Z. */
export const MIN_EPOCH_SECONDS = 0;
export const MAX_EPOCH_SECONDS = 253_402_300_799;

/** Most buckets one query computes; a longer range needs a wider interval. */
export const MAX_BUCKETS = 10_000;

/**
 * The length in seconds of a `relative_time` window such as `last_7_days`; null when the text does
 * not match the pattern. Counts too large to represent come back as Infinity (so they fail the
 * 5-year rule rather than overflow).
 */
export function relativeWindowSeconds(text: string): number | null {
  const m = RELATIVE_TIME.exec(text);
  if (!m) return null;
  const digits = m[1].replace(/^0+(?=\d)/, '');
  const n = digits.length > 15 ? Number.POSITIVE_INFINITY : Number(digits);
  return n * UNIT_SECONDS[m[2]];
}

/** Why a relative_time is not allowed (beyond the schema's pattern), or null when it is fine. */
export function relativeTimeProblem(text: string): string | null {
  const seconds = relativeWindowSeconds(text);
  if (seconds === null) return 'relative_time must look like last_<n>_<unit>';
  if (seconds <= 0) return 'relative_time must cover at least one second';
  if (seconds > MAX_WINDOW_SECONDS) return 'relative_time may cover at most 5 years (1826 days)';
  return null;
}

export interface TimeSettings {
  start_time: number | null;
  end_time: number | null;
  relative_time: string | null;
}

/**
 * The range a dashboard covers, in epoch seconds: the stored absolute range, or the relative window
 * ending at `nowMs` (rounded up to the next whole second so that a record written this instant is
 * inside it).
 */
export function resolveRange(t: TimeSettings, nowMs: number): { start: number; end: number } {
  if (t.relative_time) {
    const window = relativeWindowSeconds(t.relative_time) ?? 0;
    const end = Math.ceil(nowMs / 1000);
    return { start: end - window, end };
  }
  return { start: t.start_time ?? 0, end: t.end_time ?? 0 };
}

/**
 * Buckets of `intervalMins` aligned on multiples of the interval since the Unix epoch (so hourly
 * buckets start on the hour, UTC); the first and last are clipped to [start, end). Returns the
 * aligned start of the first bucket and how many buckets cover the range.
 */
export function bucketLayout(start: number, end: number, intervalMins: number) {
  const size = intervalMins * 60;
  const first = Math.floor(start / size) * size;
  const count = end > start ? Math.ceil((end - first) / size) : 0;
  return { first, size, count };
}

/** The start (epoch seconds) of every bucket. */
export function bucketStarts(start: number, end: number, intervalMins: number): number[] {
  const { first, size, count } = bucketLayout(start, end, intervalMins);
  return Array.from({ length: count }, (_, i) => first + i * size);
}

/**
 * Percentiles are exact and always one of the values: P_p of N sorted values is the value at
 * 0-based position floor(p × (N − 1) / 100), computed in integers (the "lower" method; SQLite's
 * percentile_disc and numpy's method='lower'). P50 of [1, 2, 3, 4] is 2.
 */
export function percentileIndex(n: number, percent: number): number {
  return Math.floor((percent * (n - 1)) / 100);
}

/** The fraction handed to SQLite's percentile_disc so its double arithmetic lands on the same index. */
export function sqlitePercentileFraction(percent: number): number {
  // percentile_disc computes floor(P × (N − 1)) in doubles. For P = 0.5, 0.9, 0.95, 0.99 and every
  // N up to 2·10^7 that already equals the integer definition (checked); the nudge, far smaller than
  // the 0.01 steps between possible fractional parts for any N below 10^9, guards against a product
  // that should be whole coming out a hair below it.
  return percent / 100 + 1e-12;
}

/** The plain TypeScript definition of every aggregation, over the metric values of one bucket. */
export function aggregate(agg: Aggregation, values: (number | boolean | null | undefined)[]): number | null {
  const present = values.filter((v): v is number | boolean => v !== null && v !== undefined);
  if (agg === 'Count') return present.length;
  if (present.length === 0) return null;
  if (agg === 'PercentageTrue' || agg === 'PercentageFalse') {
    const trues = present.filter((v) => v === true || v === 1).length;
    return percentage(agg === 'PercentageTrue' ? trues : present.length - trues, present.length);
  }
  const nums = present.map(Number);
  switch (agg) {
    case 'Sum':
      return nums.reduce((a, b) => a + b, 0);
    case 'Average':
      return nums.reduce((a, b) => a + b, 0) / nums.length;
    case 'Min':
      return nums.reduce((a, b) => Math.min(a, b));
    case 'Max':
      return nums.reduce((a, b) => Math.max(a, b));
    default: {
      const sorted = nums.sort((a, b) => a - b);
      return sorted[percentileIndex(sorted.length, PERCENTILES[agg]!)];
    }
  }
}

/** 100 × part / whole, or null for an empty whole. */
export function percentage(part: number, whole: number): number | null {
  return whole === 0 ? null : (100 * part) / whole;
}

/**
 * A time range from a body (dashboard PUT or query): the changes to make to `current`, or faults.
 * `relative_time` and an absolute pair are exclusive; giving one clears the other. An absolute pair
 * may be completed from the current absolute range (give only start_time to move the start).
 */
export function applyTimeRange(
  body: { start_time?: number | null; end_time?: number | null; relative_time?: string | null },
  current: { start_time: number | null; end_time: number | null; relative_time: string | null },
  faults: ErrorItem[],
): { start_time: number | null; end_time: number | null; relative_time: string | null } | null {
  const rel = body.relative_time ?? null;
  const start = body.start_time ?? null;
  const end = body.end_time ?? null;
  if (rel !== null && (start !== null || end !== null)) {
    faults.push({
      loc: ['body'],
      msg: 'Value error, give start_time and end_time, or relative_time, not both',
      type: 'value_error',
    });
    return null;
  }
  if (rel !== null) {
    const problem = relativeTimeProblem(rel);
    if (problem) {
      faults.push({
        loc: ['body', 'relative_time'],
        msg: `Value error, ${problem}`,
        type: 'value_error',
        input: rel,
      });
      return null;
    }
    return { relative_time: rel, start_time: null, end_time: null };
  }
  if (start === null && end === null) return null;
  const absolute = current.relative_time === null;
  const s = start ?? (absolute ? current.start_time : null);
  const e = end ?? (absolute ? current.end_time : null);
  if (s === null || e === null) {
    const missing = s === null ? 'start_time' : 'end_time';
    faults.push({
      loc: ['body', missing],
      msg: `Value error, give start_time and end_time together (the range is relative, so there is no ${missing} to keep)`,
      type: 'value_error',
    });
    return null;
  }
  if (s >= e) {
    faults.push({
      loc: ['body'],
      msg: 'Value error, start_time must be before end_time',
      type: 'value_error',
      input: { start_time: s, end_time: e },
    });
    return null;
  }
  return { relative_time: null, start_time: s, end_time: e };
}
