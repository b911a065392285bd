/**
 * Online scoring of a run: its scorer settings (the hosted `/runs/{r}/scorer-settings`), the scorers
 * ingestion applies inline (rules, bleu, rouge: services/ingest.ts hands `forProject` to the flow),
 * LLM score tasks (written with the records as one batch job, expanded into a job per task when the
 * queue is idle), each record's `metric_info`, the status per run ("why didn't it run?") and
 * recompute/backfill.
 *
 * States come from one place: a (record, scorer) the settings skip (filtered or sampled out) is
 * decided again on read from the same deterministic rules, so it needs no row; an LLM task's state
 * and result live in `score_results` once its batch is expanded (pending before, read from the batch);
 * an inline score is the value in the record's metrics.
 */
import { rejectUnstorable } from '../domain/text.ts';
import { valueError } from '../domain/errors.ts';
import type { RecordRow } from '../domain/records.ts';
import { encodeIo } from '../domain/records.ts';
import type { ActiveScorer, RunScoring, SegmentFilter } from '../domain/scorer-types.ts';
import {
  SCORE_JOB,
  type InlineTallies,
  type ScoreBatch,
  type ScoreTask,
  type ScoreView,
  decide,
  llmTasksOf,
  pendingResultOf,
  scoreInline,
  scoreJobOf,
  tasksOfBatch,
  waitReason,
} from '../domain/scoring-plan.ts';
import { DAY_US } from '../domain/ingest-plan.ts';
import { nowUs, parseTimestamp } from '../domain/time.ts';
import type { Job } from '../store/jobs.ts';
import type { RollupsRepo } from '../store/rollups.ts';
import type { ResultRow, ScorersRepo } from '../store/scorers.ts';
import type { Caller } from './auth.ts';
import type { IntegrationsService } from './integrations.ts';
import type { JobQueue } from './job-queue.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';
import type { ScorersService } from './scorers.ts';

type Obj = Record<string, any>;

export { SCORE_JOB };
/** How long the scorers of a project stay cached for ingestion (a change here clears it at once). */
const CACHE_MS = 2000;
/** Records a recompute may touch unless the request raises it. */
export const RECOMPUTE_CAP = 25_000;

export class ScoringService {
  private readonly cache = new Map<string, { until: number; gen: number; runs: Map<string, RunScoring> }>();

  constructor(
    private readonly repo: ScorersRepo,
    private readonly scorers: ScorersService,
    private readonly runs: RunsService,
    private readonly projects: ProjectsService,
    private readonly queue: JobQueue,
    private readonly integrations: Pick<IntegrationsService, 'canSee' | 'defaultFor'>,
    private readonly rollups: Pick<RollupsRepo, 'inlineTallies'> | null = null,
  ) {}

  // ---- settings ------------------------------------------------------------------------------

  private settingsOut(
    runId: string,
    row: { scorers: Obj[]; segment_filters: Obj[]; integration_id: string | null } | null,
  ) {
    return {
      run_id: runId,
      scorers: row?.scorers ?? [],
      segment_filters: row?.segment_filters ?? null,
      integration_id: row?.integration_id ?? null,
    };
  }

  /**
   * The integration a run's LLM judges call: the one named (the caller must see it), else the one
   * kept (if the caller still sees it), else the caller's default. Null when the caller has none.
   */
  private async integrationFor(caller: Caller, id: string | null): Promise<string | null> {
    if (id && (await this.integrations.canSee(caller, id))) return id;
    return this.integrations.defaultFor(caller);
  }

  async getSettings(caller: Caller, projectId: string, runId: string) {
    const run = await this.runs.resolve(caller, projectId, runId);
    return this.settingsOut(run.id, await this.repo.settings(run.id));
  }

