import type { Kysely } from 'kysely';

/**
 * The scorer version a `score_results` row was written for. Finished score jobs are pruned
 * (services/job-queue.ts), so a task's job no longer says whether a (record, scorer version) was
 * scored: its result row does. Rows written before this migration have none and are scored again if
 * their record is written again after their job was pruned.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('score_results').addColumn('version_id', 'text').execute();
}
