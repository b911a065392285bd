/**
 * Experiments (issue #34): a prompt template version run over a dataset version through an
 * integration, every row a trace in the experiment run, scored by the run's scorers at ingestion.
 *
 * `POST /v2/jobs` (`playground_run`) records a hosted job and enqueues ONE item of the durable job
 * queue for it. Whichever process holds that item's lease runs the rows, `concurrency` at a time. A
 * row's trace id is derived from the job and the row (domain/experiments.ts), so a job resumed after a
 * restart or a lost lease skips the rows whose trace exists and re-writing a half-written row only
 * overwrites it: each row is written once. A failed model call is a trace with its error; the job
 * fails only when it cannot run at all (template, dataset or integration gone, credential paused).
 */
import { conflict, notFound, valueError } from '../domain/errors.ts';
import {
  EXPERIMENT_TASK_TYPE,
  type MetricSummary,
  NOT_SCORE_NAMES,
  PLAYGROUND_RUN,
  aggregateFromSummaries,
  rankingFromSummaries,
  ranks,
  rowResults,
  rowTraceId,
  summariesFromCounts,
} from '../domain/experiments.ts';
import { newId } from '../domain/ids.ts';
import { variablesOfRow } from '../domain/prompt-templates.ts';
import { renderTemplate } from '../domain/templates.ts';
import { rejectUnstorable } from '../domain/text.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type {
  ExperimentJobRow,
  ExperimentMeta,
  ExperimentTag,
  ExperimentsRepo,
} from '../store/experiments.ts';
import type { Job } from '../store/jobs.ts';
import type { UsersRepo } from '../store/users.ts';
import { MODEL_KINDS } from '../schemas/integrations.ts';
import { type Caller, toCaller } from './auth.ts';
import type { DatasetsService } from './datasets.ts';
import type { IngestService } from './ingest.ts';
import type { IntegrationsService } from './integrations.ts';
import type { JobAnswer, JobQueue } from './job-queue.ts';
import type { LlmIntegrationsService } from './llm-integrations.ts';
import { type ChatMessage, ModelCallError, type ModelCallsService } from './model-calls.ts';
import type { ProjectsService } from './projects.ts';
import type { PromptTemplatesService } from './prompt-templates.ts';
import type { RunsService } from './runs.ts';
import type { ScoringService } from './scoring.ts';

/** The queue kind that runs one experiment job. */
export const EXPERIMENT_JOB = 'experiment_run';
/** Rows of one experiment called at once unless the job says otherwise (`concurrency`). */
export const DEFAULT_EXPERIMENT_CONCURRENCY = 8;
const MAX_CONCURRENCY = 32;
/** Rows one experiment runs at most. */
export const MAX_EXPERIMENT_ROWS = 100_000;
/** A running job writes its progress and looks for a cancel this often. */
const PROGRESS_MS = 200;
/** Finished rows' traces are written this many at a time (one ingest call). */
const WRITE_BATCH = 32;
/** Metrics and comparisons read a run's rows again after this long. */
const SUMMARY_MS = 2000;

type Obj = Record<string, any>;

export interface CreateExperiment {
  name: string;
  task_type?: number;
  dataset?: { dataset_id: string; version_index?: number | null } | null;
  prompt_template_version_id?: string | null;
  prompt_settings?: Obj | null;
}

export interface CreateJob {
  job_name: string;
  project_id: string;
  run_id: string;
  prompt_template_version_id?: string | null;
  dataset_id?: string | null;
  dataset_version_index?: number | null;
  prompt_settings?: Obj | null;
  scorers?: Obj[] | null;
  task_type?: number;
  integration_id?: string | null;
  concurrency?: number;
}

/** An experiment's metrics as lists and comparisons show them. */
interface Summary {
  metrics: MetricSummary[];
  aggregate: Record<string, number>;
  ranking: number | null;
  rows: number;
}

type RowCell = ReturnType<typeof rowResults>[number];

export interface MetricsBody {
  filters?: Obj[];
  experiment_ids?: string[];
}

/** Metric filters are not applied: a request that names some is refused rather than answered unfiltered. */
function refuseFilters(body?: MetricsBody) {
  if (body?.filters?.length)
    throw valueError(['body', 'filters'], 'Experiment metrics cannot be filtered: leave out filters');
}

/** What an experiment job freezes at creation: the queue item's payload. */
interface Frozen {
  jobId: string;
  projectId: string;
  runId: string;
  callerId: string;
  datasetId: string;
  datasetVersion: number;
  template: string | ChatMessage[];
  integrationId: string;
  model: string;
  temperature?: number;
  maxTokens?: number;
  concurrency: number;
}

