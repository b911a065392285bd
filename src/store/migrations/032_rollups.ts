import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * The record columns kept as metrics (domain/rollups.ts SCALAR_METRICS, copied: a migration does
 * not change with the code).
 */
const SCALAR_METRICS = [
  'is_complete',
  'status_code',
  'duration_ns',
  'num_input_tokens',
  'num_output_tokens',
  'num_total_tokens',
  'num_cache_read_input_tokens',
  'num_cache_creation_input_tokens',
  'time_to_first_token_ns',
  'num_children',
];

/**
 * Dashboard rollups (domain/rollups.ts, store/rollups.ts), kept by ingestion:
 * - rollup_counts: the records per log stream, group column (dim), hour and value;
 * - rollup_scalars: per log stream, dim, value and hour, for each record column kept as a metric:
 *   numbers that add on upsert (c_, s_, t_<col>), min and max (lo_, hi_<col>), and the columns'
 *   DDSketch bins in one list (`bins`, the column's index in each code: domain/rollups.ts joinBins;
 *   SQLite: a blob of int32 code/count pairs; PostgreSQL: int4[] of the same pairs, merged by
 *   rollup_bins_merge; SQLite's is a function of the writer). One row per group, not per group and
 *   column, and one sketch merge a row: a batch's upserts are about a quarter as many;
 * - rollups: the same per metric key (scores, `m:<key>`), one row per log stream, dim, value, key
 *   and hour (the keys are not known in advance);
 * - rollup_deltas: an ingestion transaction's changes to the rows above, per log stream, kept until
 *   folded into them (many transactions' changes in one upsert a row; store/rollups.ts);
 * - rollup_dirty: hours whose min and max may be stale until recomputed from the records;
 * - rollup_overflow: dims that passed the cap of values;
 * - rollup_gaps: log streams whose records came before rollups (their dashboards scan until rebuilt).
 *
 * The keys are ordered for the reads: a dashboard reads the counts of a dim over a range of hours,
 * then the metric rows of the values it shows. The (run_id, hour) indexes serve recomputing an hour;
 * ingestion's upserts change no indexed column, so they cost ingestion only when a row is new.
 * Numbered 030 and applied after 031 on stores that had 031 first (store/migrate.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  const withoutRowid = (t: { modifyEnd: (s: ReturnType<typeof sql>) => any }) =>
    pg ? t : t.modifyEnd(sql`without rowid`);
  await withoutRowid(
    db.schema
      .createTable('rollup_counts')
      .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
      .addColumn('dim', 'text', (c) => c.notNull())
      .addColumn('hour', 'bigint', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('rollup_counts_pk', ['run_id', 'dim', 'hour', 'value']),
  ).execute();
  await db.schema.createIndex('rollup_counts_hour').on('rollup_counts').columns(['run_id', 'hour']).execute();
  await withoutRowid(
    db.schema
      .createTable('rollups')
      .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
      .addColumn('dim', 'text', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('col', 'text', (c) => c.notNull())
      .addColumn('hour', 'bigint', (c) => c.notNull())
      .addColumn('c', 'bigint', (c) => c.notNull())
      .addColumn('s', 'double precision', (c) => c.notNull())
      .addColumn('t', 'bigint', (c) => c.notNull())
      .addColumn('lo', 'double precision')
      .addColumn('hi', 'double precision')
      .addColumn('bins', pg ? sql`int4[]` : 'blob')
      .addPrimaryKeyConstraint('rollups_pk', ['run_id', 'dim', 'col', 'hour', 'value']),
  ).execute();
  await db.schema.createIndex('rollups_hour').on('rollups').columns(['run_id', 'hour']).execute();
  let scalars = db.schema
    .createTable('rollup_scalars')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('dim', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('hour', 'bigint', (c) => c.notNull());
  for (const col of SCALAR_METRICS)
    scalars = scalars
      .addColumn(`c_${col}`, 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn(`s_${col}`, 'double precision', (c) => c.notNull().defaultTo(0))
      .addColumn(`t_${col}`, 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn(`lo_${col}`, 'double precision')
      .addColumn(`hi_${col}`, 'double precision');
  scalars = scalars.addColumn('bins', pg ? sql`int4[]` : 'blob');
  await withoutRowid(
    scalars.addPrimaryKeyConstraint('rollup_scalars_pk', ['run_id', 'dim', 'hour', 'value']),
  ).execute();
  await db.schema
    .createIndex('rollup_scalars_hour')
    .on('rollup_scalars')
    .columns(['run_id', 'hour'])
    .execute();
  await db.schema
    .createTable('rollup_dirty')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rollup_dirty_pk', ['run_id', 'hour'])
    .execute();
  await db.schema
    .createTable('rollup_overflow')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('dim', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('rollup_overflow_pk', ['run_id', 'dim'])
    .execute();
  // Each ingestion transaction's rollup changes as one row, folded into the tables above later.
  if (pg) {
    await sql`create table rollup_deltas (id bigint generated always as identity primary key,
      run_id text not null references runs (id) on delete cascade, body text not null)`.execute(db);
    // Read once and deleted: not worth the CPU of compressing each on the ingest path.
    await sql`alter table rollup_deltas alter column body set storage external`.execute(db);
  } else
    await sql`create table rollup_deltas (id integer primary key,
      run_id text not null references runs (id) on delete cascade, body text not null)`.execute(db);
  await db.schema.createIndex('rollup_deltas_run').on('rollup_deltas').columns(['run_id', 'id']).execute();
  await db.schema
    .createTable('rollup_gaps')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.id').onDelete('cascade'))
    .execute();
  await sql`insert into rollup_gaps (run_id) select id from runs r where exists (select 1 from records where records.run_id = r.id)`.execute(
    db,
  );
  if (pg) {
    // Two sketches' (code, count) pairs merged: codes ascending, counts added, zero counts dropped
    // (domain/ddsketch.ts mergeBins). PL/pgSQL: a merge of the two sorted lists runs 3 to 4 times as
    // fast as the same in SQL (unnest, group by, array_agg): 1.7 against 6.7 µs for a pair into a
    // pair, 23 against 64 µs for a pair into 150.
    await sql`
      create or replace function rollup_bins_merge(a int4[], b int4[]) returns int4[]
      language plpgsql immutable parallel safe as $$
      declare
        out int4[] := '{}';
        i int := 1;
        j int := 1;
        na int := coalesce(array_length(a, 1), 0);
        nb int := coalesce(array_length(b, 1), 0);
        n int;
      begin
        if na = 0 then return coalesce(b, '{}'); end if;
        if nb = 0 then return a; end if;
        while i <= na or j <= nb loop
          if j > nb or (i <= na and a[i] < b[j]) then
            out := out || a[i] || a[i + 1];
            i := i + 2;
          elsif i > na or b[j] < a[i] then
            out := out || b[j] || b[j + 1];
            j := j + 2;
          else
            n := a[i + 1] + b[j + 1];
            if n <> 0 then out := out || a[i] || n; end if;
            i := i + 2;
            j := j + 2;
          end if;
        end loop;
        return out;
      end
      $$`.execute(db);
    // One column's part of a scalar row's joined list (domain/rollups.ts joinBins: the column's
    // index above bit 18 of each code, codes ascending): found by bisection, cut by a slice, so that
    // a dashboard reads only the sketch it asks for.
    await sql`
      create or replace function rollup_bins_column(bins int4[], col int) returns int4[]
      language plpgsql immutable parallel safe as $$
      declare
        n int := coalesce(array_length(bins, 1), 0) / 2;
        lo int;
        hi int;
        mid int;
        first int;
      begin
        lo := 0; hi := n;
        while lo < hi loop
          mid := (lo + hi) / 2;
          if bins[2 * mid + 1] < col * 262144 then lo := mid + 1; else hi := mid; end if;
        end loop;
        first := lo;
        hi := n;
        while lo < hi loop
          mid := (lo + hi) / 2;
          if bins[2 * mid + 1] < (col + 1) * 262144 then lo := mid + 1; else hi := mid; end if;
        end loop;
        if lo = first then return '{}'; end if;
        return bins[2 * first + 1 : 2 * lo];
      end
      $$`.execute(db);
  }
}
