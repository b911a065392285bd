/**
 * Record search on SQLite: on reader threads (reader-thread.ts) when the database is a file, in one
 * read transaction per page: the text candidates (search-text.ts), the page's rowids (a query that
 * SQLite can answer from an index alone), then the page's records rendered as their response JSON by
 * the statement that reads them (search-json.ts), the few it cannot render read whole and rendered
 * here. Statements run on the better-sqlite3 handle, prepared once.
 */
import type SQLite from 'better-sqlite3';
import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import { type PageFormat, pageBody, recordJson } from '../domain/record-json.ts';
import type { StoredRecord } from '../domain/records.ts';
import type { TextCandidates } from '../query/compile.ts';
import type { FilterTree } from '../query/filters.ts';
import { recordFeedback } from './annotations.ts';
import type { Store } from './db.ts';
import type { ReaderPool } from './reader-pool.ts';
import { pageJsonStatement } from './search-json.ts';
import {
  type QueryOptions,
  type RecordSearch,
  type SearchStore,
  pageQuery,
  recordsFrom,
} from './search-query.ts';
import { SqliteTextCandidates } from './search-text.ts';
import { BLOCK_ROWS } from '../domain/text-grams.ts';
import type { DB } from './tables.ts';

export interface SqliteSearchOptions {
  /**
   * The most text-index candidates a `contains` leaf uses as its candidate set; a term with more is
   * common enough that scanning in sort order finds a page sooner.
   */
  candidateCap?: number;
}

/** A record of a page as search-json.ts renders it (`j` null: to render in JavaScript). */
export interface PageJsonRow {
  rid: number;
  id: string;
  j: Uint8Array | null;
}

/**
 * Phase two of a search: the full rows of the page's rowids (bound as a JSON array), each with its
 * rowid as `__rid` to put them in the page's order.
 */
const ROWS_BY_ROWID =
  'select "records".*, "records"."rowid" as "__rid" from "records" where "records"."rowid" in (select value from json_each(?))';

export class SqliteSearch implements SearchStore {
  readonly text: SqliteTextCandidates;
  /** Candidate sets up to this size are read directly rather than filtered in sort order. */
  driveMax = 2000;
  private readonly h: SQLite.Database;
  private readonly readers: ReaderPool | null;
  private readonly statements = new Map<string, SQLite.Statement>();
  private readonly plucked = new Map<string, SQLite.Statement>();

  constructor(
    private readonly store: Store,
    opts: SqliteSearchOptions = {},
  ) {
    this.h = store.sqlite!;
    this.text = new SqliteTextCandidates(this.h, opts.candidateCap);
    // Searches run on the store's reader threads; without them (the threads' own connections), here.
    this.readers = store.readers;
  }

  /**
   * Starts one reader thread now, ahead of the first search, when there are records to search: a
   * thread takes about a second to start (two under load), which the first search after a restart
   * would otherwise wait for. A new, empty store waits for its first search (an idle reader holds
   * about 20 MB).
   */
  warmReaders(): void {
    if (!this.readers || !this.h.prepare('select 1 from records limit 1').get()) return;
    this.readers.warm();
  }

  get readerThreads(): number {
    return this.readers?.running ?? 0;
  }

  async searchPage(q: RecordSearch, page: PageFormat): Promise<Buffer> {
    if (this.readers) {
      const body = await this.readers.run('page', { query: q, candidateCap: this.text.cap, page });
      return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    }
    return this.pageBodyHere(q, page);
  }

  /** The page query (without running it), given text candidates already looked up. */
  pageQuery(db: Kysely<DB>, q: RecordSearch, candidates?: TextCandidates) {
    const o = this.queryOptions(q, candidates);
    return pageQuery(this.from(db, q, o).selectAll('records'), q, o);
  }

  /**
   * The rowids of the page, in order. With only the rowid selected, SQLite answers from an index
   * alone when the filters read only indexed columns (sessions: records_session_scan), so a search
   * that passes over many records before filling its page reads no table rows for them.
   */
  rowidQuery(
    db: Kysely<DB>,
    q: RecordSearch,
    candidates?: TextCandidates,
  ): SelectQueryBuilder<DB, 'records', { rid: number }> {
    const o = this.queryOptions(q, candidates);
    return pageQuery(this.from(db, q, o).select(sql<number>`${sql.ref('records.rowid')}`.as('rid')), q, o);
  }

  /**
   * What a search reads (`recordsFrom`). A search of a run over several types (spans) in the native
   * order walks records_run_created (run, created_at, type, ...) newest first, sorting only records
   * of one created_at by id, and stops at a full page. Without statistics the planner would rather
   * read each type's records from records_run_type_created and sort them all: a cost that grows
   * with the run.
   */
  private from(db: Kysely<DB>, q: RecordSearch, o: QueryOptions) {
    const native = !q.sort && !q.queueId && !o.drive && q.runId !== null;
    if (native && q.types.length > 1)
      return db.selectFrom(sql`"records" indexed by "records_run_created"` as unknown as 'records');
    return recordsFrom(db, q);
  }

