import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  type Driver,
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  SqliteDialect,
  type SqliteDatabase,
} from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import { decodeBins, encodeBins, mergeBins } from '../domain/ddsketch.ts';
import { foldCase } from '../domain/text.ts';
import {
  type Checkpointer,
  type CheckpointerOptions,
  WRITER_JOURNAL_SIZE_LIMIT,
  writerAutocheckpointPages,
  startCheckpointer,
} from './checkpointer.ts';
import type { Dialect } from '../query/sql-dialect.ts';
import { ReaderPool } from './reader-pool.ts';
import { textIndexFile } from './search-text.ts';
import type { DB } from './tables.ts';

export type { Dialect };

/** The store: a Kysely instance plus what dialect-specific code paths need. */
export interface Store {
  db: Kysely<DB>;
  dialect: Dialect;
  /** The better-sqlite3 handle (SQLite only), for prepared-statement hot paths such as ingest. */
  sqlite: SQLite.Database | null;
  /** The pg pool (PostgreSQL only). */
  pool: pg.Pool | null;
  /**
   * The reader threads of a SQLite file (store/reader-pool.ts) that searches, widget data and exports
   * share, so that the process's memory is bounded by one pool's size whatever runs at once; null on
   * PostgreSQL, in-memory SQLite and the threads' own connections (reads then run on this connection).
   */
  readers: ReaderPool | null;
  /** The PostgreSQL schema this store works in, when not the default search path. */
  pgSchema: string | null;
  /**
   * SQLite: how many of Kysely's queries wait for the store's one connection (the ingest drain keeps
   * it while groups follow each other, and lets a waiting query in after the group under way).
   */
  connectionWaiters?(): number;
  /** Called once the schema is migrated: starts background work that must not race migrations. */
  migrated?(): void;
  close(): Promise<void>;
}

// int8 and numeric come back as strings by default; our values (epoch microseconds, token counts)
// fit in a double, so parse them as numbers everywhere.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

export function openStore(config: Config): Store {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, config.pgSearchPath);
  const dir = config.dataDir;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`cannot create the data directory ${dir} (SPANBASE_DATA_DIR): ${fsReason(err)}`);
  }
  const file = path.join(dir, 'spanbase.db');
  try {
    return openSqlite(file, { checkpointer: true, readers: config.readerThreads });
  } catch (err) {
    throw new Error(`cannot open the database ${file}: ${openFailure(dir, file, err)}`);
  }
}

/** A file-system error in words, without Node's repetition of the path. */
function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EEXIST') return 'a file (not a directory) has that name';
  if (code === 'ENOTDIR') return 'a part of the path is a file, not a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'the file system is read-only';
  return (err as Error).message;
}

/** Why SQLite could not open `file` ("unable to open database file" alone names neither). */
function openFailure(dir: string, file: string, err: unknown): string {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (stat?.isDirectory()) return 'it is a directory';
  const writable = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.R_OK | fs.constants.W_OK);
      return true;
    } catch {
      return false;
    }
  };
  const user = `user ${os.userInfo().username}`;
  if (!writable(dir)) return `the directory ${dir} is not writable by ${user}`;
  if (stat && !writable(file)) return `the file is not readable and writable by ${user}`;
  return (err as Error).message;
}

/** Settings of each connection that writes: the main one and the ingest writer's (sqlite-writer.ts). */
const WRITE_PRAGMAS = [
  // An acknowledged write survives a process crash with WAL + NORMAL.
  'synchronous = NORMAL',
  'busy_timeout = 5000',
  'foreign_keys = ON',
  'temp_store = MEMORY',
];

/**
 * A writing connection's WAL limits: its auto-checkpoint as the checkpoint thread's safety net, and the
 * WAL file keeping its size (up to twice the safety net) when it starts over; the checkpoint thread
 * truncates it once writes stop (store/checkpointer.ts).
 */
