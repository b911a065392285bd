/**
 * A widget-data reader thread (SQLite): its own connection to the database file computes the cells of
 * a range of buckets, so that a dashboard query never holds the main thread, where requests and
 * ingestion run. WAL readers neither wait for nor block the writer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { cellBuffers } from '../domain/cell-columns.ts';
import { type CellJob, DashboardDataRepo } from './dashboards.ts';
import { openSqlite } from './db.ts';
import { SearchRepo } from './search.ts';

const store = openSqlite((workerData as { file: string }).file);
// Read the database file through a memory map (up to SQLite's 2 GiB limit), as the search readers
// do: a dashboard scans every record of its range, and a mapped page costs no system call.
store.sqlite!.pragma('mmap_size = 2147418112');
const data = new DashboardDataRepo(store, { readers: 0 });
const search = new SearchRepo(store, { readers: 0 });

parentPort!.on('message', async (msg: { id: number; job: CellJob }) => {
  try {
    const { q, from, to, totals } = msg.job;
    const result = await data.cellsHere(
      { ...q, textCandidates: (db, tree) => search.textCandidates(db, tree) },
      { from, to, totals },
    );
    // The cells' buffers move to the main thread rather than being copied.
    const moved = [...cellBuffers(result.cells), ...cellBuffers(result.percentileTotals)];
    parentPort!.postMessage({ id: msg.id, result }, moved);
  } catch (err) {
    const e = err as Error & { code?: string };
    parentPort!.postMessage({ id: msg.id, error: { message: e.message, code: e.code } });
  }
});
