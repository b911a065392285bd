/**
 * Record search on PostgreSQL: the page query on the pool. With text candidates to look up
 * (search-text-pg.ts), they and the page are read in one snapshot (a repeatable-read transaction):
 * every record is then either indexed as it is in that snapshot or queued.
 */
import { type Kysely, sql } from 'kysely';
import { type PageFormat, pageBodyOf } from '../domain/record-json.ts';
import { type StoredRecord, recordToApi } from '../domain/records.ts';
import type { TextCandidates } from '../query/compile.ts';
import { hasFeedbackSql, recordFeedback } from './annotations.ts';
import { inSnapshot, type Store } from './db.ts';
import { type RecordSearch, type SearchStore, pageQuery, recordsFrom } from './search-query.ts';
import { PgTextCandidates, pgIndexableLeaves } from './search-text-pg.ts';
import type { DB } from './tables.ts';

/**
 * The deepest page offset whose rows carry a feedback flag: beyond it, probing every skipped row
 * costs more than reading the page's feedback (three queries, about 0.8 ms here).
 */
const FLAG_MAX_OFFSET = 500;

export class PgSearch implements SearchStore {
  readonly text: PgTextCandidates;
  readonly readerThreads = 0;

  constructor(
    private readonly store: Store,
    opts: { candidateCap?: number } = {},
  ) {
    this.text = new PgTextCandidates(opts.candidateCap);
  }

  /** No reader threads: the pool's connections answer. */
  warmReaders(): void {}

  /** The page query (without running it), given text candidates already looked up. */
  pageQuery(db: Kysely<DB>, q: RecordSearch, candidates?: TextCandidates) {
    return pageQuery(recordsFrom(db, q).selectAll('records'), q, { dialect: 'postgres', candidates });
  }

  /**
   * The statement a search page runs: the page query, with each row's feedback flag unless the page
   * lies deep (`FLAG_MAX_OFFSET`). The flag costs two index probes per row read, the offset's rows
   * included (PostgreSQL evaluates such subqueries after any sort, but on every row the limit
   * passes), and spares the page three reads when no row of it has feedback, as most pages.
   */
  searchStatement(db: Kysely<DB>, q: RecordSearch, candidates?: TextCandidates) {
    const query = this.pageQuery(db, q, candidates);
    const flag = q.offset <= FLAG_MAX_OFFSET;
    return query.select(
      sql<boolean>`${sql.raw(flag ? hasFeedbackSql('records.id') : 'true')}`.as('has_feedback'),
    );
  }

  /**
   * One page of records (up to `q.limit` rows), read in one snapshot with its text candidates, and
   * the feedback of the `shown` first (with them when there is a snapshot to share).
   */
  private async rows(q: RecordSearch, shown: number) {
    const read = async (db: Kysely<DB>, candidates?: TextCandidates) => {
      const rows = await this.searchStatement(db, q, candidates).execute();
      const feedback = await recordFeedback(
        db,
        rows
          .slice(0, shown)
          .filter((r) => r.has_feedback)
          .map((r) => r.id),
      );
      return { rows, feedback };
    };
    if (!pgIndexableLeaves(q.tree).length) return read(this.store.db);
    return inSnapshot(this.store.db, 'postgres', async (trx) =>
      read(trx, await this.text.candidates(trx, q.tree, q.types)),
    );
  }

  async searchPage(q: RecordSearch, page: PageFormat): Promise<Buffer> {
    const { rows, feedback } = await this.rows(q, page.limit);
    const more = rows.length > page.limit;
    const shown = (more ? rows.slice(0, page.limit) : rows) as unknown as StoredRecord[];
    return pageBodyOf(
      shown.map((r) => recordToApi(r, { includeCounts: page.includeCounts, feedback: feedback.get(r.id) })),
      shown.length ? shown[shown.length - 1].id : null,
      more,
      page,
    );
  }
}
