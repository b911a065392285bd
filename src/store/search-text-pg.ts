/**
 * The PostgreSQL text index (migration 008): `records_text` (lower-cased input and output with pg_trgm
 * GIN indexes) kept current from `records_text_queue`, which triggers fill in the writing transaction.
 * This indexes a batch: one statement (one transaction, one snapshot) takes queued entries that no
 * other indexer holds (SKIP LOCKED), deletes them, and writes the records' current text. A search
 * reading the GIN hits plus the queued records in one snapshot so sees every record either queued or
 * indexed as it is (store/search.ts pgTextCandidates).
 *
 * Where two indexers hold entries of one record (it changed twice), the write of the later entry wins:
 * its indexer's snapshot holds the change that queued it, and a change after that is queued again.
 * Deleted records are skipped (their entries are dropped).
 */
import { type Kysely, sql } from 'kysely';

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
      select r.id, l.seq, lower(r.input_text), lower(r.output_text)
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
export class PgTextIndexer {
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
        if ((await indexQueuedPg(this.db)) > 0)
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
