/**
 * SQLite WAL checkpoints off the writer's thread. With the default auto-checkpoint, the commit that
 * takes the WAL past 1,000 pages copies them into the database file and syncs it, on the main thread,
 * while every request waits (measured here: a store-level insert run went from about 14,000 to 19,600
 * records/s when the writer stopped checkpointing). This thread, with its own connection, runs a
 * PASSIVE checkpoint whenever the WAL file has changed since its last one: it never takes the write
 * lock, so the writer keeps appending meanwhile, and once a checkpoint has copied everything the
 * writer's next transaction starts the WAL from the beginning again.
 *
 * While the WAL keeps changing the thread checks again after 2 ms rather than 100, so that under
 * sustained ingestion a checkpoint starts right after each commit and often finishes before the next.
 *
 * The writer keeps a high auto-checkpoint threshold as a safety net (should this thread stall, die or
 * fall behind, the WAL still stops growing at about that size, 512 MiB). Under sustained ingestion
 * past a few hundred thousand records the WAL does reach it at times, and each time the writer
 * copies what is left and syncs the file inline. At the former 64 MiB that happened every few
 * batches: measured over 1,000,000 records posted by bench:ingest, 9% of the main thread's CPU and
 * its syncs; raising it and checking every 2 ms took the rate from 13,100–13,500 to 14,800–15,300
 * records/s and the server's CPU from 115–118 to 106–108 µs per record. Durability is unchanged: a
 * commit is acknowledged once in the WAL, as before; a checkpoint only copies committed pages.
 *
 * The WAL file keeps its size while writes go on (the writer's journal_size_limit is above the
 * safety net): after a checkpoint the writer starts again at the beginning of the file and overwrites
 * it, which costs the kernel less than growing it again from a cut-back 64 MiB (600,000 records posted
 * by bench:ingest: 17,000–17,700 → 18,500–19,400 records/s, server CPU 99–103 → 92–95 µs per record).
 * Once no write has come for `idleMs` (10 s), this thread truncates the WAL to nothing with a
 * TRUNCATE checkpoint, so an idle database takes no more disk than its data. Its connection has no
 * busy timeout: when a writer or reader is in the way it gets SQLITE_BUSY at once and tries again on a
 * later tick; a write that comes while it runs (a sync and a truncate) waits for it.
 *
 * The thread is plain JavaScript evaluated from a string (no TypeScript loader): it needs only
 * better-sqlite3 and a timer, and stays small.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Pages (8 KiB) the writer lets the WAL reach before it checkpoints itself (safety net). */
export const WRITER_AUTOCHECKPOINT_PAGES = 65536;
/**
 * The size (bytes) past which the writer cuts its WAL file back when it starts it over: twice the
 * safety net, as the WAL overshoots it at times (580 MiB seen) and a file cut back to exactly the
 * safety net then grows again (600,000 records: 17,600–19,000 records/s against 18,500–19,500).
 */
export const WRITER_JOURNAL_SIZE_LIMIT = 2 * WRITER_AUTOCHECKPOINT_PAGES * 8192;

const CODE = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = 16');
// Never wait: a TRUNCATE checkpoint holds the write lock while it waits for readers.
db.pragma('busy_timeout = 0');
const wal = workerData.file + '-wal';
let seen = '';
let changedAt = Date.now();
const markOf = (st) => (st ? st.size + ':' + st.mtimeMs : '');
const tick = () => {
  let active = false;
  try {
    const st = fs.statSync(wal, { throwIfNoEntry: false });
    const mark = markOf(st);
    if (st && mark !== seen) {
      db.pragma('wal_checkpoint(PASSIVE)');
      seen = mark;
      changedAt = Date.now();
      active = true;
    } else if (st && st.size > 0 && Date.now() - changedAt >= workerData.idleMs) {
      const [r] = db.pragma('wal_checkpoint(TRUNCATE)');
      if (r.busy === 0) seen = markOf(fs.statSync(wal, { throwIfNoEntry: false }));
    }
  } catch {
    // Busy (another checkpoint) or a transient fault: try again on the next tick.
  }
  setTimeout(tick, active ? workerData.busyIntervalMs : workerData.intervalMs);
};
tick();
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  /** How often the WAL is checked while it is not changing (ms). */
  intervalMs?: number;
  /** How soon it is checked again after a check that found it changed (ms). */
  busyIntervalMs?: number;
  /** How long the WAL must stay unchanged before its file is truncated (ms). */
  idleMs?: number;
}

/** Starts the checkpoint thread for a database file (in WAL mode). */
export function startCheckpointer(file: string, opts: CheckpointerOptions = {}): Checkpointer {
  const { intervalMs = 100, busyIntervalMs = 2, idleMs = 10_000 } = opts;
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(CODE, {
    eval: true,
    workerData: { file, driver, intervalMs, busyIntervalMs, idleMs },
  });
  worker.unref();
  // A thread that fails leaves the writer's own auto-checkpoint in charge.
  worker.on('error', () => {});
  return {
    async stop() {
      await worker.terminate();
    },
  };
}
