/**
 * A DDSketch (Masson, Rim, Lee, VLDB 2019) with 1% relative accuracy, kept as plain bin counts so
 * that two sketches merge by adding counts, in JavaScript or in the store (store/rollups.ts keeps
 * them per rollup row, see domain/rollups.ts).
 *
 * A positive value v falls in bin i = ceil(log_γ v) with γ = (1 + α) / (1 − α), the bin covering
 * (γ^(i−1), γ^i]; the bin answers 2γ^i / (γ + 1), within α of every value in it. Negative values are
 * kept by their magnitude in bins of their own; values of magnitude below MIN_VALUE count as zero.
 * A quantile picks the value at the rank the exact computation picks (domain/dashboards.ts
 * percentileIndex, the "lower" method), so the answer is within 1% of the exact percentile.
 *
 * Each bin has one integer code (binCode): 0 for zero, even for positive values and odd for
 * negative ones. A sketch is stored as its (code, count) pairs in ascending code order: on SQLite
 * as a blob of varints (encodeBins), on PostgreSQL as an int4[] of the same pairs;
 * two stored sketches merge in one pass (mergeBins; PostgreSQL's rollup_bins_merge, migration 030).
 *
 * Written here rather than taken from @datadog/sketches-js: that library keeps bins in its own
 * stores and serializes them as protobuf, while the rollups need bins the store can add. The
 * mapping is the library's logarithmic one.
 */
import { percentileIndex } from './dashboards.ts';

export const RELATIVE_ACCURACY = 0.01;
const GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);
/** Magnitudes below this count as zero (far below any duration, token count, cost or score). */
export const MIN_VALUE = 1e-9;
/** Bin indexes run from about −1,040 (MIN_VALUE) to 35,900 (the largest double): offset to positive. */
const BIN_OFFSET = 50_000;

/** The bin of a magnitude at least MIN_VALUE. */
export function binOf(magnitude: number): number {
  return Math.ceil(Math.log(magnitude) / LOG_GAMMA);
}

/** The value a bin answers. */
export function binValue(bin: number): number {
  return (2 * GAMMA ** bin) / (GAMMA + 1);
}

/** A value's bin code: 0 for zero, 2(i + offset) for positive values, 2(i + offset) + 1 for negative. */
export function binCode(v: number): number {
  const m = Math.abs(v);
  if (!(m >= MIN_VALUE)) return 0;
  return 2 * (binOf(m) + BIN_OFFSET) + (v < 0 ? 1 : 0);
}

/** The value a bin code answers. */
export function codeValue(code: number): number {
  if (code === 0) return 0;
  const v = binValue((code >> 1) - BIN_OFFSET);
  return code & 1 ? -v : v;
}

/** Bin counts by code. */
export type Sketch = Map<number, number>;

export const emptySketch = (): Sketch => new Map();

export function addCode(s: Sketch, code: number, count: number): void {
  s.set(code, (s.get(code) ?? 0) + count);
}

export function addValue(s: Sketch, v: number): void {
  addCode(s, binCode(v), 1);
}

/** Adds stored pairs (code, count, code, count, ...) to a sketch, `sign` −1 takes them off. */
export function addPairs(s: Sketch, pairs: ArrayLike<number>, sign = 1): void {
  for (let i = 0; i + 1 < pairs.length; i += 2) addCode(s, pairs[i], sign * pairs[i + 1]);
}

/** How many values a sketch holds. */
export function sketchCount(s: Sketch): number {
  let n = 0;
  for (const c of s.values()) n += c;
  return n;
}

/** A sketch's non-zero bins as pairs in ascending code order. */
export function sketchPairs(s: Sketch): number[] {
  if (s.size === 1) {
    for (const [k, c] of s) return c === 0 ? [] : [k, c];
  }
  const codes: number[] = [];
  for (const [k, c] of s) if (c !== 0) codes.push(k);
  codes.sort((a, b) => a - b);
  const out: number[] = new Array(codes.length * 2);
  for (let i = 0; i < codes.length; i++) {
    out[2 * i] = codes[i];
    out[2 * i + 1] = s.get(codes[i]) as number;
  }
  return out;
}

/**
 * Pairs as SQLite stores them: the number of pairs, then each pair's code as its step from the code
 * before and its count, all zigzag varints. That is about 2.3 bytes a bin against 8 as int32 pairs
 * (the form before): a rollup row's sketch of several columns then stays on its page, where rows of
 * 5 to 9 KB each took a 16 KiB overflow page (bench:ingest --profile metadata: 15.5 of rollup_scalars'
 * 23.2 MB unused). A blob whose length is a multiple of 8 is read as the older form, so this one is
 * padded by a byte when it would be.
 */
