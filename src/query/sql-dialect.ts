/**
 * What SQL differs between the two stores, as one interface with an implementation per store
 * (sql-sqlite.ts, sql-postgres.ts), picked once by compile.ts `sqlFor`: the filter compiler (compile.ts) and the
 * widget statements (store/widget-cells.ts) are written once over it.
 */
import { type RawBuilder, sql } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

export type Frag = RawBuilder<unknown>;

/** How a value is read: text, number, boolean (1/0), or `any` (1 for a value of any JSON type but null). */
export type Want = 'text' | 'number' | 'boolean' | 'any';

export interface OrderItem {
  expr: Frag;
  direction: 'asc' | 'desc';
  /** PostgreSQL: NULLS LAST (SQLite needs no modifier: see SqlDialect.missingLast). */
  nullsLast?: boolean;
}

/** The `tags` JSON array, read element by element (`fold`: the case folding of a comparison). */
export interface ArraySql {
  /** The column holds an array. */
  present(tags: Frag): Frag;
  /** EXISTS a string element satisfying cond(element text). */
  anyElement(tags: Frag, cond: (element: Frag) => Frag): Frag;
  lengthIs(tags: Frag, n: number): Frag;
  /** Element i is the string list[i], for every i (the lengths are checked apart). */
  sameElements(tags: Frag, list: string[], fold: (e: Frag) => Frag): Frag;
}

export interface SqlDialect extends ArraySql {
  readonly name: Dialect;
  /** A text parameter (typed where functions such as spanbase_fold() must resolve). */
  text(v: string): Frag;
  /** A number parameter. */
  num(v: number): Frag;
  /**
   * The value of `key` in the JSON object column `col` as `want`, SQL NULL when missing or of another
   * JSON type. `numbersOnly`: the column holds numbers only (metrics). `loose` (text only): a value of
   * another type may come back instead of NULL, marked `loose` (see compile.ts).
   */
  jsonValue(
    col: Frag,
    key: string,
    want: Want,
    o: { numbersOnly: boolean; loose: boolean },
  ): { expr: Frag; loose: boolean };
  /** A list of strings as ONE parameter, as a subquery of their values, each through `fold`. */
  inList(values: readonly string[], fold: (e: Frag) => Frag): Frag;
  /** `value` holds `term` (both through `fold`); `loose`: the value may be of another type. */
  contains(value: Frag, term: string, fold: (e: Frag) => Frag, loose: boolean): Frag;
  /** The record is one of `candidates` (text-index candidates: blocks of rowids on SQLite, ids on PostgreSQL). */
  inCandidates(ref: (column: string) => Frag, candidates: readonly (number | string)[]): Frag;
  /** Text ordered by code point. */
  byCodePoint(e: Frag): Frag;
  /** ORDER BY `x` in `dir` with NULL last, in forms an index can serve where one exists. */
  missingLast(x: Frag, dir: 'asc' | 'desc'): OrderItem[];
  /** sum() of a column of numbers, exact or without overflow. */
  sum(x: Frag): Frag;
  /** The discrete percentile (domain/dashboards.ts percentileIndex) of the non-null values of `x`. */
  percentile(x: Frag, percent: number): Frag;
}

/**
 * An expression case-folded the same way on both stores, whatever the database's locale: every
 * case-insensitive filter, sort and search compares folded text. `spanbase_fold` is JavaScript's
 * toLowerCase (domain/text.ts foldCase) registered on each SQLite connection (store/db.ts), and
 * ICU's root-locale lower(), the same mapping, on PostgreSQL (migration 009).
 */
export const fold = (e: Frag): Frag => sql`spanbase_fold(${e})`;

/** `%term%` for LIKE with the term taken literally (backslash escapes, as both stores use). */
export function likeContains(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
