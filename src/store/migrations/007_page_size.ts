import type { Kysely } from 'kysely';
import { setSqlitePageSize } from './helpers.ts';

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
const PAGE_SIZE = 8192;
const MAX_BYTES_TO_CONVERT = 256 * 1024 * 1024;

export async function up(db: Kysely<any>): Promise<void> {
  await setSqlitePageSize(db, PAGE_SIZE, MAX_BYTES_TO_CONVERT);
}
