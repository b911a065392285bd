import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * Dashboard rollups (domain/rollups.ts, store/rollups.ts), kept by ingestion:
 * - rollup_counts: the records per log stream, group column (dim), hour and value;
 * - rollups: per log stream, dim, value, metric column and hour, numbers that add on upsert (c, s, t),
 *   min and max (lo, hi) and the DDSketch bins (SQLite: a blob of int32 code/count pairs; PostgreSQL:
 *   int4[] of the same pairs, merged by rollup_bins_merge; SQLite's is a function of the writer);
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
      .addPrimaryKeyConstraint('rollups_pk', ['run_id', 'dim', 'value', 'col', 'hour']),
  ).execute();
  await db.schema.createIndex('rollups_hour').on('rollups').columns(['run_id', 'hour']).execute();
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
  await db.schema
    .createTable('rollup_gaps')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.id').onDelete('cascade'))
    .execute();
  await sql`insert into rollup_gaps (run_id) select id from runs r where exists (select 1 from records where records.run_id = r.id)`.execute(
    db,
  );
  if (pg) {
    // Two sketches' (code, count) pairs merged: codes ascending, counts added, zero counts dropped
    // (domain/ddsketch.ts mergeBins).
    await sql`
      create or replace function rollup_bins_merge(a int4[], b int4[]) returns int4[]
      language sql immutable parallel safe as $$
        select coalesce(array_agg(x order by code, j), '{}'::int4[]) from (
          select code, sum(n)::int4 as n from (
            select a[i] as code, a[i + 1] as n from generate_series(1, coalesce(array_length(a, 1), 0), 2) as i
            union all
            select b[i], b[i + 1] from generate_series(1, coalesce(array_length(b, 1), 0), 2) as i
          ) as p group by code having sum(n) <> 0
        ) as m cross join lateral (values (1, code), (2, n)) as v(j, x)
      $$`.execute(db);
  }
}
