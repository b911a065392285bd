// The WAL checkpoint thread (checkpointer.ts). Plain JavaScript, loaded without the TypeScript loader:
// it needs only better-sqlite3 and a timer, and stays small. Its data: CheckpointerData.
import fs from 'node:fs';
import { workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const { files, intervalMs, busyIntervalMs, idleMs, cutAboveBytes } = workerData;
/** A WAL holding less than this (since it last started over) took only small writes. */
const SMALL_BYTES = 1024 * 1024;
const markOf = (st) => (st ? `${st.size}:${st.mtimeMs}` : '');

/** One database file's checkpoints; its connection is opened once the file exists. */
function walOf(file) {
  const wal = `${file}-wal`;
  let db = null;
  let pageSize = 0;
  let seen = '';
  let changedAt = Date.now();
  let largeAt = Date.now();
  /** Checkpoints when due; answers whether the WAL had changed. */
  return () => {
    if (!db) {
      if (!fs.existsSync(file)) return false;
      db = new SQLite(file, { fileMustExist: true });
      db.pragma('synchronous = NORMAL');
      db.pragma('cache_size = 16');
      // Never wait: a TRUNCATE checkpoint holds the write lock while it waits for readers.
      db.pragma('busy_timeout = 0');
      pageSize = Number(db.pragma('page_size', { simple: true }));
    }
    const st = fs.statSync(wal, { throwIfNoEntry: false });
    const mark = markOf(st);
    const now = Date.now();
    let changed = false;
    if (st && mark !== seen) {
      const [r] = db.pragma('wal_checkpoint(PASSIVE)');
      if (r.log * pageSize >= SMALL_BYTES) largeAt = now;
      seen = mark;
      changedAt = now;
      changed = true;
    }
    // Cut the file once writes stop; or once they are all small (a lease renewed every few seconds
    // would otherwise keep a burst's WAL of hundreds of MB on disk for good).
    const quiet = now - changedAt >= idleMs;
    const onlySmall = now - largeAt >= idleMs && st && st.size > cutAboveBytes;
    if (st && st.size > 0 && (quiet || onlySmall)) {
      const [r] = db.pragma('wal_checkpoint(TRUNCATE)');
      if (r.busy === 0) seen = markOf(fs.statSync(wal, { throwIfNoEntry: false }));
    }
    return changed;
  };
}

const wals = files.map(walOf);
const tick = () => {
  let active = false;
  for (const check of wals) {
    try {
      if (check()) active = true;
    } catch {
      // Busy (another checkpoint) or a transient fault: try again on the next tick.
    }
  }
  setTimeout(tick, active ? busyIntervalMs : intervalMs);
};
tick();
