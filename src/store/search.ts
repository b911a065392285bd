/**
 * Repository SQL for record search: the page query, trigram text-index candidates (SQLite), the
 * control of the background text indexer and of the reader threads (SQLite), and the column
 * catalogue reads behind available columns.
 */
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';
import { type Kysely, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { Leaf } from '../query/filters.ts';
import { type FilterTree, leavesOf } from '../query/filters.ts';
import {
  type TextCandidates,
  candidateOptions,
  compileFilterTree,
  compileSort,
  likeContains,
} from '../query/compile.ts';
import type { SortSpec } from '../query/sorts.ts';
import type { Store } from './db.ts';
import {
  attachTextIndex,
  checkTextIndex,
  indexQueued,
  indexedSeq,
  rebuildTextIndex,
  textTables,
  trimQueue,
} from './search-text.ts';
import { PgTextIndexer } from './search-text-pg.ts';
import type { DB, RecordsTable } from './tables.ts';
import type { StoredRecord } from '../domain/records.ts';
import { type PageFormat, pageBody, recordJson, searchPageJson } from '../services/search-page.ts';
import { pageJsonStatement } from './search-json.ts';

export interface RecordSearch {
  projectId: string;
  /** Runs to search in (already checked to belong to the project); null: the whole project. */
  runId: string | null;
  types: readonly string[];
  tree: FilterTree | null;
  sort: SortSpec | null;
  offset: number;
  /** Rows to fetch (callers ask for one more than the page to learn whether another follows). */
  limit: number;
}

export type RecordRowRead = RecordsTable;

/** A record of a page as store/search-json.ts renders it (`j` null: to render in JavaScript). */
export interface PageJsonRow {
  rid: number;
  id: string;
  j: Uint8Array | null;
}

export interface CatalogueEntry {
  column_id: string;
  record_type: string;
  data_type: string;
}

export interface SearchRepoOptions {
  /** SQLite: answer searches on up to this many reader threads (default 2; 0: on the main connection). */
  readers?: number;
  /**
   * The most trigram-index hits a `contains` leaf uses as its candidate set; a term with more hits is
   * common enough that scanning in sort order finds a page sooner.
   */
  candidateCap?: number;
}

const MAX_TRIGRAMS = 4;

/**
 * Phase two of a SQLite search: the full rows of the page's rowids (bound as a JSON array), each with
 * its rowid as `__rid` to put them in the page's order.
 */
const ROWS_BY_ROWID =
  'select "records".*, "records"."rowid" as "__rid" from "records" where "records"."rowid" in (select value from json_each(?))';

/** Query text for the FTS5 trigram index, or null when the index cannot narrow the search. */
export function trigramQuery(
  column: 'input' | 'output',
  term: string,
  caseSensitive: boolean,
): string | null {
  // The index holds lower-cased text. A case-sensitive match is a match of the lower-cased texts
  // unless the term holds a capital sigma (the only context-dependent lower-casing).
  if (caseSensitive && term.includes('\u03a3')) return null;
  const cps = Array.from(term.toLowerCase());
  if (cps.length < 3 || cps.includes('\0')) return null;
  const grams = new Set<string>();
  for (let i = 0; i + 3 <= cps.length; i++) grams.add(cps.slice(i, i + 3).join(''));
  // A few trigrams spread over the term narrow as well as all of them (each record is checked
  // exactly afterwards) and intersect far fewer posting lists.
  let list = [...grams];
  if (list.length > MAX_TRIGRAMS) {
    const step = (list.length - 1) / (MAX_TRIGRAMS - 1);
    list = Array.from({ length: MAX_TRIGRAMS }, (_, i) => list[Math.round(i * step)]);
  }
  return `${column} : (${list.map((g) => `"${g.replace(/"/g, '""')}"`).join(' AND ')})`;
}

export class SearchRepo {
  candidateCap: number;
  /** Candidate sets up to this size are read directly rather than filtered in sort order. */
  driveMax = 2000;
  private readonly readers: SqliteReaders | null;
  private readonly textIndex: boolean;
  private readonly statements = new Map<string, SQLite.Statement>();
  private readonly plucked = new Map<string, SQLite.Statement>();

