/**
 * The SQLite text index: per block of BLOCK_ROWS consecutive rowids and per record group (sessions,
 * traces, spans), one document of the block's distinct hashed trigrams of case-folded input and
 * output (domain/text-grams.ts), in FTS5 tables (detail=none: a trigram's posting is the block
 * number alone) in a file of their own beside the database (`<name>-text.db`, attached as `text`),
 * so that indexing takes that file's write lock and never the records'. A `contains` search reads
 * the blocks that hold every trigram of its term and checks their records exactly.
 *
 * Why blocks: a record of about 2 KB of text holds about 2,000 trigrams; indexing each record's
 * trigrams cost 150–210 µs of CPU per record, more than ingesting it (bench/ingest.ts, "searchable").
 * A block holds each distinct trigram once: the work is hashing the text in JavaScript.
 *
 * A background thread (indexer-thread.ts) indexes each block once it is full (rowids only grow, so a
 * block below the largest rowid gets no new record) and records in the index file how far it got
 * (`frontier`, the first rowid of the first block not indexed). Changes below the frontier (updates,
 * deletes, a rowid reused after the newest records were deleted) are noted by triggers in
 * `records_text_queue` (migration 004); the indexer indexes their blocks again. Searches also take
 * the records above the frontier and the queued ones as candidates, so answers stay exact. The main
 * thread trims the taken queue entries.
 *
 * The index refers to records by rowid; at start it checks that it belongs to this database and that
 * its rowids still name the same records (a VACUUM may renumber them), and rebuilds itself otherwise.
 */
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import {
  BLOCK_ROWS,
  BlockGrams,
  TEXT_GROUPS,
  type TextGroup,
  blockOf,
  metaToken,
  termQuery,
  textGroup,
} from '../domain/text-grams.ts';
import { metadataEquality, metadataEqualityLeaves } from '../query/metadata-index.ts';
import type { FilterTree, Leaf } from '../query/filters.ts';
import {
  type TextCandidateSource,
  foldedIndexServes,
  indexedColumn,
  indexedContainsLeaves,
} from './search-query.ts';
import type { DB } from './tables.ts';

/** The layout of the index file; an index of another layout is dropped and built again. */
/** blocks-2: the blocks also hold metadata tokens (domain/text-grams.ts metaToken). */
const FORMAT = 'blocks-2';

/** The index tables (schema-qualified, one per record group) that cover records of `types` (all when not given). */
export function textTables(types?: readonly string[]): string[] {
  const groups = types ? [...new Set(types.map(textGroup))] : [...TEXT_GROUPS];
  return groups.map((g) => `text.text_blocks_${g}`);
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
  createTables(h);
  return true;
}

function createTables(h: SQLite.Database): void {
  // Tokens are short ASCII words; no positions (detail=none).
  for (const table of textTables()) {
    h.exec(`create virtual table if not exists ${table} using fts5(
      grams, content = '', contentless_delete = 1, tokenize = 'ascii', detail = none)`);
  }
  h.exec('create table if not exists text.meta (key text primary key, value text)');
}

function meta(h: SQLite.Database): Map<string, string> {
  const rows = h.prepare('select key, value from text.meta').all() as { key: string; value: string }[];
  return new Map(rows.map((r) => [r.key, r.value]));
}

/**
 * Rebuilds the index unless it has this layout, belongs to this database and its last indexed
 * rowid still names the record it named. Answers whether it rebuilt.
 */
export function checkTextIndex(h: SQLite.Database): boolean {
  const token = (h.prepare('select token from records_text_state').pluck().get() as string | undefined) ?? '';
  const m = meta(h);
  let ok = m.get('format') === FORMAT && m.get('token') === token;
  if (ok && m.has('probe_rowid')) {
    const id = h
      .prepare('select id from records where rowid = ?')
      .pluck()
      .get(Number(m.get('probe_rowid')));
    // A probe whose record was deleted proves nothing either way.
    ok = id === undefined || id === m.get('probe_id');
  }
  if (!ok) {
    if (m.get('format') !== FORMAT) {
      // An index of another layout (or none yet): its tables go, this layout's are made.
      const tables = h
        .prepare(
          "select name from text.sqlite_master where type = 'table' and upper(substr(sql, 1, 20)) = 'CREATE VIRTUAL TABLE'",
        )
        .pluck()
        .all() as string[];
      for (const t of tables) h.exec(`drop table if exists text."${t.replaceAll('"', '""')}"`);
      createTables(h);
    }
    rebuildTextIndex(h);
  }
  return !ok;
}

/**
 * Removes queue entries the index has taken (a write on the records' database: the main thread's).
 * The newest taken entry stays, so that new entries (seq = largest + 1) stay above the position.
 */
export function trimQueue(h: SQLite.Database): number {
  return h.prepare('delete from records_text_queue where seq < ?').run(indexedSeq(h)).changes;
}

