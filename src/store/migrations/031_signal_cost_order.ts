import { type Kysely, sql } from 'kysely';
import { isPostgres } from './helpers.ts';

/**
 * PostgreSQL: a Signals run's costliest traces read from an index in cost order. The expression index
 * of 028 cannot serve an index-only scan (PostgreSQL wants the expression's column, `metrics`, in the
 * index too), so the top 50 by cost read every trace of the window from the heap: 1.1 s over 200,000
 * traces. Ordered by run and cost, the first rows in the window are the answer. SQLite reads the
 * expression from 028's index and needs nothing more.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  // The expression must be written exactly so in the selection's statement (store/signal-runs.ts).
  await sql`create index records_signal_cost on records (run_id, (case when jsonb_typeof(metrics -> 'cost') = 'number' then (metrics ->> 'cost')::float8 end) desc nulls last) where type = 'trace'`.execute(
    db,
  );
}
