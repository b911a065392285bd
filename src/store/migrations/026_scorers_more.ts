import type { Kysely } from 'kysely';

/**
 * LLM judges call a model through an integration: a run's scorer settings keep the integration of
 * the person who saved them (checked readable at save time), as design/evaluations.md §4.2 says, so
 * scoring in the background needs nobody's session. `paused_at` (µs) tells when a credential or
 * billing error paused them: an integration changed after it is taken as fixed, and they resume.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('run_scorer_settings').addColumn('integration_id', 'text').execute();
  await db.schema.alterTable('run_scorer_settings').addColumn('paused_at', 'bigint').execute();
}
