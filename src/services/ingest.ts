import { notFound, valueError } from '../domain/errors.ts';
import {
  type Target,
  parsePatch,
  parseSessionRequest,
  parseSpansRequest,
  parseTracesRequest,
} from '../domain/ingest.ts';
import { nowUs } from '../domain/time.ts';
import type { IngestStore } from '../store/ingest.ts';
import {
  patchFlow,
  recomputeFlow,
  rescoreFlow,
  scoreFlow,
  sessionFlow,
  spansFlow,
  tracesFlow,
} from '../store/ingest-flow.ts';
import type { RunScoring } from '../domain/scorer-types.ts';
import type { RunKind, RunsRepo } from '../store/runs.ts';
import type { Caller } from './auth.ts';
import type { ModelPricesService } from './model-prices.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';
import type { ScoringService } from './scoring.ts';
import type { Plan } from '../domain/ingest-plan.ts';

type Obj = Record<string, unknown>;

/** A record a request inserted (not one it updated). */
export interface AddedRecord {
  id: string;
  type: string;
}

/** The run a request writes to. */
interface TargetRun {
  id: string;
  kind: RunKind;
}

function targetOut(run: { id: string; kind: string }) {
  return {
    log_stream_id: run.kind === 'log_stream' ? run.id : null,
    experiment_id: run.kind === 'experiment' ? run.id : null,
    metrics_testing_id: null,
  };
}

/** llm spans priced again per transaction by a recompute. */
export const RECOMPUTE_BATCH = 1000;

/**
 * Ingestion use cases: access (editor role on the project), the target run, and one store transaction
 * per request. Bodies are validated by domain/ingest.ts before anything is looked up. llm spans are
 * priced with the project's prices (services/model-prices.ts) inside the same transaction.
 */
