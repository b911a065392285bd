import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * PostgreSQL: text search indexed shortly after the write instead of inside it, as SQLite already does
 * (004). The pg_trgm GIN indexes on records (004) were updated by every insert: trigram extraction
 * of about 1.7 KB of text per record cost more than the rest of the insert together (store layer, on
 * this machine: about 2,200 records/s with them, 12,800 without).
 *
 * - `records_text` holds the lower-cased input and output text of indexed records, with the GIN
 *   indexes, and the queue position (`seq`) of the change it reflects.
 * - `records_text_queue` lists records whose text was written and not yet indexed, in order. Triggers
 *   fill it in the writing transaction (one statement per insert statement; a row per update that
 *   changes a text), so a write and its queue entry commit together.
 * - A background job in every Spanbase process (store/search-text-pg.ts) takes queued entries in
 *   batches (FOR UPDATE SKIP LOCKED: several processes share the work) and, in the same statement,
 *   deletes them and writes `records_text`. A `contains` search reads, in one snapshot, the GIN hits
 *   plus every queued record, and checks each exactly (store/search-text-pg.ts PgTextCandidates): a record is
 *   either queued or indexed as it is in that snapshot, so answers are exact at once after a write.
 * - Two indexers may hold entries of one record at the same time (it changed twice); the write of
 *   the later entry wins (`seq`), and that indexer's snapshot holds the change that queued it.
 * - Deleting records deletes their `records_text` rows (statement trigger).
 *
 * Existing records are queued (newest first) rather than indexed here, so the migration stays quick on
 * a large store; searches stay exact while the indexer catches up. Where pg_trgm is missing (004 could
 * not create it) the tables exist without GIN indexes and `contains` checks every record of the run.
 * SQLite: nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`drop index if exists records_input_trgm`.execute(db);
  await sql`drop index if exists records_output_trgm`.execute(db);
  await sql`create table records_text (id text primary key, seq bigint not null, input text, output text)`.execute(
    db,
  );
  await sql`create table records_text_queue (seq bigint generated always as identity primary key, id text not null)`.execute(
    db,
  );
  // `set search_path from current`: the functions write the tables of this schema, whatever the
  // search path of the session that writes records.
  await sql`create function records_text_queue_inserted() returns trigger language plpgsql
    set search_path from current as $$
    begin
      insert into records_text_queue (id)
        select id from records_text_new where input_text is not null or output_text is not null;
      return null;
    end $$`.execute(db);
  await sql`create trigger records_text_insert after insert on records
    referencing new table as records_text_new
    for each statement execute function records_text_queue_inserted()`.execute(db);
  await sql`create function records_text_queue_changed() returns trigger language plpgsql
    set search_path from current as $$
    begin
      insert into records_text_queue (id) values (new.id);
      return null;
    end $$`.execute(db);
  await sql`create trigger records_text_update after update of input_text, output_text on records
    for each row when (old.input_text is distinct from new.input_text or old.output_text is distinct from new.output_text)
    execute function records_text_queue_changed()`.execute(db);
  await sql`create function records_text_deleted() returns trigger language plpgsql
    set search_path from current as $$
    begin
      delete from records_text t using records_text_old o where t.id = o.id;
      return null;
    end $$`.execute(db);
  await sql`create trigger records_text_delete after delete on records
    referencing old table as records_text_old
    for each statement execute function records_text_deleted()`.execute(db);
  const { rows } = await sql<{ nspname: string }>`
    select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace
    where e.extname = 'pg_trgm'`.execute(db);
  const schema = rows[0]?.nspname;
  if (schema) {
    const opclass = sql`${sql.id(schema)}.gin_trgm_ops`;
    await sql`create index records_text_input_trgm on records_text using gin (input ${opclass})`.execute(db);
    await sql`create index records_text_output_trgm on records_text using gin (output ${opclass})`.execute(
      db,
    );
  }
  await sql`insert into records_text_queue (id)
    select id from records where input_text is not null or output_text is not null
    order by created_at desc`.execute(db);
}
