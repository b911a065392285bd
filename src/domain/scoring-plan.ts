/**
 * Which scorers score a record, and why not when they do not: node types, the scorer's filters (node
 * name, metadata), and the run's segment filters with their sample rates. Sampling is deterministic
 * by record id (sha256 of a salt and the id, as Langfuse and Phoenix do), so a record is sampled the
 * same way on every write, in every process, and in a backfill.
 */
import { createHash } from 'node:crypto';
import type { RecordRow } from './records.ts';
import type { ActiveScorer, RunScoring, ScoreView, ScorerFilter, SegmentFilter } from './scorer-types.ts';

export type { ScoreView };
import { evaluateRule } from './scorer-rules.ts';
import { bleu, rouge } from './text-overlap.ts';

function parse(v: unknown): Record<string, any> {
  if (v === null || v === undefined) return {};
  return typeof v === 'string' ? JSON.parse(v) : (v as Record<string, any>);
}

/** The fields of a row a view reads (as ingestion writes it, or as read back: JSON as text or parsed). */
interface ViewedRow {
  id: string;
  type: string;
  name: string;
  input_text: string | null;
  output_text: string | null;
  user_metadata: unknown;
  body: unknown;
  duration_ns: number | null;
  metrics: unknown;
}

/**
 * A row's view, its JSON parts parsed when first read: ingestion views every row it scores, and most
 * rules read only the output. A class rather than an object literal with getters, which V8 builds
 * slowly (its getters and their closures made anew for every row).
 */
class RowView implements ScoreView {
  readonly id: string;
  readonly type: string;
  readonly name: string;
  readonly input: string | null;
  readonly output: string | null;
  readonly durationNs: number | null;
  private gt: string | null | undefined = undefined;
  private meta: Record<string, any> | undefined = undefined;
  private c: number | null | undefined = undefined;

  constructor(private readonly row: ViewedRow) {
    this.id = row.id;
    this.type = row.type;
    this.name = row.name;
    this.input = row.input_text;
    this.output = row.output_text;
    this.durationNs = row.duration_ns === null ? null : Number(row.duration_ns);
  }

  get groundTruth(): string | null {
    if (this.gt === undefined) this.gt = parse(this.row.body).dout ?? null;
    return this.gt as string | null;
  }

  get metadata(): Record<string, any> {
    this.meta ??= parse(this.row.user_metadata);
    return this.meta;
  }

  get cost(): number | null {
    if (this.c === undefined) {
      const c = parse(this.row.metrics).cost;
      this.c = typeof c === 'number' ? c : null;
    }
    return this.c;
  }
}

/** The view of a row (as ingestion writes it, or as read back: JSON as text or parsed). */
export function viewOf(row: ViewedRow): ScoreView {
  return new RowView(row);
}

const SALT = 'spanbase:scoring-sampling:v1:';

/** A record id's place in [0, 1): it is sampled at rate r when below r. */
export function samplePoint(id: string): number {
  const h = createHash('sha256')
    .update(SALT + id)
    .digest();
  return h.readUIntBE(0, 6) / 2 ** 48;
}

export function filterMatches(f: ScorerFilter, v: ScoreView): boolean {
  if (f.name === 'node_name') {
    const cs = f.case_sensitive !== false;
    const name = cs ? v.name : v.name.toLowerCase();
    const val = cs ? f.value : f.value.toLowerCase();
    if (f.operator === 'eq') return name === val;
    if (f.operator === 'ne') return name !== val;
    return name.includes(val);
  }
  const raw = v.metadata[f.key];
  const have = raw === undefined || raw === null ? null : String(raw);
  const values = Array.isArray(f.value) ? f.value : [f.value];
  const hit = have !== null && values.includes(have);
  return f.operator === 'eq' || f.operator === 'one_of' ? hit : !hit;
}

