import type { Kysely } from 'kysely';
import { jsonType } from './helpers.ts';

/**
 * Every model call Spanbase makes (its purpose, who pays, tokens, cost, attempts, outcome), and which
 * integration of each kind a user selected for features to use by default.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const json = jsonType(db);
  await db.schema
    .createTable('model_calls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
    .addColumn('run_id', 'text')
    // Kept when the integration is deleted: the spend happened.
    .addColumn('integration_id', 'text')
    .addColumn('integration_name', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    // 'ok' or 'error'
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error_kind', 'text')
    .addColumn('error', 'text')
    .addColumn('provider_status', 'integer')
    .addColumn('tokens_in', 'bigint', (c) => c.notNull())
    .addColumn('tokens_out', 'bigint', (c) => c.notNull())
    // null: the model has no price (listed as such, never as $0)
    .addColumn('cost_usd', 'double precision')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    // One entry per attempt: {status, kind, latency_ms, wait_ms}
    .addColumn('attempt_log', json, (c) => c.notNull())
    // UTC date of the call (YYYY-MM-DD), the key of the spend per day on both stores
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('model_calls_project_day')
    .on('model_calls')
    .columns(['project_id', 'day', 'purpose'])
    .execute();
  await db.schema
    .createIndex('model_calls_project_created')
    .on('model_calls')
    .columns(['project_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('integration_selections')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('integration_id', 'text', (c) => c.notNull().references('integrations.id').onDelete('cascade'))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('integration_selections_pk', ['user_id', 'name'])
    .execute();
}