/**
 * Empties the index: every block is then above the frontier, indexed again from the records, and
 * every queued change is behind the position. One transaction on the index file.
 */
export function rebuildTextIndex(h: SQLite.Database): void {
  const token = (h.prepare('select token from records_text_state').pluck().get() as string | undefined) ?? '';
  h.transaction(() => {
    const seq = Number(h.prepare('select coalesce(max(seq), 0) from records_text_queue').pluck().get());
    for (const table of textTables()) {
      const name = table.slice(table.indexOf('.') + 1);
      h.exec(`insert into ${table} (${name}) values ('delete-all')`);
    }
    h.exec('delete from text.meta');
    const set = h.prepare('insert into text.meta (key, value) values (?, ?)');
    for (const [k, v] of [
      ['format', FORMAT],
      ['token', token],
      ['frontier', '0'],
      ['seq', String(seq)],
    ])
      set.run(k, v);
  })();
}

interface Statements {
  next: SQLite.Statement;
  maxRowid: SQLite.Statement;
  rows: SQLite.Statement;
  drop: Record<TextGroup, SQLite.Statement>;
  add: Record<TextGroup, SQLite.Statement>;
  set: SQLite.Statement;
  get: SQLite.Statement;
  queued: SQLite.Statement;
}
const prepared = new WeakMap<SQLite.Database, Statements>();

function statements(h: SQLite.Database): Statements {
  let s = prepared.get(h);
  if (!s) {
    const each = (f: (table: string) => string) =>
      Object.fromEntries(TEXT_GROUPS.map((g) => [g, h.prepare(f(`text.text_blocks_${g}`))])) as Record<
        TextGroup,
        SQLite.Statement
      >;
    s = {
      next: h.prepare('select seq, rid from records_text_queue where seq > ? order by seq limit ?'),
      maxRowid: h.prepare('select coalesce(max(rowid), 0) from records').pluck(),
      rows: h.prepare(
        'select rowid as rid, id, type, input_text, output_text, user_metadata from records where rowid between ? and ? order by rowid',
      ),
      drop: each((t) => `delete from ${t} where rowid = ?`),
      add: each((t) => `insert into ${t} (rowid, grams) values (?, ?)`),
      set: h.prepare('insert or replace into text.meta (key, value) values (?, ?)'),
      get: h.prepare('select value from text.meta where key = ?').pluck(),
      queued: h.prepare('select count(*) from records_text_queue where seq > ?').pluck(),
    };
    prepared.set(h, s);
  }
  return s;
}

const metaNumber = (h: SQLite.Database, key: string) => Number(statements(h).get.get(key) ?? 0);

/** The queue position the index is complete up to (entries above it are not indexed yet). */
export function indexedSeq(h: SQLite.Database): number {
  return metaNumber(h, 'seq');
}

/** Rows of full blocks not indexed yet plus queue entries not taken: the index's backlog. */
export function textBacklog(h: SQLite.Database): number {
  const s = statements(h);
  const frontier = metaNumber(h, 'frontier');
  const full = blockOf(Number(s.maxRowid.get()) + 1) * BLOCK_ROWS;
  return Math.max(0, full - frontier) + Number(s.queued.get(indexedSeq(h)));
}

/** Blocks indexed per transaction (at most; fewer when the time budget runs out). */
const STEP_BLOCKS = 16;
const STEP_QUEUE = 2048;

type TextRow = {
  rid: number;
  id: string;
  type: string;
  input_text: string | null;
  output_text: string | null;
  user_metadata: string | null;
};

/** Per group, the gram set of the block being read. */
const builders = new WeakMap<SQLite.Database, Record<TextGroup, BlockGrams>>();

/**
 * Indexes for about `budgetMs`: blocks whose records changed below the frontier, again, then full
 * blocks above it; answers how many rows and queue entries it took (0: nothing to do). It writes the
 * index file only (never the records' database, whose write lock ingestion holds): each step is one
 * transaction that updates the index and moves the frontier and the queue position. A record
 * changed meanwhile has a newer queue entry, taken by a later step. Must not run inside another
 * transaction on this connection.
 */
