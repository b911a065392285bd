import type { Kysely } from 'kysely';
import { setSqlitePageSize } from './helpers.ts';

/**
 * SQLite pages of 16 KiB instead of 8 KiB (007). A realistic record is 1 to 4 KB: an 8 KiB page held
 * three of them and left about 1.2 KB unused, 15% of the records table (394 of 2,638 MB at 1,000,000
 * records, bench:ingest). 16 KiB pages leave about half as much: the store layer wrote 2,830 bytes
 * per record against 3,021 (100,000 records), for the same CPU within the noise of the run (54.3
 * against 55.3 µs per record; 007's 46.7 against 42.2 was measured before the text index and the
 * metadata index, and the id index now costs a smaller share of each write).
 *
 * As 007: only a store of at most 256 MB is converted here.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await setSqlitePageSize(db, 16384, 256 * 1024 * 1024);
}
