/**
 * A reader thread (SQLite): its own connection to the database file answers the calls of
 * reader-protocol.ts, off the main thread where requests and ingestion run: record searches
 * (search-sqlite.ts), widget data (widget-cells-sqlite.ts) and exports (export-read.ts
 * `sqliteExport`), each loaded on its first call.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { GroupScan } from '../domain/cell-aggregates.ts';
import { CellCollector, cellBuffers } from '../domain/cell-columns.ts';
import { openSqlite } from './db.ts';
import type { ReaderCalls, ReaderData, ReaderReply, ReaderRequest } from './reader-protocol.ts';
import type { SqliteSearch } from './search-sqlite.ts';
import { type CellQuery, aggregateSpecs } from './widget-cells.ts';
import type { SqliteWidgetCells } from './widget-cells-sqlite.ts';

const store = openSqlite((workerData as ReaderData).file);
// No memory map, and a small page cache: a page missed here is read from the operating system's
// cache at the cost of a system call, but the process's memory stays bounded whatever the store's
// size (a map of the file counted every page touched in the server's RSS, up to 2 GiB per thread:
// 918 MB peak in the growth bench at 1M records, 1,212 MB at 5M). Measured at 300k records, the
// searches' p95 did not move.
store.sqlite!.pragma('mmap_size = 0');
store.sqlite!.pragma('cache_size = -16384');

let search: SqliteSearch | null = null;
let widgets: SqliteWidgetCells | null = null;
const searchStore = async () => (search ??= new (await import('./search-sqlite.ts')).SqliteSearch(store));
const widgetStore = async () =>
  (widgets ??= new (await import('./widget-cells-sqlite.ts')).SqliteWidgetCells(store));

/**
 * Grouped scans kept until the main thread takes their shown groups' cells and, when it wants
 * whole-range percentiles, their values in some bins (or drops them); `shown` once taken.
 */
const kept = new Map<number, { scan: GroupScan; q: CellQuery; shown?: unknown[] }>();

/** Exports under way, kept until they end or the main thread closes them. */
const exports = new Map<number, AsyncGenerator<string>>();
const utf8 = new TextEncoder();

/** Answers a call, with the buffers to move (not copy) to the main thread. */
async function answer(
  msg: ReaderRequest,
): Promise<{ result: ReaderCalls[typeof msg.call]['result']; moved: ArrayBuffer[] }> {
  switch (msg.call) {
    case 'page': {
      // The page is made here: no row crosses threads, and rendering runs here rather than on the
      // main thread.
      const repo = await searchStore();
      repo.text.cap = msg.args.candidateCap;
      const body = await repo.pageBodyHere(msg.args.query, msg.args.page);
      return { result: body, moved: [body.buffer as ArrayBuffer] };
    }
    case 'cells': {
      const { q, from, to, totals } = msg.args;
      const result = await (await widgetStore()).cellsHere(q, { from, to, totals });
      return { result, moved: [...cellBuffers(result.cells), ...cellBuffers(result.percentileTotals)] };
    }
    case 'scan': {
      const { q, from, to } = msg.args;
      const scan = await (await widgetStore()).scanHere(q, { from, to });
      kept.set(msg.id, { scan, q });
      const result = scan.groupCounts();
      return { result, moved: [result.counts.buffer as ArrayBuffer] };
    }
    case 'take': {
      const entry = kept.get(msg.args.scan);
      if (!entry) throw new Error('no such scan');
      const specs = aggregateSpecs(entry.q.metrics, false);
      const out = new CellCollector(specs.map((s) => s.name));
      out.addColumns(entry.scan.cells(msg.args.shown));
      const cells = out.done();
      const bins = entry.scan.binCounts(msg.args.shown);
      if (bins.length) entry.shown = msg.args.shown;
      else kept.delete(msg.args.scan);
      const moved = [
        ...cellBuffers(cells),
        ...bins.flatMap((b) => b.groups.flatMap((g) => [g.bins.buffer, g.counts.buffer])),
      ];
      return { result: { cells, bins }, moved: moved as ArrayBuffer[] };
    }
    case 'binValues': {
      const entry = kept.get(msg.args.scan);
      kept.delete(msg.args.scan);
      if (!entry?.shown) throw new Error('no such scan');
      const result = entry.scan.binValues(entry.shown, msg.args.asks);
      return { result, moved: result.flatMap((v) => [v.values.buffer, v.counts.buffer]) as ArrayBuffer[] };
    }
    case 'drop':
      kept.delete(msg.args.scan);
      return { result: null, moved: [] };
    case 'rows': {
      const stmt = store.sqlite!.prepare(msg.args.sql);
      if (!stmt.reader) throw new Error('a reader thread only reads');
      return { result: stmt.all(msg.args.params) as Record<string, unknown>[], moved: [] };
    }
    case 'exportOpen': {
      const [{ sqliteExport }, { renderExport }] = await Promise.all([
        import('./export-read.ts'),
        import('../domain/record-export.ts'),
      ]);
      exports.set(msg.id, renderExport(sqliteExport(msg.args.read), msg.args.opts));
      return { result: null, moved: [] };
    }
    case 'exportNext': {
      const out = exports.get(msg.args.export);
      if (!out) throw new Error('no such export');
      let next: IteratorResult<string>;
      try {
        next = await out.next();
      } catch (err) {
        exports.delete(msg.args.export);
        throw err;
      }
      if (next.done) {
        exports.delete(msg.args.export);
        return { result: null, moved: [] };
      }
      const bytes = utf8.encode(next.value);
      return { result: bytes, moved: [bytes.buffer as ArrayBuffer] };
    }
    case 'exportClose': {
      const out = exports.get(msg.args.export);
      exports.delete(msg.args.export);
      await out?.return(undefined);
      return { result: null, moved: [] };
    }
  }
}

parentPort!.on('message', async (msg: ReaderRequest) => {
  try {
    const { result, moved } = await answer(msg);
    parentPort!.postMessage({ id: msg.id, result } satisfies ReaderReply, moved);
  } catch (err) {
    const e = err as Error & { code?: string };
    parentPort!.postMessage({
      id: msg.id,
      error: { message: e.message, code: e.code },
    } satisfies ReaderReply);
  }
});
