import { type Kysely, sql } from 'kysely';
import { isPostgres, jsonType } from './helpers.ts';

/**
 * Experiments that run a prompt over a dataset (issue #34).
 *
 * `experiments`: what an experiment run (a `runs` row of kind experiment) was created with: its
 * dataset and version, prompt template version, prompt settings, task type, tags. One row per run,
 * removed with it.
 *
 * `experiment_jobs`: the hosted `JobDB` rows (`playground_run`), with the progress the client polls.
 * The work itself runs as one leased item of the `jobs` queue per experiment job (services/experiments.ts);
 * each row's trace has an id derived from the job and the row, so a resumed job never writes a row twice.
 *
 * `records_experiment_row`: an experiment's traces by the dataset row they answer
 * (`dataset_metadata.dataset_row_id`, else the trace's own id), for the comparison's join by row;
 * `records_experiment_order`: the same by row index (none last) then row, so the comparison's first
 * pages read only their first index entries (store/experiments.ts uses the same expressions).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const json = jsonType(db);
  await db.schema
    .createTable('experiments')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('dataset_id', 'text')
    .addColumn('dataset_version_index', 'integer')
    .addColumn('prompt_template_version_id', 'text')
    .addColumn('prompt_settings', json)
    .addColumn('task_type', 'integer', (c) => c.notNull())
    /** [{key, value, tag_type}] */
    .addColumn('tags', json, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('experiments_dataset')
    .on('experiments')
    .columns(['project_id', 'dataset_id'])
    .execute();

  await db.schema
    .createTable('experiment_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('job_name', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    /** pending | processing | completed | failed | cancelled */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('request_data', json, (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('error_message', 'text')
    .addColumn('progress_message', 'text')
    .addColumn('steps_completed', 'integer', (c) => c.notNull())
    .addColumn('steps_total', 'integer', (c) => c.notNull())
    .addColumn('failed_rows', 'integer', (c) => c.notNull())
    .addColumn('retries', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('processing_started', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('failed_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('experiment_jobs_run')
    .on('experiment_jobs')
    .columns(['run_id', 'created_at'])
    .execute();
  // The row key, and (row index with none last, row key) for pages in row order.
  const pg = isPostgres(db);
  const key = pg
    ? sql`(coalesce(dataset_metadata->>'dataset_row_id', id))`
    : sql`coalesce(json_extract(dataset_metadata, '$.dataset_row_id'), id)`;
  const index = pg
    ? sql`(coalesce(case when jsonb_typeof(dataset_metadata->'dataset_row_index') = 'number' then (dataset_metadata->>'dataset_row_index')::float8 end, 9e15))`
    : sql`coalesce(case when json_type(dataset_metadata, '$.dataset_row_index') in ('integer', 'real') then json_extract(dataset_metadata, '$.dataset_row_index') end, 9e15)`;
  await sql`create index records_experiment_row on records (run_id, ${key}) where type = 'trace'`.execute(db);
  await sql`create index records_experiment_order on records (run_id, ${index}, ${key}) where type = 'trace'`.execute(
    db,
  );
}