export function indexPending(h: SQLite.Database, budgetMs: number): number {
  const s = statements(h);
  let grams = builders.get(h);
  if (!grams) {
    grams = { session: new BlockGrams(), trace: new BlockGrams(), span: new BlockGrams() };
    builders.set(h, grams);
  }
  const started = performance.now();
  let taken = 0;
  while (performance.now() - started < budgetMs) {
    const frontier = metaNumber(h, 'frontier');
    const entries = s.next.all(indexedSeq(h), STEP_QUEUE) as { seq: number; rid: number }[];
    const again = [...new Set(entries.filter((e) => e.rid < frontier).map((e) => blockOf(e.rid)))];
    const fullBlocks = blockOf(Number(s.maxRowid.get()) + 1);
    const first = blockOf(frontier);
    const last = Math.min(fullBlocks, first + STEP_BLOCKS);
    if (!entries.length && last <= first) break;
    const docs: { block: number; group: TextGroup; doc: string }[] = [];
    let probe: TextRow | null = null;
    const read = (from: number, to: number) => {
      let block = from;
      const flush = () => {
        for (const g of TEXT_GROUPS)
          if (!grams[g].empty) docs.push({ block, group: g, doc: grams[g].take() });
      };
      for (const row of s.rows.iterate(from * BLOCK_ROWS, to * BLOCK_ROWS - 1) as Iterable<TextRow>) {
        const b = blockOf(row.rid);
        if (b !== block) {
          flush();
          block = b;
        }
        const g = grams[textGroup(row.type)];
        g.add('input', row.input_text);
        g.add('output', row.output_text);
        g.addMeta(row.user_metadata);
        probe = row;
      }
      flush();
    };
    for (const b of again) read(b, b + 1);
    const reread = docs.length;
    if (last > first) read(first, last);
    h.transaction(() => {
      for (const b of again) for (const g of TEXT_GROUPS) s.drop[g].run(b);
      for (const d of docs) s.add[d.group].run(d.block, d.doc);
      if (entries.length) s.set.run('seq', String(entries[entries.length - 1].seq));
      if (last > first) {
        s.set.run('frontier', String(last * BLOCK_ROWS));
        const p = probe as TextRow | null;
        if (p && docs.length > reread) {
          s.set.run('probe_rowid', String(p.rid));
          s.set.run('probe_id', p.id);
        }
      }
    })();
    taken += entries.length + Math.max(0, last - first) * BLOCK_ROWS;
  }
  return taken;
}

/**
 * SQLite text candidates: for each `contains` leaf on an indexed column and each metadata equality
 * (query/metadata-index.ts), the BLOCKS of rowids (domain/text-grams.ts blockOf) whose records may
 * match: those whose documents (in the indexes of `types`, default all) hold the term's trigrams or
 * the key and value's token, plus those of every record not indexed yet (above
 * the frontier, or queued). A search checks a record's block from its index entry, before it reads
 * the record. Without an index file (an in-memory database) there are none.
 */
export class SqliteTextCandidates implements TextCandidateSource {
  private readonly indexed: boolean;

  /** `cap`: the most candidate records (blocks × BLOCK_ROWS) a leaf may have; more scan instead. */
  constructor(
    h: SQLite.Database,
    public cap = 2_000_000,
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
    const leaves = [...indexedContainsLeaves(tree), ...metadataEqualityLeaves(tree)];
    if (!leaves.length) return out;
    const tables = textTables(types);
    const maxBlocks = Math.floor(this.cap / BLOCK_ROWS);
    // Read the index file first (its frontier and queue position), then the records and the queue:
    // their snapshot is then at least as new as the index's, so every record is in the index as it
    // is now, above the frontier, or queued beyond the position.
    const { rows: pos } = await sql<{ key: string; value: string }>`select key, value from text.meta
      where key in ('seq', 'frontier')`.execute(db);
    const at = (k: string) => Number(pos.find((p) => p.key === k)?.value ?? 0);
    const { rows: last } = await sql<{ max: number | null }>`select max(rowid) as max from records`.execute(
      db,
    );
    const { rows: queued } = await sql<{ rid: number }>`
      select distinct rid from records_text_queue where seq > ${at('seq')} limit ${this.cap + 1}`.execute(db);
    const unindexed = new Set(queued.map((r) => blockOf(r.rid)));
    for (let b = blockOf(at('frontier')); b <= blockOf(Number(last[0]?.max ?? 0)); b++) unindexed.add(b);
    if (unindexed.size > maxBlocks || queued.length > this.cap) return out;
    for (const leaf of leaves) {
      const { caseSensitive } = leaf as { caseSensitive: boolean };
      const term = leaf.value as string;
      const eq = metadataEquality(leaf);
      // A token is one word: as a phrase (quoted), FTS5 reads it as a word, whatever its characters.
      const match = eq
        ? `"${metaToken(eq.key, eq.value)}"`
        : foldedIndexServes(term, caseSensitive)
          ? termQuery(indexedColumn(leaf), term)
          : null;
      if (match === null) continue;
      const blocks = new Set(unindexed);
      for (const table of tables) {
        // The MATCH column is the table's own name, unqualified.
        const { rows } = await sql<{ rowid: number }>`select rowid from ${sql.table(table)} where ${sql.id(
          table.slice(table.indexOf('.') + 1),
        )} match ${match} limit ${maxBlocks + 1}`.execute(db);
        for (const r of rows) blocks.add(r.rowid);
        if (blocks.size > maxBlocks) break;
      }
      if (blocks.size <= maxBlocks)
        out.set(
          leaf,
          [...blocks].sort((x, y) => x - y),
        );
    }
    return out;
  }
}
