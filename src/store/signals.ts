import type { Kysely } from 'kysely';
import type { DB, SignalsConfigurationsTable } from './tables.ts';

export type SignalsRow = SignalsConfigurationsTable;

/** The saved Signals configuration of a run (at most one per run). */
export class SignalsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  byRun(runId: string): Promise<SignalsRow | undefined> {
    return this.db
      .selectFrom('signals_configurations')
      .selectAll()
      .where('run_id', '=', runId)
      .executeTakeFirst();
  }

  /** Saves the run's configuration; the first save's id and created_at are kept by later ones. */
  async upsert(row: SignalsRow): Promise<SignalsRow> {
    const {
      id: _id,
      run_id: _run,
      project_id: _project,
      created_at: _created,
      created_by: _by,
      ...rest
    } = row;
    await this.db
      .insertInto('signals_configurations')
      .values(row)
      .onConflict((oc) => oc.column('run_id').doUpdateSet(rest))
      .execute();
    return (await this.byRun(row.run_id))!;
  }
}