export class IngestService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly runs: RunsService,
    /** For the run of a record PATCHed without naming one. */
    private readonly runsRepo: RunsRepo,
    private readonly store: IngestStore,
    private readonly prices: ModelPricesService,
    private readonly scoring: ScoringService,
  ) {}

  /** The run scorers of a project as ingestion's flows take them (rule scores are computed inline). */
  private async scoringOf(projectId: string) {
    const runs = await this.scoring.forProject(projectId);
    return runs.size ? (runId: string) => runs.get(runId) : undefined;
  }

  /** After a commit: the LLM score tasks it wrote are looked for at once. */
  private afterWrite(plan: Plan | null) {
    if (plan?.scoreTasks.length) this.scoring.tasksQueued();
  }

  /** Finishes the writes under way and stops the store's writer. */
  close(): Promise<void> {
    return this.store.close();
  }

  /** The run a request targets; 404 when it is not a run of the project. */
  private async targetRun(projectId: string, t: Target): Promise<TargetRun> {
    const run: TargetRun | null = t.log_stream_id
      ? { id: t.log_stream_id, kind: 'log_stream' }
      : t.experiment_id
        ? { id: t.experiment_id, kind: 'experiment' }
        : null;
    if (!run) throw notFound('Metrics testing run');
    if (!(await this.runs.exists(projectId, run.id, run.kind)))
      throw notFound(run.kind === 'log_stream' ? 'Log stream' : 'Experiment');
    return run;
  }

  /**
   * `POST /traces`. `opts.sessionPerTrace` (internal): new traces that name no session get a session
   * each rather than one shared by the request. `opts.onAdded` (internal) hears the records the
   * request inserted, once they are committed (`spanbase import` removes them again on a failure).
   */
  async traces(
    caller: Caller,
    projectId: string,
    body: unknown,
    query: Obj = {},
    opts: { sessionPerTrace?: boolean; onAdded?: (records: AddedRecord[]) => void } = {},
  ) {
    const now = nowUs();
    const req = parseTracesRequest(body, query, now);
    if (opts.sessionPerTrace) req.sessionPerTrace = true;
    const project = await this.projects.access(caller, projectId, 'editor');
    const run = await this.targetRun(projectId, req.target);
    const pricer = await this.prices.pricerFor(projectId);
    const scoring = await this.scoringOf(projectId);
    const { result, plan } = await this.store.run(
      () => tracesFlow(req, { projectId, runId: run.id, now, pricer, scoring }),
      req.records.length + req.sessions.length,
    );
    opts.onAdded?.((plan?.inserts ?? []).map((r) => ({ id: r.id, type: r.type })));
    this.afterWrite(plan);
    return {
      project_id: projectId,
      project_name: project.name,
      ...targetOut(run),
      session_id: result.sessionId,
      records_count: req.records.length + req.sessions.length,
      records_added: plan?.inserts.length ?? 0,
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
    const pricer = await this.prices.pricerFor(projectId);
    const scoring = await this.scoringOf(projectId);
    const { result, plan } = await this.store.run(
      () => spansFlow(req, { projectId, runId: run.id, now, pricer, scoring }),
      req.records.length,
    );
    this.afterWrite(plan);
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
    // A session made empty is scored like one ingestion made (its judges wait for it to be quiet).
    const scoring = await this.scoringOf(projectId);
    const { result, plan } = await this.store.run(() =>
      sessionFlow(req, { projectId, runId: run.id, now, scoring }),
    );
    this.afterWrite(plan);
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
    const pricer = await this.prices.pricerFor(projectId);
    const scoring = await this.scoringOf(projectId);
    const {
      result,
      runId: actual,
      plan,
    } = await this.store.run(() => patchFlow(kind, id, patch, projectId, runId, now, pricer, scoring));
    this.afterWrite(plan);
    const run = await this.runsRepo.byId(projectId, actual);
    return {
      project_id: projectId,
      project_name: project.name,
      ...(run ? targetOut(run) : { log_stream_id: null, experiment_id: null, metrics_testing_id: null }),
      session_id: result.sessionId,
      records_count: 1,
      ...(kind === 'trace' ? { trace_id: id } : { span_id: id }),
    };
  }

  /** A backfill page (services/score-backfill.ts): inline scores of `ids` computed again. */
  async rescore(projectId: string, runId: string, ids: string[], scoring: RunScoring): Promise<number> {
    const ctx = { projectId, runId, now: nowUs() };
    const { result } = await this.store.run(() => rescoreFlow(ctx, ids, scoring), 1);
    return result.changed;
  }

  /** A background scorer's value written under its name in a record's metrics (null removes it). */
  async writeScore(projectId: string, runId: string, id: string, name: string, value: number | null) {
    const ctx = { projectId, runId, now: nowUs() };
    const { result } = await this.store.run(() => scoreFlow(ctx, id, name, value), 1);
    return result;
  }

  /**
   * `POST /recompute-metrics`: the cost of every llm span of a run priced again with today's prices,
   * RECOMPUTE_BATCH spans per transaction (ingestion goes on between them). Costs the client sent stay.
   */
  async recompute(caller: Caller, projectId: string, body: Partial<Target>) {
    const t: Target = {
      log_stream_id: body.log_stream_id ?? null,
      experiment_id: body.experiment_id ?? null,
      metrics_testing_id: body.metrics_testing_id ?? null,
    };
    const given = [t.log_stream_id, t.experiment_id, t.metrics_testing_id].filter((x) => x !== null).length;
    if (given !== 1) throw valueError(['body'], 'Give exactly one of log_stream_id and experiment_id');
    await this.projects.access(caller, projectId, 'editor');
    const run = await this.targetRun(projectId, t);
    const pricer = await this.prices.pricerFor(projectId);
    let after = { createdAt: Number.MIN_SAFE_INTEGER, id: '' };
    let scanned = 0;
    let updated = 0;
    let batches = 0;
    for (;;) {
      const ctx = { projectId, runId: run.id, now: nowUs(), pricer };
      // Not held back for group commit (the records hint): a page waits for nothing else.
      const { result } = await this.store.run(() => recomputeFlow(ctx, after, RECOMPUTE_BATCH), 1);
      batches++;
      scanned += result.scanned;
      updated += result.changed;
      if (!result.next) break;
      after = result.next;
    }
    return { run_id: run.id, records_scanned: scanned, records_updated: updated, batches };
  }
}