function describe(f: ScorerFilter): string {
  if (f.name === 'node_name') return `node name ${f.operator} "${f.value}"`;
  return `metadata ${f.key} ${f.operator} ${JSON.stringify(f.value)}`;
}

export type Decision =
  | { state: 'score' }
  /** Not meant for this record type: no entry at all. */
  | { state: 'skip' }
  | { state: 'not_computed'; reason: string };

/** Whether `s` scores the record, and the reason when it does not. */
export function decide(s: ActiveScorer, v: ScoreView, segments: SegmentFilter[]): Decision {
  if (!s.nodeTypes.includes(v.type)) return { state: 'skip' };
  for (const f of s.filters)
    if (!filterMatches(f, v)) return { state: 'not_computed', reason: `filtered out (${describe(f)})` };
  for (const seg of segments) {
    if (seg.llm_scorers && s.kind !== 'llm') continue;
    if (seg.filter && !filterMatches(seg.filter, v)) continue;
    if (samplePoint(v.id) >= seg.sample_rate)
      return { state: 'not_computed', reason: `sampled out (sample rate ${seg.sample_rate})` };
    break;
  }
  return { state: 'score' };
}

export type InlineOutcome = { value: number } | { notApplicable: string };

/** The score of a scorer computed in code (rules, bleu, rouge). */
export function scoreInline(s: ActiveScorer, v: ScoreView): InlineOutcome {
  if (s.rule) return evaluateRule(s.rule, v);
  if (v.output === null) return { notApplicable: 'the record has no output' };
  if (v.groundTruth === null) return { notApplicable: 'the record has no ground truth' };
  return { value: s.code === 'bleu' ? bleu(v.output, v.groundTruth) : rouge(v.output, v.groundTruth) };
}

/**
 * Ingestion's hook (domain/ingest-plan.ts): writes the inline scores of a row into its metrics JSON,
 * and removes an inline score the row no longer gets. Answers the row's metrics as now written
 * (parsed, for the column catalogue) when they changed, null when they did not.
 */
export function applyInlineScores(
  row: RecordRow,
  scorers: ActiveScorer[],
  segments: SegmentFilter[],
): Record<string, number> | null {
  let view: ScoreView | null = null;
  let metrics: Record<string, number> | null = null;
  let changed = false;
  for (const s of scorers) {
    if (s.kind === 'llm' || !s.nodeTypes.includes(row.type)) continue;
    view ??= viewOf(row);
    metrics ??= parse(row.metrics) as Record<string, number>;
    const d = decide(s, view, segments);
    const out = d.state === 'score' ? scoreInline(s, view) : null;
    const value = out && 'value' in out ? out.value : undefined;
    if (metrics[s.name] === value) continue;
    if (value === undefined) delete metrics[s.name];
    else metrics[s.name] = value;
    changed = true;
  }
  if (!changed || !metrics) return null;
  row.metrics = Object.keys(metrics).length ? JSON.stringify(metrics) : null;
  return metrics;
}

/** The job kind of an LLM score task, and its attempts (the model-call module retries inside each). */
export const SCORE_JOB = 'score';
export const SCORE_ATTEMPTS = 4;

/** An LLM score task a written record needs: one per (record, scorer version), keyed so. */
export interface ScoreTask {
  recordId: string;
  scorerId: string;
  versionId: string;
  runId: string;
  /** Why it waits: queued, or its run's judges are paused. */
  reason: string;
}

/**
 * The LLM score tasks of a written row under its run's scorers: each LLM scorer whose node types,
 * filters and sampling take the row. A trace waits until it is complete (written again then).
 */
export function llmTasksOf(row: RecordRow, sc: RunScoring): ScoreTask[] {
  if (row.type === 'trace' && !row.is_complete) return [];
  const out: ScoreTask[] = [];
  let view: ScoreView | null = null;
  for (const s of sc.scorers) {
    if (s.kind !== 'llm' || !s.nodeTypes.includes(row.type)) continue;
    view ??= viewOf(row);
    if (decide(s, view, sc.segments).state !== 'score') continue;
    out.push({
      recordId: row.id,
      scorerId: s.id,
      versionId: s.versionId,
      runId: row.run_id,
      reason: waitReason(sc.pausedReason),
    });
  }
  return out;
}

