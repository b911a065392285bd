import { Migrator, sql } from 'kysely';
import type { Store } from './db.ts';
import { migrations } from './migrations/index.ts';

/** Migrates the store to the newest migration, or (tests) only up to and including the last of `only`. */
export async function migrate(store: Store, only: typeof migrations = migrations): Promise<void> {
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => only },
    // Kysely looks for its tables in any schema unless told which; with a schema per store (tests,
    // or several deployments in one database) it must look in ours.
    ...(store.pgSchema ? { migrationTableSchema: store.pgSchema } : {}),
  });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    const failed = results?.find((r) => r.status === 'Error');
    if (!error && !failed) break;
    const reason = error instanceof Error ? error.message : String(error ?? failed?.migrationName);
    // Kysely's introspection reads the tables of every schema; one dropped meanwhile (another store
    // in the same database going away) fails the read, before any migration ran: read again.
    if (attempt < 3 && store.pgSchema && otherSchemaVanished(reason, store.pgSchema)) continue;
    throw new Error(`migration failed: ${reason}`);
  }
  if (only === migrations) store.migrated?.();
}

/**
 * Whether a failure is another schema going away: the schema itself, or one of its tables
 * (dropped between the introspection's listing of the tables and its reading of their columns),
 * or PostgreSQL's catalog cache missing an object dropped while the introspection read it (the
 * message then names only its number), or a column's serial sequence looked up as its table was
 * dropped (the message names the table without its schema). Our own schema is not dropped while we
 * migrate it.
 */
export function otherSchemaVanished(reason: string, ours: string): boolean {
  if (/^cache lookup failed for (?:namespace|relation|type|attribute) \d+/.test(reason)) return true;
  if (/^column "[^"]+" of relation "[^".]+" does not exist$/.test(reason)) return true;
  const m = /^(?:schema "([^"]+)"|relation "([^".]+)\.[^"]+") does not exist$/.exec(reason);
  const schema = m?.[1] ?? m?.[2];
  return schema !== undefined && schema !== ours;
}

/** The name of the newest migration. */
export function latestMigration(): string {
  return Object.keys(migrations).sort().at(-1) as string;
}

/** The newest migration applied to the store (null: none); throws when the store does not answer. */
export async function migratedTo(store: Store): Promise<string | null> {
  const { rows } = await sql<{ name: string | null }>`select max(name) as name from kysely_migration`.execute(
    store.db,
  );
  return rows[0]?.name ?? null;
}