  /**
   * POST and PATCH: the scorers list is replaced (enabling metrics replaces the set, as hosted);
   * segment_filters left out keep their saved value. Each scorer is resolved to a version now, so a
   * later version does not change what the run scores until the settings are saved again.
   */
  async saveSettings(caller: Caller, projectId: string, runId: string, body: Obj) {
    rejectUnstorable(['body'], body);
    const run = await this.runs.resolve(caller, projectId, runId);
    await this.projects.access(caller, projectId, 'editor');
    if (body.run_id && body.run_id !== run.id)
      throw valueError(['body', 'run_id'], 'run_id differs from the path');
    const prior = await this.repo.settings(run.id);
    const configs: Obj[] = body.scorers ?? prior?.scorers ?? [];
    const saved: Obj[] = [];
    const names = new Set<string>();
    for (const [i, c] of configs.entries()) {
      const a = await this.scorers.resolve(c, ['body', 'scorers', i]);
      if (names.has(a.name)) throw valueError(['body', 'scorers', i], `The scorer ${a.name} is listed twice`);
      names.add(a.name);
      saved.push({
        ...c,
        id: a.id,
        name: a.name,
        scorer_type: c.scorer_type,
        scorer_version: { id: a.versionId, version: a.version },
      });
    }
    const integrationId = await this.integrationFor(
      caller,
      body.integration_id ?? prior?.integration_id ?? null,
    );
    const segments: Obj[] = (body.segment_filters ?? prior?.segment_filters ?? []).map((s: Obj) => ({
      filter: s.filter ?? null,
      sample_rate: s.sample_rate,
      llm_scorers: s.llm_scorers ?? false,
    }));
    await this.repo.saveSettings(
      {
        run_id: run.id,
        project_id: run.project_id,
        scorers: saved,
        segment_filters: segments,
        integration_id: integrationId,
        updated_at: nowUs(),
      },
      caller.id,
    );
    this.cache.delete(run.project_id);
    // Saving lifts a pause: the run's waiting tasks are due again.
    if (prior?.paused_reason) await this.queue.wakeRun(run.id, SCORE_JOB);
    return this.settingsOut(run.id, {
      scorers: saved,
      segment_filters: segments,
      integration_id: integrationId,
    });
  }

  // ---- what ingestion and reads use ------------------------------------------------------------

  /** The scorers of every run of a project that has settings (cached for CACHE_MS). */
  async forProject(projectId: string): Promise<Map<string, RunScoring>> {
    const hit = this.cache.get(projectId);
    if (hit && hit.until > Date.now() && hit.gen === this.scorers.generation) return hit.runs;
    const gen = this.scorers.generation;
    const runs = new Map<string, RunScoring>();
    for (const s of await this.repo.projectSettings(projectId)) {
      const scorers: ActiveScorer[] = [];
      for (const c of s.scorers) {
        // A scorer deleted since the settings were saved scores nothing (the status route says so).
        try {
          scorers.push(await this.scorers.resolve(c, []));
        } catch {}
      }
      if (!scorers.length) continue;
      runs.set(s.run_id, {
        runId: s.run_id,
        scorers,
        segments: s.segment_filters as unknown as SegmentFilter[],
        pausedReason: s.paused_reason,
        integrationId: s.integration_id,
      });
    }
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(projectId, { until: Date.now() + CACHE_MS, gen, runs });
    return runs;
  }

  /** Ingestion wrote LLM score tasks with its records (domain/scoring-plan.ts llmTasksOf): run them. */
  tasksQueued(): void {
    this.queue.kick();
  }

  /** A backfill page: LLM score tasks of `ids` for the scorers of `sc`, run again (finished or not). */
  async requeue(projectId: string, runId: string, ids: string[], sc: RunScoring): Promise<number> {
    const rows = await this.repo.recordRows(projectId, ids);
    return this.queueTasks(projectId, rows, new Map([[runId, sc]]), true);
  }

  private async queueTasks(
    projectId: string,
    rows: RecordRow[],
    runs: Map<string, RunScoring>,
    reset: boolean,
  ): Promise<number> {
    const tasks = rows.flatMap((row) => {
      const sc = runs.get(row.run_id);
      return sc ? llmTasksOf(row, sc) : [];
    });
    return this.writeTasks(projectId, tasks, reset);
  }