function jobView(j: ExperimentJobRow) {
  const pct = j.steps_total
    ? Math.round((1000 * j.steps_completed) / j.steps_total) / 10
    : j.status === 'completed'
      ? 100
      : 0;
  return {
    id: j.id,
    job_name: j.job_name,
    project_id: j.project_id,
    run_id: j.run_id,
    status: j.status,
    retries: j.retries,
    request_data: j.request_data as Obj,
    error_message: j.error_message,
    progress_message: j.progress_message,
    steps_completed: j.steps_completed,
    steps_total: j.steps_total,
    progress_percent: pct,
    failed_rows: j.failed_rows,
    created_at: toIso(j.created_at),
    updated_at: toIso(j.updated_at),
    processing_started: j.processing_started ? toIso(j.processing_started) : null,
    completed_at: j.completed_at ? toIso(j.completed_at) : null,
    failed_at: j.failed_at ? toIso(j.failed_at) : null,
    migration_name: null,
    monitor_batch_id: null,
  };
}

export class ExperimentsService {
  private readonly summaries = new Map<string, { at: number; value: Summary }>();

  constructor(
    private readonly repo: ExperimentsRepo,
    private readonly runs: RunsService,
    private readonly projects: ProjectsService,
    private readonly users: UsersRepo,
    private readonly datasets: DatasetsService,
    private readonly templates: PromptTemplatesService,
    private readonly integrations: IntegrationsService,
    private readonly llmIntegrations: LlmIntegrationsService,
    private readonly modelCalls: ModelCallsService,
    private readonly ingest: IngestService,
    private readonly scoring: ScoringService,
    private readonly queue: JobQueue,
  ) {
    queue.handle(EXPERIMENT_JOB, (job, signal) => this.runJob(job, signal));
  }

  // ---- experiments --------------------------------------------------------------------------------

  async create(caller: Caller, projectId: string, body: CreateExperiment) {
    await this.projects.access(caller, projectId, 'editor');
    rejectUnstorable(['body'], body);
    let version: number | null = null;
    if (body.dataset) {
      const ds = await this.datasets.get(caller, body.dataset.dataset_id).catch(() => null);
      if (!ds) throw valueError(['body', 'dataset', 'dataset_id'], 'No such dataset');
      version = body.dataset.version_index ?? ds.current_version_index;
      const at = version;
      await this.datasets.rows(caller, ds.id, { offset: 0, limit: 1, version: at }).catch(() => {
        throw valueError(['body', 'dataset', 'version_index'], `The dataset has no version ${at}`);
      });
    }
    const run = await this.runs.create(caller, projectId, 'experiment', body.name);
    await this.repo.insertMeta({
      run_id: run.id,
      project_id: projectId,
      dataset_id: body.dataset?.dataset_id ?? null,
      dataset_version_index: version,
      prompt_template_version_id: body.prompt_template_version_id ?? null,
      prompt_settings: body.prompt_settings ?? null,
      task_type: body.task_type ?? EXPERIMENT_TASK_TYPE,
      tags: [],
    });
    return this.get(caller, projectId, run.id);
  }

  /** Metrics of experiments' rows, computed in SQL (no rows read here). */
  private async summarize(runIds: string[]): Promise<Summary> {
    const [stats, counts] = await Promise.all([
      this.repo.metricStats(runIds, NOT_SCORE_NAMES),
      this.repo.rowCounts(runIds),
    ]);
    const metrics = summariesFromCounts(stats);
    return {
      metrics,
      aggregate: aggregateFromSummaries(metrics, stats, counts),
      ranking: rankingFromSummaries(metrics),
      rows: counts.rows,
    };
  }

  /** An experiment's metrics (cached briefly: lists read every peer's for ranks). */
  private async summaryOf(runId: string): Promise<Summary> {
    const hit = this.summaries.get(runId);
    if (hit && Date.now() - hit.at < SUMMARY_MS) return hit.value;
    const value = await this.summarize([runId]);
    if (this.summaries.size > 1000) this.summaries.clear();
    this.summaries.set(runId, { at: Date.now(), value });
    return value;
  }

