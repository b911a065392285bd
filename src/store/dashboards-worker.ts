/**
 * A widget-data reader thread (SQLite): its own connection to the database file computes the cells of
 * a range of buckets, so that a dashboard query never holds the main thread, where requests and
 * ingestion run. WAL readers neither wait for nor block the writer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type CellJob, DashboardDataRepo } from './dashboards.ts';
import { openSqlite } from './db.ts';
import { SearchRepo } from './search.ts';

const store = openSqlite((workerData as { file: string }).file);
const data = new DashboardDataRepo(store, { readers: 0 });
const search = new SearchRepo(store, { readers: 0 });

parentPort!.on('message', async (msg: { id: number; job: CellJob }) => {
  try {
    const { q, from, to, totals } = msg.job;
    const result = await data.cellsHere(
      { ...q, textCandidates: (db, tree) => search.textCandidates(db, tree) },
      { from, to, totals },
    );
    parentPort!.postMessage({ id: msg.id, result });
  } catch (err) {
    const e = err as Error & { code?: string };
    parentPort!.postMessage({ id: msg.id, error: { message: e.message, code: e.code } });
  }
});