  /** A batch job of ingestion's tasks (SCORE_BATCH_JOB) expanded into its tasks. */
  async expandBatch(job: Job): Promise<number> {
    const projectId = job.projectId as string;
    const runId = job.runId as string;
    const sc = (await this.forProject(projectId)).get(runId);
    const tasks = tasksOfBatch(job.payload as ScoreBatch, runId, waitReason(sc?.pausedReason));
    // A record deleted since its write leaves no task (nor a result row that outlives it).
    const live = await this.repo.existing(projectId, [...new Set(tasks.map((t) => t.recordId))]);
    return this.writeTasks(
      projectId,
      tasks.filter((t) => live.has(t.recordId)),
      false,
    );
  }

  /**
   * Queues tasks: each gets a pending result row and a job. Unless `reset` (a re-score), a task whose
   * (record, scorer) already has a row written for its version is left alone: it ran or is running
   * (its finished job may be pruned since, so the job's key alone cannot say so).
   */
  private async writeTasks(projectId: string, all: ScoreTask[], reset: boolean): Promise<number> {
    let tasks = all;
    if (!reset && tasks.length) {
      const seen = new Set(
        (await this.repo.results([...new Set(tasks.map((t) => t.recordId))])).map(
          (r) => `${r.record_id}:${r.scorer_id}:${r.version_id}`,
        ),
      );
      tasks = tasks.filter((t) => !seen.has(`${t.recordId}:${t.scorerId}:${t.versionId}`));
    }
    const jobs = tasks.map((t) => scoreJobOf(t, projectId));
    const pending = tasks.map((t) => pendingResultOf(t, projectId));
    if (!jobs.length) return 0;
    // A record written again keeps its result (its task is not run again unless reset).
    await this.repo.putResults(pending, nowUs(), { keep: !reset });
    return this.queue.enqueue(jobs, { reset });
  }

  /** `metric_info` of API records, by record id: every scorer of each record's run that applies. */
  async metricInfo(projectId: string, records: Obj[]): Promise<Map<string, Obj>> {
    const out = new Map<string, Obj>();
    const runs = await this.forProject(projectId);
    const scored = records.filter((r) => runs.has(r.run_id));
    if (!scored.length) return out;
    const results = new Map<string, ResultRow>();
    for (const r of await this.repo.results(scored.map((r) => r.id)))
      results.set(`${r.record_id}:${r.scorer_id}`, r);
    const views = new Map(scored.map((rec) => [rec.id as string, apiView(rec)]));
    await this.addBatched(scored, views, runs, results);
    for (const rec of scored) {
      const sc = runs.get(rec.run_id) as RunScoring;
      const info: Obj = {};
      const view = views.get(rec.id) as ScoreView;
      for (const s of sc.scorers) {
        const entry = infoOf(s, sc, view, rec.metrics ?? {}, results.get(`${rec.id}:${s.id}`));
        if (entry) info[s.name] = entry;
      }
      out.set(rec.id, info);
    }
    return out;
  }

  /**
   * A task still in its batch (not expanded into a `score` job) has no result row: it is queued.
   * Looked up only for records an LLM scorer takes and that have no row (not for sampled-out ones).
   */
  private async addBatched(
    records: Obj[],
    views: Map<string, ScoreView>,
    runs: Map<string, RunScoring>,
    results: Map<string, ResultRow>,
  ) {
    const waiting = records.filter((rec) => {
      const sc = runs.get(rec.run_id) as RunScoring;
      const view = views.get(rec.id) as ScoreView;
      return sc.scorers.some(
        (s) =>
          s.kind === 'llm' &&
          !results.has(`${rec.id}:${s.id}`) &&
          decide(s, view, sc.segments).state === 'score',
      );
    });
    if (!waiting.length) return;
    const stamps = new Set<number>();
    for (const rec of waiting) {
      const at = typeof rec.updated_at === 'string' ? parseTimestamp(rec.updated_at) : null;
      if (at !== null) stamps.add(at);
    }
    const runIds = [...new Set(waiting.map((r) => r.run_id as string))];
    for (const [recordId, scorerId] of await this.repo.batchedTasks(runIds, [...stamps])) {
      const key = `${recordId}:${scorerId}`;
      if (!results.has(key))
        results.set(key, {
          record_id: recordId,
          scorer_id: scorerId,
          status: 'pending',
          reason: 'queued',
          info: {},
          cost: null,
        });
    }
  }