  private async describe(runs: Obj[], projectId: string) {
    const ids = runs.map((r) => r.id);
    const [metas, jobs] = await Promise.all([this.repo.metas(ids), this.repo.latestJobs(ids)]);
    const datasetIds = [...new Set([...metas.values()].map((m) => m.dataset_id).filter(Boolean))] as string[];
    // Rank among every experiment of the project over the same dataset.
    const rankOf = new Map<string, { rank: number | null; winner: boolean; score: number | null }>();
    for (const d of datasetIds) {
      const peers = await this.repo.ofDataset(projectId, d);
      const scores = new Map<string, number | null>();
      for (const p of peers) scores.set(p, (await this.summaryOf(p)).ranking);
      for (const [id, r] of ranks(scores)) rankOf.set(id, { ...r, score: scores.get(id) ?? null });
    }
    const out = [];
    for (const r of runs) {
      const m = metas.get(r.id);
      const job = jobs.get(r.id);
      const summary = await this.summaryOf(r.id);
      const settings = (m?.prompt_settings ??
        (job?.request_data as Obj)?.prompt_settings ??
        null) as Obj | null;
      const pv = m?.prompt_template_version_id
        ? await this.repo.promptVersion(m.prompt_template_version_id)
        : null;
      const rk = rankOf.get(r.id);
      out.push({
        ...r,
        num_samples: summary.rows,
        task_type: m?.task_type ?? EXPERIMENT_TASK_TYPE,
        dataset: m?.dataset_id
          ? {
              dataset_id: m.dataset_id,
              version_index: m.dataset_version_index,
              name: await this.datasetName(m.dataset_id),
            }
          : null,
        aggregate_metrics: summary.aggregate,
        ranking_score: rk?.score ?? null,
        rank: rk?.rank ?? null,
        winner: rk?.winner ?? false,
        playground_id: null,
        playground: null,
        prompt_run_settings: settings,
        prompt_model: (settings?.model_alias as string | undefined) ?? null,
        prompt: pv
          ? {
              prompt_template_id: pv.template_id,
              version_index: Number(pv.version),
              name: pv.name,
              content: pv.template,
            }
          : null,
        tags: this.tagsByKey(r.id, projectId, (m?.tags ?? []) as Obj[]),
        status: {
          log_generation: { progress_percent: job ? jobView(job).progress_percent : summary.rows ? 100 : 0 },
        },
        job: job ? jobView(job) : null,
      });
    }
    return out;
  }

  private readonly datasetNames = new Map<string, string | null>();
  private async datasetName(id: string): Promise<string | null> {
    if (!this.datasetNames.has(id)) this.datasetNames.set(id, await this.repo.datasetName(id));
    return this.datasetNames.get(id) ?? null;
  }

  private tagsByKey(runId: string, projectId: string, tags: Obj[]) {
    // No prototype: a tag key may be any text, 'constructor' or '__proto__' included.
    const out: Record<string, Obj[]> = Object.create(null);
    for (const t of tags) {
      out[t.key] ??= [];
      out[t.key].push({ ...t, run_id: runId, project_id: projectId });
    }
    return out;
  }

  async get(caller: Caller, projectId: string, runId: string) {
    const run = await this.runs.get(caller, projectId, runId, 'experiment');
    return (await this.describe([run], projectId))[0];
  }

  async list(caller: Caller, projectId: string) {
    return this.describe(await this.runs.list(caller, projectId, 'experiment'), projectId);
  }

  async paginated(caller: Caller, projectId: string, page: { starting_token: number; limit: number }) {
    const all = await this.runs.list(caller, projectId, 'experiment');
    const slice = all.slice(page.starting_token, page.starting_token + page.limit);
    const more = page.starting_token + page.limit < all.length;
    return {
      starting_token: page.starting_token,
      limit: page.limit,
      paginated: more,
      next_starting_token: more ? page.starting_token + page.limit : null,
      experiments: await this.describe(slice, projectId),
    };
  }

  async update(
    caller: Caller,
    projectId: string,
    runId: string,
    body: { name?: string; task_type?: number },
  ) {
    await this.projects.access(caller, projectId, 'editor');
    rejectUnstorable(['body'], body);
    await this.runs.get(caller, projectId, runId, 'experiment');
    if (body.name !== undefined) {
      const others = await this.runs.list(caller, projectId, 'experiment');
      if (others.some((r) => r.name === body.name && r.id !== runId))
        throw conflict(`An experiment named '${body.name}' already exists in this project`);
      await this.repo.renameRun(runId, body.name, nowUs());
    }
    if (body.task_type !== undefined) await this.repo.updateMeta(runId, { task_type: body.task_type });
    return this.get(caller, projectId, runId);
  }

  async delete(caller: Caller, projectId: string, runId: string) {
    await this.projects.access(caller, projectId, 'editor');
    await this.runs.get(caller, projectId, runId, 'experiment');
    for (const j of await this.repo.jobsOfRun(runId))
      if (j.status === 'pending' || j.status === 'processing') await this.cancelRow(j);
    await this.repo.deleteOf(runId);
    await this.runs.delete(caller, projectId, runId);
    this.summaries.delete(runId);
  }

  // ---- tags ---------------------------------------------------------------------------------------

  private async metaFor(caller: Caller, projectId: string, runId: string, role: 'viewer' | 'editor') {
    await this.projects.access(caller, projectId, role);
    await this.runs.get(caller, projectId, runId, 'experiment');
    const m = await this.repo.meta(runId);
    if (m) return m;
    // An experiment created before migration 029 (or by the plain run route): give it its row.
    const fresh: ExperimentMeta = {
      run_id: runId,
      project_id: projectId,
      dataset_id: null,
      dataset_version_index: null,
      prompt_template_version_id: null,
      prompt_settings: null,
      task_type: EXPERIMENT_TASK_TYPE,
      tags: [],
    };
    // Two requests may both find none; a concurrent delete may remove the run meanwhile.
    if (!(await this.repo.ensureMeta(fresh))) throw notFound('Experiment');
    return (await this.repo.meta(runId)) ?? fresh;
  }

