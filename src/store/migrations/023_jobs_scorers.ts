import type { Kysely } from 'kysely';
import { jsonType } from './helpers.ts';

/**
 * Background work and scorers.
 *
 * `jobs` is THE durable queue of every kind of background work (score tasks, later experiment rows,
 * Signals runs, alert evaluations): one row per item, unique by (kind, key) so enqueueing twice is a
 * no-op; a worker claims due rows with a lease (store/jobs.ts) and records attempts and the reason.
 *
 * `scorers` and their immutable `scorer_versions` (LLM judges and rule scorers; presets live in code,
 * domain/scorer-presets.ts), a run's `run_scorer_settings`, and `score_results`: the state, reason and
 * details of each (record, scorer) a worker touched (rule scores are written with the record itself).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const json = jsonType(db);
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    /** The natural key within the kind (a score task: record id and scorer version). */
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text')
    .addColumn('run_id', 'text')
    .addColumn('payload', json, (c) => c.notNull())
    /** pending | running | done | failed | cancelled */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    /** Why it waits or ended (retry 2 of 4, paused: ..., the handler's error). */
    .addColumn('reason', 'text')
    .addColumn('result', json)
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('jobs_key').unique().on('jobs').columns(['kind', 'key']).execute();
  // Claims read the due rows of each project in time order.
  await db.schema
    .createIndex('jobs_due')
    .on('jobs')
    .columns(['status', 'project_id', 'next_attempt_at'])
    .execute();
  await db.schema.createIndex('jobs_run').on('jobs').columns(['run_id', 'kind', 'status']).execute();

  await db.schema
    .createTable('scorers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    /** llm | code | preset | rule */
    .addColumn('scorer_type', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('tags', json, (c) => c.notNull())
    .addColumn('defaults', json)
    .addColumn('output_type', 'text')
    .addColumn('input_type', 'text')
    .addColumn('scoreable_node_types', json)
    .addColumn('default_version_id', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('scorer_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('scorer_id', 'text', (c) => c.notNull().references('scorers.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    /** llm | rule */
    .addColumn('kind', 'text', (c) => c.notNull())
    /** The version as created (model, judges, template, or the rule). */
    .addColumn('config', json, (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('scorer_versions_number')
    .unique()
    .on('scorer_versions')
    .columns(['scorer_id', 'version'])
    .execute();

  await db.schema
    .createTable('run_scorer_settings')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('scorers', json, (c) => c.notNull())
    .addColumn('segment_filters', json, (c) => c.notNull())
    /** Set when the run's LLM scorers are paused (a credential or billing error), with the reason. */
    .addColumn('paused_reason', 'text')
    .addColumn('updated_by', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('score_results')
    .addColumn('record_id', 'text', (c) => c.notNull())
    .addColumn('scorer_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    /** A hosted metric_info status_type: pending, computing, success, error, failed, ... */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    /** The rest of the metric_info entry (value, explanation, votes, cost, model). */
    .addColumn('info', json, (c) => c.notNull())
    .addColumn('cost', 'double precision')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('score_results_pk', ['record_id', 'scorer_id'])
    .execute();
  await db.schema
    .createIndex('score_results_run')
    .on('score_results')
    .columns(['run_id', 'scorer_id', 'status'])
    .execute();
}
