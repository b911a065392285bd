import type { Kysely } from 'kysely';
import { jsonType } from './helpers.ts';

/**
 * Model-provider integrations (their token encrypted, never in clear), who they are shared with, and
 * the saved Signals configuration of a run.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const json = jsonType(db);
  await db.schema
    .createTable('integrations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    // The user whose own integration of this name this is (the one their PUT updates); cleared when
    // they lose the right to change it, so that their next PUT creates a new one.
    .addColumn('holder_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    // Settings that are not secret: endpoint, use_case, multi_modal_config.
    .addColumn('config', json, (c) => c.notNull())
    // AES-256-GCM: "v1." + base64url(nonce | ciphertext | tag); the id is bound in as associated data.
    .addColumn('token_ciphertext', 'text', (c) => c.notNull())
    // Which key encrypted it (a fingerprint of the derived key), so rotation can be resumed safely.
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('is_disabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('integrations_holder_name', ['holder_id', 'name'])
    .execute();
  await db.schema.createIndex('integrations_created_by').on('integrations').column('created_by').execute();

  await db.schema
    .createTable('integration_collaborators')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('integration_id', 'text', (c) => c.notNull().references('integrations.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('group_id', 'text', (c) => c.references('groups.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    // NULLs are distinct on both stores, so user rows and group rows do not collide.
    .addUniqueConstraint('integration_collaborators_user', ['integration_id', 'user_id'])
    .addUniqueConstraint('integration_collaborators_group', ['integration_id', 'group_id'])
    .execute();
  await db.schema
    .createIndex('integration_collaborators_user_id')
    .on('integration_collaborators')
    .column('user_id')
    .execute();
  await db.schema
    .createIndex('integration_collaborators_group_id')
    .on('integration_collaborators')
    .column('group_id')
    .execute();

  await db.schema
    .createTable('signals_configurations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull().unique().references('runs.id').onDelete('cascade'))
    .addColumn('run_mode', 'text', (c) => c.notNull())
    .addColumn('schedule_type', 'text', (c) => c.notNull())
    .addColumn('schedule_cron', 'text', (c) => c.notNull())
    .addColumn('schedule_timezone', 'text', (c) => c.notNull())
    .addColumn('start_date', 'text')
    .addColumn('end_date', 'text')
    .addColumn('scheduled_runs_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('model', 'text')
    .addColumn('integration_id', 'text', (c) => c.references('integrations.id').onDelete('set null'))
    .addColumn('focus_on', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('dont_focus_on', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('notification_severities', json, (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('signals_configurations_project')
    .on('signals_configurations')
    .column('project_id')
    .execute();
  await db.schema
    .createIndex('signals_configurations_integration')
    .on('signals_configurations')
    .column('integration_id')
    .execute();
}