  async tags(caller: Caller, projectId: string, runId: string) {
    const m = await this.metaFor(caller, projectId, runId, 'viewer');
    return (m.tags as Obj[]).map((t) => ({ ...t, run_id: runId, project_id: projectId }));
  }

  async putTag(
    caller: Caller,
    projectId: string,
    runId: string,
    tagId: string | null,
    body: { key: string; value: string; tag_type?: string },
  ) {
    rejectUnstorable(['body'], body);
    const m = await this.metaFor(caller, projectId, runId, 'editor');
    const tags = [...(m.tags as (ExperimentTag & Obj)[])];
    const now = toIso(nowUs());
    let i = tagId ? tags.findIndex((t) => t.id === tagId) : tags.findIndex((t) => t.key === body.key);
    if (tagId && i < 0) throw notFound('Tag');
    if (i < 0) {
      if (tags.length >= 100) throw valueError(['body'], 'An experiment has at most 100 tags');
      tags.push({
        id: newId(),
        key: body.key,
        value: body.value,
        tag_type: body.tag_type ?? 'generic',
        created_by: caller.id,
        created_at: now,
        updated_at: now,
      });
      i = tags.length - 1;
    } else
      tags[i] = {
        ...tags[i],
        key: body.key,
        value: body.value,
        tag_type: body.tag_type ?? tags[i].tag_type,
        updated_at: now,
      };
    await this.repo.updateMeta(runId, { tags });
    return { ...tags[i], run_id: runId, project_id: projectId };
  }

  async deleteTag(caller: Caller, projectId: string, runId: string, tagId: string) {
    const m = await this.metaFor(caller, projectId, runId, 'editor');
    const tags = (m.tags as Obj[]).filter((t) => t.id !== tagId);
    if (tags.length === (m.tags as Obj[]).length) throw notFound('Tag');
    await this.repo.updateMeta(runId, { tags });
  }

  // ---- metrics and comparison ---------------------------------------------------------------------

  async metrics(caller: Caller, projectId: string, runId: string, body?: MetricsBody) {
    refuseFilters(body);
    await this.runs.get(caller, projectId, runId, 'experiment');
    return { metrics: (await this.summaryOf(runId)).metrics };
  }

  /** Metrics over every experiment of the project (rows of all of them together). */
  async projectMetrics(caller: Caller, projectId: string, body?: MetricsBody) {
    refuseFilters(body);
    const ids = body?.experiment_ids;
    const runs = await this.runs.list(caller, projectId, 'experiment');
    const chosen = ids?.length ? runs.filter((r) => ids.includes(r.id)) : runs;
    return { metrics: (await this.summarize(chosen.map((r) => r.id))).metrics };
  }

  /** The columns experiments can be read by: their scores, cost and latency. */
  async availableColumns(caller: Caller, projectId: string) {
    const runs = await this.runs.list(caller, projectId, 'experiment');
    const names = new Set<string>();
    for (const m of (await this.summarize(runs.slice(0, 200).map((r) => r.id))).metrics)
      if (m.name !== 'cost' && m.name !== 'latency_ms') names.add(m.name);
    const col = (id: string, label: string, data_type: string, category: string) => ({
      id,
      label,
      category,
      data_type,
      filterable: true,
      sortable: true,
      is_empty: false,
      applicable_types: [],
      complex: false,
    });
    return {
      columns: [
        col('name', 'Name', 'text', 'standard'),
        col('created_at', 'Created', 'timestamp', 'standard'),
        col('num_samples', 'Rows', 'integer', 'standard'),
        col('average_cost', 'Average cost', 'floating_point', 'metric'),
        col('average_latency_ms', 'Average latency (ms)', 'floating_point', 'metric'),
        ...[...names].sort().map((n) => col(`average_${n}`, n, 'floating_point', 'metric')),
      ],
    };
  }

