import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * PostgreSQL: the text blocks' GIN index (015) without its pending list (`fastupdate = off`). With
 * it, new entries wait in an unsorted list (up to 4 MB) until a vacuum merges them, and every search
 * reads the whole list: a `contains` search that no block could answer took 147 ms at 1,000,000
 * records (bench:growth). A block is one row for 128 records, so writing its entries straight into the
 * index costs ingestion next to nothing. The list already there is merged now.
 * SQLite: nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter index text_blocks_grams set (fastupdate = off)`.execute(db);
  await sql`select gin_clean_pending_list('text_blocks_grams'::regclass)`.execute(db);
}
