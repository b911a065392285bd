import type { Kysely } from 'kysely';

/**
 * Costs in dollars:
 * - `model_prices`: a project's own model prices (they beat the shipped catalogue), each a
 *   case-insensitive pattern over whole model names, in force from `start_date` (epoch µs; null:
 *   always). Prices in dollars per million tokens.
 * - `run_models`: every model name seen on an llm span of a run (kept by ingestion, like the column
 *   catalogue), so the models without a price are listed without reading the records.
 * - `token_usage.cost`: the day's cost of the llm spans that have one (null: none has).
 * A record's own cost is its `metrics.cost`, in the metrics JSON; nothing changes on `records`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('model_prices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('model_pattern', 'text', (c) => c.notNull())
    .addColumn('input_price_per_million', 'double precision', (c) => c.notNull())
    .addColumn('output_price_per_million', 'double precision', (c) => c.notNull())
    .addColumn('cache_read_input_price_per_million', 'double precision')
    .addColumn('cache_creation_input_price_per_million', 'double precision')
    .addColumn('input_includes_cached_tokens', 'integer')
    .addColumn('start_date', 'bigint')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('model_prices_project').on('model_prices').column('project_id').execute();

  await db.schema
    .createTable('run_models')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('first_seen', 'bigint', (c) => c.notNull())
    .addColumn('last_seen', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_models_pk', ['run_id', 'model'])
    .execute();

  await db.schema.alterTable('token_usage').addColumn('cost', 'double precision').execute();
}