  /**
   * Two or more experiments side by side, aligned by dataset row: input, ground truth, each
   * experiment's output, scores and trace; rows whose outputs or scores differ are marked. Sorted by
   * dataset row, or by the difference of one score (largest first).
   */
  async compare(
    caller: Caller,
    projectId: string,
    ids: string[],
    opts: { sort_by?: string; starting_token: number; limit: number },
  ) {
    if (ids.length < 2) throw valueError(['query', 'experiment_ids'], 'Name at least two experiments');
    const exps = [];
    for (const id of ids) exps.push(await this.runs.get(caller, projectId, id, 'experiment'));
    const metas = await this.repo.metas(ids);
    const datasets = new Set(ids.map((id) => metas.get(id)?.dataset_id ?? null));
    if (datasets.size > 1 || datasets.has(null))
      throw valueError(['query', 'experiment_ids'], 'The experiments must run over the same dataset');
    const summaries = await Promise.all(ids.map((id) => this.summaryOf(id)));
    const scoreNames = new Set<string>();
    for (const sm of summaries)
      for (const m of sm.metrics) if (m.name !== 'cost' && m.name !== 'latency_ms') scoreNames.add(m.name);
    const sortBy = opts.sort_by;
    if (sortBy && !scoreNames.has(sortBy)) throw valueError(['query', 'sort_by'], `No score named ${sortBy}`);
    // One query: the page of rows (by dataset row), joined to each experiment's trace and llm span.
    const page = await this.repo.comparePage(ids, {
      sortBy,
      offset: opts.starting_token,
      limit: opts.limit,
    });
    const traceRun = new Map<string, string>();
    const traceKey = new Map<string, string>();
    for (const r of page.records)
      if (r.type === 'trace') {
        traceRun.set(r.id, r.run_id);
        traceKey.set(r.id, r.row_key as string);
      }
    // Per row and experiment, its latest trace (a row logged twice shows its last answer).
    const cells = new Map<string, (RowCell | null)[]>();
    for (const res of rowResults(page.records)) {
      const key = traceKey.get(res.trace_id) as string;
      const e = ids.indexOf(traceRun.get(res.trace_id) as string);
      let row = cells.get(key);
      if (!row) {
        row = ids.map(() => null);
        cells.set(key, row);
      }
      const cur = row[e];
      if (!cur || cur.created_at <= res.created_at) row[e] = res;
    }
    const rows = page.keys.map(({ key, index }) => {
      const cs = cells.get(key) ?? ids.map(() => null);
      const first = cs.find((c) => c !== null) ?? null;
      const outputs = new Set(cs.map((c) => c?.output ?? null));
      const diff: Record<string, number | null> = {};
      for (const n of scoreNames) {
        const vs = cs.map((c) => c?.scores[n]).filter((v): v is number => typeof v === 'number');
        diff[n] = vs.length >= 2 ? Math.max(...vs) - Math.min(...vs) : null;
      }
      return {
        row_id: key,
        index,
        input: first?.input ?? null,
        ground_truth: first?.ground_truth ?? null,
        outputs_differ: outputs.size > 1,
        scores_differ: Object.values(diff).some((d) => d !== null && d > 0),
        score_differences: diff,
        cells: cs.map((c) =>
          c
            ? {
                trace_id: c.trace_id,
                output: c.output,
                error: c.error,
                scores: c.scores,
                cost: c.cost,
                latency_ms: c.latency_ms,
              }
            : null,
        ),
      };
    });
    const next = opts.starting_token + opts.limit < page.total ? opts.starting_token + opts.limit : null;
    return {
      experiments: exps.map((e, i) => ({ id: e.id, name: e.name, metrics: summaries[i].metrics })),
      score_names: [...scoreNames].sort(),
      total_rows: page.total,
      starting_token: opts.starting_token,
      limit: opts.limit,
      next_starting_token: next,
      rows,
    };
  }

  // ---- jobs ---------------------------------------------------------------------------------------

