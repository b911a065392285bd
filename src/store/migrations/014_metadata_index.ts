import { type Kysely, sql } from 'kysely';
import { METADATA_INDEX_MAX_CHARS as MAX, recordGroupSql } from '../../query/metadata-index.ts';
import { isPostgres } from './helpers.ts';

/**
 * The metadata index (query/metadata-index.ts): `record_metadata` holds one entry per short string
 * value of a record's `user_metadata`, keyed (run_id, grp, key, value, created_at, id), so that a
 * search for one key and value reads its entries in the records' native order and stops at a full
 * page. Before it, equality on metadata walked the run's records in order and read each one's JSON:
 * at 1,100,000 records a value found in few records meant reading nearly all of them.
 *
 * Triggers keep it in the writing transaction on every write path (ingestion, updates, deletes,
 * retention, import): a record's run, type, created_at and id never change, so only its metadata
 * is followed on update. Values of other JSON types and longer strings are not indexed; searches
 * on them walk the records as before. Existing records are indexed here.
 *
 * SQLite: a WITHOUT ROWID table (the key is the whole row). PostgreSQL: statement triggers with
 * transition tables for inserts and deletes (one statement per batch), a row trigger for updates.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await sql`create table record_metadata (
    run_id text not null,
    grp text not null,
    key text not null,
    value text not null,
    created_at bigint not null,
    id text not null,
    primary key (run_id, grp, key, value, created_at, id)
  ) ${sql.raw(pg ? '' : 'without rowid')}`.execute(db);
  if (pg) await postgresTriggers(db);
  else await sqliteTriggers(db);
}

async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  // The string values of a row's metadata; none when it is not valid JSON (json_each would fail).
  const entries = (row: string, table = '') => `
    from ${table && `${table}, `}json_each(iif(json_valid(${row}.user_metadata), ${row}.user_metadata, null)) as j
    where j.type = 'text' and length(j.key) <= ${MAX} and length(j.value) <= ${MAX}`;
  const insert = (
    row: string,
    table = '',
  ) => `insert or ignore into record_metadata (run_id, grp, key, value, created_at, id)
    select ${row}.run_id, ${recordGroupSql(`${row}.type`)}, j.key, j.value, ${row}.created_at, ${row}.id
    ${entries(row, table)};`;
  const remove = `delete from record_metadata where run_id = old.run_id and grp = ${recordGroupSql('old.type')}
    and (key, value) in (select j.key, j.value ${entries('old')})
    and created_at = old.created_at and id = old.id;`;
  // Most spans carry no metadata ('{}', as ingestion writes it): their writes skip the trigger's work.
  await sql
    .raw(`create trigger record_metadata_insert after insert on records
    when new.user_metadata is not null and new.user_metadata <> '{}' begin ${insert('new')} end`)
    .execute(db);
  await sql
    .raw(`create trigger record_metadata_update after update of user_metadata on records
    when new.user_metadata is not old.user_metadata begin ${remove} ${insert('new')} end`)
    .execute(db);
  await sql
    .raw(`create trigger record_metadata_delete after delete on records
    when old.user_metadata is not null and old.user_metadata <> '{}' begin ${remove} end`)
    .execute(db);
  await sql.raw(insert('records', 'records')).execute(db);
}

async function postgresTriggers(db: Kysely<any>): Promise<void> {
  // The string values of each row of `rows` (an alias), as `j`.
  const entries = (
    rows: string,
  ) => `cross join lateral jsonb_each(case when jsonb_typeof(${rows}.user_metadata) = 'object'
      then ${rows}.user_metadata end) as j`;
  const indexed = `jsonb_typeof(j.value) = 'string' and length(j.key) <= ${MAX} and length(j.value #>> '{}') <= ${MAX}`;
  const insert = (
    from: string,
    alias: string,
  ) => `insert into record_metadata (run_id, grp, key, value, created_at, id)
    select ${alias}.run_id, ${recordGroupSql(`${alias}.type`)}, j.key, j.value #>> '{}', ${alias}.created_at, ${alias}.id
    from ${from} as ${alias} ${entries(alias)} where ${indexed}
    on conflict do nothing`;
  const remove = (
    from: string,
    alias: string,
  ) => `delete from record_metadata as m using ${from} as ${alias} ${entries(alias)}
    where ${indexed} and m.run_id = ${alias}.run_id and m.grp = ${recordGroupSql(`${alias}.type`)}
      and m.key = j.key and m.value = j.value #>> '{}' and m.created_at = ${alias}.created_at and m.id = ${alias}.id`;
  // `set search_path from current`: the functions write this schema's table, whatever the search
  // path of the session that writes records (as migration 008).
  await sql
    .raw(`create function record_metadata_inserted() returns trigger language plpgsql
    set search_path from current as $$ begin ${insert('record_metadata_new', 'n')}; return null; end $$`)
    .execute(db);
  await sql
    .raw(`create trigger record_metadata_insert after insert on records
    referencing new table as record_metadata_new
    for each statement execute function record_metadata_inserted()`)
    .execute(db);
  await sql
    .raw(`create function record_metadata_changed() returns trigger language plpgsql
    set search_path from current as $$ begin
      ${remove('(select old.*)', 'o')};
      ${insert('(select new.*)', 'n')};
      return null;
    end $$`)
    .execute(db);
  await sql
    .raw(`create trigger record_metadata_update after update of user_metadata on records
    for each row when (old.user_metadata is distinct from new.user_metadata)
    execute function record_metadata_changed()`)
    .execute(db);
  await sql
    .raw(`create function record_metadata_deleted() returns trigger language plpgsql
    set search_path from current as $$ begin ${remove('record_metadata_old', 'o')}; return null; end $$`)
    .execute(db);
  await sql
    .raw(`create trigger record_metadata_delete after delete on records
    referencing old table as record_metadata_old
    for each statement execute function record_metadata_deleted()`)
    .execute(db);
  await sql.raw(insert('records', 'r')).execute(db);
}
