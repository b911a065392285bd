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

/**
 * Gives a SQLite database pages of `size` bytes, unless it has them already or holds more than
 * `maxBytes` (the change needs a VACUUM, which rewrites the whole file: a larger store keeps its page
 * size, working the same, until an operator runs the same steps). A WAL database changes page size
 * only while briefly out of WAL mode.
 */
export async function setSqlitePageSize(db: Kysely<any>, size: number, maxBytes: number): Promise<void> {
  if (isPostgres(db)) return;
  const current = Number((await sql<{ page_size: number }>`pragma page_size`.execute(db)).rows[0]?.page_size);
  const count = Number(
    (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]?.page_count,
  );
  if (current === size || current * count > maxBytes) return;
  // A negative cache_size (KiB) is turned into a page count for the page size of the moment: set it
  // again after the change.
  const cache = Number(
    (await sql<{ cache_size: number }>`pragma cache_size`.execute(db)).rows[0]?.cache_size,
  );
  await sql`pragma journal_mode = delete`.execute(db);
  await sql.raw(`pragma page_size = ${Math.trunc(size)}`).execute(db);
  await sql`vacuum`.execute(db);
  await sql`pragma journal_mode = wal`.execute(db);
  const pages = cache < 0 ? cache : Math.max(1, Math.floor((cache * current) / size));
  await sql.raw(`pragma cache_size = ${Math.trunc(pages)}`).execute(db);
}
