import type { Kysely } from 'kysely';

/**
 * Derived tables kept current by ingestion, inside the ingest transaction: the column catalogue
 * (every metrics/*, user_metadata/*, dataset_metadata/* key per run, record type and data type, with
 * the created_at range of the records carrying it) and token usage per log stream per UTC day.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('column_catalogue')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('column_id', 'text', (c) => c.notNull())
    .addColumn('record_type', 'text', (c) => c.notNull())
    .addColumn('data_type', 'text', (c) => c.notNull())
    .addColumn('first_seen', 'bigint', (c) => c.notNull())
    .addColumn('last_seen', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('column_catalogue_pk', ['run_id', 'column_id', 'record_type', 'data_type'])
    .execute();

  await db.schema
    .createTable('token_usage')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('log_stream_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_read_input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_creation_input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('token_usage_stream_day', ['log_stream_id', 'day'])
    .execute();
}
