/**
 * Trigram signatures for the text indexes (SQLite: store/search-text.ts; PostgreSQL:
 * store/search-text-pg.ts): which hashed trigrams of
 * case-folded text occur in a block of records. A block holds each distinct trigram once, however
 * many records and occurrences carry it, so the index stores and merges a small fraction of what a
 * per-record trigram index would; a `contains` search reads the blocks that hold every trigram of its
 * term and checks their records exactly.
 *
 * Trigrams are of UTF-16 code units of the folded text (a substring of a well-formed string is a
 * substring of its code units), hashed to GRAM_BITS bits: a collision can only add a block to a
 * search's candidates, never hide one. On SQLite each becomes a short ASCII token, prefixed by its
 * column (`i` input, `o` output) so that one document per block serves both columns; PostgreSQL
 * takes the numbers themselves (`takeGrams`, `termGrams`) and stores them in an integer array.
 *
 * The blocks also hold a token per distinct string value of a top-level user metadata key
 * (`metaHash` of key and value): an equality on metadata reads the blocks that hold its token, as a
 * `contains` reads those holding its trigrams. A per-record index entry for each value (migration
 * 014's `record_metadata`, dropped by 033) cost more than the record itself when applications send
 * ids that are new for every request: 20 keys, 10 of them such ids, took SQLite from 5,527 to
 * 1,668 records/s and added 1.0× the JSON received on disk (bench:ingest --profile metadata).
 */
import { jsonObject } from './json-object.ts';
import { foldCase } from './text.ts';

/** Records (consecutive rowids) per block. */
export const BLOCK_ROWS = 128;
/** The block of a rowid (arithmetic, not shifts: rowids may pass 2^31). */
export const blockOf = (rowid: number): number => Math.floor(rowid / BLOCK_ROWS);
/** Bits of a hashed trigram: its numbers are 0 to 2^GRAM_BITS - 1. */
export const GRAM_BITS = 22;
const GRAM_MASK = (1 << GRAM_BITS) - 1;
/** Trigrams of a term a lookup asks for: a few spread over the term narrow as well as all of them. */
const MAX_TERM_GRAMS = 8;

export type TextColumn = 'input' | 'output';

/**
 * A metadata key and string value as a block token: two 32-bit hashes of the key, a NUL and the
 * value (UTF-16 code units). A collision only adds blocks to a search's candidates.
 */
export function metaHash(key: string, value: string): [number, number] {
  // One loop, no closure: this runs for every value of every record the indexer takes.
  let a = 0x811c9dc5;
  let b = 0x01000193;
  const n = key.length + 1 + value.length;
  for (let i = 0; i < n; i++) {
    const c =
      i < key.length ? key.charCodeAt(i) : i === key.length ? 0 : value.charCodeAt(i - key.length - 1);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 13;
  }
  a ^= a >>> 16;
  a = Math.imul(a, 0x85ebca6b);
  a ^= a >>> 13;
  b = Math.imul(b ^ (b >>> 16), 0xc2b2ae35);
  b ^= b >>> 16;
  return [a >>> 0, b >>> 0];
}

/** SQLite's token of a metadata key and string value (prefix `m`, no other column's). */
export function metaToken(key: string, value: string): string {
  const [a, b] = metaHash(key, value);
  return tokenOf(a, b);
}

const tokenOf = (a: number, b: number) => `m${a.toString(36)}x${b.toString(36)}`;

/** Groups of record types a search reads: each has blocks of its own (a search of traces reads no span's). */
export const TEXT_GROUPS = ['session', 'trace', 'span'] as const;
export type TextGroup = (typeof TEXT_GROUPS)[number];

export function textGroup(type: string): TextGroup {
  return type === 'session' ? 'session' : type === 'trace' ? 'trace' : 'span';
}
const PREFIX: Record<TextColumn, string> = { input: 'i', output: 'o' };

function gramHash(a: number, b: number, c: number): number {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h & GRAM_MASK;
}

/**
 * The distinct trigrams of one block's texts, per column, gathered text by text and then written
 * as the block's document. One instance is reused block after block (its bitmaps are cleared by
 * what was set, not reallocated).
 */
