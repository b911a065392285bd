import type { Kysely } from 'kysely';

/**
 * Running unattended: `retention_days` on projects and runs (null keeps records forever; a run's own
 * setting wins over its project's), and `leases`, which lets exactly one process of those sharing a
 * database run a background job (text indexing on PostgreSQL, retention) until its lease expires.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('retention_days', 'integer').execute();
  await db.schema.alterTable('runs').addColumn('retention_days', 'integer').execute();
  await db.schema
    .createTable('leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}