  /** POST /v2/jobs: records the job, freezes what it runs, and enqueues it. */
  async createJob(caller: Caller, body: CreateJob) {
    if (body.job_name !== PLAYGROUND_RUN)
      throw valueError(['body', 'job_name'], `Spanbase runs only '${PLAYGROUND_RUN}' jobs`);
    const projectId = body.project_id;
    await this.projects.access(caller, projectId, 'editor');
    rejectUnstorable(['body'], body);
    const run = await this.runs.get(caller, projectId, body.run_id, 'experiment');
    const m = await this.metaFor(caller, projectId, run.id, 'editor');
    const versionId = body.prompt_template_version_id ?? m.prompt_template_version_id;
    if (!versionId)
      throw valueError(['body', 'prompt_template_version_id'], 'Name a prompt template version');
    const pv = await this.repo.promptVersion(versionId);
    if (!pv) throw valueError(['body', 'prompt_template_version_id'], 'No such prompt template version');
    await this.templates.get(caller, null, pv.template_id).catch(() => {
      throw valueError(['body', 'prompt_template_version_id'], 'No such prompt template version');
    });
    const datasetId = body.dataset_id ?? m.dataset_id;
    if (!datasetId) throw valueError(['body', 'dataset_id'], 'Name a dataset');
    const ds = await this.datasets.get(caller, datasetId).catch(() => null);
    if (!ds) throw valueError(['body', 'dataset_id'], 'No such dataset');
    const datasetVersion =
      body.dataset_version_index ??
      (m.dataset_id === datasetId && m.dataset_version_index !== null
        ? m.dataset_version_index
        : ds.current_version_index);
    const settings: Obj = { ...(JSON.parse(pv.settings) as Obj), ...(body.prompt_settings ?? {}) };
    const { integrationId, model } = await this.chooseModel(
      caller,
      body.integration_id ?? settings.integration_id,
      settings.model_alias,
    );
    if (body.scorers?.length)
      await this.scoring.saveSettings(caller, projectId, run.id, { scorers: body.scorers });
    const total = Math.min(ds.num_rows, MAX_EXPERIMENT_ROWS);
    const now = nowUs();
    const id = newId();
    const frozen: Frozen = {
      jobId: id,
      projectId,
      runId: run.id,
      callerId: caller.id,
      datasetId,
      datasetVersion,
      template: JSON.parse(pv.template),
      integrationId,
      model,
      temperature: typeof settings.temperature === 'number' ? settings.temperature : undefined,
      maxTokens: typeof settings.max_tokens === 'number' ? settings.max_tokens : undefined,
      concurrency: Math.max(1, Math.min(MAX_CONCURRENCY, body.concurrency ?? DEFAULT_EXPERIMENT_CONCURRENCY)),
    };
    const request_data = {
      prompt_template_version_id: versionId,
      dataset_id: datasetId,
      dataset_version_index: datasetVersion,
      prompt_settings: settings,
      scorers: body.scorers ?? [],
      task_type: body.task_type ?? EXPERIMENT_TASK_TYPE,
      integration_id: integrationId,
      model,
      concurrency: frozen.concurrency,
    };
    await this.repo.insertJob({
      id,
      job_name: PLAYGROUND_RUN,
      project_id: projectId,
      run_id: run.id,
      status: 'pending',
      request_data,
      created_by: caller.id,
      error_message: null,
      progress_message: 'Queued',
      steps_completed: 0,
      steps_total: total,
      failed_rows: 0,
      retries: 0,
      created_at: now,
      updated_at: now,
      processing_started: null,
      completed_at: null,
      failed_at: null,
    });
    await this.repo.updateMeta(run.id, {
      dataset_id: datasetId,
      dataset_version_index: datasetVersion,
      prompt_template_version_id: versionId,
      prompt_settings: settings,
    });
    await this.queue.enqueue([
      { kind: EXPERIMENT_JOB, key: id, projectId, runId: run.id, payload: frozen, maxAttempts: 5 },
    ]);
    return {
      project_id: projectId,
      run_id: run.id,
      job_id: id,
      job_name: PLAYGROUND_RUN,
      message: `Experiment job queued: ${total} rows`,
      resource_limits: null,
    };
  }

  /** The integration and model a job calls: the one named, else the caller's of a kind that has the model. */
  private async chooseModel(caller: Caller, integrationId: unknown, alias: unknown) {
    const wanted = typeof alias === 'string' && alias ? alias : null;
    if (typeof integrationId === 'string' && integrationId) {
      if (!(await this.integrations.canSee(caller, integrationId)))
        throw valueError(['body', 'integration_id'], 'No such integration');
      const models = await this.llmIntegrations.models(caller, integrationId).catch(() => []);
      const model = wanted ?? models[0];
      if (!model) throw valueError(['body', 'prompt_settings', 'model_alias'], 'Name a model');
      return { integrationId, model };
    }
    let fallback: { integrationId: string; model: string } | null = null;
    for (const kind of MODEL_KINDS) {
      const id = await this.integrations.idOfKind(caller, kind);
      if (!id) continue;
      const models = await this.llmIntegrations.models(caller, id).catch(() => [] as string[]);
      if (wanted && models.includes(wanted)) return { integrationId: id, model: wanted };
      fallback ??= models[0] ? { integrationId: id, model: wanted ?? models[0] } : null;
    }
    if (!fallback)
      throw valueError(
        ['body', 'prompt_settings'],
        'You have no model integration to run the experiment with',
      );
    return fallback;
  }

  private async jobFor(caller: Caller, id: string) {
    const j = await this.repo.job(id);
    if (!j) throw notFound('Job');
    await this.runs.resolve(caller, j.project_id, j.run_id).catch(() => {
      throw notFound('Job');
    });
    return j;
  }

  async getJob(caller: Caller, id: string) {
    return jobView(await this.jobFor(caller, id));
  }

  async jobsOfRun(caller: Caller, projectId: string, runId: string, status?: string) {
    await this.runs.resolve(caller, projectId, runId);
    return (await this.repo.jobsOfRun(runId, status)).map(jobView);
  }

  async latestJob(caller: Caller, projectId: string, runId: string) {
    await this.runs.resolve(caller, projectId, runId);
    const j = (await this.repo.jobsOfRun(runId))[0];
    if (!j) throw notFound('Job');
    return jobView(j);
  }

