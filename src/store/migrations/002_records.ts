import { type Kysely, sql } from 'kysely';
import { isPostgres, jsonType } from './helpers.ts';

/**
 * The wide records table: traces, spans of every kind and sessions.
 *
 * Layout for a cheap write path: on SQLite a rowid table (rows append in insert order; `id` is a
 * unique index beside it), small promoted columns first and the large texts last, so that scans of
 * the promoted columns stop before the texts. `input_text` / `output_text` hold the flattened plain
 * text of input and output (what text filters search); `body` holds the rest as JSON, where a
 * structured input or output keeps only its skeleton (content strings are sliced back out of the
 * text on read; see domain/records.ts), so no text is stored twice. Few indexes: the run/type/time
 * index every query starts from, the trace index (span trees), and two narrow partial indexes
 * (traces by session; sessions by external id, unique so concurrent first uses agree).
 *
 * SQLite pages of 32 KiB: records of 1–5 KB fit in a page instead of spilling into overflow pages,
 * and a batch dirties fewer pages. On this machine that took the raw insert cost from about 39 to 28 µs
 * of CPU per realistic record (bench/ingest.ts). The page size of a WAL database can only change
 * while it is briefly out of WAL mode, which is cheap here: the store holds only the core tables.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    const { rows } = await sql<{ page_size: number }>`pragma page_size`.execute(db);
    if (Number(rows[0]?.page_size) < 32768) {
      // A negative cache_size (KiB) is turned into a page count for the page size of the moment: set
      // it again after the change, or the cache would grow 8 times larger than configured.
      const cache = await sql<{ cache_size: number }>`pragma cache_size`.execute(db);
      await sql`pragma journal_mode = delete`.execute(db);
      await sql`pragma page_size = 32768`.execute(db);
      await sql`vacuum`.execute(db);
      await sql`pragma journal_mode = wal`.execute(db);
      const kib = Number(cache.rows[0]?.cache_size);
      const pages = kib < 0 ? kib : Math.max(1, Math.floor((kib * Number(rows[0]?.page_size)) / 32768));
      await sql.raw(`pragma cache_size = ${Math.trunc(pages)}`).execute(db);
    }
  }
  const json = jsonType(db);
  await db.schema
    .createTable('records')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text')
    .addColumn('trace_id', 'text')
    .addColumn('parent_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('is_complete', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('status_code', 'integer')
    .addColumn('duration_ns', 'bigint')
    .addColumn('num_input_tokens', 'bigint')
    .addColumn('num_output_tokens', 'bigint')
    .addColumn('num_total_tokens', 'bigint')
    .addColumn('num_cache_read_input_tokens', 'bigint')
    .addColumn('num_cache_creation_input_tokens', 'bigint')
    .addColumn('time_to_first_token_ns', 'bigint')
    .addColumn('model', 'text')
    .addColumn('external_id', 'text')
    .addColumn('error_message', 'text')
    .addColumn('num_children', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('metrics', json)
    .addColumn('user_metadata', json)
    .addColumn('dataset_metadata', json)
    .addColumn('tags', json)
    .addColumn('body', json)
    .addColumn('input_text', 'text')
    .addColumn('output_text', 'text')
    .execute();
  await db.schema
    .createIndex('records_run_type_created')
    .on('records')
    .columns(['run_id', 'type', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('records_trace').on('records').column('trace_id').execute();
  await sql`create index records_session on records (session_id) where type = 'trace'`.execute(db);
  await sql`create unique index records_session_external on records (run_id, external_id)
    where type = 'session' and external_id is not null`.execute(db);
}
