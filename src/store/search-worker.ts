/**
 * A search thread (SQLite) with its own connection to the database file, off the main thread where
 * requests and ingestion run:
 * - `reader`: answers record searches (WAL readers neither wait for nor block the writer), as rows or
 *   as the response text of a search page (services/search-page.ts);
 * - `indexer`: keeps the trigram index current from its queue (store/search-text.ts).
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './db.ts';
import { attachTextIndex, indexQueued } from './search-text.ts';
import type { PageFormat } from '../services/search-page.ts';
import type { SearchRepo } from './search.ts';

const { file, role } = workerData as { file: string; role: 'reader' | 'indexer' };
const store = openSqlite(file);
if (role === 'reader') {
  // Read the database file through a memory map (up to SQLite's 2 GiB limit): scans of many rows
  // then cost no system call per page.
  store.sqlite!.pragma('mmap_size = 2147418112');
} else {
  // The indexer reads each new record once and merges index segments: no memory map (every page it
  // touched would stay mapped and count in the server's resident memory, as much as the index file
  // and the newest records, about 100 MB after 200,000 records) and a small page cache.
  store.sqlite!.pragma('mmap_size = 0');
  store.sqlite!.pragma('cache_size = -8192');
}
if (role === 'indexer') runIndexer();
else await serveSearches();

/** The text indexer: indexes queued records in slices, polling while the queue is empty. */
function runIndexer() {
  // Lowest CPU priority for this thread only (Linux keeps nice values per thread): when the machine is
  // busy, ingestion and searches go first and the index catches up when it is not.
  try {
    os.setPriority(19);
  } catch {
    // Not permitted here: run at the normal priority.
  }
  const h = store.sqlite!;
  attachTextIndex(h);
  const queued = h
    .prepare(
      "select exists (select 1 from records_text_queue where seq > coalesce((select cast(value as integer) from text.meta where key = 'seq'), 0))",
    )
    .pluck();
  let drains: number[] = [];
  const tick = () => {
    let taken = 0;
    try {
      taken = indexQueued(h, 25);
      // Answer drain requests once the queue is empty.
      if (taken === 0 && drains.length && !queued.get()) {
        for (const id of drains) parentPort!.postMessage({ id });
        drains = [];
      }
    } catch {
      // Busy, or a transient fault: try again on the next tick.
    }
    setTimeout(tick, taken > 0 || drains.length ? 1 : 100);
  };
  parentPort!.on('message', (msg: { id: number; kind: 'drain' }) => {
    if (msg.kind === 'drain') drains.push(msg.id);
  });
  tick();
}

async function serveSearches() {
  // Loaded here only: the indexer thread needs none of the query engine (less memory per thread).
  const repo: SearchRepo = new (await import('./search.ts')).SearchRepo(store, { readers: 0 });
  parentPort!.on(
    'message',
    async (msg: { id: number; query: any; candidateCap: number; page?: PageFormat }) => {
      try {
        repo.candidateCap = msg.candidateCap;
        // A page is answered as its response body, made here and moved (not copied) to the main
        // thread: no row crosses threads, and rendering runs here rather than on the main thread.
        if (msg.page) {
          const body = await repo.pageBodyHere(msg.query, msg.page);
          parentPort!.postMessage({ id: msg.id, body }, [body.buffer as ArrayBuffer]);
        } else parentPort!.postMessage({ id: msg.id, rows: await repo.searchHere(msg.query) });
      } catch (err) {
        const e = err as Error & { code?: string };
        parentPort!.postMessage({ id: msg.id, error: { message: e.message, code: e.code, stack: e.stack } });
      }
    },
  );
}
