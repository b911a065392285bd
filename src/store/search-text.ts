/**
 * The SQLite text index: FTS5 trigram tables (one per record group: sessions, traces, spans) in a
 * file of their own beside the database (`<name>-text.db`, attached as `text`), so that indexing
 * takes that file's write lock and never the records'. Ingestion only notes changed rows in
 * `records_text_queue` (triggers, migration 004); a background thread indexes them shortly after
 * (indexer-thread.ts) and records in the index file how far in the queue it got; searches check the
 * rows queued beyond that directly, so answers stay exact. The main thread trims the taken entries.
 *
 * The index holds case-folded text (domain/text.ts foldCase): one index serves case-sensitive and case-insensitive `contains`.
 * It refers to records by rowid; at start it checks that it belongs to this database and that its
 * rowids still name the same records (a VACUUM may renumber them), and rebuilds itself otherwise.
 */
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import { foldCase } from '../domain/text.ts';
import { type Kysely, sql } from 'kysely';
import type { FilterTree, Leaf } from '../query/filters.ts';
import {
  type TextCandidateSource,
  foldedIndexServes,
  indexedColumn,
  indexedContainsLeaves,
} from './search-query.ts';
import type { DB } from './tables.ts';

/** The trigram indexes: one per group of record types a search reads. */
export const TEXT_GROUPS = ['session', 'trace', 'span'] as const;
export type TextGroup = (typeof TEXT_GROUPS)[number];

export function textGroup(type: string): TextGroup {
  return type === 'session' ? 'session' : type === 'trace' ? 'trace' : 'span';
}

/** The index tables (schema-qualified) that cover records of `types` (all when not given). */
export function textTables(types?: readonly string[]): string[] {
  const groups = types ? [...new Set(types.map(textGroup))] : [...TEXT_GROUPS];
  return groups.map((g) => `text.records_text_${g}`);
}

/** The index file of a database file; null for an in-memory database (no index: searches scan). */
export function textIndexFile(h: SQLite.Database): string | null {
  if (h.memory || !h.name || h.name === ':memory:') return null;
  const p = path.parse(h.name);
  return path.join(p.dir, `${p.name}-text${p.ext || '.db'}`);
}

/** Attaches the index file as `text` on this connection (creating its tables); false when there is none. */
export function attachTextIndex(h: SQLite.Database): boolean {
  const attached = (h.pragma('database_list') as { name: string }[]).some((d) => d.name === 'text');
  if (attached) return true;
  const file = textIndexFile(h);
  if (!file) return false;
  h.prepare('attach database ? as text').run(file);
  h.pragma('text.journal_mode = WAL');
  h.pragma('text.synchronous = NORMAL');
  for (const g of TEXT_GROUPS) {
    h.exec(`create virtual table if not exists text.records_text_${g} using fts5(
      input, output, content = '', contentless_delete = 1,
      tokenize = 'trigram case_sensitive 1', detail = column)`);
  }
  h.exec('create table if not exists text.meta (key text primary key, value text)');
  return true;
}

function meta(h: SQLite.Database): Map<string, string> {
  const rows = h.prepare('select key, value from text.meta').all() as { key: string; value: string }[];
  return new Map(rows.map((r) => [r.key, r.value]));
}

/**
 * Rebuilds the index unless it belongs to this database and its last indexed rowid still names the
 * record it named. Answers whether it rebuilt.
 */
export function checkTextIndex(h: SQLite.Database): boolean {
  const token = (h.prepare('select token from records_text_state').pluck().get() as string | undefined) ?? '';
  const m = meta(h);
  let ok = m.get('token') === token;
  if (ok && m.has('probe_rowid')) {
    const id = h
      .prepare('select id from records where rowid = ?')
      .pluck()
      .get(Number(m.get('probe_rowid')));
    // A probe whose record was deleted proves nothing either way.
    ok = id === undefined || id === m.get('probe_id');
  }
  if (!ok) rebuildTextIndex(h);
  return !ok;
}

