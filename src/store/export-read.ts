/**
 * An export's read on SQLite, apart from record-selection.ts so that a reader thread can load it (and
 * the reader protocol name its type) without the main thread's side of exports: the roots of a
 * selection's compiled query with what hangs below them, a chunk at a time. `nestChildren` is also
 * PostgreSQL's.
 */
import type { ExportItem } from '../domain/record-export.ts';
import type { StoredRecord } from '../domain/records.ts';
import { openSqlite } from './db.ts';
import type { SqliteExport } from './reader-protocol.ts';

/** Each root with its children: a session's traces and their spans, a trace's spans. */
export function nestChildren(
  roots: StoredRecord[],
  nest: 'session' | 'trace' | null,
  tracesOf: (sessionIds: string[]) => StoredRecord[],
  spansOf: (traceIds: string[]) => StoredRecord[],
): ExportItem[] {
  if (nest === null) return roots.map((root) => ({ root, children: [] }));
  const traces = nest === 'session' ? tracesOf(roots.map((r) => r.id)) : roots;
  const spans = spansOf(traces.map((t) => t.id));
  const key = nest === 'session' ? 'session_id' : 'trace_id';
  const byRoot = new Map<string, StoredRecord[]>(roots.map((r) => [r.id, []]));
  if (nest === 'session') for (const t of traces) byRoot.get(t.session_id as string)?.push(t);
  for (const sp of spans) byRoot.get(sp[key] as string)?.push(sp);
  return roots.map((root) => ({ root, children: byRoot.get(root.id) ?? [] }));
}

/**
 * SQLite, on a connection of its own (a WAL reader: ingestion goes on meanwhile). The roots' ids are
 * first listed in the selection's order, from one snapshot, into a temporary table on disk; then each
 * chunk's roots and what hangs below them are read in a read transaction of their own. A snapshot held
 * for a whole export (minutes over millions of records) kept the WAL from starting over while
 * ingestion went on: it grew to 40 GB in bench:memory's 10-minute soak at 1M records. A root deleted
 * meanwhile is left out; a record changed meanwhile is read as it is then.
 */
export async function* sqliteExport(read: SqliteExport): AsyncGenerator<ExportItem[]> {
  const { file, text, params, nest, chunk } = read;
  const store = openSqlite(file);
  const h = store.sqlite!;
  // Each row is read once: a small page cache and no memory map keep the server's memory flat
  // however much is exported; the list of ids goes to a file, not to memory.
  h.pragma('cache_size = -2048');
  h.pragma('mmap_size = 0');
  h.pragma('temp_store = FILE');
  try {
    h.exec('create temp table export_roots (id text not null)');
    // Rows go in in the select's order, so rowids keep the selection's order.
    h.prepare(`insert into temp.export_roots (id) ${text}`).run(params);
    const next = h.prepare(
      'select rowid as seq, id from temp.export_roots where rowid > ? order by rowid limit ?',
    );
    const byIds = h.prepare('select * from records where id in (select value from json_each(?))');
    const tracesOf = h.prepare(
      "select * from records where session_id in (select value from json_each(?)) and type = 'trace'",
    );
    const spansOf = h.prepare(
      "select * from records where trace_id in (select value from json_each(?)) and type <> 'trace'",
    );
    const children = (list: string[], stmt: typeof tracesOf) =>
      list.length ? (stmt.all(JSON.stringify(list)) as StoredRecord[]) : [];
    const readChunk = h.transaction((wanted: string[]) => {
      const found = new Map((byIds.all(JSON.stringify(wanted)) as StoredRecord[]).map((r) => [r.id, r]));
      const roots = wanted.flatMap((id) => found.get(id) ?? []);
      return nestChildren(
        roots,
        nest,
        (list) => children(list, tracesOf),
        (list) => children(list, spansOf),
      );
    });
    let after = 0;
    for (;;) {
      const page = next.all(after, chunk) as { seq: number; id: string }[];
      if (!page.length) return;
      after = page[page.length - 1].seq;
      const items = readChunk(page.map((r) => r.id));
      if (items.length) yield items;
      if (page.length < chunk) return;
    }
  } finally {
    await store.close();
  }
}
