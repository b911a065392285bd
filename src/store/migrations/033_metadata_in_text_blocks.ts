import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * Metadata equalities move from `record_metadata` (migration 014) to the text index's blocks
 * (domain/text-grams.ts, query/metadata-index.ts): the table, its triggers and functions go. The
 * table held an entry per string value and record, written in the ingest transaction at a random
 * place of its B-tree when the values are ids new for every request; a block holds each of its
 * records' values once, written in the background.
 *
 * The text queue's triggers now also queue records whose metadata is set or changes (so their block
 * gets the new values). SQLite's index is rebuilt from the records at start (its layout changed,
 * store/search-text.ts); on PostgreSQL every record is queued again here and the blocks emptied (as
 * `requeueAllPg`), and searches stay exact meanwhile by checking queued records.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await postgres(db);
  else await sqlite(db);
}

async function sqlite(db: Kysely<any>): Promise<void> {
  for (const t of ['record_metadata_insert', 'record_metadata_update', 'record_metadata_delete'])
    await sql`drop trigger if exists ${sql.id(t)}`.execute(db);
  await sql`drop table if exists record_metadata`.execute(db);
  await sql`drop trigger if exists records_text_insert`.execute(db);
  await sql`drop trigger if exists records_text_update`.execute(db);
  await sql`create trigger records_text_insert after insert on records
    when new.input_text is not null or new.output_text is not null
      or (new.user_metadata is not null and new.user_metadata <> '{}')
    begin insert into records_text_queue (rid) values (new.rowid); end`.execute(db);
  await sql`create trigger records_text_update after update of input_text, output_text, user_metadata on records
    when new.input_text is not old.input_text or new.output_text is not old.output_text
      or new.user_metadata is not old.user_metadata
    begin insert into records_text_queue (rid) values (new.rowid); end`.execute(db);
}

async function postgres(db: Kysely<any>): Promise<void> {
  for (const t of ['record_metadata_insert', 'record_metadata_update', 'record_metadata_delete'])
    await sql`drop trigger if exists ${sql.id(t)} on records`.execute(db);
  for (const f of ['record_metadata_inserted', 'record_metadata_changed', 'record_metadata_deleted'])
    await sql`drop function if exists ${sql.id(f)}()`.execute(db);
  await sql`drop table if exists record_metadata`.execute(db);
  await sql`create or replace function records_text_queue_inserted() returns trigger language plpgsql
    set search_path from current as $$
    begin
      insert into records_text_queue (id)
        select id from records_text_new
        where input_text is not null or output_text is not null or user_metadata <> '{}'::jsonb;
      return null;
    end $$`.execute(db);
  await sql`drop trigger if exists records_text_update on records`.execute(db);
  await sql`create trigger records_text_update after update of input_text, output_text, user_metadata on records
    for each row when (old.input_text is distinct from new.input_text or old.output_text is distinct from new.output_text
      or old.user_metadata is distinct from new.user_metadata)
    execute function records_text_queue_changed()`.execute(db);
  // The blocks hold no metadata codes yet: every record is indexed again.
  await sql`insert into records_text_queue (id)
    select id from records where input_text is not null or output_text is not null
      or user_metadata <> '{}'::jsonb
    order by created_at desc`.execute(db);
  await sql`truncate text_blocks, text_block_records`.execute(db);
}
