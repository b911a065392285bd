/**
 * Record search, the part both stores share: what a search asks (RecordSearch), the interfaces each
 * store implements (search-sqlite.ts, search-postgres.ts; text candidates in search-text.ts and
 * search-text-pg.ts), and the page query itself, compiled for the store's dialect.
 */
import { type Kysely, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { PageFormat } from '../domain/record-json.ts';
import type { RecordRow } from '../domain/records.ts';
import { type Dialect, type TextCandidates, compileFilterTree, compileSort } from '../query/compile.ts';
import { type FilterTree, type Leaf, columnLeaves } from '../query/filters.ts';
import type { SortSpec } from '../query/sorts.ts';
import type { DB } from './tables.ts';

export interface RecordSearch {
  projectId: string;
  /** Runs to search in (already checked to belong to the project); null: the whole project. */
  runId: string | null;
  /** Only the records of this annotation queue (already checked to belong to the project). */
  queueId?: string | null;
  types: readonly string[];
  tree: FilterTree | null;
  sort: SortSpec | null;
  offset: number;
  /** Rows to fetch (callers ask for one more than the page to learn whether another follows). */
  limit: number;
}

/**
 * For each `contains` leaf on a text-indexed column, the records that may match (rowids on SQLite,
 * ids on PostgreSQL), looked up on `db` in the snapshot of the query that uses them. Leaves the index
 * cannot narrow, or that hit more than `cap` records, get none (they scan).
 */
export interface TextCandidateSource {
  /** The most index hits a leaf uses as its candidate set. */
  cap: number;
  candidates(db: Kysely<DB>, tree: FilterTree | null, types?: readonly string[]): Promise<TextCandidates>;
}

/** A store's record search: one page of records, as rows or as the response's body. */
export interface SearchStore {
  readonly text: TextCandidateSource;
  /** Reader threads running (SQLite). */
  readonly readerThreads: number;
  /** Starts a reader thread ahead of the first search when there are records to search (SQLite). */
  warmReaders(): void;
  /** The page query (without running it), given text candidates already looked up. */
  pageQuery(
    db: Kysely<DB>,
    q: RecordSearch,
    candidates?: TextCandidates,
  ): SelectQueryBuilder<DB, 'records', RecordRow>;
  /** One page of records as the search response's body, JSON UTF-8 (domain/record-json.ts pageBody). */
  searchPage(q: RecordSearch, page: PageFormat): Promise<Buffer>;
}

/** The background job that keeps a store's text index current from its queue. */
export interface TextIndexer {
  readonly enabled: boolean;
  start(): void;
  stop(): Promise<void>;
  /** Queue entries waiting to be indexed. */
  pending(): Promise<number>;
  /** Indexes until the queue is empty (tests and benchmarks). */
  drain(): Promise<void>;
  /** Empties the index and queues every record again (repair). */
  rebuild(): Promise<void>;
}

/**
 * What a search selects from: `records`; for a queue search the queue's entries then their records.
 */
export function recordsFrom(db: Kysely<DB>, q: RecordSearch) {
  const records = db.selectFrom('records');
  if (q.queueId)
    return db
      .selectFrom('annotation_queue_records as aq')
      .crossJoin('records')
      .whereRef('records.id', '=', 'aq.record_id')
      .where('aq.queue_id', '=', q.queueId) as unknown as typeof records;
  return records;
}

/**
 * How a search's query is built: the store's dialect, its text candidates, and the candidate rowids
 * that drive it (SQLite).
 */
export interface QueryOptions {
  dialect: Dialect;
  candidates?: TextCandidates;
  drive?: readonly number[] | null;
}

/**
 * The records a search finds, over `base` (a select from `recordsFrom`): scope (a run or the
 * project), types and filters with their text candidates, without order or page. `drive`
 * (SQLite): a candidate set small enough to read directly instead of walking the run's records in
 * sort order; the unary `+` keeps SQLite from choosing the run index over those rowids.
 */
export function matchQuery<O>(
  base: SelectQueryBuilder<DB, 'records', O>,
  q: RecordSearch,
  o: QueryOptions,
): SelectQueryBuilder<DB, 'records', O> {
  const opts = { dialect: o.dialect, candidates: o.candidates };
  let query = base;
  const plus = o.drive ? sql`+` : sql``;
  if (o.drive)
    query = query.where(
      sql<SqlBool>`${sql.ref('records.rowid')} in (select value from json_each(${JSON.stringify(o.drive)}))`,
    );
  // A run id already implies the project (the service checked it); leaving project_id out lets the
  // (run_id, type, created_at, id) index answer without reading rows.
  query =
    q.runId === null
      ? query.where(sql<SqlBool>`${plus}${sql.ref('records.project_id')} = ${q.projectId}`)
      : query.where(sql<SqlBool>`${plus}${sql.ref('records.run_id')} = ${q.runId}`);
  // Record types are the service's constants, written as literals so that SQLite can use partial
  // indexes on one type (a bound parameter would hide which type it is).
  const types = q.types.map((t) => {
    if (!/^[a-z_]+$/.test(t)) throw new Error(`bad record type ${t}`);
    return sql.lit(t);
  });
  query =
    types.length === 1
      ? query.where(sql<SqlBool>`${plus}${sql.ref('records.type')} = ${types[0]}`)
      : query.where(sql<SqlBool>`${plus}${sql.ref('records.type')} in (${sql.join(types)})`);
  if (q.tree) query = query.where(compileFilterTree(q.tree, opts));
  return query;
}

/** The page query of a search over `base`: `matchQuery`, then sort and page. */
export function pageQuery<O>(
  base: SelectQueryBuilder<DB, 'records', O>,
  q: RecordSearch,
  o: QueryOptions,
): SelectQueryBuilder<DB, 'records', O> {
  let query = matchQuery(base, q, o);
  // The queue keeps each record's created_at: the native order (created_at, then id, descending)
  // read from its index.
  const native = q.sort || !q.queueId ? null : (['aq.record_created_at', 'aq.record_id'] as const);
  const order = native
    ? native.map((c) => ({ expr: sql.ref(c), direction: 'desc' as const, nullsLast: false }))
    : compileSort(q.sort, { dialect: o.dialect, candidates: o.candidates });
  for (const item of order) {
    query = query.orderBy(item.expr as any, (ob) => {
      const d = item.direction === 'desc' ? ob.desc() : ob.asc();
      return item.nullsLast ? d.nullsLast() : d;
    });
  }
  return query.limit(q.limit).offset(q.offset);
}

/** The `contains` leaves of a tree on columns the text index covers (input, output). */
export function indexedContainsLeaves(tree: FilterTree | null): Leaf[] {
  if (!tree) return [];
  return columnLeaves(tree)
    .map((l) => l.filter)
    .filter(
      (f) => (f.kind === 'text' || f.kind === 'id') && f.operator === 'contains' && f.column.textIndexed,
    );
}

/**
 * Whether the text indexes (both hold case-folded text) can narrow a `contains` search for `term`.
 * A case-sensitive match is a match of the folded texts unless the term holds a capital sigma (the
 * only folding that depends on the neighbouring letters).
 */
export function foldedIndexServes(term: string, caseSensitive: boolean): boolean {
  return !(caseSensitive && term.includes('\u03a3'));
}

/** The text index column of a leaf on `input` or `output`. */
export function indexedColumn(leaf: Leaf): 'input' | 'output' {
  const src = leaf.column.source;
  return src.kind === 'scalar' && src.column === 'output_text' ? 'output' : 'input';
}
