/**
 * The PostgreSQL text index by blocks (migration 015), the design of SQLite's (search-text.ts): for
 * each block of up to BLOCK_ROWS records of one record group, `text_blocks` holds the block's distinct
 * hashed trigrams of case-folded input and output (domain/text-grams.ts) in an integer array with a
 * GIN index, and `text_block_records` names each indexed record's block. A `contains` search reads
 * the blocks whose array holds every trigram of its term, takes their records, and checks each
 * exactly.
 *
 * Ingestion only queues records (`records_text_queue`, filled by triggers in the writing
 * transaction, migration 008). The indexer takes a batch of queued entries that no other indexer
 * holds (FOR UPDATE SKIP LOCKED) and, in one transaction, deletes them, reads the records' current
 * text, hashes it in JavaScript into the batch's blocks (per group, 128 records each) and writes the
 * blocks and the records' memberships. A search reading the blocks' records plus the queued ones in
 * one snapshot so sees every record either queued or in a block holding its text as it is
 * (PgTextCandidates).
 *
 * Why blocks: pg_trgm extracted every trigram of every record in the database, about 0.4 ms of its
 * CPU per record with 1.7 KB of text, and kept a folded copy of the text. A block holds each distinct
 * trigram once, so the database stores and merges a small fraction of the postings, and the hashing
 * costs the indexing process a few microseconds per record.
 *
 * A record whose text changes is queued again and moves to a new block; its old block keeps the old
 * text's grams, which only add candidates, and goes once no record is left in it. Indexing
 * transactions take turns (an advisory lock per schema), so each sees the memberships it changes as
 * they are; the membership of the later queue entry wins (`seq`) all the same. Deleted records are
 * skipped; deleting records drops their memberships and the blocks left empty (statement trigger).
 *
 * Among processes sharing a database, the one holding the `text-index` lease runs the job.
 *
 * The blocks also hold a code per distinct string value of their records' top-level user metadata
 * keys (`metaCode`), for metadata equalities (query/metadata-index.ts); records are queued when their
 * metadata changes too (migration 033).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import {
  BLOCK_ROWS,
  BlockGrams,
  GRAM_BITS,
  TEXT_GROUPS,
  type TextColumn,
  type TextGroup,
  metaHash,
  termGrams,
  textGroup,
} from '../domain/text-grams.ts';
import { metadataEquality, metadataEqualityLeaves } from '../query/metadata-index.ts';
import type { FilterTree, Leaf } from '../query/filters.ts';
import { leasesOf } from './leases.ts';
import {
  type TextCandidateSource,
  type TextIndexer,
  foldedIndexServes,
  indexedColumn,
  indexedContainsLeaves,
} from './search-query.ts';
import type { DB } from './tables.ts';

/** The lease of the indexing job (store/leases.ts). */
export const TEXT_INDEX_JOB = 'text-index';

/**
 * Queue entries one indexing transaction takes. Larger batches merge more shared trigram codes at
 * once into the GIN index (bench:ingest, PostgreSQL, 200,000 records: searchable 0.73 of the burst
 * rate with 2,048, 0.78 with 4,096, 0.81-0.84 with 8,192), for about 40 MB more of the server's peak
 * RSS (the batch's text and grams).
 */
export const PG_TEXT_BATCH = 8192;
/**
 * The integer that stands for trigram `gram` of `column` in blocks of `group`: the group and column
 * in the bits above the gram's, so that one GIN index serves every group and column and a lookup
 * for one group's blocks finds no other's.
 */
export function gramCode(group: TextGroup, column: TextColumn, gram: number): number {
  return (TEXT_GROUPS.indexOf(group) * 2 + (column === 'output' ? 1 : 0)) * 2 ** GRAM_BITS + gram;
}

/** Bits of a metadata code's hash: 2^26 codes per group. */
const META_BITS = 26;
/**
 * The integer that stands for a metadata key and string value in blocks of `group` (its first hash,
 * domain/text-grams.ts metaHash): above every trigram code (groups and columns take 6 × 2^GRAM_BITS),
 * in a range per group, under 2^31.
 */
export function metaCode(group: TextGroup, hash: number): number {
  return (8 + TEXT_GROUPS.indexOf(group)) * 2 ** META_BITS + (hash % 2 ** META_BITS);
}