  /** Adds `metric_info` to API records (and their nested spans or traces). */
  async attach(projectId: string, roots: Obj[]): Promise<void> {
    const all: Obj[] = [];
    const walk = (r: Obj) => {
      all.push(r);
      for (const k of ['spans', 'traces'] as const) if (Array.isArray(r[k])) r[k].forEach(walk);
    };
    roots.forEach(walk);
    const info = await this.metricInfo(projectId, all);
    for (const r of all) r.metric_info = info.get(r.id) ?? {};
  }

  /** A search page's body with `metric_info` on each record (include_code_metric_metadata). */
  async attachToPage(projectId: string, page: Buffer): Promise<Buffer> {
    const body = JSON.parse(page.toString('utf8'));
    await this.attach(projectId, body.records);
    return Buffer.from(JSON.stringify(body));
  }

  /**
   * Available columns (already access-checked) with `scorer_id` and `scorer_config` on the
   * `metrics/<name>` columns of the run's scorers.
   */
  async describeColumns(projectId: string, body: Obj, out: { columns: Obj[] }) {
    const runId = body.log_stream_id ?? body.experiment_id ?? null;
    const runs = await this.forProject(projectId);
    const settings = runId ? [runs.get(runId)].filter((x) => x !== undefined) : [...runs.values()];
    const byColumn = new Map<string, ActiveScorer>();
    for (const sc of settings) for (const s of sc.scorers) byColumn.set(`metrics/${s.name}`, s);
    for (const c of out.columns) {
      const s = byColumn.get(c.id);
      if (!s) continue;
      c.scorer_id = s.id;
      c.scorer_config = {
        id: s.id,
        name: s.name,
        scorer_type: s.kind === 'llm' ? 'llm' : s.kind === 'rule' ? 'rule' : 'preset',
        scorer_version: { id: s.versionId, version: s.version },
        scoreable_node_types: s.nodeTypes,
        output_type: s.llm?.output_type ?? null,
      };
    }
    return out;
  }

  // ---- status --------------------------------------------------------------------------------

  async status(caller: Caller, projectId: string, runId: string) {
    const run = await this.runs.resolve(caller, projectId, runId);
    const settings = await this.repo.settings(run.id);
    const { results: counts, batched } = await this.repo.taskCounts(run.id);
    for (const [scorerId, n] of batched) {
      const reason = waitReason(settings?.paused_reason);
      const same = counts.find(
        (c) => c.scorer_id === scorerId && c.status === 'pending' && c.reason === reason,
      );
      if (same) same.n += n;
      else counts.push({ scorer_id: scorerId, status: 'pending', reason, n, cost: 0 });
    }
    const runs = await this.forProject(run.project_id);
    const active = runs.get(run.id)?.scorers ?? [];
    const inline = active.filter((s) => s.kind !== 'llm');
    const tallies = inline.length
      ? await this.inlineTallies(
          run.id,
          inline.map((s) => s.name),
        )
      : null;
    const scorers = [];
    for (const c of settings?.scorers ?? []) {
      const a = active.find((s) => s.id === c.id);
      const rows = counts.filter((x) => x.scorer_id === c.id);
      scorers.push({
        id: c.id as string,
        name: (c.name as string) ?? '',
        kind: a ? a.kind : 'missing',
        counts: !a
          ? [{ status: 'not_computed', reason: 'the scorer or its version was deleted', count: 0 }]
          : a.kind !== 'llm' && tallies
            ? inlineCounts(a, tallies)
            : rows.map((x) => ({ status: x.status, reason: x.reason, count: x.n })),
      });
    }
    const dayStart = Math.floor(nowUs() / DAY_US) * DAY_US;
    return {
      run_id: run.id,
      paused_reason: settings?.paused_reason ?? null,
      spend_today: await this.repo.spendSince(run.id, dayStart),
      scorers,
    };
  }

