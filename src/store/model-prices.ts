import type { Kysely, Selectable } from 'kysely';
import type { DB, ModelPricesTable, RunModelsTable } from './tables.ts';

export type ModelPriceRow = Selectable<ModelPricesTable>;
export type RunModelRow = Selectable<RunModelsTable>;

/** Numbers come back as strings from some drivers (pg bigint): one place turns them into numbers. */
function numeric(r: ModelPriceRow): ModelPriceRow {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    ...r,
    input_price_per_million: Number(r.input_price_per_million),
    output_price_per_million: Number(r.output_price_per_million),
    cache_read_input_price_per_million: n(r.cache_read_input_price_per_million),
    cache_creation_input_price_per_million: n(r.cache_creation_input_price_per_million),
    input_includes_cached_tokens: n(r.input_includes_cached_tokens),
    start_date: n(r.start_date),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}

/** A project's own model prices, and the model names seen per run (kept by ingestion). */
export class ModelPricesRepo {
  /** Changes with every price written through this process (price caches compare it). */
  generation = 0;

  constructor(private readonly db: Kysely<DB>) {}

  async list(projectId: string): Promise<ModelPriceRow[]> {
    const rows = await this.db
      .selectFrom('model_prices')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(numeric);
  }

  async get(projectId: string, id: string): Promise<ModelPriceRow | null> {
    const row = await this.db
      .selectFrom('model_prices')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? numeric(row) : null;
  }

  async insert(row: ModelPriceRow): Promise<void> {
    await this.db.insertInto('model_prices').values(row).execute();
    this.generation++;
  }

  async update(row: ModelPriceRow): Promise<void> {
    const { id, project_id, created_at, created_by, ...fields } = row;
    await this.db
      .updateTable('model_prices')
      .set(fields)
      .where('project_id', '=', project_id)
      .where('id', '=', id)
      .execute();
    this.generation++;
  }

  async delete(projectId: string, id: string): Promise<boolean> {
    const r = await this.db
      .deleteFrom('model_prices')
      .where('project_id', '=', projectId)
      .where('id', '=', id)
      .executeTakeFirst();
    this.generation++;
    return Number(r.numDeletedRows) > 0;
  }

  /** The model names seen on the run's llm spans, by name. */
  async runModels(runId: string): Promise<RunModelRow[]> {
    const rows = await this.db
      .selectFrom('run_models')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('model')
      .execute();
    return rows.map((r) => ({ ...r, first_seen: Number(r.first_seen), last_seen: Number(r.last_seen) }));
  }
}