type QueuedRow = {
  id: string;
  seq: string;
  type: string | null;
  input_text: string | null;
  output_text: string | null;
  user_metadata: unknown;
  old_block: string | null;
  taken: number;
};

/** Indexes up to `limit` queued entries in one transaction; answers how many it took (0: none free). */
export async function indexQueuedPg(db: Kysely<any>, limit = PG_TEXT_BATCH): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // One indexer at a time per schema (normally only the lease holder runs one): each then reads
    // memberships no other indexer is changing, so it knows which blocks its moves leave empty.
    await sql`select pg_advisory_xact_lock(hashtext(current_schema() || '.text_blocks'))`.execute(trx);
    // One statement, one snapshot: the entries taken, each record's latest entry and current text,
    // and the block it is in now (null: none, or deleted: type null). The entries go by their keys
    // (`= any(array(...))`): as `in (select ...)`, with statistics the planner joined them with a
    // scan of the whole queue.
    const { rows } = await sql<QueuedRow>`
      with taken as (
        delete from records_text_queue
        where seq = any(array(select seq from records_text_queue order by seq limit ${limit} for update skip locked))
        returning seq, id
      ), latest as (
        select id, max(seq) as seq from taken group by id
      )
      select l.id, l.seq, r.type, r.input_text, r.output_text, r.user_metadata, m.block as old_block,
        (select count(*)::int from taken) as taken
      from latest l left join records r on r.id = l.id left join text_block_records m on m.id = l.id
      order by l.seq`.execute(trx);
    if (!rows.length) return 0;
    const byGroup = new Map<TextGroup, QueuedRow[]>();
    for (const row of rows) {
      if (row.type === null) continue;
      const g = textGroup(row.type);
      const list = byGroup.get(g);
      if (list) list.push(row);
      else byGroup.set(g, [row]);
    }
    // The blocks (their grams as array literals) and, per record, the number of its block.
    const docs: string[] = [];
    const ids: string[] = [];
    const seqs: string[] = [];
    const blockNos: number[] = [];
    const builder = new BlockGrams();
    for (const [group, list] of byGroup) {
      for (let from = 0; from < list.length; from += BLOCK_ROWS) {
        const block = list.slice(from, from + BLOCK_ROWS);
        for (const row of block) {
          builder.add('input', row.input_text);
          builder.add('output', row.output_text);
          builder.addMeta(row.user_metadata);
          ids.push(row.id);
          seqs.push(row.seq);
          blockNos.push(docs.length + 1);
        }
        const grams = builder.takeGrams();
        const input = gramCode(group, 'input', 0);
        const output = gramCode(group, 'output', 0);
        for (let i = 0; i < grams.input.length; i++) grams.input[i] += input;
        for (let i = 0; i < grams.output.length; i++) grams.output[i] += output;
        const codes = [...grams.input, ...grams.output];
        for (const h of builder.takeMeta()) codes.push(metaCode(group, h));
        docs.push(`{${codes.join(',')}}`);
        // Hashing takes this process's thread: let requests in between blocks.
        await yieldToLoop();
      }
    }
    const gone = new Set(rows.map((r) => r.old_block).filter((b) => b !== null) as string[]);
    if (docs.length) {
      const { rows: done } = await sql<{ written: number; blocks: string[] }>`
        with b as (
          select nextval('text_blocks_seq') as block, d.grams::integer[] as grams, d.n
          from unnest(${docs}::text[]) with ordinality as d(grams, n)
        ), blocks as (
          insert into text_blocks (block, grams) select block, grams from b
        ), members as (
          insert into text_block_records as t (id, block, seq)
          select m.id, b.block, m.seq
          from unnest(${ids}::text[], ${blockNos}::bigint[], ${seqs}::bigint[]) as m(id, n, seq)
          join b on b.n = m.n
          where exists (select 1 from records r where r.id = m.id)
          order by m.id
          on conflict (id) do update set block = excluded.block, seq = excluded.seq
          where t.seq < excluded.seq
          returning 1
        )
        select (select count(*)::int from members) as written,
          (select array_agg(block)::text[] from b) as blocks`.execute(trx);
      // A record deleted since it was read leaves a block of this batch without it, maybe empty.
      if (Number(done[0].written) < ids.length) for (const block of done[0].blocks) gone.add(String(block));
      // The blocks' codes wait in the GIN index's pending list: merged now, in bulk, searches never
      // read the list (migration 018).
      await sql`select gin_clean_pending_list('text_blocks_grams'::regclass)`.execute(trx);
    }
    if (gone.size)
      await sql`delete from text_blocks b where b.block = any(${[...gone]}::bigint[])
        and not exists (select 1 from text_block_records m where m.block = b.block)`.execute(trx);
    return Number(rows[0].taken);
  });
}

