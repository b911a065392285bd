import type { Kysely } from 'kysely';
import type { DB, TokenUsageTable } from './tables.ts';

export type TokenUsageRow = TokenUsageTable;

/** A token-usage filter with its date-time in epoch microseconds. */
export interface TokenUsageFilter {
  name: 'created_at' | 'updated_at';
  operator: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
  value: number;
}

const COMPARE = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * Reads of the token-usage day rollups that ingestion keeps (one row per log stream per UTC day).
 * A record's `created_at` is the start of its day (the `day` column), so filters and the sort on
 * `created_at` use the (log_stream_id, day) unique index.
 */
export class TokenUsageRepo {
  constructor(private readonly db: Kysely<DB>) {}

  /** One page, plus one extra row to tell whether another page follows. */
  page(
    logStreamId: string,
    filters: TokenUsageFilter[],
    ascending: boolean,
    offset: number,
    limit: number,
  ): Promise<TokenUsageRow[]> {
    let q = this.db.selectFrom('token_usage').selectAll().where('log_stream_id', '=', logStreamId);
    for (const f of filters) {
      q = q.where(f.name === 'created_at' ? 'day' : 'updated_at', COMPARE[f.operator], f.value);
    }
    const dir = ascending ? 'asc' : 'desc';
    return q
      .orderBy('day', dir)
      .orderBy('id', dir)
      .offset(offset)
      .limit(limit + 1)
      .execute();
  }
}
