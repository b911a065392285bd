/**
 * The SQLite text indexer's thread (search-text-indexer.ts): its own connection to the database file
 * indexes full blocks and changed records in slices (search-text.ts), polling while the queue is empty, and answers a
 * drain request once the queue is empty.
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './db.ts';
import type { IndexerData, IndexerReply, IndexerRequest } from './search-text-indexer.ts';
import { attachTextIndex, indexPending, textBacklog } from './search-text.ts';

const h = openSqlite((workerData as IndexerData).file).sqlite!;
// The indexer reads each new record once and merges index segments: no memory map (every page it
// touched would stay mapped and count in the server's resident memory, as much as the index file
// and the newest records, about 100 MB after 200,000 records) and a small page cache.
h.pragma('mmap_size = 0');
h.pragma('cache_size = -8192');
// Lowest CPU priority for this thread only (Linux keeps nice values per thread): when the machine is
// busy, ingestion and searches go first and the index catches up when it is not.
try {
  os.setPriority(19);
} catch {
  // Not permitted here: run at the normal priority.
}
attachTextIndex(h);
let drains: number[] = [];
const tick = () => {
  let taken = 0;
  try {
    taken = indexPending(h, 25);
    // Answer drain requests once the queue is empty.
    if (taken === 0 && drains.length && !textBacklog(h)) {
      for (const id of drains) parentPort!.postMessage({ id } satisfies IndexerReply);
      drains = [];
    }
  } catch {
    // Busy, or a transient fault: try again on the next tick.
  }
  setTimeout(tick, taken > 0 || drains.length ? 1 : 100);
};
parentPort!.on('message', (msg: IndexerRequest) => {
  if (msg.kind === 'drain') drains.push(msg.id);
});
tick();
