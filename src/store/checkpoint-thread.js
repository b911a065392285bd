// The WAL checkpoint thread (checkpointer.ts). Plain JavaScript, loaded without the TypeScript loader:
// it needs only better-sqlite3 and a timer, and stays small. Its data: CheckpointerData.
import fs from 'node:fs';
import { workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const { file, intervalMs, busyIntervalMs, idleMs } = workerData;
const db = new SQLite(file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = 16');
// Never wait: a TRUNCATE checkpoint holds the write lock while it waits for readers.
db.pragma('busy_timeout = 0');
const wal = `${file}-wal`;
let seen = '';
let changedAt = Date.now();
const markOf = (st) => (st ? `${st.size}:${st.mtimeMs}` : '');
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
    } else if (st && st.size > 0 && Date.now() - changedAt >= idleMs) {
      const [r] = db.pragma('wal_checkpoint(TRUNCATE)');
      if (r.busy === 0) seen = markOf(fs.statSync(wal, { throwIfNoEntry: false }));
    }
  } catch {
    // Busy (another checkpoint) or a transient fault: try again on the next tick.
  }
  setTimeout(tick, active ? busyIntervalMs : intervalMs);
};
tick();