function walLimits(h: SQLite.Database): string[] {
  const pageSize = Number(h.pragma('page_size', { simple: true }));
  return [
    `wal_autocheckpoint = ${writerAutocheckpointPages(pageSize)}`,
    `journal_size_limit = ${WRITER_JOURNAL_SIZE_LIMIT}`,
  ];
}

/**
 * The ingest writer's connection settings (sqlite-writer.ts). Its page cache mostly holds index pages
 * written at random (ids are random): past a few hundred thousand records they outgrow any cache a
 * 500 MB process can afford, and a page missed here is read from the operating system's cache.
 * 32 MiB keeps the server's peak RSS bounded.
 */
export function ingestWriterPragmas(h: SQLite.Database): string[] {
  return [...WRITE_PRAGMAS, ...walLimits(h), 'cache_size = -32768'];
}

/**
 * `checkpointer`: the process's main (writer) connection, whose WAL checkpoints then run on a thread
 * of their own (store/checkpointer.ts) instead of inside the commits of requests (options: its timing).
 * `readers`: at most this many reader threads, started on first use (0: none).
 */
export function openSqlite(
  file: string,
  opts: { checkpointer?: boolean | CheckpointerOptions; readers?: number } = {},
): Store {
  const checkpointerOptions = typeof opts.checkpointer === 'object' ? opts.checkpointer : {};
  const handle = new SQLite(file);
  handle.pragma('journal_mode = WAL');
  for (const p of WRITE_PRAGMAS) handle.pragma(p);
  handle.pragma('cache_size = -65536');
  // LIKE is case-sensitive on PostgreSQL; make SQLite agree. Case folding is `spanbase_fold`
  // (query/sql-dialect.ts fold), so that one compiled filter means the same on both stores.
  handle.pragma('case_sensitive_like = ON');
  handle.function('spanbase_fold', { deterministic: true }, (v: unknown) =>
    typeof v === 'string' ? foldCase(v) : v,
  );
  // Dashboard rollups' sketch merge (migration 032), for the fold's upserts (store/rollups.ts).
  handle.function('rollup_bins_merge', { deterministic: true }, (a: unknown, b: unknown) =>
    encodeBins(mergeBins(decodeBins(a), decodeBins(b))),
  );
  // The checkpoint thread starts once migrated: a migration may take the database out of WAL mode
  // for a moment (002), which another open connection would prevent.
  let checkpointer: Checkpointer | null = null;
  const migrated = () => {
    if (!opts.checkpointer || handle.memory || checkpointer) return;
    for (const p of walLimits(handle)) handle.pragma(p);
    // Never a checkpoint of its own: one runs inside the commit that takes the WAL past the safety
    // net, and on this connection that stops every request for as long as it copies. Past the net
    // (an export's snapshot holding the WAL for minutes) that copy was up to 7 s at 1M records in
    // bench:memory's soak. The checkpoint thread and the writer's safety net checkpoint instead.
    handle.pragma('wal_autocheckpoint = 0');
    // Records are written by the ingest writer's connection (sqlite-writer.ts); this one reads for
    // requests and makes the other, smaller writes.
    handle.pragma('cache_size = -8192');
    const text = textIndexFile(handle);
    checkpointer = startCheckpointer(text ? [file, text] : [file], checkpointerOptions);
  };
  const dialect = new WaitCountingSqliteDialect({ database: cachingStatements(handle) });
  const db = new Kysely<DB>({ dialect });
  const readers = opts.readers && !handle.memory ? new ReaderPool(file, opts.readers) : null;
  return {
    db,
    dialect: 'sqlite',
    sqlite: handle,
    pool: null,
    readers,
    pgSchema: null,
    connectionWaiters: () => dialect.waiting,
    migrated,
    async close() {
      // An export still reading on a thread then ends with an error.
      await readers?.close();
      await checkpointer?.stop();
      await db.destroy();
      // Kysely closes its driver's connection only once it has run a query: a store read through the
      // handle alone (an export's own connection) kept it, its page cache and its temporary table
      // open for as long as the thread ran.
      if (handle.open) handle.close();
    },
  };
}

