import { notFound } from '../domain/errors.ts';
import { SPAN_TYPES, recordToApi } from '../domain/records.ts';
import { traceTree } from '../domain/trace-tree.ts';
import type { RecordsRepo } from '../store/records.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';
import type { ScoringService } from './scoring.ts';

type Api = Record<string, any>;

/** Read-back of single records: a trace with its span tree, a span, a session with its traces. */
export class RecordsService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly records: RecordsRepo,
    private readonly scoring: ScoringService,
  ) {}

  async trace(caller: Caller, projectId: string, traceId: string): Promise<Api> {
    await this.projects.access(caller, projectId);
    const rows = await this.records.traceRecords(projectId, traceId);
    const trace = rows.find((r) => r.id === traceId && r.type === 'trace');
    if (!trace) throw notFound('Trace');
    const feedback = await this.records.feedbackOf(rows.map((r) => r.id));
    const tree = traceTree(trace, rows, feedback);
    await this.scoring.attach(projectId, [tree]);
    return tree;
  }

  async span(caller: Caller, projectId: string, spanId: string): Promise<Api> {
    await this.projects.access(caller, projectId);
    const row = await this.records.byId(projectId, spanId);
    if (!row || !(SPAN_TYPES as readonly string[]).includes(row.type)) throw notFound('Span');
    const feedback = await this.records.feedbackOf([row.id]);
    const api = recordToApi(row, { includeCounts: true, feedback: feedback.get(row.id) });
    await this.scoring.attach(projectId, [api]);
    return api;
  }

  async session(caller: Caller, projectId: string, sessionId: string): Promise<Api> {
    await this.projects.access(caller, projectId);
    const row = await this.records.byId(projectId, sessionId);
    if (row?.type !== 'session') throw notFound('Session');
    const traces = await this.records.sessionTraces(projectId, sessionId);
    const feedback = await this.records.feedbackOf([row.id, ...traces.map((t) => t.id)]);
    const api = {
      ...recordToApi(row, { includeCounts: true, feedback: feedback.get(row.id) }),
      traces: traces.map((t) => recordToApi(t, { includeCounts: true, feedback: feedback.get(t.id) })),
    };
    await this.scoring.attach(projectId, [api]);
    return api;
  }
}
