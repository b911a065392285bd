import { notFound } from '../domain/errors.ts';
import {
  type Target,
  parsePatch,
  parseSessionRequest,
  parseSpansRequest,
  parseTracesRequest,
} from '../domain/ingest.ts';
import { nowUs } from '../domain/time.ts';
import type { IngestStore } from '../store/ingest.ts';
import { patchFlow, sessionFlow, spansFlow, tracesFlow } from '../store/ingest-flow.ts';
import type { RunRow, RunsRepo } from '../store/runs.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

type Obj = Record<string, unknown>;

function targetOut(run: RunRow) {
  return {
    log_stream_id: run.kind === 'log_stream' ? run.id : null,
    experiment_id: run.kind === 'experiment' ? run.id : null,
    metrics_testing_id: null,
  };
}

/**
 * Ingestion use cases: access (editor role on the project), the target run, and one store transaction
 * per request. Bodies are validated by domain/ingest.ts before anything is looked up.
 */
export class IngestService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly runs: RunsRepo,
    private readonly store: IngestStore,
  ) {}

  /** The run a request targets; 404 when it is not a run of the project. */
  private async targetRun(projectId: string, t: Target): Promise<RunRow> {
    if (t.log_stream_id) {
      const run = await this.runs.byId(projectId, t.log_stream_id, 'log_stream');
      if (!run) throw notFound('Log stream');
      return run;
    }
    if (t.experiment_id) {
      const run = await this.runs.byId(projectId, t.experiment_id, 'experiment');
      if (!run) throw notFound('Experiment');
      return run;
    }
    throw notFound('Metrics testing run');
  }

  /**
   * `POST /traces`. `opts.sessionPerTrace` (internal): new traces that name no session get a session
   * each rather than one shared by the request.
   */
  async traces(
    caller: Caller,
    projectId: string,
    body: unknown,
    query: Obj = {},
    opts: { sessionPerTrace?: boolean } = {},
  ) {
    const now = nowUs();
    const req = parseTracesRequest(body, query, now);
    if (opts.sessionPerTrace) req.sessionPerTrace = true;
    const project = await this.projects.access(caller, projectId, 'editor');
    const run = await this.targetRun(projectId, req.target);
    const { result } = await this.store.run(
      () => tracesFlow(req, { projectId, runId: run.id, now }),
      req.records.length + req.sessions.length,
    );
    return {
      project_id: projectId,
      project_name: project.name,
      ...targetOut(run),
      session_id: result.sessionId,
      records_count: req.records.length + req.sessions.length,
      traces_count: req.traces,
      spans_count: req.records.length - req.traces,
      ...(req.includeTraceIds ? { trace_ids: result.traceIds } : {}),
    };
  }

  async spans(caller: Caller, projectId: string, body: unknown, query: Obj = {}) {
    const now = nowUs();
    const req = parseSpansRequest(body, query, now);
    const project = await this.projects.access(caller, projectId, 'editor');
    const run = await this.targetRun(projectId, req.target);
    const { result } = await this.store.run(
      () => spansFlow(req, { projectId, runId: run.id, now }),
      req.records.length,
    );
    return {
      project_id: projectId,
      project_name: project.name,
      ...targetOut(run),
      session_id: result.sessionId,
      records_count: req.records.length,
      trace_id: req.traceId,
      parent_id: req.parentId,
    };
  }

  async createSession(caller: Caller, projectId: string, body: unknown, query: Obj = {}) {
    const now = nowUs();
    const req = parseSessionRequest(body, query);
    const project = await this.projects.access(caller, projectId, 'editor');
    const run = await this.targetRun(projectId, req.target);
    const { result } = await this.store.run(() => sessionFlow(req, { projectId, runId: run.id, now }));
    return {
      id: result.id,
      name: result.name,
      project_id: projectId,
      project_name: project.name,
      ...targetOut(run),
      previous_session_id: result.previousSessionId,
      external_id: result.externalId,
    };
  }

  async update(
    caller: Caller,
    kind: 'trace' | 'span',
    projectId: string,
    id: string,
    body: unknown,
    query: Obj = {},
  ) {
    const now = nowUs();
    const patch = parsePatch(body, query);
    const project = await this.projects.access(caller, projectId, 'editor');
    const t = patch.target;
    const named = t.log_stream_id || t.experiment_id || t.metrics_testing_id;
    const runId = named ? (await this.targetRun(projectId, t)).id : null;
    const { result, runId: actual } = await this.store.run(() =>
      patchFlow(kind, id, patch, projectId, runId, now),
    );
    const run = await this.runs.byId(projectId, actual);
    return {
      project_id: projectId,
      project_name: project.name,
      ...(run ? targetOut(run) : { log_stream_id: null, experiment_id: null, metrics_testing_id: null }),
      session_id: result.sessionId,
      records_count: 1,
      ...(kind === 'trace' ? { trace_id: id } : { span_id: id }),
    };
  }
}