/**
 * Empties the index and queues every record with text. Three steps, each atomic; the token that
 * marks the index as this database's is written last, so an interrupted rebuild runs again. (The
 * queue position restarts at 0, below every entry.)
 */
/**
 * Removes queue entries the index has taken (a write on the records' database: the main thread's).
 * The newest taken entry stays, so that new entries (seq = largest + 1) stay above the position.
 */
export function trimQueue(h: SQLite.Database): number {
  return h.prepare('delete from records_text_queue where seq < ?').run(indexedSeq(h)).changes;
}

export function rebuildTextIndex(h: SQLite.Database): void {
  h.transaction(() => {
    for (const g of TEXT_GROUPS)
      h.exec(`insert into text.records_text_${g} (records_text_${g}) values ('delete-all')`);
    h.exec('delete from text.meta');
  })();
  h.transaction(() => {
    h.exec('delete from records_text_queue');
    h.exec(
      'insert into records_text_queue (rid) select rowid from records where input_text is not null or output_text is not null',
    );
  })();
  const token = (h.prepare('select token from records_text_state').pluck().get() as string | undefined) ?? '';
  h.prepare("insert or replace into text.meta (key, value) values ('token', ?)").run(token);
}

interface Statements {
  next: SQLite.Statement;
  read: SQLite.Statement;
  drop: Record<TextGroup, SQLite.Statement>;
  add: Record<TextGroup, SQLite.Statement>;
  probe: SQLite.Statement;
  done: SQLite.Statement;
  seq: SQLite.Statement;
}
const prepared = new WeakMap<SQLite.Database, Statements>();

function statements(h: SQLite.Database): Statements {
  let s = prepared.get(h);
  if (!s) {
    const each = (f: (g: TextGroup) => string) =>
      Object.fromEntries(TEXT_GROUPS.map((g) => [g, h.prepare(f(g))])) as Record<TextGroup, SQLite.Statement>;
    s = {
      next: h.prepare('select seq, rid from records_text_queue where seq > ? order by seq limit ?'),
      read: h.prepare(
        'select rowid as rid, id, type, input_text, output_text from records where rowid in (select value from json_each(?))',
      ),
      drop: each((g) => `delete from text.records_text_${g} where rowid = ?`),
      add: each((g) => `insert into text.records_text_${g} (rowid, input, output) values (?, ?, ?)`),
      probe: h.prepare(
        "insert or replace into text.meta (key, value) values ('probe_rowid', ?), ('probe_id', ?)",
      ),
      done: h.prepare("insert or replace into text.meta (key, value) values ('seq', ?)"),
      seq: h.prepare("select value from text.meta where key = 'seq'").pluck(),
    };
    prepared.set(h, s);
  }
  return s;
}

/** The queue position the index is complete up to (entries above it are not indexed yet). */
export function indexedSeq(h: SQLite.Database): number {
  return Number(statements(h).seq.get() ?? 0);
}

/**
 * Indexes queued records for about `budgetMs` and answers how many queue entries it took. It writes
 * the index file only (never the records' database, whose write lock ingestion holds): each batch is
 * one transaction that updates the index and moves the index's queue position past the batch. A
 * record changed meanwhile has a newer queue entry, above that position. Must not run inside another
 * transaction on this connection.
 */
export function indexQueued(h: SQLite.Database, budgetMs: number): number {
  const s = statements(h);
  const started = performance.now();
  let taken = 0;
  while (performance.now() - started < budgetMs) {
    const batch = s.next.all(indexedSeq(h), 256) as { seq: number; rid: number }[];
    if (!batch.length) break;
    const rids = [...new Set(batch.map((b) => b.rid))];
    const rows = s.read.all(JSON.stringify(rids)) as {
      rid: number;
      id: string;
      type: string;
      input_text: string | null;
      output_text: string | null;
    }[];
    const byRid = new Map(rows.map((r) => [r.rid, r]));
    h.transaction(() => {
      let last: { rid: number; id: string } | null = null;
      for (const rid of rids) {
        const row = byRid.get(rid);
        if (!row) {
          // Deleted: its entry may be in any index.
          for (const g of TEXT_GROUPS) s.drop[g].run(rid);
          continue;
        }
        const g = textGroup(row.type);
        s.drop[g].run(rid);
        if (row.input_text !== null || row.output_text !== null) {
          const folded = (t: string | null) => (t === null ? null : foldCase(t));
          s.add[g].run(rid, folded(row.input_text), folded(row.output_text));
        }
        last = row;
      }
      if (last) s.probe.run(String(last.rid), last.id);
      s.done.run(String(batch[batch.length - 1].seq));
    })();
    taken += batch.length;
  }
  return taken;
}