/** Why an LLM task waits: queued, or its run's judges are paused (with the pause's cause). */
export function waitReason(pausedReason: string | null | undefined): string {
  return pausedReason ? `paused: ${pausedReason}` : 'queued';
}

/** A task as the job queue keeps it (store/jobs.ts NewJob). */
export function scoreJobOf(t: ScoreTask, projectId: string) {
  return {
    kind: SCORE_JOB,
    key: `${t.recordId}:${t.versionId}`,
    projectId,
    runId: t.runId,
    payload: { record_id: t.recordId, scorer_id: t.scorerId, version_id: t.versionId },
    maxAttempts: SCORE_ATTEMPTS,
  };
}

/** A task's `score_results` row while it waits (pending, with its reason). */
export function pendingResultOf(t: ScoreTask, projectId: string) {
  return {
    record_id: t.recordId,
    scorer_id: t.scorerId,
    project_id: projectId,
    run_id: t.runId,
    status: 'pending',
    reason: t.reason,
    info: {},
    cost: null,
    version_id: t.versionId,
  };
}

/**
 * Ingestion writes a write's LLM score tasks as one job of this kind per run (a batch): a row per
 * request, not two per task, so that judging costs ingestion little. The queue expands a batch into
 * its `score` jobs and pending results only when it has nothing else to run (services/score-worker.ts):
 * judges are far slower than ingestion, and a backlog waits as batches. Until then a task reads as
 * pending from its batch, found by the write's time (the batch's created_at is its records'
 * updated_at).
 */
export const SCORE_BATCH_JOB = 'score_batch';

/** A batch's payload: its tasks, grouped by scorer version (the record ids of each). */
export interface ScoreBatch {
  groups: { scorer_id: string; version_id: string; record_ids: string[] }[];
}

/** The batch jobs of a write's tasks: one per run. */
export function scoreBatchesOf(tasks: ScoreTask[], projectId: string, newKey: () => string) {
  const byRun = new Map<string, Map<string, ScoreBatch['groups'][number]>>();
  for (const t of tasks) {
    const groups = byRun.get(t.runId) ?? new Map<string, ScoreBatch['groups'][number]>();
    byRun.set(t.runId, groups);
    const g = groups.get(t.versionId) ?? { scorer_id: t.scorerId, version_id: t.versionId, record_ids: [] };
    groups.set(t.versionId, g);
    g.record_ids.push(t.recordId);
  }
  return [...byRun].map(([runId, groups]) => ({
    kind: SCORE_BATCH_JOB,
    key: newKey(),
    projectId,
    runId,
    payload: { groups: [...groups.values()] } satisfies ScoreBatch,
    maxAttempts: SCORE_ATTEMPTS,
  }));
}

/** A batch's tasks as (record id, scorer id) pairs. */
export function batchPairs(payload: ScoreBatch): [string, string][] {
  return payload.groups.flatMap((g) => g.record_ids.map((id): [string, string] => [id, g.scorer_id]));
}

/** The tasks of a batch job of `runId`. */
export function tasksOfBatch(payload: ScoreBatch, runId: string, reason: string): ScoreTask[] {
  return payload.groups.flatMap((g) =>
    g.record_ids.map((recordId) => ({
      recordId,
      scorerId: g.scorer_id,
      versionId: g.version_id,
      runId,
      reason,
    })),
  );
}

/**
 * What a run's status route counts of its inline scorers (rules, bleu, rouge): its records per type
 * and, per scorer name, the records holding a number under that name in their metrics.
 */
export interface InlineTallies {
  types: Map<string, number>;
  scored: Map<string, number>;
}
