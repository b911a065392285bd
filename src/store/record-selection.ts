/**
 * Reads over everything a search selects, not one page of it: its count, its ids in batches (for
 * deletes), and the records themselves as a stream (for exports). Each starts from the search's own
 * page query (store/search-query.ts `pageQuery`: run, record types, compiled filter tree, sort), without
 * text-index candidates (filters are then checked exactly on every record), so it takes exactly the
 * records a search with the same body finds.
 */
import type { CompiledQuery, Kysely, SqlBool } from 'kysely';
import { sql } from 'kysely';
import type pg from 'pg';
import { type ExportItem, type ExportOptions, renderExport } from '../domain/record-export.ts';
import type { StoredRecord } from '../domain/records.ts';
import type { Store } from './db.ts';
import { nestChildren, sqliteExport } from './export-read.ts';
import type { ReaderPool } from './reader-pool.ts';
import type { SqliteExport } from './reader-protocol.ts';
import type { RecordSearch, SearchStore } from './search-query.ts';
import type { DB } from './tables.ts';

/** A selection: a search without its page. */
export type Selection = Omit<RecordSearch, 'offset' | 'limit'>;

/** A batch position: the last record taken in newest-first order. */
export interface Position {
  created_at: number;
  id: string;
}

/** `limit` for queries that read a selection to its end. */
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export class RecordSelection {
  /**
   * SQLite file stores: the reader threads that read counts, batches and exports, and render exports
   * (null: read here, as on PostgreSQL and in-memory SQLite).
   */
  private readonly readers: ReaderPool | null;

  constructor(
    private readonly store: Store,
    private readonly search: SearchStore,
  ) {
    this.readers = store.readers;
  }

  private query(db: Kysely<DB>, s: Selection, limit = NO_LIMIT) {
    return this.search.pageQuery(db, { ...s, offset: 0, limit });
  }

  /** What a SQLite export reads: the selection's root ids in its order (export-read.ts). */
  private sqliteExportRead(s: Selection, nest: 'session' | 'trace' | null, chunk: number): SqliteExport {
    const compiled = this.query(this.store.db, s).clearSelect().select('records.id').compile();
    return {
      file: this.store.sqlite!.name,
      text: compiled.sql,
      params: compiled.parameters as unknown[],
      nest,
      chunk,
    };
  }

  /**
   * The rows of a read over a selection: on a reader thread when the store has them. A count or a
   * batch may scan most of a log stream's records (a metadata filter over a million records took
   * 256 ms), which on the main connection holds every request for as long.
   */
  private async rows<R>(q: { compile(): CompiledQuery<R>; execute(): Promise<R[]> }): Promise<R[]> {
    if (!this.readers) return q.execute();
    const compiled = q.compile();
    return (await this.readers.run('rows', {
      sql: compiled.sql,
      params: compiled.parameters as unknown[],
    })) as R[];
  }

  async count(s: Selection): Promise<number> {
    const [row] = await this.rows(
      this.query(this.store.db, { ...s, sort: null })
        .clearSelect()
        .clearOrderBy()
        .clearLimit()
        .clearOffset()
        .select((eb) => eb.fn.countAll<number>().as('n')),
    );
    return Number(row.n);
  }

  /**
   * The next `limit` records of a selection, newest first, after `after` (keyset: a batch never reads
   * again the records an earlier one passed over).
   */
  async nextBatch(s: Selection, after: Position | null, limit: number): Promise<Position[]> {
    let q = this.query(this.store.db, { ...s, sort: null }, limit)
      .clearSelect()
      .select(['records.id', 'records.created_at']);
    if (after) {
      // A row comparison, which both stores take as a bound on the (run, created_at) index; spelled
      // `a < x or (a = x and b < y)`, PostgreSQL walked the index from the newest record on each
      // batch, over every record a batch before had passed (1.25 s a batch at 1,000,000 records,
      // 0.8 ms so).
      q = q.where(
        sql<SqlBool>`(${sql.ref('records.created_at')}, ${sql.ref('records.id')}) < (${after.created_at}, ${after.id})`,
      );
    }
    const rows = await this.rows(q);
    return rows.map((r) => ({ id: r.id, created_at: Number(r.created_at) }));
  }

  /**
   * The selection's records in its sort order, `chunk` roots at a time, each with what hangs below it
   * when `nest` says so, from one snapshot. The read stops when the consumer stops asking (return()),
   * which closes its connection. Memory holds one chunk.
   */
  async *stream(s: Selection, nest: 'session' | 'trace' | null, chunk = 64): AsyncGenerator<ExportItem[]> {
    if (this.store.dialect === 'postgres') {
      const compiled = this.query(this.store.db, s).compile();
      yield* this.streamPg(compiled.sql, compiled.parameters as unknown[], nest, chunk);
      return;
    }
    yield* sqliteExport(this.sqliteExportRead(s, nest, chunk));
  }

  /**
   * The selection exported as text (domain/record-export.ts), a chunk of `chunk` roots at a time as
   * the consumer asks for it. On a SQLite file the reading and the rendering run on a reader thread
   * (the main thread only passes the chunks on, already UTF-8); elsewhere they run here. Either way
   * one chunk is in flight, and the consumer's return() ends the read and closes its connections.
   */
  async *exportText(
    s: Selection,
    nest: 'session' | 'trace' | null,
    opts: ExportOptions,
    chunk = 64,
  ): AsyncGenerator<string | Buffer> {
    if (!this.readers) {
      yield* renderExport(this.stream(s, nest, chunk), opts);
      return;
    }
    const read = this.sqliteExportRead(s, nest, chunk);
    const pool = this.readers;
    const reader = pool.pick();
    reader.held++;
    // Kept by the thread from its open until its end, an error (the thread drops it then) or a close.
    let kept = false;
    let id = 0;
    try {
      const opened = pool.send(reader, 'exportOpen', { read, opts });
      ({ id } = opened);
      kept = true;
      await opened.answer;
      for (;;) {
        let bytes: Uint8Array | null;
        try {
          bytes = await pool.send(reader, 'exportNext', { export: id }).answer;
        } catch (err) {
          kept = false;
          throw err;
        }
        if (!bytes) {
          kept = false;
          return;
        }
        yield Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      }
    } finally {
      reader.held--;
      // A thread that has gone answers at once (reader-pool.ts), so this never waits on a dead one.
      if (kept) await pool.send(reader, 'exportClose', { export: id }).answer.catch(() => {});
    }
  }

  /** PostgreSQL: a cursor in a read-only repeatable-read transaction on one pooled connection. */
  private async *streamPg(
    text: string,
    params: unknown[],
    nest: 'session' | 'trace' | null,
    chunk: number,
  ): AsyncGenerator<ExportItem[]> {
    const client: pg.PoolClient = await this.store.pool!.connect();
    let broken = false;
    try {
      await client.query('begin isolation level repeatable read read only');
      await client.query({ text: `declare spanbase_export no scroll cursor for ${text}`, values: params });
      const tracesOf = async (ids: string[]) =>
        (
          await client.query("select * from records where session_id = any($1::text[]) and type = 'trace'", [
            ids,
          ])
        ).rows as StoredRecord[];
      const spansOf = async (ids: string[]) =>
        (
          await client.query("select * from records where trace_id = any($1::text[]) and type <> 'trace'", [
            ids,
          ])
        ).rows as StoredRecord[];
      for (;;) {
        const { rows } = await client.query(`fetch forward ${chunk} from spanbase_export`);
        if (!rows.length) return;
        const traces = nest === 'session' ? await tracesOf(rows.map((x) => x.id)) : [];
        const traceIds =
          nest === 'session' ? traces.map((t) => t.id) : nest === 'trace' ? rows.map((x) => x.id) : [];
        const spans = traceIds.length ? await spansOf(traceIds) : [];
        yield nestChildren(
          rows,
          nest,
          () => traces,
          () => spans,
        );
        if (rows.length < chunk) return;
      }
    } catch (err) {
      broken = true;
      throw err;
    } finally {
      try {
        await client.query('rollback');
      } catch {
        broken = true;
      }
      client.release(broken);
    }
  }
}
