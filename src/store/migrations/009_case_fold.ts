import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * PostgreSQL: `spanbase_fold(text)`, the case folding of every case-insensitive filter and search
 * (query/sql-dialect.ts `fold`). Plain lower() follows the database's LC_CTYPE: under "C" it leaves
 * É as it is, and no libc maps a final capital sigma to ς or İ to i + U+0307 as SQLite (JavaScript's
 * toLowerCase) does. ICU's root locale ("und-x-icu") maps case the same way as JavaScript, whatever
 * the database's locale. A plain SQL function, so the planner inlines it.
 *
 * `records_text` (migration 008) holds text folded by lower(): its records are queued to be indexed
 * again (searches stay exact meanwhile: queued records are checked directly). SQLite registers the
 * same function on each connection (store/db.ts openSqlite).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  const { rows } = await sql`select 1 from pg_catalog.pg_collation where collname = 'und-x-icu'`.execute(db);
  if (!rows.length) {
    throw new Error(
      'this PostgreSQL server was built without ICU (the collation "und-x-icu" is missing); Spanbase ' +
        'folds case with ICU so that case-insensitive filters do not depend on the database locale',
    );
  }
  await sql`create function spanbase_fold(text) returns text language sql immutable strict parallel safe
    as $$ select pg_catalog.lower($1 collate pg_catalog."und-x-icu") $$`.execute(db);
  await sql`insert into records_text_queue (id) select id from records_text`.execute(db);
}
