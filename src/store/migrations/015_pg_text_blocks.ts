import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * PostgreSQL: the text index by blocks, as SQLite's (store/search-text.ts), in place of the folded
 * copy of every record's text with pg_trgm GIN indexes (`records_text`, migration 008). Extracting
 * pg_trgm's trigrams cost about 0.4 ms of database CPU per record, so the indexer kept a core busy
 * about 8 times as long as the burst that queued the records, and the copy doubled the text on disk.
 *
 * - `text_blocks` holds, for each block of up to 128 records of one record group that the indexer
 *   took in one batch, the block's distinct hashed trigrams of case-folded input and output
 *   (domain/text-grams.ts), as integers that also name the group and column
 *   (store/search-text-pg.ts `gramCode`), with a GIN index (the default array_ops: no extension).
 * - `text_block_records` names each indexed record's block, and the queue position (`seq`) of the
 *   change it reflects; a record whose text changes moves to a new block (the old one keeps its
 *   grams: they only add candidates, never hide a record). A block left without records goes.
 * - The queue and its insert and update triggers (008) stay. Deleting records deletes their
 *   memberships and the blocks they leave empty (statement trigger).
 *
 * Existing records are queued again rather than indexed here, so the migration stays quick on a
 * large store; searches stay exact while the indexer catches up (queued records are checked
 * directly). SQLite: nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`drop trigger if exists records_text_delete on records`.execute(db);
  await sql`drop function if exists records_text_deleted()`.execute(db);
  await sql`drop table if exists records_text`.execute(db);
  await sql`create sequence text_blocks_seq`.execute(db);
  await sql`create table text_blocks (block bigint primary key, grams integer[] not null)`.execute(db);
  await sql`create index text_blocks_grams on text_blocks using gin (grams)`.execute(db);
  await sql`create table text_block_records (id text primary key, block bigint not null, seq bigint not null)`.execute(
    db,
  );
  await sql`create index text_block_records_block on text_block_records (block)`.execute(db);
  // `set search_path from current`, as in 008: this schema's tables, whatever the writer's path.
  await sql`create function text_block_records_deleted() returns trigger language plpgsql
    set search_path from current as $$
    declare
      left_blocks bigint[];
    begin
      with gone as (
        delete from text_block_records m using text_records_old o where m.id = o.id returning m.block
      )
      select array_agg(distinct block) into left_blocks from gone;
      if left_blocks is not null then
        delete from text_blocks b where b.block = any(left_blocks)
          and not exists (select 1 from text_block_records m where m.block = b.block);
      end if;
      return null;
    end $$`.execute(db);
  await sql`create trigger text_records_delete after delete on records
    referencing old table as text_records_old
    for each statement execute function text_block_records_deleted()`.execute(db);
  await sql`insert into records_text_queue (id)
    select id from records where input_text is not null or output_text is not null
    order by created_at desc`.execute(db);
}
