import { type Kysely, sql } from 'kysely';

const DAY_US = 86_400_000_000;

/**
 * Day rows of the dashboard rollups (store/rollups.ts): a day's rows are the sums of its hours' rows,
 * kept in the same tables under the dim `day:<dim>` with `hour` the day's start, so that a dashboard
 * of daily buckets over months reads a row a day rather than 24. rollup_days says which days' rows
 * are current (`built` 1): a change to an hour's rows marks its day 0 with the time (`changed_at`,
 * µs), and a day quiet for a while is built again in the background.
 *
 * The days that already have rollups are listed unbuilt here, to be built by that job.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rollup_days')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('built', 'integer', (c) => c.notNull())
    .addColumn('changed_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rollup_days_pk', ['run_id', 'day'])
    .execute();
  // The job's pick: unbuilt days by when they changed.
  await db.schema
    .createIndex('rollup_days_unbuilt')
    .on('rollup_days')
    .columns(['built', 'changed_at'])
    .execute();
  await sql`insert into rollup_days (run_id, day, built, changed_at)
    select distinct run_id, hour - hour % ${sql.lit(DAY_US)}, 0, 0 from rollup_counts where dim = ''`.execute(
    db,
  );
}
