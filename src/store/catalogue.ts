/**
 * What a run holds, for available columns and for checking metric columns: the column catalogue
 * (kept current by ingestion) and which record types have records. The same SQL on both stores.
 */
import { type Kysely, sql } from 'kysely';
import type { DB } from './tables.ts';

export interface CatalogueEntry {
  column_id: string;
  record_type: string;
  data_type: string;
}

/** A time window of created_at or of a key's first–last seen (µs; null: open). */
export interface Window {
  start: number | null;
  end: number | null;
}

export class CatalogueRepo {
  constructor(private readonly db: Kysely<DB>) {}

  /** `metrics/<key>` column ids among `ids` that the catalogue has seen in any run of the project. */
  async knownMetricColumns(projectId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.db
      .selectFrom('column_catalogue')
      .innerJoin('runs', 'runs.id', 'column_catalogue.run_id')
      .select('column_catalogue.column_id')
      .distinct()
      .where('runs.project_id', '=', projectId)
      .where('column_catalogue.column_id', 'in', ids)
      .execute();
    return new Set(rows.map((r) => r.column_id));
  }

  /**
   * Keys the catalogue saw in a run (or every run of a project) whose first–last seen interval meets the
   * window, with each record type and data type they were seen with.
   */
  async catalogue(
    projectId: string,
    runId: string | null,
    window: Window,
    recordTypes: readonly string[] | null,
  ): Promise<CatalogueEntry[]> {
    let q = this.db
      .selectFrom('column_catalogue')
      .select(['column_catalogue.column_id', 'column_catalogue.record_type', 'column_catalogue.data_type'])
      .distinct();
    if (runId !== null) q = q.where('column_catalogue.run_id', '=', runId);
    else
      q = q.where('column_catalogue.run_id', 'in', (eb) =>
        eb.selectFrom('runs').select('runs.id').where('runs.project_id', '=', projectId),
      );
    if (window.start !== null) q = q.where('column_catalogue.last_seen', '>=', window.start);
    if (window.end !== null) q = q.where('column_catalogue.first_seen', '<=', window.end);
    if (recordTypes) q = q.where('column_catalogue.record_type', 'in', recordTypes as string[]);
    return q.orderBy('column_catalogue.column_id').execute();
  }

  /** The record types among `types` that have at least one record in the run (or project) and window. */
  async typesPresent(
    projectId: string,
    runId: string | null,
    types: readonly string[],
    window: Window,
  ): Promise<Set<string>> {
    const present = new Set<string>();
    for (const type of types) {
      let q = this.db.selectFrom('records').select(sql<number>`1`.as('one')).where('records.type', '=', type);
      q =
        runId === null
          ? q.where('records.project_id', '=', projectId)
          : q.where('records.run_id', '=', runId);
      if (window.start !== null) q = q.where('records.created_at', '>=', window.start);
      if (window.end !== null) q = q.where('records.created_at', '<=', window.end);
      if (await q.limit(1).executeTakeFirst()) present.add(type);
    }
    return present;
  }
}