  /** Cancels a pending or running job (editors): its worker stops before the next row. */
  async cancelJob(caller: Caller, id: string) {
    const j = await this.jobFor(caller, id);
    await this.projects.access(caller, j.project_id, 'editor');
    await this.cancelRow(j);
    return jobView((await this.repo.job(id)) as ExperimentJobRow);
  }

  private async cancelRow(j: ExperimentJobRow) {
    const now = nowUs();
    await this.repo.moveJob(j.id, ['pending', 'processing'], {
      status: 'cancelled',
      progress_message: 'Cancelled',
      updated_at: now,
      failed_at: now,
    });
  }

  // ---- the worker ---------------------------------------------------------------------------------

  private async fail(jobId: string, message: string): Promise<JobAnswer> {
    const now = nowUs();
    await this.repo.moveJob(jobId, ['pending', 'processing'], {
      status: 'failed',
      error_message: message,
      progress_message: 'Failed',
      updated_at: now,
      failed_at: now,
    });
    return { status: 'failed', reason: message };
  }

  /** Runs the rows of one job that have no trace yet; answers when all are done, or it stops. */
  async runJob(job: Job, signal: AbortSignal): Promise<JobAnswer> {
    const f = job.payload as Frozen;
    const row = await this.repo.job(f.jobId);
    if (!row || row.status === 'cancelled' || row.status === 'completed' || row.status === 'failed')
      return { status: 'done', result: { skipped: row?.status ?? 'gone' } };
    const user = (await this.users.byIds([f.callerId]))[0];
    if (!user) return this.fail(f.jobId, 'The user who started the experiment no longer exists');
    const caller = toCaller(user);
    const now = nowUs();
    await this.repo.moveJob(f.jobId, ['pending', 'processing'], {
      status: 'processing',
      progress_message: 'Running rows',
      processing_started: row.processing_started ?? now,
      retries: Math.max(0, job.attempts - 1),
      updated_at: now,
    });
    // The dataset version's rows (its id, position, values), read in pages.
    const rows: { row_id: string; index: number; values_dict: Obj }[] = [];
    try {
      let offset: number | null = 0;
      while (offset !== null && rows.length < MAX_EXPERIMENT_ROWS) {
        const page: Awaited<ReturnType<DatasetsService['rows']>> = await this.datasets.rows(
          caller,
          f.datasetId,
          {
            offset,
            limit: 1000,
            version: f.datasetVersion,
          },
        );
        rows.push(...page.rows);
        offset = page.next_offset;
      }
    } catch (err) {
      return this.fail(f.jobId, `The dataset cannot be read: ${(err as Error).message}`);
    }
    const ids = rows.map((r) => rowTraceId(f.jobId, r.row_id));
    const done = await this.repo.existingTraces(f.runId, ids);
    let completed = done.size;
    let failed = row.failed_rows;
    await this.repo.updateJob(f.jobId, {
      steps_total: rows.length,
      steps_completed: completed,
      updated_at: nowUs(),
    });
    const todo = rows.map((r, i) => ({ r, id: ids[i] })).filter((x) => !done.has(x.id));
    let next = 0;
    let stop: string | null = null;
    let cancelled = false;
    let lastCheck = Date.now();
    // Finished rows' traces are written in batches, off the workers' path: a worker calls its next
    // row while earlier rows are written (one ingest transaction per batch instead of per row). A
    // row counts as done once its trace is written; a restart re-runs rows whose write had not.
    const unwritten: { trace: Obj; failed: boolean }[] = [];
    let writing: Promise<void> | null = null;
    let writeError: unknown = null;
    // Never rejects: a failed write is kept in writeError, and the job attempt throws it at the end.
    const write = async () => {
      while (unwritten.length && writeError === null) {
        const batch = unwritten.splice(0, WRITE_BATCH);
        try {
          await this.ingest.traces(caller, f.projectId, {
            experiment_id: f.runId,
            traces: batch.map((b) => b.trace),
          });
          completed += batch.length;
          failed += batch.filter((b) => b.failed).length;
          // Progress and a cancel are written and read at most every PROGRESS_MS, not per row: with
          // many rows at once, a write per row competes with the rows' own trace writes.
          if (Date.now() - lastCheck > PROGRESS_MS) {
            lastCheck = Date.now();
            await this.repo.updateJob(f.jobId, {
              steps_completed: completed,
              failed_rows: failed,
              progress_message: `${completed} of ${rows.length} rows`,
              updated_at: nowUs(),
            });
            const cur = await this.repo.job(f.jobId);
            if (!cur || cur.status === 'cancelled') cancelled = true;
          }
        } catch (err) {
          writeError = err;
        }
      }
    };
    const kick = () => {
      writing ??= write().finally(() => {
        writing = null;
        // Rows that arrived as the last batch finished.
        if (unwritten.length && writeError === null) kick();
      });
    };
    const worker = async () => {
      while (!stop && !cancelled && !signal.aborted && writeError === null && next < todo.length) {
        const { r, id } = todo[next++];
        const row = await this.runRow(f, r, id, signal);
        if (row === 'paused') {
          stop = 'The integration refused the credentials or is paused';
          return;
        }
        if (row === 'aborted') return;
        unwritten.push(row);
        kick();
        // Bounded: a worker waits while many rows are waiting to be written.
        while (unwritten.length >= 4 * WRITE_BATCH && writing) await writing;
      }
    };
    await Promise.all(Array.from({ length: Math.min(f.concurrency, Math.max(1, todo.length)) }, worker));
    // The rows called are written before the job says where it is.
    while (writing) await writing;
    if (writeError !== null) throw writeError;
    this.summaries.delete(f.runId);
    if (stop) return this.fail(f.jobId, stop);
    if (cancelled) return { status: 'done', result: { cancelled: true } };
    if (signal.aborted) return { status: 'retry', reason: 'stopped' };
    const end = nowUs();
    await this.repo.moveJob(f.jobId, ['processing', 'pending'], {
      status: 'completed',
      steps_completed: completed,
      failed_rows: failed,
      progress_message: failed
        ? `Done: ${failed} of ${rows.length} rows failed`
        : `Done: ${rows.length} rows`,
      completed_at: end,
      updated_at: end,
    });
    return { status: 'done', result: { rows: rows.length, failed } };
  }