  /** The inline scorers' tallies: from the dashboard rollups where they can answer, else the records. */
  private async inlineTallies(runId: string, names: string[]): Promise<InlineTallies> {
    return (await this.rollups?.inlineTallies(runId, names)) ?? this.repo.inlineTallies(runId, names);
  }

  /** Pauses a run's LLM scorers (a credential or billing error): its tasks are not claimed. */
  async pause(runId: string, reason: string): Promise<void> {
    await this.repo.setPaused(runId, reason, nowUs());
    this.cache.clear();
  }

  /** Resumes a paused run's LLM scorers (its integration was fixed): its tasks are due again. */
  async resume(runId: string): Promise<void> {
    await this.repo.setPaused(runId, null);
    this.cache.clear();
    await this.queue.wakeRun(runId, SCORE_JOB);
  }

  /** Resumes the paused runs whose integration changed since the pause (any process may have fixed it). */
  async resumeFixed(): Promise<number> {
    const runs = await this.repo.fixedRuns();
    for (const r of runs) await this.resume(r);
    return runs.length;
  }

  pausedRuns(): Promise<string[]> {
    return this.repo.pausedRuns();
  }
}

/** A record's entry for one scorer, or null when the scorer is not for its type. */
function infoOf(
  s: ActiveScorer,
  sc: RunScoring,
  v: ScoreView,
  metrics: Obj,
  r: ResultRow | undefined,
): Obj | null {
  const d = decide(s, v, sc.segments);
  if (d.state === 'skip') return null;
  if (d.state === 'not_computed') return { status_type: 'not_computed', message: d.reason };
  if (s.kind !== 'llm') {
    const value = metrics[s.name];
    if (typeof value === 'number')
      return { status_type: 'success', value, display_value: display(value), explanation: null };
    const out = scoreInline(s, v);
    if ('notApplicable' in out) return { status_type: 'not_applicable', message: out.notApplicable };
    return {
      status_type: 'not_computed',
      message: 'written before the scorer was enabled; recompute metrics to score it',
    };
  }
  if (!r)
    return {
      status_type: 'not_computed',
      message: 'written before the scorer was enabled; recompute metrics to score it',
    };
  if (r.status === 'success') {
    // The record and the task's state are two reads: a record read just before its score landed
    // would pair a success with no value (PostgreSQL readers see each commit at once). Such a read
    // describes the record as it was then: still computing.
    if (typeof r.info?.value === 'number' && typeof metrics[s.name] !== 'number')
      return { status_type: 'computing', message: 'the score is being written' };
    return { status_type: 'success', ...r.info };
  }
  if (r.status === 'pending' || r.status === 'computing')
    return { status_type: r.status, message: sc.pausedReason ? waitReason(sc.pausedReason) : r.reason };
  return { status_type: r.status, message: r.reason };
}

/**
 * An inline scorer's status counts: its records with a score, and those of its node types without
 * one (each record's `metric_info` says which reason is its own).
 */
function inlineCounts(s: ActiveScorer, t: InlineTallies) {
  const scored = t.scored.get(s.name) ?? 0;
  let eligible = 0;
  for (const type of s.nodeTypes) eligible += t.types.get(type) ?? 0;
  const out = [
    { status: 'success', reason: 'scored as the record was written (or recomputed)', count: scored },
  ];
  if (eligible > scored)
    out.push({
      status: 'not_computed',
      reason:
        'no score: filtered or sampled out, not applicable (a missing field or ground truth), or written before the scorer was enabled',
      count: eligible - scored,
    });
  return out;
}

function display(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

/** The scoring view of a record in its API shape (reads). */
export function apiView(r: Obj): ScoreView {
  return {
    id: r.id,
    type: r.type,
    name: r.name ?? '',
    input: encodeIo(r.input ?? null).text,
    output: encodeIo(r.output ?? null).text,
    groundTruth: r.dataset_output ?? null,
    metadata: r.user_metadata ?? {},
    durationNs: r.metrics?.duration_ns ?? null,
    cost: typeof r.metrics?.cost === 'number' ? r.metrics.cost : null,
  };
}
