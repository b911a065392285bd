import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * PostgreSQL: the text blocks' GIN index takes a batch's entries in its pending list again (017 had
 * turned it off), and the indexer merges the list into the index in bulk before its transaction
 * commits (search-text-pg.ts): between batches the list is empty, so searches do not read it (017's
 * reason). Written straight into the index, each block's thousands of trigram codes were as many
 * descents of the index, most of the indexer's time; merged in bulk, a code shared by the batch's
 * blocks is written once. The limit keeps a batch's entries (about 5 MB) in the list until the merge.
 * SQLite: nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter index text_blocks_grams set (fastupdate = on, gin_pending_list_limit = 32768)`.execute(db);
}
