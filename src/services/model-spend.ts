/**
 * A project's model calls and their spend per day and purpose (viewers read it). Calls of models
 * without a price are counted as such, never as $0.
 */
import { toIso } from '../domain/time.ts';
import type { ModelCallRow, ModelCallsRepo } from '../store/model-calls.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

const DAY_MS = 86_400_000;

function describe(r: ModelCallRow) {
  return {
    id: r.id,
    created_at: toIso(r.created_at),
    purpose: r.purpose,
    run_id: r.run_id,
    integration_id: r.integration_id,
    integration_name: r.integration_name,
    model: r.model,
    status: r.status,
    error_kind: r.error_kind,
    error: r.error,
    provider_status: r.provider_status,
    tokens_in: Number(r.tokens_in),
    tokens_out: Number(r.tokens_out),
    cost_usd: r.cost_usd,
    priced: r.cost_usd !== null,
    latency_ms: Number(r.latency_ms),
    attempts: Number(r.attempts),
    attempt_log: typeof r.attempt_log === 'string' ? JSON.parse(r.attempt_log) : r.attempt_log,
  };
}

export class ModelSpendService {
  constructor(
    private readonly repo: ModelCallsRepo,
    private readonly projects: ProjectsService,
  ) {}

  async calls(
    caller: Caller,
    projectId: string,
    q: { starting_token: number; limit: number; purpose?: string },
  ) {
    await this.projects.access(caller, projectId, 'viewer');
    const rows = await this.repo.list(projectId, q.limit + 1, q.starting_token, q.purpose ?? null);
    const more = rows.length > q.limit;
    return {
      starting_token: q.starting_token,
      limit: q.limit,
      paginated: more,
      next_starting_token: more ? q.starting_token + q.limit : null,
      calls: rows.slice(0, q.limit).map(describe),
    };
  }

  /** Spend per UTC day and purpose over the last `days` days (today included), and the totals. */
  async spend(caller: Caller, projectId: string, days: number) {
    await this.projects.access(caller, projectId, 'viewer');
    const from = new Date(Date.now() - (days - 1) * DAY_MS).toISOString().slice(0, 10);
    const rows = await this.repo.spend(projectId, from);
    const total = rows.reduce(
      (t, r) => ({
        calls: t.calls + r.calls,
        errors: t.errors + r.errors,
        tokens_in: t.tokens_in + r.tokens_in,
        tokens_out: t.tokens_out + r.tokens_out,
        cost_usd: t.cost_usd + r.cost_usd,
        unpriced_calls: t.unpriced_calls + r.unpriced_calls,
      }),
      { calls: 0, errors: 0, tokens_in: 0, tokens_out: 0, cost_usd: 0, unpriced_calls: 0 },
    );
    return { from_day: from, days: rows, total };
  }
}