  constructor(
    private readonly store: Store,
    opts: SearchRepoOptions = {},
  ) {
    this.candidateCap = opts.candidateCap ?? 20_000;
    const file = store.sqlite?.name;
    // The text index file, attached on this connection (SQLite, file databases only).
    this.textIndex = store.sqlite ? attachTextIndex(store.sqlite) : false;
    const readers = opts.readers ?? 2;
    this.readers = readers > 0 && file && !store.sqlite?.memory ? new SqliteReaders(file, readers) : null;
  }

  /** Stops the reader threads. */
  async close(): Promise<void> {
    await this.readers?.close();
  }

  /**
   * Starts one reader thread now, ahead of the first search, when there are records to search: a
   * thread takes about a second to start (two under load), which the first search after a restart
   * would otherwise wait for. A new, empty store waits for its first search (an idle reader holds
   * about 20 MB).
   */
  warmReaders(): void {
    if (!this.readers || !this.store.sqlite!.prepare('select 1 from records limit 1').get()) return;
    this.readers.warm();
  }

  /** Reader threads running (SQLite). */
  get readerThreads(): number {
    return this.readers?.size ?? 0;
  }

  /**
   * The page query (without running it), given text candidates already looked up (rowids on SQLite,
   * ids on PostgreSQL).
   */
  pageQuery(
    db: Kysely<DB>,
    q: RecordSearch,
    textCandidates?: TextCandidates,
  ): SelectQueryBuilder<DB, 'records', RecordRowRead> {
    return this.filtered(db.selectFrom('records').selectAll('records') as any, q, textCandidates);
  }

  /**
   * SQLite: the rowids of the page, in order. With only the rowid selected, SQLite answers from an
   * index alone when the filters read only indexed columns (sessions: records_session_scan), so a
   * search that passes over many records before filling its page reads no table rows for them.
   */
  rowidQuery(
    db: Kysely<DB>,
    q: RecordSearch,
    textCandidates?: ReadonlyMap<Leaf, readonly number[]>,
  ): SelectQueryBuilder<DB, 'records', { rid: number }> {
    return this.filtered(
      db.selectFrom('records').select(sql<number>`${sql.ref('records.rowid')}`.as('rid')) as any,
      q,
      textCandidates,
    );
  }

