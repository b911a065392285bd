import { notFound } from '../domain/errors.ts';
import { SPAN_TYPES, type StoredRecord, parseBody, recordToApi } from '../domain/records.ts';
import type { RecordsRepo } from '../store/records.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

type Api = Record<string, any>;

/** Children in display order: by created_at, then step, then id. */
function order(a: StoredRecord, b: StoredRecord): number {
  const ca = Number(a.created_at);
  const cb = Number(b.created_at);
  if (ca !== cb) return ca - cb;
  const sa = parseBody(a).step ?? 0;
  const sb = parseBody(b).step ?? 0;
  if (sa !== sb) return sa - sb;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Read-back of single records: a trace with its span tree, a span, a session with its traces. */
export class RecordsService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly records: RecordsRepo,
  ) {}

  async trace(caller: Caller, projectId: string, traceId: string): Promise<Api> {
    await this.projects.access(caller, projectId);
    const rows = await this.records.traceRecords(projectId, traceId);
    const trace = rows.find((r) => r.id === traceId && r.type === 'trace');
    if (!trace) throw notFound('Trace');
    rows.sort(order);
    const feedback = await this.records.feedbackOf(rows.map((r) => r.id));
    const api = new Map<string, Api>();
    for (const r of rows) {
      const a = recordToApi(r, { includeCounts: true, feedback: feedback.get(r.id) });
      a.spans = [];
      api.set(r.id, a);
    }
    for (const r of rows) {
      if (r.id === traceId) continue;
      const parent = api.get(r.parent_id ?? traceId) ?? api.get(traceId);
      parent?.spans.push(api.get(r.id));
    }
    return api.get(traceId) as Api;
  }

  async span(caller: Caller, projectId: string, spanId: string): Promise<Api> {
    await this.projects.access(caller, projectId);
    const row = await this.records.byId(projectId, spanId);
    if (!row || !(SPAN_TYPES as readonly string[]).includes(row.type)) throw notFound('Span');
    const feedback = await this.records.feedbackOf([row.id]);
    return recordToApi(row, { includeCounts: true, feedback: feedback.get(row.id) });
  }

  async session(caller: Caller, projectId: string, sessionId: string): Promise<Api> {
    await this.projects.access(caller, projectId);
    const row = await this.records.byId(projectId, sessionId);
    if (row?.type !== 'session') throw notFound('Session');
    const traces = await this.records.sessionTraces(projectId, sessionId);
    const feedback = await this.records.feedbackOf([row.id, ...traces.map((t) => t.id)]);
    return {
      ...recordToApi(row, { includeCounts: true, feedback: feedback.get(row.id) }),
      traces: traces.map((t) => recordToApi(t, { includeCounts: true, feedback: feedback.get(t.id) })),
    };
  }
}