  /** One row: render, call, and make its trace (with the error when the call failed). */
  private async runRow(
    f: Frozen,
    r: { row_id: string; index: number; values_dict: Obj },
    traceId: string,
    signal: AbortSignal,
  ): Promise<{ trace: Obj; failed: boolean } | 'paused' | 'aborted'> {
    const vars = variablesOfRow(r.values_dict);
    const messages: ChatMessage[] =
      typeof f.template === 'string'
        ? [{ role: 'user', content: renderTemplate(f.template, vars).text }]
        : f.template.map((m) => ({ role: m.role, content: renderTemplate(m.content, vars).text }));
    const started = Date.now();
    let text = '';
    let error: string | null = null;
    let tokensIn = 0;
    let tokensOut = 0;
    let cost: number | null = null;
    let latencyMs = 0;
    try {
      const out = await this.modelCalls.call({
        integrationId: f.integrationId,
        model: f.model,
        messages,
        temperature: f.temperature,
        maxTokens: f.maxTokens,
        purpose: 'experiment',
        projectId: f.projectId,
        runId: f.runId,
        signal,
      });
      text = out.choices[0]?.text ?? '';
      tokensIn = out.tokensIn;
      tokensOut = out.tokensOut;
      cost = out.costUsd;
      latencyMs = out.latencyMs;
    } catch (err) {
      if (signal.aborted) return 'aborted';
      if (!(err instanceof ModelCallError)) throw err;
      if (err.pauses) return 'paused';
      error = `${err.kind}: ${err.message}`;
      latencyMs = Date.now() - started;
    }
    const input =
      typeof r.values_dict.input === 'string'
        ? r.values_dict.input
        : JSON.stringify(r.values_dict.input ?? vars);
    const truth = r.values_dict.output ?? r.values_dict.ground_truth;
    const durationNs = Math.round(latencyMs * 1e6);
    const createdAt = new Date(started).toISOString();
    const trace: Obj = {
      id: traceId,
      type: 'trace',
      name: 'experiment row',
      input,
      output: text,
      created_at: createdAt,
      metrics: { duration_ns: durationNs },
      dataset_input: input,
      ...(truth !== undefined && truth !== null
        ? { dataset_output: typeof truth === 'string' ? truth : JSON.stringify(truth) }
        : {}),
      dataset_metadata: {
        dataset_id: f.datasetId,
        dataset_version_index: f.datasetVersion,
        dataset_row_id: r.row_id,
        dataset_row_index: r.index,
      },
      status_code: error ? 500 : 200,
      ...(error ? { error_message: error } : {}),
      spans: [
        {
          id: rowTraceId(f.jobId, r.row_id, 'llm'),
          type: 'llm',
          name: f.model,
          input: messages,
          output: { role: 'assistant', content: text },
          model: f.model,
          created_at: createdAt,
          metrics: {
            duration_ns: durationNs,
            num_input_tokens: tokensIn,
            num_output_tokens: tokensOut,
            ...(cost !== null ? { cost } : {}),
          },
          status_code: error ? 500 : 200,
          ...(error ? { error_message: error } : {}),
          dataset_input: input,
          ...(truth !== undefined && truth !== null
            ? { dataset_output: typeof truth === 'string' ? truth : JSON.stringify(truth) }
            : {}),
        },
      ],
    };
    return { trace, failed: error !== null };
  }
}