  /** A small candidate set (rare text, a rare metadata value) drives the search. */
  private queryOptions(q: RecordSearch, candidates?: TextCandidates): QueryOptions {
    return { dialect: 'sqlite', candidates, drive: this.drivingCandidates(q.tree, candidates) };
  }

  /**
   * The rowids of the smallest candidate set (blocks) of a leaf that every match satisfies, when
   * small enough to read directly: a rare text term or metadata value then reads its candidates
   * instead of walking the run's records in sort order.
   */
  private drivingCandidates(tree: FilterTree | null, candidates?: TextCandidates): readonly number[] | null {
    if (!tree || !candidates?.size) return null;
    const conjuncts = tree.op === 'and' ? tree.children : [tree];
    let best: readonly number[] | null = null;
    for (const c of conjuncts) {
      const blocks =
        c.op === 'leaf' && c.filter.kind !== 'fully_annotated'
          ? (candidates.get(c.filter) as readonly number[] | undefined)
          : undefined;
      if (blocks && blocks.length * BLOCK_ROWS <= this.driveMax && (!best || blocks.length < best.length))
        best = blocks;
    }
    return best
      ? best.flatMap((b) => Array.from({ length: BLOCK_ROWS }, (_, i) => b * BLOCK_ROWS + i))
      : null;
  }

  /** `searchPage` on this thread's connection. */
  async pageBodyHere(q: RecordSearch, page: PageFormat): Promise<Buffer> {
    return this.withPageRowids(q, async (conn, rowids) => {
      const more = rowids.length > page.limit;
      const rows = await this.pageJsonRows(
        conn,
        more ? rowids.slice(0, page.limit) : rowids,
        page.includeCounts,
      );
      return pageBody(
        rows.map((r) => r.j as Uint8Array),
        rows.length ? rows[rows.length - 1].id : null,
        more,
        page,
      );
    });
  }

  /**
   * `read` given the page's rowids, in one read transaction (candidates, rowids and what `read`
   * reads come from one snapshot). The connection is held throughout (as ingestion holds it for its
   * statements on the handle); the statements run on the handle directly, prepared once.
   */
  private withPageRowids<T>(
    q: RecordSearch,
    read: (conn: Kysely<DB>, rowids: number[]) => Promise<T>,
  ): Promise<T> {
    const h = this.h;
    return this.store.db.connection().execute(async (conn) => {
      h.exec('begin');
      try {
        const candidates = await this.text.candidates(conn, q.tree, q.types);
        const compiled = this.rowidQuery(conn, q, candidates).compile();
        return await read(conn, this.prepared(compiled.sql, true).all(compiled.parameters) as number[]);
      } finally {
        if (h.inTransaction) h.exec('commit');
      }
    });
  }

  /**
   * The records of `rowids` as their response JSON, in that order; rows the statement cannot render
   * are read whole and rendered with recordJson, with their feedback (annotations, queues), read on
   * `conn`. Runs inside the caller's read transaction.
   */
  async pageJsonRows(
    conn: Kysely<DB>,
    rowids: readonly number[],
    includeCounts: boolean,
  ): Promise<PageJsonRow[]> {
    if (!rowids.length) return [];
    const rows = this.prepared(pageJsonStatement(includeCounts), false).all(
      JSON.stringify(rowids),
    ) as PageJsonRow[];
    const missing = rows.filter((r) => r.j === null);
    if (missing.length) {
      const full = this.prepared(ROWS_BY_ROWID, false).all(
        JSON.stringify(missing.map((r) => r.rid)),
      ) as (StoredRecord & { __rid: number })[];
      const byRowid = new Map(full.map((r) => [r.__rid, r]));
      const feedback = await recordFeedback(
        conn,
        full.map((r) => r.id),
      );
      for (const r of missing) {
        const row = byRowid.get(r.rid)!;
        r.j = Buffer.from(recordJson(row, includeCounts, feedback.get(row.id)));
      }
    }
    return rows;
  }

  /** A statement on the handle, prepared once (up to 200 kept). */
  private prepared(text: string, pluck: boolean): SQLite.Statement {
    const cache = pluck ? this.plucked : this.statements;
    let stmt = cache.get(text);
    if (!stmt) {
      if (cache.size >= 200) cache.clear();
      stmt = this.h.prepare(text);
      if (pluck) stmt.pluck();
      cache.set(text, stmt);
    }
    return stmt;
  }
}
