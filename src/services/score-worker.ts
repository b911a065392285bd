/**
 * The score tasks of the job queue (kind `score`, one per record and scorer version, so each pair is
 * scored once however many processes share the database; ingestion writes them in batches, kind
 * `score_batch`, expanded here when the queue is idle): an LLM judge's verdict written into the
 * record's metrics under the scorer's name, its state, explanation, votes, cost and model into
 * `score_results` (read back as `metric_info`).
 *
 * What a task answers the queue:
 * - the run is paused, or a session is not yet quiet: `wait` (no attempt spent);
 * - a credential, billing, model or address error: the run's LLM scorers are paused with the reason
 *   (its tasks stay pending, none is claimed) until the integration changes or the settings are
 *   saved again;
 * - a placeholder resolving to nothing: `error` naming it, for good (retrying cannot fix the record);
 * - any other failure: `retry` until the attempts run out, then `failed` with the provider's error.
 */
import { nowUs } from '../domain/time.ts';
import { JudgeTemplateError } from '../domain/judge.ts';
import { metricValue } from '../domain/judge.ts';
import { SCORE_BATCH_JOB, viewOf } from '../domain/scoring-plan.ts';
import type { ActiveScorer } from '../domain/scorer-types.ts';
import type { Job } from '../store/jobs.ts';
import type { ResultRow, ScorersRepo } from '../store/scorers.ts';
import type { IngestService } from './ingest.ts';
import type { JobAnswer, JobQueue } from './job-queue.ts';
import type { JudgesService, Judgement } from './judges.ts';
import { ModelCallError } from './model-calls.ts';
import { SCORE_JOB, type ScoringService } from './scoring.ts';

type Obj = Record<string, any>;

/** How long a paused run's task waits before it is looked at again (a resume wakes it sooner). */
const PAUSED_WAIT_MS = 60_000;

/** How long a finished score job stays in the job table (its result row stays with the record). */
const FINISHED_KEPT_MS = 3600_000;

export interface ScoreWorkerOptions {
  /** A session is scored once nothing was written to it for this long. */
  quietMs: number;
  /** How often paused runs are checked for a fixed integration. */
  resumeCheckMs: number;
}