const MAX_TRIGRAMS = 4;

/** Query text for the FTS5 trigram index, or null when the index cannot narrow the search. */
export function trigramQuery(
  column: 'input' | 'output',
  term: string,
  caseSensitive: boolean,
): string | null {
  if (!foldedIndexServes(term, caseSensitive)) return null;
  const cps = Array.from(foldCase(term));
  if (cps.length < 3 || cps.includes('\0')) return null;
  const grams = new Set<string>();
  for (let i = 0; i + 3 <= cps.length; i++) grams.add(cps.slice(i, i + 3).join(''));
  // A few trigrams spread over the term narrow as well as all of them (each record is checked
  // exactly afterwards) and intersect far fewer posting lists.
  let list = [...grams];
  if (list.length > MAX_TRIGRAMS) {
    const step = (list.length - 1) / (MAX_TRIGRAMS - 1);
    list = Array.from({ length: MAX_TRIGRAMS }, (_, i) => list[Math.round(i * step)]);
  }
  return `${column} : (${list.map((g) => `"${g.replace(/"/g, '""')}"`).join(' AND ')})`;
}

/**
 * SQLite text candidates: for each `contains` leaf on an indexed column, the rowids that may match:
 * the trigram index's hits (in the indexes of `types`, default all) plus every row not indexed yet
 * (queued). Without an index file (an in-memory database) there are none.
 */
export class SqliteTextCandidates implements TextCandidateSource {
  private readonly indexed: boolean;

  constructor(
    h: SQLite.Database,
    public cap = 20_000,
  ) {
    // The index file, attached on this connection (file databases only).
    this.indexed = attachTextIndex(h);
  }

  async candidates(
    db: Kysely<DB>,
    tree: FilterTree | null,
    types?: readonly string[],
  ): Promise<Map<Leaf, number[]>> {
    const out = new Map<Leaf, number[]>();
    if (!tree || !this.indexed) return out;
    const leaves = indexedContainsLeaves(tree);
    if (!leaves.length) return out;
    const tables = textTables(types);
    // Read the index file first (its position in the queue), then the queue: the queue's snapshot is then
    // at least as new as the index's, so every record is in the index as it is now or queued beyond
    // that position.
    const { rows: pos } = await sql<{ value: string }>`select value from text.meta where key = 'seq'`.execute(
      db,
    );
    const indexed = Number(pos[0]?.value ?? 0);
    const { rows: queuedRows } = await sql<{
      rid: number;
    }>`select distinct rid from records_text_queue where seq > ${indexed} limit ${this.cap + 1}`.execute(db);
    const queued = queuedRows.map((r) => r.rid);
    if (queued.length > this.cap) return out;
    for (const leaf of leaves) {
      const match = trigramQuery(
        indexedColumn(leaf),
        leaf.value as string,
        (leaf as { caseSensitive: boolean }).caseSensitive,
      );
      if (match === null) continue;
      const hits: number[] = [];
      for (const table of tables) {
        // The MATCH column is the table's own name, unqualified.
        const { rows } = await sql<{ rowid: number }>`select rowid from ${sql.table(table)} where ${sql.id(
          table.slice(table.indexOf('.') + 1),
        )} match ${match} limit ${this.cap + 1 - hits.length}`.execute(db);
        for (const r of rows) hits.push(r.rowid);
        if (hits.length > this.cap) break;
      }
      if (hits.length + queued.length > this.cap) continue;
      out.set(leaf, [...hits, ...queued]);
    }
    return out;
  }
}
