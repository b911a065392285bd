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
 * SQLite: roots through a statement iterator on a connection of its own (a WAL reader: ingestion goes
 * on meanwhile), children through a second one (an open iterator keeps its connection busy), whose
 * read transaction starts right after the first's.
 */
export async function* sqliteExport(read: SqliteExport): AsyncGenerator<ExportItem[]> {
  const { file, text, params, nest, chunk } = read;
  const roots = openSqlite(file);
  const side = openSqlite(file);
  const r = roots.sqlite!;
  const c = side.sqlite!;
  // Each row is read once: a small page cache and no memory map keep the server's memory flat
  // however much is exported.
  for (const h of [r, c]) {
    h.pragma('cache_size = -2048');
    h.pragma('mmap_size = 0');
  }
  const it = r.prepare(text).iterate(params) as IterableIterator<StoredRecord>;
  c.exec('begin');
  const tracesOf = c.prepare(
    "select * from records where session_id in (select value from json_each(?)) and type = 'trace'",
  );
  const spansOf = c.prepare(
    "select * from records where trace_id in (select value from json_each(?)) and type <> 'trace'",
  );
  const children = (ids: string[], stmt: typeof tracesOf) =>
    ids.length ? (stmt.all(JSON.stringify(ids)) as StoredRecord[]) : [];
  try {
    for (;;) {
      const batch: StoredRecord[] = [];
      while (batch.length < chunk) {
        const next = it.next();
        if (next.done) break;
        batch.push(next.value);
      }
      if (!batch.length) return;
      yield nestChildren(
        batch,
        nest,
        (ids) => children(ids, tracesOf),
        (ids) => children(ids, spansOf),
      );
      if (batch.length < chunk) return;
    }
  } finally {
    it.return?.();
    if (c.inTransaction) c.exec('rollback');
    await roots.close();
    await side.close();
  }
}