export class ScoreWorker {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly repo: ScorersRepo,
    private readonly scoring: ScoringService,
    private readonly judges: JudgesService,
    private readonly ingest: Pick<IngestService, 'writeScore'>,
    queue: JobQueue,
    private readonly opts: ScoreWorkerOptions,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    // A finished task's state is its `score_results` row (written for its scorer version), which
    // also keeps it from running again (ScoringService.writeTasks): its job is not needed after.
    queue.handle(SCORE_JOB, (job, signal) => this.run(job, signal), { pruneAfterMs: FINISHED_KEPT_MS });
    // Ingestion's batches of tasks become tasks only when the queue has none due (job-queue.ts).
    queue.handle(
      SCORE_BATCH_JOB,
      async (job) => ({ status: 'done', result: { queued: await this.scoring.expandBatch(job) } }),
      { whenIdle: true, pruneAfterMs: FINISHED_KEPT_MS },
    );
  }

  /** Looks for paused runs whose integration was fixed, every `resumeCheckMs`. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.scoring.resumeFixed().catch(this.onError);
    }, this.opts.resumeCheckMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async put(job: Job, scorerId: string, r: Omit<ResultRow, 'record_id' | 'scorer_id'>) {
    await this.repo.putResults(
      [
        {
          record_id: (job.payload as Obj).record_id as string,
          scorer_id: scorerId,
          version_id: (job.payload as Obj).version_id as string,
          project_id: job.projectId as string,
          run_id: job.runId as string,
          ...r,
        },
      ],
      nowUs(),
    );
  }

  async run(job: Job, signal: AbortSignal): Promise<JobAnswer> {
    const p = job.payload as Obj;
    const projectId = job.projectId as string;
    const runId = job.runId as string;
    const sc = (await this.scoring.forProject(projectId)).get(runId);
    const s = sc?.scorers.find((x) => x.id === p.scorer_id);
    if (!sc || !s || s.kind !== 'llm' || !s.llm) {
      await this.put(job, p.scorer_id, {
        status: 'not_computed',
        reason: 'the scorer is no longer enabled on this run',
        info: {},
        cost: null,
      });
      return { status: 'done' };
    }
    if (s.versionId !== p.version_id) {
      // The settings moved to another version since: that version's own task scores the record.
      return { status: 'done', result: { superseded: true } };
    }
    if (sc.pausedReason)
      return { status: 'wait', reason: `paused: ${sc.pausedReason}`, delayMs: PAUSED_WAIT_MS };
    const [row] = await this.repo.recordRows(projectId, [p.record_id]);
    if (!row) return { status: 'done', result: { deleted: true } };
    if (row.type === 'session') {
      const quietFor = (nowUs() - Number(row.updated_at)) / 1000;
      if (quietFor < this.opts.quietMs) {
        const delayMs = Math.ceil(this.opts.quietMs - quietFor);
        await this.put(job, s.id, {
          status: 'pending',
          reason: 'waiting for the session to be quiet',
          info: {},
          cost: null,
        });
        return { status: 'wait', reason: 'waiting for the session to be quiet', delayMs };
      }
    }
    if (!sc.integrationId) {
      await this.pause(job, s, 'no integration: whoever saves the scorer settings needs an LLM integration');
      return { status: 'wait', reason: 'paused: no integration', delayMs: PAUSED_WAIT_MS };
    }
    await this.repo.markComputing(row.id, s.id, `attempt ${job.attempts} of ${job.maxAttempts}`, nowUs());
    let verdict: Judgement;
    try {
      verdict = await this.judges.judge(s.llm, viewOf(row), {
        integrationId: sc.integrationId,
        projectId,
        runId,
        signal,
      });
    } catch (err) {
      // Stopped or lease lost: the queue drops this answer and the task is pending again as it was.
      if (signal.aborted) return { status: 'retry', reason: 'cancelled' };
      return this.failure(job, s, err);
    }
    if (verdict.value === null) {
      const reason = `every judge abstained (${verdict.judges.map((j) => j.vote.abstained).join('; ')})`;
      await this.put(job, s.id, { status: 'error', reason, info: infoOf(verdict), cost: verdict.cost });
      return { status: 'failed', reason };
    }
    const written = await this.ingest.writeScore(
      projectId,
      runId,
      row.id,
      s.name,
      metricValue(verdict.value),
    );
    // Never a success without its value on the record: the write did not see the record, try again.
    if (!written.found) return { status: 'retry', reason: 'the record was not readable by the score write' };
    await this.put(job, s.id, { status: 'success', reason: null, info: infoOf(verdict), cost: verdict.cost });
    return { status: 'done', result: { value: verdict.value } };
  }

  private async pause(job: Job, s: ActiveScorer, reason: string) {
    // The task's state first: whoever sees the run paused then finds its task saying why.
    await this.put(job, s.id, { status: 'pending', reason: `paused: ${reason}`, info: {}, cost: null });
    await this.scoring.pause(job.runId as string, reason);
  }

  private async failure(job: Job, s: ActiveScorer, err: unknown): Promise<JobAnswer> {
    if (err instanceof JudgeTemplateError) {
      await this.put(job, s.id, { status: 'error', reason: err.message, info: {}, cost: null });
      return { status: 'failed', reason: err.message };
    }
    if (err instanceof ModelCallError && err.pauses) {
      await this.pause(job, s, `${err.kind}: ${err.message}`);
      return { status: 'wait', reason: `paused: ${err.message}`, delayMs: PAUSED_WAIT_MS };
    }
    const msg = err instanceof Error ? err.message : String(err);
    if (job.attempts >= job.maxAttempts) {
      const reason = `${msg} (attempt ${job.attempts} of ${job.maxAttempts})`;
      await this.put(job, s.id, { status: 'failed', reason, info: {}, cost: null });
      return { status: 'failed', reason };
    }
    await this.put(job, s.id, {
      status: 'pending',
      reason: `retry ${job.attempts} of ${job.maxAttempts - 1}: ${msg}`,
      info: {},
      cost: null,
    });
    return { status: 'retry', reason: msg };
  }
}

/** What `metric_info` shows of a verdict besides the state. */
function infoOf(v: Judgement): Obj {
  const display =
    typeof v.value === 'number'
      ? Number.isInteger(v.value)
        ? String(v.value)
        : v.value.toFixed(3)
      : Array.isArray(v.value)
        ? v.value.join(', ')
        : v.value;
  return {
    value: v.value,
    display_value: display,
    explanation: v.explanation,
    rationale: v.explanation,
    num_judges: v.judges.length,
    abstained: v.abstained,
    votes: v.judges.map((j) => ({
      value: j.vote.value,
      explanation: j.vote.explanation,
      abstained: j.vote.abstained,
    })),
    cost: v.cost,
    model_alias: v.model,
    tokens_in: v.tokensIn,
    tokens_out: v.tokensOut,
  };
}
