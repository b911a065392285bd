import { type Kysely, sql } from 'kysely';
import { isPostgres, jsonType } from './helpers.ts';

/**
 * Signals runs and the signals they found, alert rules and their history, project webhooks and their
 * deliveries; and two narrow partial indexes on `records` for a run's selection (store/signal-runs.ts):
 * the errors of a run by time, and the traces of a run by time carrying their latency and cost, so
 * that picking the errors and outliers of a million-record window reads index entries, not rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const json = jsonType(db);
  const pg = isPostgres(db);
  await db.schema
    .createTable('signal_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('trigger', 'text', (c) => c.notNull())
    // The cron slot a scheduled run stands for (null on demand): one run per slot.
    .addColumn('slot_time', 'bigint')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('window_end', 'bigint', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('integration_id', 'text')
    .addColumn('records_read', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('records_sampled', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('tokens_in', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('tokens_out', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cost', 'double precision')
    .addColumn('signals_found', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('skipped_reason', 'text')
    .addColumn('error', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await sql`create unique index signal_runs_slot on signal_runs (run_id, slot_time) where slot_time is not null`.execute(
    db,
  );
  await db.schema
    .createIndex('signal_runs_run')
    .on('signal_runs')
    .columns(['run_id', 'created_at'])
    .execute();
  await db.schema.createIndex('signal_runs_status').on('signal_runs').column('status').execute();

  await db.schema
    .createTable('signals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('first_signal_run_id', 'text', (c) => c.notNull())
    .addColumn('last_signal_run_id', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('observation', 'text', (c) => c.notNull())
    .addColumn('details', 'text', (c) => c.notNull())
    .addColumn('suggested_action', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    .addColumn('occurrences', json, (c) => c.notNull())
    .addColumn('examples', json, (c) => c.notNull())
    .addColumn('occurrence_count', 'bigint', (c) => c.notNull())
    .addColumn('runs_seen', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('first_seen', 'bigint', (c) => c.notNull())
    .addColumn('last_seen', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('signals_run')
    .on('signals')
    .columns(['run_id', 'status', 'fingerprint'])
    .execute();
  await db.schema.createIndex('signals_last_run').on('signals').column('last_signal_run_id').execute();

  await db.schema
    .createTable('alert_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('aggregation', 'text', (c) => c.notNull())
    .addColumn('filter_tree', json)
    .addColumn('window_minutes', 'integer', (c) => c.notNull())
    .addColumn('comparison', 'text', (c) => c.notNull())
    .addColumn('threshold', 'double precision', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('last_value', 'double precision')
    .addColumn('last_evaluated_at', 'bigint')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('alert_rules_run').on('alert_rules').column('run_id').execute();
  await db.schema
    .createTable('alert_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('rule_id', 'text', (c) => c.notNull().references('alert_rules.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('value', 'double precision')
    .addColumn('threshold', 'double precision', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('alert_events_rule').on('alert_events').columns(['rule_id', 'at']).execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('secret_ciphertext', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_project').on('webhooks').column('project_id').execute();
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_hook')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'created_at'])
    .execute();

  // The expression must be written exactly so in the selection's statements (store/signal-runs.ts).
  const cost = pg
    ? sql`(case when jsonb_typeof(metrics -> 'cost') = 'number' then (metrics ->> 'cost')::float8 end)`
    : sql`json_extract(metrics, '$.cost')`;
  await sql`create index records_signal_errors on records (run_id, created_at) where status_code >= 400`.execute(
    db,
  );
  await sql`create index records_signal_traces on records (run_id, created_at, duration_ns, ${cost}, id) where type = 'trace'`.execute(
    db,
  );
}
