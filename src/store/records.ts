import type { Kysely } from 'kysely';
import type { RecordFeedback } from '../domain/annotations.ts';
import type { StoredRecord } from '../domain/records.ts';
import { recordFeedback } from './annotations.ts';
import type { DB } from './tables.ts';

/** Reads of single records and their trees (the write path is store/ingest.ts). */
export class RecordsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  async byId(projectId: string, id: string): Promise<StoredRecord | undefined> {
    const row = await this.db
      .selectFrom('records')
      .selectAll()
      .where('id', '=', id)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return row as StoredRecord | undefined;
  }

  /** The trace and every span of it. */
  async traceRecords(projectId: string, traceId: string): Promise<StoredRecord[]> {
    const rows = await this.db
      .selectFrom('records')
      .selectAll()
      .where('trace_id', '=', traceId)
      .where('project_id', '=', projectId)
      .execute();
    return rows as StoredRecord[];
  }

  /** The traces of a session, first to last. */
  async sessionTraces(projectId: string, sessionId: string): Promise<StoredRecord[]> {
    const rows = await this.db
      .selectFrom('records')
      .selectAll()
      .where('session_id', '=', sessionId)
      .where('type', '=', 'trace')
      .where('project_id', '=', projectId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    return rows as StoredRecord[];
  }

  /** The feedback (annotations, aggregates, queues) of these records; those without any are left out. */
  feedbackOf(ids: readonly string[]): Promise<Map<string, RecordFeedback>> {
    return recordFeedback(this.db, ids);
  }
}
