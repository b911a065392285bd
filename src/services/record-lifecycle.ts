/**
 * Counting, deleting and exporting the records a search body selects (services/search.ts
 * `selection`: the same access checks, filters and columns, so the same records).
 *
 * - Count: the number of matching records.
 * - Delete: editors and owners; a run must be named. Matching roots are deleted newest first in
 *   batches of DELETE_BATCH, each one transaction with everything derived (store/record-deletes.ts),
 *   so ingestion waits for one batch at most; the answer comes once every batch has committed. A
 *   shutdown stops the delete between two batches (503: what was deleted stays deleted, the request
 *   may be sent again).
 * - Export: the matching records as JSON lines or CSV (domain/record-export.ts), read in chunks from
 *   one snapshot and written as the client takes them.
 */
import { counted } from '../domain/plural.ts';
import type { ExportOptions } from '../domain/record-export.ts';
import { HttpError, valueError } from '../domain/errors.ts';
import { ROOT_TYPES, type RecordDeletes, type RootKind } from '../store/record-deletes.ts';
import type { RecordSelection, Selection } from '../store/record-selection.ts';
import type { Caller } from './auth.ts';
import type { AddedRecord } from './ingest.ts';
import type { Metrics } from './metrics.ts';
import type { ProjectsService } from './projects.ts';
import { type SearchBody, type SearchService, type SearchTarget, TARGET_TYPES } from './search.ts';

/** Roots per delete transaction. */
export const DELETE_BATCH = 200;

const ROOT_OF: Record<SearchTarget, RootKind> = { sessions: 'session', traces: 'trace', spans: 'span' };
const TARGET_OF: Record<RootKind, SearchTarget> = { session: 'sessions', trace: 'traces', span: 'spans' };

export interface ExportBody extends SearchBody {
  root_type?: unknown;
  column_ids?: string[] | null;
  export_format?: 'jsonl' | 'csv';
  redact?: boolean;
}

export interface ExportStream {
  contentType: string;
  fileName: string;
  chunks: AsyncGenerator<string | Buffer>;
}

export class RecordLifecycleService {
  private readonly stopping = new AbortController();

  constructor(
    private readonly search: SearchService,
    private readonly projects: ProjectsService,
    private readonly selection: RecordSelection,
    private readonly deletes: RecordDeletes,
    private readonly metrics: Metrics,
  ) {}

  private async select(
    caller: Caller,
    projectId: string,
    target: SearchTarget,
    body: SearchBody,
  ): Promise<{ selection: Selection; runId: string | null }> {
    const { runId, parsed } = await this.search.selection(caller, projectId, body);
    return {
      runId,
      selection: { projectId, runId, types: TARGET_TYPES[target], tree: parsed.tree, sort: parsed.sort },
    };
  }

  async count(caller: Caller, projectId: string, target: SearchTarget, body: SearchBody) {
    const { selection } = await this.select(caller, projectId, target, body);
    return { total_count: await this.selection.count({ ...selection, sort: null }) };
  }

  async delete(caller: Caller, projectId: string, target: SearchTarget, body: SearchBody) {
    const { selection, runId } = await this.select(caller, projectId, target, body);
    await this.projects.access(caller, projectId, 'editor');
    if (runId === null) {
      throw valueError(
        ['body'],
        'Value error, give the log_stream_id or experiment_id to delete from',
        undefined,
      );
    }
    const kind = ROOT_OF[target];
    let roots = 0;
    let records = 0;
    let after = null;
    for (;;) {
      if (this.stopping.signal.aborted) {
        throw new HttpError(
          503,
          `The server is shutting down: ${roots} ${target} were deleted, the rest were not; send the request again`,
        );
      }
      const batch = await this.selection.nextBatch(selection, after, DELETE_BATCH);
      if (!batch.length) break;
      after = batch[batch.length - 1];
      const out = await this.deletes.deleteRoots(
        runId,
        kind,
        batch.map((b) => b.id),
      );
      roots += out.roots;
      records += out.records;
      this.metrics.deleteBatches.inc({ reason: 'request' });
      this.metrics.rootsDeleted.inc({ reason: 'request', kind }, out.roots);
      this.metrics.recordsDeleted.inc({ reason: 'request' }, out.records);
      if (batch.length < DELETE_BATCH) break;
    }
    return {
      message: `Deleted ${counted(roots, kind)} (${counted(records, 'record')} with those below them)`,
    };
  }

  /**
   * Removes records a run gained (`spanbase import` undoing its batches after a failure): sessions,
   * then traces, then spans, each with what hangs below it (records added under added ones, since
   * a record keeps its session, trace and parent); those gone with an earlier root are skipped.
   */
  async deleteAdded(caller: Caller, projectId: string, runId: string, records: readonly AddedRecord[]) {
    await this.projects.access(caller, projectId, 'editor');
    for (const kind of ['session', 'trace', 'span'] as const) {
      const ids = records.filter((r) => ROOT_TYPES[kind].includes(r.type)).map((r) => r.id);
      for (let i = 0; i < ids.length; i += DELETE_BATCH)
        await this.deletes.deleteRoots(runId, kind, ids.slice(i, i + DELETE_BATCH));
    }
  }

  /** Checks the request and answers the stream to send (nothing is read before the first pull). */
  async export(caller: Caller, projectId: string, body: ExportBody): Promise<ExportStream> {
    const kind = body.root_type as RootKind;
    if (!Object.hasOwn(ROOT_TYPES, kind)) {
      throw valueError(['body', 'root_type'], "Input should be 'session', 'trace' or 'span'", body.root_type);
    }
    const { selection } = await this.select(caller, projectId, TARGET_OF[kind], body);
    const opts: ExportOptions = {
      format: body.export_format ?? 'jsonl',
      columns: body.column_ids?.length ? body.column_ids : null,
      redact: body.redact ?? true,
    };
    const nest = opts.format === 'csv' || kind === 'span' ? null : kind;
    const source = this.selection.exportText(selection, nest, opts);
    const stopping = this.stopping.signal;
    async function* chunks(): AsyncGenerator<string | Buffer> {
      try {
        for await (const text of source) {
          yield text;
          // Cut short with an error, not a clean end: the client must not take a part for the whole.
          if (stopping.aborted) throw new HttpError(503, 'The server is shutting down');
        }
      } finally {
        await source.return(undefined);
      }
    }
    return {
      contentType: opts.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
      fileName: `${TARGET_OF[kind]}.${opts.format}`,
      chunks: chunks(),
    };
  }

  /** Stops deletes and exports under way at their next batch (shutdown). */
  close(): void {
    this.stopping.abort();
  }
}