/** Kysely's SQLite dialect, counting the queries that wait for its one connection. */
class WaitCountingSqliteDialect extends SqliteDialect {
  waiting = 0;

  override createDriver(): Driver {
    const driver = super.createDriver();
    const acquire = driver.acquireConnection.bind(driver);
    driver.acquireConnection = async () => {
      this.waiting++;
      try {
        return await acquire();
      } finally {
        this.waiting--;
      }
    };
    return driver;
  }
}

/** Prepared statements kept per connection for Kysely's queries (their SQL text is the key). */
const KYSELY_STATEMENTS = 256;

/**
 * The handle as Kysely's SQLite driver sees it, with its statements prepared once: the driver
 * prepares every query it runs, which for small queries costs about as much as running them
 * (available columns: 0.336 → 0.305 ms p50 with this cache). Kysely runs each statement to completion
 * (`all`, `run`; nothing here streams) on this one connection, so reusing it is safe; SQLite
 * re-prepares it itself after a schema change. The oldest entries go first once the cache is full.
 */
function cachingStatements(handle: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => handle.close(),
    prepare(text: string) {
      let stmt = cache.get(text);
      if (!stmt) {
        if (cache.size >= KYSELY_STATEMENTS) cache.delete(cache.keys().next().value as string);
        stmt = handle.prepare(text);
        cache.set(text, stmt);
      }
      return stmt;
    },
  };
}

export function openPostgres(url: string, searchPath: string | null): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    ...(searchPath ? { options: `-c search_path=${searchPath},public` } : {}),
  });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: callbackQueries(pool) }) });
  return {
    db,
    dialect: 'postgres',
    sqlite: null,
    pool,
    readers: null,
    pgSchema: searchPath,
    async close() {
      await db.destroy();
    },
  };
}

/**
 * The pool as Kysely's driver sees it, each query run through pg's callback form. The driver calls
 * pg's promise form (`client.query(sql, params)`), after which a search page's garbage collection
 * took 0.20–0.24 ms more per query than with the callback form (same statement, separate processes:
 * 75 collections instead of 48 over 2,000 queries, each longer, the old generation growing about
 * 2 MB a scavenge); the cause inside pg was not pinned down.
 */
function callbackQueries(pool: pg.Pool): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient) =>
    ({
      // Kysely passes a cursor only when the dialect is given one (streaming), which ours is not.
      query(text: string, values: readonly unknown[]) {
        return new Promise<pg.QueryResult>((resolve, reject) =>
          client.query(text, values as unknown[], (err, res) => (err ? reject(err) : resolve(res))),
        );
      },
      // pg-pool sets a client's release anew at each checkout.
      release: () => client.release(),
    }) as unknown as PostgresPoolClient;
  return {
    async connect() {
      const client = await pool.connect();
      let c = wrapped.get(client);
      if (!c) {
        c = wrap(client);
        wrapped.set(client, c);
      }
      return c;
    },
    end: () => pool.end(),
  };
}

/**
 * Runs the reads of `body` on one snapshot, so that work committed between two of them (a batch
 * expanded into its tasks, a delta folded) is seen by all or none: a read-only repeatable-read
 * transaction on PostgreSQL; on SQLite a deferred transaction, whose first read fixes what it sees.
 */
export function inSnapshot<T>(
  db: Kysely<DB>,
  dialect: Dialect,
  body: (trx: Kysely<DB>) => Promise<T>,
): Promise<T> {
  if (dialect !== 'postgres') return db.transaction().execute(body);
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(body);
}

/** JSON columns come back as text on SQLite and parsed on PostgreSQL. */
export function parseJson<T = unknown>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return JSON.parse(value) as T;
  return value as T;
}

export function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}