export function encodeBins(pairs: ArrayLike<number>): Buffer {
  const n = pairs.length / 2;
  let size = varintSize(n);
  for (let i = 0, prev = 0; i < pairs.length; i += 2) {
    size += varintSize(zigzag(pairs[i] - prev)) + varintSize(zigzag(pairs[i + 1]));
    prev = pairs[i];
  }
  // Not from Buffer's shared pool: a view of the pool would carry all of it wherever it is cloned.
  const b = Buffer.alloc(size % 8 === 0 ? size + 1 : size);
  let at = writeVarint(b, 0, n);
  for (let i = 0, prev = 0; i < pairs.length; i += 2) {
    at = writeVarint(b, at, zigzag(pairs[i] - prev));
    at = writeVarint(b, at, zigzag(pairs[i + 1]));
    prev = pairs[i];
  }
  return b;
}

/** Stored bins (a SQLite blob, a PostgreSQL int4[], or null) as pairs. */
export function decodeBins(v: unknown): ArrayLike<number> {
  if (v === null || v === undefined) return [];
  if (Array.isArray(v)) return v as number[];
  const u = v as Uint8Array;
  if (u.byteLength % 8 === 0)
    return new Int32Array(u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength));
  let at = 0;
  const next = () => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = u[at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
  };
  const out = new Int32Array(next() * 2);
  for (let i = 0, prev = 0; i < out.length; i += 2) {
    prev += unzigzag(next());
    out[i] = prev;
    out[i + 1] = unzigzag(next());
  }
  return out;
}

const zigzag = (v: number): number => (v >= 0 ? 2 * v : -2 * v - 1);
const unzigzag = (z: number): number => (z % 2 === 0 ? z / 2 : -(z + 1) / 2);
function varintSize(v: number): number {
  let size = 1;
  for (; v >= 128; v = Math.floor(v / 128)) size++;
  return size;
}
function writeVarint(b: Buffer, at: number, v: number): number {
  for (; v >= 128; v = Math.floor(v / 128)) b[at++] = (v % 128) | 0x80;
  b[at++] = v;
  return at;
}

/**
 * Pairs out of PostgreSQL's binary form of an int4[] (`array_send`, read as bytea: node-postgres
 * hands it over as a Buffer, far cheaper than parsing the array's text): a header of dimensions,
 * then each element as its length and its big-endian value.
 */
export function decodeArraySend(v: unknown): number[] {
  if (v === null || v === undefined) return [];
  const b = Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array);
  const ndim = b.readInt32BE(0);
  if (ndim === 0) return [];
  let at = 12 + 8 * ndim;
  const out: number[] = [];
  while (at + 8 <= b.length) {
    const len = b.readInt32BE(at);
    at += 4;
    if (len < 0) continue;
    out.push(b.readInt32BE(at));
    at += len;
  }
  return out;
}

/**
 * Two stored sketches' pairs merged (codes ascending, counts added, zero counts dropped): SQLite's
 * rollup_bins_merge (store/db.ts).
 */
export function mergeBins(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    let code: number;
    let count: number;
    if (j >= b.length || (i < a.length && a[i] < b[j])) {
      code = a[i];
      count = a[i + 1];
      i += 2;
    } else if (i >= a.length || b[j] < a[i]) {
      code = b[j];
      count = b[j + 1];
      j += 2;
    } else {
      code = a[i];
      count = a[i + 1] + b[j + 1];
      i += 2;
      j += 2;
    }
    if (count !== 0) out.push(code, count);
  }
  return out;
}

/** Codes in the order of their values: negatives by descending magnitude, zero, positives ascending. */
function valueOrder(a: number, b: number): number {
  const sa = a === 0 ? 0 : a & 1 ? -1 : 1;
  const sb = b === 0 ? 0 : b & 1 ? -1 : 1;
  if (sa !== sb) return sa - sb;
  return sa < 0 ? b - a : a - b;
}

/**
 * The `percent` percentile of the values, within 1% relative of the exact "lower" percentile; null
 * for an empty sketch.
 */
export function quantile(s: Sketch, percent: number): number | null {
  const n = sketchCount(s);
  if (n <= 0) return null;
  let rank = percentileIndex(n, percent);
  const codes = [...s.keys()].filter((k) => (s.get(k) as number) > 0).sort(valueOrder);
  for (const code of codes) {
    const c = s.get(code) as number;
    if (rank < c) return codeValue(code);
    rank -= c;
  }
  // Only when counts went out of step (they do not): the largest value.
  return codes.length ? codeValue(codes[codes.length - 1]) : 0;
}
