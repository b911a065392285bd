/**
 * A DDSketch (Masson, Rim, Lee, VLDB 2019) with 1% relative accuracy, kept as plain bin counts so
 * that two sketches merge by adding counts, in JavaScript or in SQL (store/rollups.ts keeps them in
 * the rollups' flat data; see domain/rollups.ts).
 *
 * A positive value v falls in bin i = ceil(log_γ v) with γ = (1 + α) / (1 − α), the bin covering
 * (γ^(i−1), γ^i]; the bin answers 2γ^i / (γ + 1), within α of every value in it. Negative values are
 * kept by their magnitude in bins of their own; values of magnitude below MIN_VALUE count as zero.
 * A quantile picks the value at the rank the exact computation picks (domain/dashboards.ts
 * percentileIndex, the "lower" method), so the answer is within 1% of the exact percentile.
 *
 * Written here rather than taken from @datadog/sketches-js: that library keeps bins in its own
 * stores and serializes them as protobuf, while the rollups need bins that SQL can add (one key per
 * bin in a JSON object). The mapping is the library's logarithmic one.
 */
import { percentileIndex } from './dashboards.ts';

export const RELATIVE_ACCURACY = 0.01;
const GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);
/** Magnitudes below this count as zero (far below any duration, token count, cost or score). */
export const MIN_VALUE = 1e-9;

/** The bin of a magnitude at least MIN_VALUE. */
export function binOf(magnitude: number): number {
  return Math.ceil(Math.log(magnitude) / LOG_GAMMA);
}

/** The value a bin answers. */
export function binValue(bin: number): number {
  return (2 * GAMMA ** bin) / (GAMMA + 1);
}

/** Where a value goes: 'z' (zero), `p<bin>` (positive) or `q<bin>` (negative). */
export function sketchKey(v: number): string {
  const m = Math.abs(v);
  if (m < MIN_VALUE) return 'z';
  return `${v > 0 ? 'p' : 'q'}${binOf(m)}`;
}

/** Bin counts of one sketch: zero count, positive and negative bins. */
export interface Sketch {
  zero: number;
  pos: Map<number, number>;
  neg: Map<number, number>;
}

export const emptySketch = (): Sketch => ({ zero: 0, pos: new Map(), neg: new Map() });

/** Adds `count` at a sketch key (as sketchKey makes them). */
export function addAt(s: Sketch, key: string, count: number): void {
  if (key === 'z') {
    s.zero += count;
    return;
  }
  const bins = key[0] === 'p' ? s.pos : s.neg;
  const bin = Number(key.slice(1));
  bins.set(bin, (bins.get(bin) ?? 0) + count);
}

export function addValue(s: Sketch, v: number): void {
  addAt(s, sketchKey(v), 1);
}

/** How many values a sketch holds. */
export function sketchCount(s: Sketch): number {
  let n = s.zero;
  for (const c of s.pos.values()) n += c;
  for (const c of s.neg.values()) n += c;
  return n;
}

/**
 * The `percent` percentile of the values, within 1% relative of the exact "lower" percentile; null
 * for an empty sketch.
 */
export function quantile(s: Sketch, percent: number): number | null {
  const n = sketchCount(s);
  if (n <= 0) return null;
  let rank = percentileIndex(n, percent);
  // Ascending order: negatives by descending magnitude, zeros, positives by ascending magnitude.
  const neg = [...s.neg].filter(([, c]) => c > 0).sort((a, b) => b[0] - a[0]);
  for (const [bin, c] of neg) {
    if (rank < c) return -binValue(bin);
    rank -= c;
  }
  if (rank < s.zero) return 0;
  rank -= s.zero;
  const pos = [...s.pos].filter(([, c]) => c > 0).sort((a, b) => a[0] - b[0]);
  for (const [bin, c] of pos) {
    if (rank < c) return binValue(bin);
    rank -= c;
  }
  // Only when counts went out of step (they do not): the largest value.
  return pos.length ? binValue(pos[pos.length - 1][0]) : 0;
}
