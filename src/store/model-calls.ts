import { storableValue } from '../domain/text.ts';
import { type Kysely, sql } from 'kysely';
import type { DB, ModelCallsTable } from './tables.ts';

export type ModelCallRow = ModelCallsTable;

export interface SpendRow {
  day: string;
  purpose: string;
  calls: number;
  errors: number;
  tokens_in: number;
  tokens_out: number;
  cost_usd: number;
  unpriced_calls: number;
}

/** The record of every model call, and its spend per day and purpose. */
export class ModelCallsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  async insert(row: ModelCallRow): Promise<void> {
    // A call is recorded whatever its caller asked for: a model name or a provider's error text that
    // PostgreSQL cannot hold (NUL, lone surrogates) is kept with U+FFFD, not lost to a store error.
    await this.db
      .insertInto('model_calls')
      .values(storableValue({ ...row }))
      .execute();
  }

  /** A project's calls, newest first, from `offset`. */
  list(projectId: string, limit: number, offset: number, purpose: string | null): Promise<ModelCallRow[]> {
    let q = this.db.selectFrom('model_calls').selectAll().where('project_id', '=', projectId);
    if (purpose) q = q.where('purpose', '=', purpose);
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute();
  }

  byId(id: string): Promise<ModelCallRow | undefined> {
    return this.db.selectFrom('model_calls').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Calls, errors, tokens and cost per day and purpose from `fromDay` on. Calls of models without a
   * price are counted apart (`unpriced_calls`) and add nothing to the cost.
   */
  async spend(projectId: string, fromDay: string): Promise<SpendRow[]> {
    const rows = await this.db
      .selectFrom('model_calls')
      .select((eb) => [
        'day',
        'purpose',
        eb.fn.countAll<number>().as('calls'),
        sql<number>`sum(case when status = 'error' then 1 else 0 end)`.as('errors'),
        sql<number>`coalesce(sum(tokens_in), 0)`.as('tokens_in'),
        sql<number>`coalesce(sum(tokens_out), 0)`.as('tokens_out'),
        sql<number>`coalesce(sum(cost_usd), 0)`.as('cost_usd'),
        sql<number>`sum(case when cost_usd is null and (tokens_in > 0 or tokens_out > 0) then 1 else 0 end)`.as(
          'unpriced_calls',
        ),
      ])
      .where('project_id', '=', projectId)
      .where('day', '>=', fromDay)
      .groupBy(['day', 'purpose'])
      .orderBy('day')
      .orderBy('purpose')
      .execute();
    return rows.map((r) => ({
      day: r.day,
      purpose: r.purpose,
      calls: Number(r.calls),
      errors: Number(r.errors),
      tokens_in: Number(r.tokens_in),
      tokens_out: Number(r.tokens_out),
      cost_usd: Number(r.cost_usd),
      unpriced_calls: Number(r.unpriced_calls),
    }));
  }
}
