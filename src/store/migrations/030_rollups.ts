import { type Kysely, sql } from 'kysely';
import { isPostgres, jsonType } from './helpers.ts';

/**
 * Dashboard rollups (domain/rollups.ts, store/rollups.ts): per log stream, hour, group column (dim)
 * and value, the flat aggregate data that ingestion merges into with `rollup_merge` (additive keys
 * summed, `|lo` by min, `|hi` by max); the hours whose min and max may be stale (dirty) until they are
 * recomputed from the records; the dims that passed the cap of values (overflow); and the log streams
 * whose records came before rollups (gaps: their dashboards scan until rebuilt).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const pg = isPostgres(db);
  await db.schema
    .createTable('rollups')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('dim', 'text', (c) => c.notNull())
    .addColumn('hour', 'bigint', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('data', jsonType(db), (c) => c.notNull())
    .addPrimaryKeyConstraint('rollups_pk', ['run_id', 'dim', 'hour', 'value'])
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
  await db.schema
    .createTable('rollup_gaps')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.id').onDelete('cascade'))
    .execute();
  await sql`insert into rollup_gaps (run_id) select id from runs r where exists (select 1 from records where records.run_id = r.id)`.execute(
    db,
  );
  if (pg) {
    // Merges two rollup data objects: min for `|lo`, max for `|hi`, sums for the rest.
    await sql`
      create or replace function rollup_merge(a jsonb, b jsonb) returns jsonb language sql immutable as $$
        select coalesce(jsonb_object_agg(k, v), '{}'::jsonb) from (
          select k, case when k like '%|lo' then min(v) when k like '%|hi' then max(v) else sum(v) end as v
          from (select key as k, value::numeric as v from jsonb_each_text(a)
                union all select key, value::numeric from jsonb_each_text(b)) as s
          group by k) as t
      $$`.execute(db);
  }
}
