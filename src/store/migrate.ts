import { Migrator } from 'kysely';
import type { Store } from './db.ts';
import { migrations } from './migrations/index.ts';

export async function migrate(store: Store): Promise<void> {
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations },
    // Kysely looks for its tables in any schema unless told which; with a schema per store (tests,
    // or several deployments in one database) it must look in ours.
    ...(store.pgSchema ? { migrationTableSchema: store.pgSchema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const reason = error instanceof Error ? error.message : String(error ?? failed?.migrationName);
    throw new Error(`migration failed: ${reason}`);
  }
  store.migrated?.();
}
