import { timestampAt, toIso } from '../domain/time.ts';
import type { TokenUsageFilter, TokenUsageRepo, TokenUsageRow } from '../store/token-usage.ts';
import type { Caller } from './auth.ts';
import type { RunsService } from './runs.ts';

export function describeTokenUsage(r: TokenUsageRow) {
  return {
    id: r.id,
    project_id: r.project_id,
    log_stream_id: r.log_stream_id,
    created_at: toIso(Number(r.day)),
    updated_at: toIso(Number(r.updated_at)),
    token_usage: {
      input_tokens: Number(r.input_tokens),
      output_tokens: Number(r.output_tokens),
      cache_read_input_tokens: Number(r.cache_read_input_tokens),
      cache_creation_input_tokens: Number(r.cache_creation_input_tokens),
    },
    cost: r.cost === null ? null : Number(r.cost),
  };
}

export interface TokenUsageQuery {
  starting_token: number;
  limit: number;
  filters?:
    | { name: 'created_at' | 'updated_at'; operator: TokenUsageFilter['operator']; value: string }[]
    | null;
  sort?: { name: 'created_at'; ascending?: boolean } | null;
}

/** Log stream insights: the token-usage day rollups. */
export class InsightsService {
  constructor(
    private readonly tokenUsage: TokenUsageRepo,
    private readonly runs: RunsService,
  ) {}

  async tokenUsages(caller: Caller, projectId: string, logStreamId: string, q: TokenUsageQuery) {
    await this.runs.resolve(caller, projectId, logStreamId, 'log_stream');
    const filters = (q.filters ?? []).map(
      (f, i): TokenUsageFilter => ({
        name: f.name,
        operator: f.operator,
        value: timestampAt(f.value, ['body', 'filters', i, 'value']),
      }),
    );
    // decisions.md: newest day first by default; a given sort is ascending unless it says otherwise.
    const ascending = q.sort ? (q.sort.ascending ?? true) : false;
    const rows = await this.tokenUsage.page(logStreamId, filters, ascending, q.starting_token, q.limit);
    const more = rows.length > q.limit;
    return {
      token_usages: (more ? rows.slice(0, q.limit) : rows).map(describeTokenUsage),
      starting_token: q.starting_token,
      limit: q.limit,
      paginated: more,
      next_starting_token: more ? q.starting_token + q.limit : null,
    };
  }
}
