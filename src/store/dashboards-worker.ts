/**
 * A widget-data reader thread (SQLite): its own connection to the database file computes the cells of
 * a range of buckets, so that a dashboard query never holds the main thread, where requests and
 * ingestion run. WAL readers neither wait for nor block the writer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { GroupScan } from '../domain/cell-aggregates.ts';
import { CellCollector, cellBuffers } from '../domain/cell-columns.ts';
import {
  type CellJob,
  type CellQuery,
  DashboardDataRepo,
  type ReaderRequest,
  aggregateSpecs,
} from './dashboards.ts';
import { openSqlite } from './db.ts';
import { SearchRepo } from './search.ts';

const store = openSqlite((workerData as { file: string }).file);
// Read the database file through a memory map (up to SQLite's 2 GiB limit), as the search readers
// do: a dashboard scans every record of its range, and a mapped page costs no system call.
store.sqlite!.pragma('mmap_size = 2147418112');
const data = new DashboardDataRepo(store, { readers: 0 });
const search = new SearchRepo(store, { readers: 0 });

/** Grouped scans kept until the main thread takes their shown groups' cells (or drops them). */
const kept = new Map<number, { scan: GroupScan; q: CellJob['q'] }>();

const withText = (q: CellJob['q']): CellQuery => ({
  ...q,
  textCandidates: (db, tree) => search.textCandidates(db, tree),
});

parentPort!.on('message', async (msg: ReaderRequest) => {
  try {
    switch (msg.kind) {
      case 'cells': {
        const { q, from, to, totals } = msg.job;
        const result = await data.cellsHere(withText(q), { from, to, totals });
        // The cells' buffers move to the main thread rather than being copied.
        const moved = [...cellBuffers(result.cells), ...cellBuffers(result.percentileTotals)];
        parentPort!.postMessage({ id: msg.id, result }, moved);
        return;
      }
      case 'scan': {
        const { q, from, to } = msg.job;
        const scan = await data.scanHere(withText(q), { from, to });
        kept.set(msg.id, { scan, q });
        const result = scan.groupCounts();
        parentPort!.postMessage({ id: msg.id, result }, [result.counts.buffer as ArrayBuffer]);
        return;
      }
      case 'take': {
        const entry = kept.get(msg.scan);
        kept.delete(msg.scan);
        if (!entry) throw new Error('no such scan');
        const specs = aggregateSpecs(entry.q.metrics, false);
        const out = new CellCollector(specs.map((s) => s.name));
        out.addColumns(entry.scan.cells(specs, msg.shown));
        const cells = out.done();
        const values = entry.scan.groupValues(msg.totalMetrics, msg.shown);
        const moved = [...cellBuffers(cells), ...values.flatMap((v) => [v.start.buffer, v.values.buffer])];
        parentPort!.postMessage({ id: msg.id, result: { cells, values } }, moved as ArrayBuffer[]);
        return;
      }
      case 'drop':
        kept.delete(msg.scan);
        parentPort!.postMessage({ id: msg.id, result: null });
        return;
    }
  } catch (err) {
    const e = err as Error & { code?: string };
    parentPort!.postMessage({ id: msg.id, error: { message: e.message, code: e.code } });
  }
});
