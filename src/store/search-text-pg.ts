/**
 * The PostgreSQL text index (migration 008): `records_text` (case-folded input and output with pg_trgm
 * GIN indexes) kept current from `records_text_queue`, which triggers fill in the writing transaction.
 * This indexes a batch: one statement (one transaction, one snapshot) takes queued entries that no
 * other indexer holds (SKIP LOCKED), deletes them, and writes the records' current text. A search
 * reading the GIN hits plus the queued records in one snapshot so sees every record either queued or
 * indexed as it is (PgTextCandidates).
 *
 * Where two indexers hold entries of one record (it changed twice), the write of the later entry wins:
 * its indexer's snapshot holds the change that queued it, and a change after that is queued again.
 * Deleted records are skipped (their entries are dropped).
 *
 * Among processes sharing a database, the one holding the `text-index` lease runs the job.
 */
import { type Kysely, sql } from 'kysely';
import type { FilterTree, Leaf } from '../query/filters.ts';
import { fold, likeContains } from '../query/sql-dialect.ts';
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

/** Queue entries one indexing statement takes. */
export const PG_TEXT_BATCH = 500;
/**
 * While this process has ingest writes under way, the indexer pauses this many times as long as its
 * last batch took: it then takes at most a quarter of one core of the database server, and ingestion
 * the rest. (Extracting trigrams costs about 0.4 ms of database CPU per record with 1.7 KB of text on
 * this machine, several times the insert itself; at full speed the indexer took a whole core from
 * ingestion.) Idle, it runs at full speed.
 */
const BUSY_PAUSE = 3;

/** Indexes up to `limit` queued entries; answers how many it took (0: none free). */
export async function indexQueuedPg(db: Kysely<any>, limit = PG_TEXT_BATCH): Promise<number> {
  const { rows } = await sql<{ taken: number }>`
    with taken as (
      delete from records_text_queue
      where seq in (select seq from records_text_queue order by seq limit ${limit} for update skip locked)
      returning seq, id
    ), latest as (
      select id, max(seq) as seq from taken group by id
    ), indexed as (
      insert into records_text as t (id, seq, input, output)
      select r.id, l.seq, ${fold(sql`r.input_text`)}, ${fold(sql`r.output_text`)}
      from latest l join records r on r.id = l.id
      order by r.id
      on conflict (id) do update set seq = excluded.seq, input = excluded.input, output = excluded.output
      where t.seq < excluded.seq
    )
    select count(*)::int as taken from taken`.execute(db);
  return Number(rows[0]?.taken ?? 0);
}

/** Queue entries not yet indexed (including those an indexer holds right now). */
export async function pendingPg(db: Kysely<any>): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from records_text_queue`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** Queues every record with text again (repair): each is indexed afresh. */
export async function requeueAllPg(db: Kysely<any>): Promise<void> {
  await sql`insert into records_text_queue (id)
    select id from records where input_text is not null or output_text is not null
    order by created_at desc`.execute(db);
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
    /** Whether ingestion in this process is busy: the job then pauses between batches. */
    private readonly busy: () => boolean = () => false,
    private readonly idleMs = 200,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let wait = this.idleMs;
      try {
        const started = performance.now();
        // One process of those sharing the database indexes (the holder of the lease); the others
        // take over when it stops.
        if (!(await leasesOf(this.db).hold(TEXT_INDEX_JOB))) wait = this.idleMs * 5;
        else if ((await indexQueuedPg(this.db)) > 0)
          wait = this.busy() ? (performance.now() - started) * BUSY_PAUSE : 0;
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

/** The leaves of `indexedContainsLeaves` with a term of a trigram or more (and no NUL). */
export function pgIndexableLeaves(tree: FilterTree | null): Leaf[] {
  return indexedContainsLeaves(tree).filter((l) => {
    const term = l.value as string;
    return Array.from(term).length >= 3 && !term.includes('\u0000');
  });
}

/**
 * PostgreSQL text candidates: for each `contains` leaf on an indexed column, the ids of the records
 * that may match: the trigram index's hits (`records_text`) plus every record queued for it. Leaves
 * whose term has fewer than 3 characters, or that hit more than `cap` records, get none (they scan);
 * so do all when more than that are queued. Must run in the page query's snapshot.
 */
export class PgTextCandidates implements TextCandidateSource {
  /** Whether the text index has its GIN indexes (pg_trgm was there; migration 008). */
  private ready: Promise<boolean> | null = null;

  constructor(public cap = 20_000) {}

  async candidates(db: Kysely<DB>, tree: FilterTree | null): Promise<Map<Leaf, string[]>> {
    const out = new Map<Leaf, string[]>();
    const leaves = pgIndexableLeaves(tree);
    if (!leaves.length) return out;
    this.ready ??= sql<{
      found: boolean;
    }>`select to_regclass('records_text_input_trgm') is not null as found`
      .execute(db)
      .then(
        (r) => !!r.rows[0]?.found,
        () => {
          this.ready = null;
          return false;
        },
      );
    if (!(await this.ready)) return out;
    const cap = this.cap;
    const { rows: queuedRows } = await sql<{
      id: string;
    }>`select id from records_text_queue limit ${cap + 1}`.execute(db);
    if (queuedRows.length > cap) return out;
    const queued = [...new Set(queuedRows.map((r) => r.id))];
    for (const leaf of leaves) {
      const term = leaf.value as string;
      if (!foldedIndexServes(term, (leaf as { caseSensitive: boolean }).caseSensitive)) continue;
      const hit = sql`${sql.ref(indexedColumn(leaf))} like ${fold(sql`${likeContains(term)}::text`)}`;
      // A term the planner expects in more records than the cap is common: scanning in sort order
      // finds a page sooner than collecting the index's hits (a bitmap of every hit, each rechecked)
      // only to learn there are too many.
      const plan = await sql<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>`explain (format json)
        select id from records_text where ${hit}`.execute(db);
      if (Number(plan.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows']) > cap) continue;
      const { rows } = await sql<{ id: string }>`select id from records_text where ${hit}
        limit ${cap + 1 - queued.length}`.execute(db);
      if (rows.length + queued.length > cap) continue;
      out.set(leaf, [...rows.map((r) => r.id), ...queued]);
    }
    return out;
  }
}
