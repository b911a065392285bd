import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * SQLite pages of 8 KiB instead of 32 KiB (002). Ids are random UUIDs, so each record a batch writes
 * dirties a random page of the id index (and each trace one of the trace and session indexes); a
 * commit writes every dirty page whole to the WAL, and a checkpoint copies it again. With 32 KiB
 * pages that was about 13 MB of WAL per 1,000 records at 200,000 stored records, growing with the
 * store (the id index alone is about 50 MB at a million records). Measured here (store layer only,
 * 400,000 realistic records, 1,000 per transaction): 52.8 µs of CPU per record with 32 KiB pages,
 * 46.7 with 16 KiB, 42.2 with 8 KiB, 44.4 with 4 KiB. 8 KiB pages still hold a typical record
 * (up to about 8 KB) without overflow pages.
 *
 * The change needs a VACUUM (a WAL database changes page size only while briefly out of WAL mode), so
 * it is made only while the database is small; a larger existing store keeps its page size (it works
 * the same, only its writes cost more) until an operator runs the same steps.
 */
export const PAGE_SIZE = 8192;
const MAX_BYTES_TO_CONVERT = 256 * 1024 * 1024;

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) return;
  const size = Number((await sql<{ page_size: number }>`pragma page_size`.execute(db)).rows[0]?.page_size);
  const count = Number(
    (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]?.page_count,
  );
  if (size === PAGE_SIZE || size * count > MAX_BYTES_TO_CONVERT) return;
  // A negative cache_size (KiB) is turned into a page count for the page size of the moment: set it
  // again after the change.
  const cache = Number(
    (await sql<{ cache_size: number }>`pragma cache_size`.execute(db)).rows[0]?.cache_size,
  );
  await sql`pragma journal_mode = delete`.execute(db);
  await sql.raw(`pragma page_size = ${PAGE_SIZE}`).execute(db);
  await sql`vacuum`.execute(db);
  await sql`pragma journal_mode = wal`.execute(db);
  const pages = cache < 0 ? cache : Math.max(1, Math.floor((cache * size) / PAGE_SIZE));
  await sql.raw(`pragma cache_size = ${Math.trunc(pages)}`).execute(db);
}
