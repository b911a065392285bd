import { type Kysely, PostgresAdapter, sql } from 'kysely';

export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** JSONB on PostgreSQL, TEXT on SQLite. */
export function jsonType(db: Kysely<any>) {
  return isPostgres(db) ? sql`jsonb` : sql`text`;
}

/**
 * Text compared byte-wise on both stores: SQLite's default BINARY collation, and "C" on PostgreSQL
 * (whose database default may be a locale collation that sorts differently).
 */
export function binaryText(db: Kysely<any>) {
  return isPostgres(db) ? sql`text collate "C"` : sql`text`;
}