/** Queue entries not yet indexed (including those an indexer holds right now). */
export async function pendingPg(db: Kysely<any>): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from records_text_queue`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Empties the index and queues every record with text again (repair), in one transaction: searches
 * see either the old index or every record queued. The tables are emptied last, so that their lock
 * (TRUNCATE's, which holds off searches) is held only until the commit.
 */
export async function requeueAllPg(db: Kysely<any>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`insert into records_text_queue (id)
      select id from records where input_text is not null or output_text is not null
        or user_metadata <> '{}'::jsonb
      order by created_at desc`.execute(trx);
    await sql`truncate text_blocks, text_block_records`.execute(trx);
  });
}

/**
 * The text queue is vacuumed each time the indexer has drained it, at most once in this time: a
 * vacuum of the small table costs milliseconds, but ingestion at a trickle drains it every turn.
 */
const VACUUM_EVERY_MS = 1000;

async function queueHasPages(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{
    pages: boolean;
  }>`select pg_relation_size('records_text_queue') > 0 as pages`.execute(db);
  return rows[0].pages;
}

/**
 * The background job of one process: indexes batches while entries are queued, then looks again
 * every `idleMs`. Failures (a lost connection, a deadlock with another indexer) are retried later.
 */
export class PgTextIndexer implements TextIndexer {
  readonly enabled = true;
  private running = false;
  private loop: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;

  constructor(
    private readonly db: Kysely<any>,
    private readonly idleMs = 200,
    private readonly vacuumEveryMs = VACUUM_EVERY_MS,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    // Whether the queue may hold dead rows to vacuum (entries were taken from it since a vacuum
    // left it without pages), and when it was last vacuumed.
    let taken = false;
    let vacuumed = 0;
    while (this.running) {
      let wait = this.idleMs;
      try {
        // One process of those sharing the database indexes (the holder of the lease); the others
        // take over when it stops.
        if (!(await leasesOf(this.db).hold(TEXT_INDEX_JOB))) wait = this.idleMs * 5;
        else if ((await indexQueuedPg(this.db)) > 0) {
          // No pause between batches, ingestion or not: a batch costs the database and this
          // process a small fraction of what ingesting its records did, and a paused indexer fell
          // behind.
          taken = true;
          wait = 0;
        } else if (taken && Date.now() - vacuumed >= this.vacuumEveryMs) {
          // Every queued record leaves a dead row behind. Vacuumed once drained, the emptied
          // table gives its pages back to the file system (autovacuum may be off, or late). A
          // snapshot older than the last batch, or a reader's lock, can keep them: then again
          // later.
          vacuumed = Date.now();
          await sql`vacuum records_text_queue`.execute(this.db);
          taken = await queueHasPages(this.db);
        }
      } catch {
        wait = 1000;
      }
      if (this.running) await this.sleep(wait);
    }
  }

  private sleep(ms: number): Promise<void> {
    if (ms === 0) return new Promise((resolve) => setImmediate(resolve));
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
      this.timer.unref();
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    this.wake = null;
    await this.loop;
    this.loop = null;
    await leasesOf(this.db)
      .release(TEXT_INDEX_JOB)
      .catch(() => {});
  }

  pending(): Promise<number> {
    return pendingPg(this.db);
  }

  /** Indexes until the queue is empty, also of entries another indexer held meanwhile. */
  async drain(): Promise<void> {
    for (;;) {
      if ((await indexQueuedPg(this.db)) > 0) continue;
      if ((await pendingPg(this.db)) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  rebuild(): Promise<void> {
    return requeueAllPg(this.db);
  }
}

/**
 * The ids of up to `limit` queued entries, read through the queue's key. A scan of the table reads
 * every page the queue filled while ingestion ran ahead of the indexer, until a vacuum truncates
 * them; the truncation needs the table's exclusive lock and gives way to the searches holding
 * theirs. Emptied of 1,100,000 entries and vacuumed without truncation, the queue kept 10,281 pages:
 * 108 ms to scan from the OS cache, against 1 page read through the key (the vacuum frees the
 * index's emptied pages, truncated or not).
 */
export function queuedIds(limit: number) {
  return sql<{ id: string }>`select id from records_text_queue order by seq limit ${limit}`;
}

/**
 * The leaves of `indexedContainsLeaves` whose term is long enough to narrow the blocks (a trigram),
 * and the metadata equalities.
 */
export function pgIndexableLeaves(tree: FilterTree | null): Leaf[] {
  return [
    ...indexedContainsLeaves(tree).filter((l) => termGrams(l.value as string) !== null),
    ...metadataEqualityLeaves(tree),
  ];
}

/** Blocks of a term that are few enough to read whole past the cap (about 4 × cap records). */
const fewBlocks = (cap: number) => Math.floor(cap / 32);

/**
 * PostgreSQL text candidates: for each `contains` leaf on an indexed column and each metadata
 * equality, the ids of the records that may match: the records of the blocks (of the groups of
 * `types`, default all) holding every trigram of the term or the key and value's code, plus every
 * record queued for the index. Leaves the index cannot narrow (a
 * term shorter than a trigram, or case-sensitive with a capital sigma), or that hit more than
 * `cap` records, get none (they scan); so do all when more than that are queued. Must run in the
 * page query's snapshot.
 *
 * The cap is 2,000 records: a term in more records than that fills a page soon enough walking the
 * run in order, while listing its blocks and ids cost more than the search (a common term over
 * 200,000 records: 200 ms p50 through the API with a cap of 20,000, against 35 ms for the walk).
 * A term in few blocks (`fewBlocks`) keeps its candidates past the cap: its records are spread thin,
 * and a walk would read the run until it found a page of them. A metadata value in 54 of 1,500,000
 * traces held 18 blocks (2,304 records): 3.1 s p50 through the API walking, 22.5 ms with them.
 */
export class PgTextCandidates implements TextCandidateSource {
  constructor(public cap = 2_000) {}

  async candidates(
    db: Kysely<DB>,
    tree: FilterTree | null,
    types?: readonly string[],
  ): Promise<Map<Leaf, string[]>> {
    const out = new Map<Leaf, string[]>();
    const leaves = pgIndexableLeaves(tree);
    if (!leaves.length) return out;
    const cap = this.cap;
    const { rows: queuedRows } = await queuedIds(cap + 1).execute(db);
    if (queuedRows.length > cap) return out;
    const queued = [...new Set(queuedRows.map((r) => r.id))];
    const groups = types?.length ? [...new Set(types.map(textGroup))] : [...TEXT_GROUPS];
    for (const leaf of leaves) {
      const term = leaf.value as string;
      const eq = metadataEquality(leaf);
      let codes: (g: TextGroup) => number[];
      if (eq) {
        const [h] = metaHash(eq.key, eq.value);
        codes = (g) => [metaCode(g, h)];
      } else {
        if (!foldedIndexServes(term, (leaf as { caseSensitive: boolean }).caseSensitive)) continue;
        const grams = termGrams(term);
        if (!grams) continue;
        const column = indexedColumn(leaf);
        codes = (g) => grams.map((x) => gramCode(g, column, x));
      }
      const holds = sql.join(
        groups.map((g) => sql`grams @> ${codes(g)}::integer[]`),
        sql` or `,
      );
      // Every block holds a record or more: more blocks than the cap are more records than it.
      const { rows: blocks } = await sql<{ block: string }>`select block from text_blocks where ${holds}
        limit ${cap + 1}`.execute(db);
      if (blocks.length + queued.length > cap) continue;
      const whole = blocks.length <= fewBlocks(cap);
      const found = blocks.length
        ? (
            await sql<{ id: string }>`select id from text_block_records
              where block = any(${blocks.map((b) => b.block)}::bigint[])
              ${whole ? sql`` : sql`limit ${cap + 1 - queued.length}`}`.execute(db)
          ).rows
        : [];
      if (!whole && found.length + queued.length > cap) continue;
      out.set(leaf, [...found.map((r) => r.id), ...queued]);
    }
    return out;
  }
}