  private filtered<O>(
    base: SelectQueryBuilder<DB, 'records', O>,
    q: RecordSearch,
    candidates?: TextCandidates,
  ): SelectQueryBuilder<DB, 'records', O> {
    const opts = candidateOptions(this.store.dialect, candidates);
    const { textCandidates } = opts;
    let query = base;
    // A rare text term (few candidate rowids, in a leaf every match must satisfy) reads its
    // candidates directly instead of walking the run's records in sort order; the unary `+` keeps
    // SQLite from choosing the run index over the rowids. (PostgreSQL's planner weighs `id = any(...)`
    // itself.)
    const drive = this.drivingCandidates(q.tree, textCandidates);
    const plus = drive ? sql`+` : sql``;
    if (drive)
      query = query.where(
        sql<SqlBool>`${sql.ref('records.rowid')} in (select value from json_each(${JSON.stringify(drive)}))`,
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
    for (const item of compileSort(q.sort, opts)) {
      query = query.orderBy(item.expr as any, (ob) => {
        const o = item.direction === 'desc' ? ob.desc() : ob.asc();
        return item.nullsLast ? o.nullsLast() : o;
      });
    }
    return query.limit(q.limit).offset(q.offset);
  }

  /** The smallest candidate set of a leaf that every match satisfies, when small enough to read directly. */
  private drivingCandidates(
    tree: FilterTree | null,
    candidates?: ReadonlyMap<Leaf, readonly number[]>,
  ): readonly number[] | null {
    if (!tree || !candidates?.size) return null;
    const conjuncts = tree.op === 'and' ? tree.children : [tree];
    let best: readonly number[] | null = null;
    for (const c of conjuncts) {
      const rowids = c.op === 'leaf' ? candidates.get(c.filter) : undefined;
      if (rowids && rowids.length <= this.driveMax && (!best || rowids.length < best.length)) best = rowids;
    }
    return best;
  }

  /**
   * SQLite: for each `contains` leaf on an indexed column, the rowids that may match: the trigram
   * index's hits (in the indexes of `types`, default all) plus every row not indexed yet (queued).
   * Leaves whose term the index cannot narrow, or that hit more than `candidateCap` rows, get none
   * (they scan).
   */
  async textCandidates(
    db: Kysely<DB>,
    tree: FilterTree | null,
    types?: readonly string[],
  ): Promise<Map<Leaf, number[]>> {
    const out = new Map<Leaf, number[]>();
    if (!tree || this.store.dialect !== 'sqlite' || !this.textIndex) return out;
    const leaves = indexedContainsLeaves(tree);
    if (!leaves.length) return out;
    const tables = textTables(types);
    // Read the index file first (its position in the queue), then the queue: the queue's snapshot is then
    // at least as new as the index's, so every record is in the index as it is now or queued beyond
    // that position.
    const { rows: pos } = await sql<{ value: string }>`select value from text.meta where key = 'seq'`.execute(
      db,
    );
    const indexed = Number(pos[0]?.value ?? 0);
    const { rows: queuedRows } = await sql<{
      rid: number;
    }>`select distinct rid from records_text_queue where seq > ${indexed} limit ${this.candidateCap + 1}`.execute(
      db,
    );
    const queued = queuedRows.map((r) => r.rid);
    if (queued.length > this.candidateCap) return out;
    for (const leaf of leaves) {
      const src = leaf.column.source;
      const column = src.kind === 'scalar' && src.column === 'output_text' ? 'output' : 'input';
      const match = trigramQuery(
        column,
        leaf.value as string,
        (leaf as { caseSensitive: boolean }).caseSensitive,
      );
      if (match === null) continue;
      const hits: number[] = [];
      for (const table of tables) {
        // The MATCH column is the table's own name, unqualified.
        const { rows } = await sql<{ rowid: number }>`select rowid from ${sql.table(table)} where ${sql.id(
          table.slice(table.indexOf('.') + 1),
        )} match ${match} limit ${this.candidateCap + 1 - hits.length}`.execute(db);
        for (const r of rows) hits.push(r.rowid);
        if (hits.length > this.candidateCap) break;
      }
      if (hits.length + queued.length > this.candidateCap) continue;
      out.set(leaf, [...hits, ...queued]);
    }
    return out;
  }

  /** PostgreSQL: whether the text index has its GIN indexes (pg_trgm was there; migration 008). */
  private pgTextIndex: Promise<boolean> | null = null;

  /**
   * PostgreSQL: for each `contains` leaf on an indexed column, the ids of the records that may match:
   * the trigram index's hits (`records_text`, migration 008) plus every record queued for it. Leaves
   * whose term has fewer than 3 characters, or that hit more than `candidateCap` records, get none
   * (they scan); so do all when more than that are queued. Must run in the page query's snapshot.
   */
  async pgTextCandidates(db: Kysely<DB>, tree: FilterTree | null): Promise<Map<Leaf, string[]>> {
    const out = new Map<Leaf, string[]>();
    const leaves = pgIndexableLeaves(tree);
    if (!leaves.length) return out;
    this.pgTextIndex ??= sql<{
      found: boolean;
    }>`select to_regclass('records_text_input_trgm') is not null as found`
      .execute(db)
      .then(
        (r) => !!r.rows[0]?.found,
        () => {
          this.pgTextIndex = null;
          return false;
        },
      );
    if (!(await this.pgTextIndex)) return out;
    const cap = this.candidateCap;
    const { rows: queuedRows } = await sql<{
      id: string;
    }>`select id from records_text_queue limit ${cap + 1}`.execute(db);
    if (queuedRows.length > cap) return out;
    const queued = [...new Set(queuedRows.map((r) => r.id))];
    for (const leaf of leaves) {
      const src = leaf.column.source;
      const column = src.kind === 'scalar' && src.column === 'output_text' ? 'output' : 'input';
      // The index holds lower(text); lower() maps character by character on PostgreSQL, so every
      // match, case-sensitive or not, is a match of the lowered texts.
      const hit = sql`${sql.ref(column)} like lower(${likeContains(leaf.value as string)}::text)`;
      // A term the planner expects in more records than the cap is common: scanning in sort order
      // finds a page sooner than collecting the index's hits (a bitmap of every hit, each rechecked)
      // only to learn there are too many.
      const plan = await sql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>`explain (format json)
        select id from records_text where ${hit}`.execute(db);
      if (Number(plan.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows']) > cap) continue;
      const { rows } = await sql<{ id: string }>`select id from records_text where ${hit}
        limit ${cap + 1 - queued.length}`.execute(db);
      if (rows.length + queued.length > cap) continue;
      out.set(leaf, [...rows.map((r) => r.id), ...queued]);
    }
    return out;
  }

  /**
   * PostgreSQL: one page of records. With text candidates to look up, they and the page are read in
   * one snapshot (a repeatable-read transaction): every record is then either indexed as it is in
   * that snapshot or queued.
   */
  private async pgPageRows(q: RecordSearch): Promise<RecordRowRead[]> {
    if (!pgIndexableLeaves(q.tree).length) return this.pageQuery(this.store.db, q).execute();
    return this.store.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (trx) => this.pageQuery(trx, q, await this.pgTextCandidates(trx, q.tree)).execute());
  }

  /** One page of records (up to `q.limit` rows), read in one snapshot, on a reader thread when there are. */
  async search(q: RecordSearch): Promise<RecordRowRead[]> {
    if (this.readers) return this.readers.run(q, this.candidateCap);
    return this.searchHere(q);
  }

  /**
   * One page of records as the search response's body, JSON UTF-8 (services/search-page.ts), made on
   * the reader thread that read it when there are reader threads.
   */
  async searchPage(q: RecordSearch, page: PageFormat): Promise<Buffer> {
    if (this.readers) {
      const body = await this.readers.run(q, this.candidateCap, page);
      return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    }
    return this.pageBodyHere(q, page);
  }

  /**
   * `searchPage` on this thread's connection. SQLite: in one read transaction (one snapshot), the text
   * candidates, the page's rowids, then its records rendered as JSON by the statement itself
   * (store/search-json.ts), the few it cannot render read whole and rendered here.
   */
  async pageBodyHere(q: RecordSearch, page: PageFormat): Promise<Buffer> {
    if (this.store.dialect === 'postgres')
      return Buffer.from(searchPageJson(await this.pageRowsHere(q), page));
    return this.withPageRowids(q, (rowids) => {
      const more = rowids.length > page.limit;
      const rows = this.pageJsonRows(more ? rowids.slice(0, page.limit) : rowids, page.includeCounts);
      return pageBody(
        rows.map((r) => r.j as Uint8Array),
        rows.length ? rows[rows.length - 1].id : null,
        more,
        page,
      );
    });
  }

  /**
   * SQLite: `read` given the page's rowids, in one read transaction (candidates, rowids and what
   * `read` reads come from one snapshot). The connection is held throughout (as ingestion holds it
   * for its statements on the handle); the statements run on the handle directly, prepared once.
   */
  private withPageRowids<T>(q: RecordSearch, read: (rowids: number[]) => T): Promise<T> {
    const h = this.store.sqlite!;
    return this.store.db.connection().execute(async (conn) => {
      h.exec('begin');
      try {
        const candidates = await this.textCandidates(conn, q.tree, q.types);
        const compiled = this.rowidQuery(conn, q, candidates).compile();
        return read(this.prepared(compiled.sql, true).all(compiled.parameters) as number[]);
      } finally {
        if (h.inTransaction) h.exec('commit');
      }
    });
  }

  /**
   * SQLite: the records of `rowids` as their response JSON, in that order; rows the statement cannot
   * render are read whole and rendered with recordToApi and the response schema. Runs inside the
   * caller's read transaction.
   */
  pageJsonRows(rowids: readonly number[], includeCounts: boolean): PageJsonRow[] {
    if (!rowids.length) return [];
    const rows = this.prepared(pageJsonStatement(includeCounts), false).all(
      JSON.stringify(rowids),
    ) as PageJsonRow[];
    const missing = rows.filter((r) => r.j === null);
    if (missing.length) {
      const full = this.prepared(ROWS_BY_ROWID, false).all(
        JSON.stringify(missing.map((r) => r.rid)),
      ) as (StoredRecord & {
        __rid: number;
      })[];
      const byRowid = new Map(full.map((r) => [r.__rid, r]));
      for (const r of missing) r.j = Buffer.from(recordJson(byRowid.get(r.rid)!, includeCounts));
    }
    return rows;
  }

  /** `search` on this thread's connection. */
  async searchHere(q: RecordSearch): Promise<RecordRowRead[]> {
    if (this.store.dialect === 'postgres') return this.pgPageRows(q);
    return (await this.pageRowsHere(q)).map(({ __rid: _, ...rest }) => rest as RecordRowRead);
  }

  /**
   * `searchHere` for a page to format (searchPageJson): on SQLite the rows keep the `__rid` the
   * statement selects (no copy of each row without it; the formatting reads named fields only).
   */
  async pageRowsHere(q: RecordSearch): Promise<(RecordRowRead & { __rid?: number })[]> {
    if (this.store.dialect === 'postgres') return this.pgPageRows(q);
    return this.withPageRowids(q, (rowids) => {
      if (!rowids.length) return [];
      const rows = this.prepared(ROWS_BY_ROWID, false).all(JSON.stringify(rowids)) as (RecordRowRead & {
        __rid: number;
      })[];
      const byRowid = new Map(rows.map((r) => [r.__rid, r]));
      return rowids.flatMap((rid) => byRowid.get(rid) ?? []);
    });
  }

  /** A statement on this store's SQLite handle, prepared once (up to 200 kept). */
  private prepared(text: string, pluck: boolean): SQLite.Statement {
    const cache = pluck ? this.plucked : this.statements;
    let stmt = cache.get(text);
    if (!stmt) {
      if (cache.size >= 200) cache.clear();
      stmt = this.store.sqlite!.prepare(text);
      if (pluck) stmt.pluck();
      cache.set(text, stmt);
    }
    return stmt;
  }

  /** `metrics/<key>` column ids among `ids` that the catalogue has seen in any run of the project. */
  async knownMetricColumns(projectId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.store.db
      .selectFrom('column_catalogue')
      .innerJoin('runs', 'runs.id', 'column_catalogue.run_id')
      .select('column_catalogue.column_id')
      .distinct()
      .where('runs.project_id', '=', projectId)
      .where('column_catalogue.column_id', 'in', ids)
      .execute();
    return new Set(rows.map((r) => r.column_id));
  }

  /**
   * Keys the catalogue saw in a run (or every run of a project) whose first–last seen interval meets the
   * window, with each record type and data type they were seen with.
   */
  async catalogue(
    projectId: string,
    runId: string | null,
    window: { start: number | null; end: number | null },
    recordTypes: readonly string[] | null,
  ): Promise<CatalogueEntry[]> {
    let q = this.store.db
      .selectFrom('column_catalogue')
      .select(['column_catalogue.column_id', 'column_catalogue.record_type', 'column_catalogue.data_type'])
      .distinct();
    if (runId !== null) q = q.where('column_catalogue.run_id', '=', runId);
    else
      q = q.where('column_catalogue.run_id', 'in', (eb) =>
        eb.selectFrom('runs').select('runs.id').where('runs.project_id', '=', projectId),
      );
    if (window.start !== null) q = q.where('column_catalogue.last_seen', '>=', window.start);
    if (window.end !== null) q = q.where('column_catalogue.first_seen', '<=', window.end);
    if (recordTypes) q = q.where('column_catalogue.record_type', 'in', recordTypes as string[]);
    return q.orderBy('column_catalogue.column_id').execute();
  }

  /** The record types among `types` that have at least one record in the run (or project) and window. */
  async typesPresent(
    projectId: string,
    runId: string | null,
    types: readonly string[],
    window: { start: number | null; end: number | null },
  ): Promise<Set<string>> {
    const present = new Set<string>();
    for (const type of types) {
      let q = this.store.db
        .selectFrom('records')
        .select(sql<number>`1`.as('one'))
        .where('records.type', '=', type);
      q =
        runId === null
          ? q.where('records.project_id', '=', projectId)
          : q.where('records.run_id', '=', runId);
      if (window.start !== null) q = q.where('records.created_at', '>=', window.start);
      if (window.end !== null) q = q.where('records.created_at', '<=', window.end);
      if (await q.limit(1).executeTakeFirst()) present.add(type);
    }
    return present;
  }
}

/** The `contains` leaves of a tree on columns the text index covers (input, output). */
function indexedContainsLeaves(tree: FilterTree | null): Leaf[] {
  if (!tree) return [];
  return leavesOf(tree)
    .map((l) => l.filter)
    .filter(
      (f) => (f.kind === 'text' || f.kind === 'id') && f.operator === 'contains' && f.column.textIndexed,
    );
}

/** PostgreSQL: the leaves of `indexedContainsLeaves` with a term of a trigram or more (and no NUL). */
function pgIndexableLeaves(tree: FilterTree | null): Leaf[] {
  return indexedContainsLeaves(tree).filter((l) => {
    const term = l.value as string;
    return Array.from(term).length >= 3 && !term.includes('\u0000');
  });
}

/**
 * Keeps the text index current from its queue, shortly after each write.
 *
 * SQLite: the trigram index (store/search-text.ts), on a thread of its own (search-worker.ts, role
 * `indexer`) with its own connection: indexing competes with ingestion for neither the main thread
 * nor the records' write lock. `start` first checks the index belongs to this database (rebuilding
 * it otherwise).
 *
 * PostgreSQL: `records_text` (store/search-text-pg.ts), by a background job of this process on the
 * pool; every process runs one, and they share the queue.
 */
export class TextIndexer {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly pg: PgTextIndexer | null;

  constructor(private readonly store: Store) {
    this.pg =
      store.dialect === 'postgres'
        ? new PgTextIndexer(store.db, () => (store.ingestsInFlight ?? 0) > 0)
        : null;
  }

  get enabled(): boolean {
    if (this.pg) return true;
    return this.store.dialect === 'sqlite' && !!this.store.sqlite && attachTextIndex(this.store.sqlite);
  }

  start(): void {
    if (this.pg) {
      this.pg.start();
      return;
    }
    if (!this.enabled || this.worker) return;
    checkTextIndex(this.store.sqlite!);
    const worker = spawnSearchWorker(this.store.sqlite!.name, 'indexer');
    worker.on('message', (msg: { id: number; error?: string }) => {
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.error) w.reject(new Error(msg.error));
      else w.resolve();
    });
    const gone = () => {
      if (this.worker === worker) this.worker = null;
      for (const w of this.waiting.values()) w.reject(new Error('text indexer stopped'));
      this.waiting.clear();
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    worker.unref();
    this.worker = worker;
    // Entries the index has taken are removed now and then, here on the main connection (the
    // indexer thread never writes the records' database).
    this.trimTimer = setInterval(() => void this.trim().catch(() => {}), 5000);
    this.trimTimer.unref();
  }

  private trimTimer: NodeJS.Timeout | null = null;

  private async trim(): Promise<void> {
    const h = this.store.sqlite!;
    await this.store.db.connection().execute(async () => {
      if (!h.inTransaction) trimQueue(h);
    });
  }

  async stop(): Promise<void> {
    await this.pg?.stop();
    if (this.trimTimer) clearInterval(this.trimTimer);
    this.trimTimer = null;
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  /** Queue entries waiting to be indexed. */
  async pending(): Promise<number> {
    if (this.pg) return this.pg.pending();
    if (!this.enabled) return 0;
    return this.store.db.connection().execute(async () => {
      const h = this.store.sqlite!;
      return Number(
        h.prepare('select count(*) from records_text_queue where seq > ?').pluck().get(indexedSeq(h)),
      );
    });
  }

  /** Indexes until the queue is empty (tests and benchmarks): on the indexer thread when it runs. */
  async drain(): Promise<void> {
    if (this.pg) return this.pg.drain();
    if (!this.enabled) return;
    const worker = this.worker;
    if (worker) {
      const id = this.nextId++;
      worker.ref();
      try {
        await new Promise<void>((resolve, reject) => {
          this.waiting.set(id, { resolve, reject });
          worker.postMessage({ id, kind: 'drain' });
        });
      } finally {
        worker.unref();
      }
      await this.trim();
      return;
    }
    const h = this.store.sqlite!;
    // Here, between other uses of the main connection, never inside one of their transactions.
    while (
      await this.store.db.connection().execute(async () => (h.inTransaction ? 0 : indexQueued(h, 50)))
    ) {}
    await this.trim();
  }

  /** Empties the index and queues every record again (repair). */
  async rebuild(): Promise<void> {
    if (this.pg) return this.pg.rebuild();
    if (!this.enabled) return;
    await this.store.db.connection().execute(async () => rebuildTextIndex(this.store.sqlite!));
  }
}

interface Job {
  resolve: (result: RecordRowRead[] | Uint8Array) => void;
  reject: (err: Error) => void;
}

interface Reader {
  worker: Worker;
  jobs: Map<number, Job>;
}

/**
 * The indexer handles a few hundred short rows at a time: a small young generation is enough for it,
 * and V8's default (16 MiB semi-spaces) would add about 24 MiB to the server's resident memory while
 * ingestion runs.
 */
const INDEXER_LIMITS = { maxYoungGenerationSizeMb: 4 };

/** A search thread (search-worker.ts) on the database file: a `reader` or the `indexer`. */
function spawnSearchWorker(file: string, role: 'reader' | 'indexer'): Worker {
  const boot = readerBootstrap();
  const workerData = { file, role };
  const resourceLimits = role === 'indexer' ? INDEXER_LIMITS : undefined;
  return 'code' in boot
    ? new Worker(boot.code, { eval: true, workerData, resourceLimits })
    : new Worker(boot.url, { workerData, resourceLimits });
}

/** The code that starts a search thread: under tsx (TypeScript sources) it registers tsx first. */
function readerBootstrap(): { code: string; eval: true } | { url: URL } {
  const url = new URL(
    import.meta.url.endsWith('.ts') ? './search-worker.ts' : './search-worker.js',
    import.meta.url,
  );
  if (!import.meta.url.endsWith('.ts')) return { url };
  const tsx = import.meta.resolve('tsx/esm/api');
  return {
    eval: true,
    code: `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(url.href)}); })`,
  };
}

/**
 * A small pool of SQLite reader threads (search-worker.ts), started on first use. A job goes to an
 * idle thread, or a new one while under the limit, else to the least loaded.
 */
export class SqliteReaders {
  private readers: Reader[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly max: number,
  ) {}

  private spawn(): Reader {
    const worker = spawnSearchWorker(this.file, 'reader');
    const reader: Reader = { worker, jobs: new Map() };
    worker.on(
      'message',
      (msg: {
        id: number;
        rows?: RecordRowRead[];
        body?: Uint8Array;
        error?: { message: string; code?: string };
      }) => {
        const job = reader.jobs.get(msg.id);
        if (!job) return;
        reader.jobs.delete(msg.id);
        // An idle reader does not keep the process alive; a busy one does.
        if (reader.jobs.size === 0) worker.unref();
        if (msg.error) job.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
        else job.resolve(msg.body ?? msg.rows ?? []);
      },
    );
    const fail = (err: Error) => {
      this.readers = this.readers.filter((r) => r !== reader);
      for (const job of reader.jobs.values()) job.reject(err);
      reader.jobs.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`search reader exited (${code})`)));
    worker.unref();
    this.readers.push(reader);
    return reader;
  }

  /** Starts a thread if none runs yet. */
  warm(): void {
    if (!this.closed && !this.readers.length) this.spawn();
  }

  get size(): number {
    return this.readers.length;
  }

  /** The rows of a search, or with `page` its response body (searchPageJson, UTF-8). */
  run(query: RecordSearch, candidateCap: number): Promise<RecordRowRead[]>;
  run(query: RecordSearch, candidateCap: number, page: PageFormat): Promise<Uint8Array>;
  run(query: RecordSearch, candidateCap: number, page?: PageFormat): Promise<RecordRowRead[] | Uint8Array> {
    if (this.closed) return Promise.reject(new Error('search readers are closed'));
    let reader = this.readers.find((r) => r.jobs.size === 0);
    if (!reader && this.readers.length < this.max) reader = this.spawn();
    reader ??= this.readers.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      reader.jobs.set(id, { resolve, reject });
      reader.worker.ref();
      reader.worker.postMessage({ id, query, candidateCap, page });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = this.readers;
    this.readers = [];
    await Promise.all(all.map((r) => r.worker.terminate()));
  }
}
