import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * Search indexes: sessions by duration, and text search on the flattened input and output of records.
 *
 * SQLite: an index that is NOT written in the ingest transaction: triggers only note the rowid of
 * each inserted, changed or deleted record in `records_text_queue`, and a background thread keeps
 * the index in a file of its own (store/search-text.ts, where its layout is described). Searches
 * stay exact meanwhile by also checking the records it has not taken yet.
 *
 * PostgreSQL: pg_trgm GIN indexes on lower(input_text) and lower(output_text) (GIN's pending list
 * keeps the write cheap). The extension is created once per database under an advisory lock, so
 * processes or schemas migrating at the same time do not race; where it cannot be created, the
 * indexes are skipped and `contains` scans.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Sessions by duration (the sort users ask for most after time), as a partial index: it costs
  // nothing on the writes of traces and spans. Its order is the sort's, missing durations last.
  if (isPostgres(db)) {
    await sql`create index records_session_duration on records (run_id, duration_ns desc nulls last, id desc)
      where type = 'session'`.execute(db);
  } else {
    await sql`create index records_session_duration on records (run_id, duration_ns, id)
      where type = 'session'`.execute(db);
    // SQLite: sessions in time order with the columns they are filtered on most that do not change
    // as traces arrive (name, external id, user metadata). A search first takes the page's rowids,
    // which this index answers alone for such filters without reading the wide rows (see
    // store/search-sqlite.ts rowidQuery); updates of session aggregates do not touch it.
    await sql`create index records_session_scan on records (run_id, created_at, id, name, external_id, user_metadata)
      where type = 'session'`.execute(db);
  }
  if (isPostgres(db)) {
    await sql`select pg_advisory_xact_lock(7419230001)`.execute(db);
    const schema = await trigramSchema(db);
    if (!schema) return;
    const opclass = sql`${sql.id(schema)}.gin_trgm_ops`;
    await sql`create index records_input_trgm on records using gin (lower(input_text) ${opclass})`.execute(
      db,
    );
    await sql`create index records_output_trgm on records using gin (lower(output_text) ${opclass})`.execute(
      db,
    );
    return;
  }
  // The trigram indexes themselves live in a file of their own (store/search-text.ts). Here: the
  // queue of records whose text changed, in order (a record changed twice is queued twice, so an
  // entry taken by the indexer never hides a later change), and a token that ties the index file
  // to this database. No AUTOINCREMENT (it writes sqlite_sequence on every insert): the trim always
  // keeps the newest taken entry, so a new entry's seq is above every position the index recorded.
  await sql`create table records_text_queue (seq integer primary key, rid integer not null)`.execute(db);
  await sql`create table records_text_state (token text not null)`.execute(db);
  await sql`insert into records_text_state (token) values (${randomUUID()})`.execute(db);
  await sql`create trigger records_text_insert after insert on records
    when new.input_text is not null or new.output_text is not null
    begin insert into records_text_queue (rid) values (new.rowid); end`.execute(db);
  await sql`create trigger records_text_update after update of input_text, output_text on records
    when new.input_text is not old.input_text or new.output_text is not old.output_text
    begin insert into records_text_queue (rid) values (new.rowid); end`.execute(db);
  await sql`create trigger records_text_delete after delete on records
    begin insert into records_text_queue (rid) values (old.rowid); end`.execute(db);
}

/** The schema pg_trgm lives in, creating the extension (in `public`) when it is missing; null if impossible. */
async function trigramSchema(db: Kysely<any>): Promise<string | null> {
  const find = async () => {
    const { rows } = await sql<{ nspname: string }>`
      select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace
      where e.extname = 'pg_trgm'`.execute(db);
    return rows[0]?.nspname ?? null;
  };
  const existing = await find();
  if (existing) return existing;
  await sql`savepoint spanbase_trgm`.execute(db);
  try {
    await sql`create extension if not exists pg_trgm with schema public`.execute(db);
    await sql`release savepoint spanbase_trgm`.execute(db);
  } catch {
    await sql`rollback to savepoint spanbase_trgm`.execute(db);
    return null;
  }
  return find();
}