export class BlockGrams {
  private readonly seen = {
    input: new Uint8Array(1 << (GRAM_BITS - 3)),
    output: new Uint8Array(1 << (GRAM_BITS - 3)),
  };
  private grams: Record<TextColumn, number[]> = { input: [], output: [] };
  /**
   * The block's metadata hashes, by a number made of both (53 bits: a numeric key, no string per
   * value); their tokens are written once per block.
   */
  private meta = new Map<number, [number, number]>();

  get empty(): boolean {
    return this.grams.input.length === 0 && this.grams.output.length === 0 && this.meta.size === 0;
  }

  /** Adds a token per string value of a record's user metadata (JSON text or parsed). */
  addMeta(metadata: unknown): void {
    const o = jsonObject(metadata);
    if (!o) return;
    for (const k in o) {
      const v = o[k];
      if (typeof v !== 'string') continue;
      const h = metaHash(k, v);
      const key = h[0] * 0x200000 + (h[1] & 0x1fffff);
      if (!this.meta.has(key)) this.meta.set(key, h);
    }
  }

  /** The block's metadata hashes (first halves), and a fresh start for the next block's. */
  takeMeta(): number[] {
    const out: number[] = [];
    for (const h of this.meta.values()) out.push(h[0]);
    this.meta.clear();
    return out;
  }

  /** Adds the trigrams of a text (not yet folded) of `column`. */
  add(column: TextColumn, text: string | null): void {
    if (text === null || text.length < 3) return;
    const s = foldCase(text);
    const seen = this.seen[column];
    const out = this.grams[column];
    let a = s.charCodeAt(0);
    let b = s.charCodeAt(1);
    for (let i = 2; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const g = gramHash(a, b, c);
      const bit = 1 << (g & 7);
      if (!(seen[g >>> 3] & bit)) {
        seen[g >>> 3] |= bit;
        out.push(g);
      }
      a = b;
      b = c;
    }
  }

  /** The block's distinct trigrams per column (in first-seen order), and a fresh start for the next block. */
  takeGrams(): Record<TextColumn, number[]> {
    const out = this.grams;
    for (const column of ['input', 'output'] as const) {
      const seen = this.seen[column];
      for (const g of out[column]) seen[g >>> 3] = 0;
    }
    this.grams = { input: [], output: [] };
    return out;
  }

  /** The block's document (its tokens, space-separated), and a fresh start for the next block. */
  take(): string {
    const grams = this.takeGrams();
    const parts: string[] = [];
    for (const column of ['input', 'output'] as const)
      for (const g of grams[column]) parts.push(PREFIX[column] + g.toString(36));
    for (const [a, b] of this.meta.values()) parts.push(tokenOf(a, b));
    this.meta.clear();
    return parts.join(' ');
  }
}

/**
 * The trigrams a lookup for blocks that may hold `term` asks for (up to MAX_TERM_GRAMS of them, spread
 * over the term: a block holding the term holds them all), or null when the term is too short to
 * narrow anything.
 */
export function termGrams(term: string): number[] | null {
  const s = foldCase(term);
  if (s.length < 3) return null;
  const grams = new Set<number>();
  for (let i = 2; i < s.length; i++)
    grams.add(gramHash(s.charCodeAt(i - 2), s.charCodeAt(i - 1), s.charCodeAt(i)));
  const list = [...grams];
  if (list.length <= MAX_TERM_GRAMS) return list;
  const step = (list.length - 1) / (MAX_TERM_GRAMS - 1);
  return Array.from({ length: MAX_TERM_GRAMS }, (_, i) => list[Math.round(i * step)]);
}

/**
 * The index query for blocks that may hold `term` in `column` (every one of up to MAX_TERM_GRAMS
 * of its trigrams), or null when the term is too short to narrow anything.
 */
export function termQuery(column: TextColumn, term: string): string | null {
  const grams = termGrams(term);
  return grams ? grams.map((g) => PREFIX[column] + g.toString(36)).join(' AND ') : null;
}
