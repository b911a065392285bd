/**
 * Signals runs: the scheduler (a leased job: one process ticks; UNIQUE(run, slot) makes each cron
 * slot one run even if two ever overlap), on-demand runs, what a run does, and the API's reads of
 * runs and signals. A run reads a bounded selection of the records since the previous run
 * (store/signal-runs.ts), reports the model-free findings, and when the configuration names an
 * integration and a model asks the model about a sample within a context budget, believing only
 * occurrences from that sample (domain/signal-runs.ts). Found signals merge into open ones they
 * repeat; those of the configured severities are notified.
 */
import type { Clock } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import {
  type FoundSignal,
  MAX_OCCURRENCES,
  type Occurrence,
  SIGNALS_SCHEMA,
  dueSlot,
  fitSample,
  higherSeverity,
  modelFreeFindings,
  readAnswer,
  severityRank,
  signalsPrompt,
} from '../domain/signal-runs.ts';
import { toIso } from '../domain/time.ts';
import { parseJson } from '../store/db.ts';
import type { Leases } from '../store/leases.ts';
import type { SignalRow, SignalRunRow, SignalRunsRepo } from '../store/signal-runs.ts';
import type { SignalsRepo } from '../store/signals.ts';
import type { SignalsConfigurationsTable } from '../store/tables.ts';
import type { Caller } from './auth.ts';
import { LeasedJob } from './leased-job.ts';
import type { ModelCallsService } from './model-calls.ts';
import type { Notifier } from './notifications.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';

export const SIGNALS_JOB = 'signals-scheduler';

export interface SignalRunsOptions {
  /** Records a run selects (errors, outliers, recent) at most. */
  selectLimit: number;
  /** A numeric score below this is low (a boolean score is low when false). */
  lowScoreBelow: number;
  /** Tokens of the sample sent to the model at most. */
  budgetTokens: number;
  /** The window of a log stream's first run. */
  firstWindowMs: number;
  /** A run left running this long by a process that stopped is taken up again. */
  staleMs: number;
  tickMs: number;
}

export const DEFAULT_SIGNAL_RUN_OPTIONS: SignalRunsOptions = {
  selectLimit: 200,
  lowScoreBelow: 0.5,
  budgetTokens: 24_000,
  firstWindowMs: 86_400_000,
  staleMs: 30 * 60_000,
  tickMs: 60_000,
};

const us = (ms: number) => ms * 1000;
const isoOrNull = (v: number | null) => (v === null ? null : toIso(Number(v)));

export class SignalRunsService {
  readonly job: LeasedJob;
  private draining: Promise<void> | null = null;

  constructor(
    private readonly repo: SignalRunsRepo,
    private readonly configs: SignalsRepo,
    private readonly runs: RunsService,
    private readonly projects: ProjectsService,
    private readonly notifier: Notifier,
    private readonly clock: Clock,
    leases: Leases,
    /** Signals reaches models only through the model-call module. */
    private readonly modelCalls: Pick<ModelCallsService, 'call'>,
    private readonly opts: SignalRunsOptions = DEFAULT_SIGNAL_RUN_OPTIONS,
  ) {
    this.job = new LeasedJob(SIGNALS_JOB, leases, opts.tickMs, async (signal) => {
      await this.tick();
      return signal.aborted ? 'stopped' : 'done';
    });
  }

  /** One scheduler pass: a run for each configuration's due slot, then every waiting run. */
  async tick(): Promise<void> {
    const now = this.clock.now();
    for (const c of await this.repo.scheduled()) {
      // Only slots after the configuration was saved, and after the last slot run.
      const after = Math.max(Number(c.updated_at) / 1000, ((await this.repo.lastSlot(c.run_id)) ?? 0) / 1000);
      const slot = dueSlot(
        {
          cron: c.schedule_cron,
          timezone: c.schedule_timezone,
          start_date: c.start_date,
          end_date: c.end_date,
        },
        now,
        after,
      );
      if (slot !== null) await this.enqueue(c, 'scheduled', us(slot), null);
    }
    await this.drain();
  }

  /** Runs every waiting run (claimed one at a time, so two processes never run the same). */
  drain(): Promise<void> {
    this.draining ??= (async () => {
      try {
        for (;;) {
          const waiting = await this.repo.waiting(us(this.clock.now() - this.opts.staleMs));
          if (!waiting.length) return;
          let ran = false;
          for (const r of waiting) {
            if (r.status === 'running') await this.repo.requeue(r.id, r.started_at);
            if (await this.repo.claim(r.id, us(this.clock.now()))) {
              ran = true;
              await this.execute(r);
            }
          }
          if (!ran) return;
        }
      } finally {
        this.draining = null;
      }
    })();
    return this.draining;
  }

  private async enqueue(
    c: SignalsConfigurationsTable,
    trigger: 'scheduled' | 'on_demand',
    endUs: number,
    by: string | null,
  ): Promise<SignalRunRow | null> {
    const last = await this.repo.lastWindowEnd(c.run_id);
    const row: SignalRunRow = {
      id: newId(),
      project_id: c.project_id,
      run_id: c.run_id,
      trigger,
      slot_time: trigger === 'scheduled' ? endUs : null,
      status: 'queued',
      window_start: Math.min(last ?? endUs - us(this.opts.firstWindowMs), endUs),
      window_end: endUs,
      model: c.model,
      integration_id: c.integration_id,
      records_read: 0,
      records_sampled: 0,
      tokens_in: 0,
      tokens_out: 0,
      cost: null,
      signals_found: 0,
      skipped_reason: null,
      error: null,
      created_by: by,
      created_at: us(this.clock.now()),
      started_at: null,
      finished_at: null,
    };
    return (await this.repo.insert(row)) ? row : null;
  }

  /** POST: a run now (editors), answered queued; it runs in the background. */
  async startNow(caller: Caller, projectId: string, runId: string) {
    const run = await this.runs.resolve(caller, projectId, runId);
    await this.projects.access(caller, projectId, 'editor');
    const saved = await this.configs.byRun(run.id);
    const c: SignalsConfigurationsTable = saved ?? {
      id: '',
      project_id: run.project_id,
      run_id: run.id,
      run_mode: 'ON_DEMAND',
      schedule_type: 'CRON',
      schedule_cron: '0 0 * * *',
      schedule_timezone: 'UTC',
      start_date: null,
      end_date: null,
      scheduled_runs_enabled: 0,
      model: null,
      integration_id: null,
      focus_on: '',
      dont_focus_on: '',
      notification_severities: '[]',
      created_by: null,
      created_at: 0,
      updated_at: 0,
    };
    const row = (await this.enqueue(c, 'on_demand', us(this.clock.now()), caller.id))!;
    void this.drain();
    return { data: describeRun(row) };
  }

  private async execute(r: SignalRunRow): Promise<void> {
    const w = { runId: r.run_id, startUs: Number(r.window_start), endUs: Number(r.window_end) };
    const result: Partial<SignalRunRow> = {};
    try {
      const c = await this.configs.byRun(r.run_id);
      const figures = await this.repo.figures(w);
      const selected = await this.repo.select(w, this.opts.selectLimit, {
        names: await this.repo.scoreNames(r.run_id),
        below: this.opts.lowScoreBelow,
      });
      result.records_read = figures.records;
      const found: (FoundSignal & { sameAs?: string | null })[] = modelFreeFindings(figures, selected);
      const open = await this.repo.open(r.run_id, 50);
      result.status = 'succeeded';
      if (!c?.integration_id || !c.model) {
        result.skipped_reason =
          'No integration and model are configured: only the model-free findings were made';
      } else if (!selected.length) {
        result.skipped_reason = 'No records since the previous run';
      } else {
        const texts = await this.repo.texts(selected.map((s) => s.id));
        const sample = fitSample(
          selected.map((record) => ({ record, ...(texts.get(record.id) ?? { input: '', output: '' }) })),
          this.opts.budgetTokens,
        );
        result.records_sampled = sample.length;
        try {
          const out = await this.modelCalls.call({
            integrationId: c.integration_id,
            model: c.model,
            messages: signalsPrompt({
              sample,
              focusOn: c.focus_on,
              dontFocusOn: c.dont_focus_on,
              open: open.map((o) => ({
                id: o.id,
                title: o.title,
                severity: o.severity,
                occurrence_count: Number(o.occurrence_count),
              })),
              findings: found,
            }),
            temperature: 0,
            responseFormat: {
              type: 'json_schema',
              name: 'signals',
              schema: SIGNALS_SCHEMA as unknown as Record<string, unknown>,
            },
            purpose: 'signals',
            projectId: r.project_id,
            runId: r.run_id,
          });
          result.tokens_in = out.tokensIn;
          result.tokens_out = out.tokensOut;
          result.cost = out.costUsd;
          const answer = readAnswer(out.choices[0]?.text ?? '', sample);
          found.push(...answer.signals);
          if (answer.dropped.length)
            result.error = `Not believed: the model cited ${answer.dropped.length} record id(s) it was not shown (${answer.dropped.slice(0, 5).join(', ')})`;
        } catch (err) {
          result.status = 'partial';
          result.error = `The model step failed: ${err instanceof Error ? err.message : String(err)}`;
        }
      }
      const severities = parseJson<string[]>(c?.notification_severities) ?? [];
      result.signals_found = found.length;
      for (const f of found) {
        const { row, notify } = await this.keep(r, f, open);
        if (notify && severities.includes(row.severity))
          await this.notifier.notify(r.project_id, 'signal', signalEvent(row));
      }
    } catch (err) {
      result.status = 'failed';
      result.error = err instanceof Error ? err.message : String(err);
    }
    await this.repo.finish(r.id, { ...result, finished_at: us(this.clock.now()) });
  }

  /**
   * Keeps a found signal: merged into the open one it repeats (the id the model gave, or the same
   * fingerprint), else new. Notified when new or when its severity rose.
   */
  private async keep(
    r: SignalRunRow,
    f: FoundSignal & { sameAs?: string | null },
    open: SignalRow[],
  ): Promise<{ row: SignalRow; notify: boolean }> {
    const now = us(this.clock.now());
    const same = open.find((o) => o.id === f.sameAs) ?? open.find((o) => o.fingerprint === f.fingerprint);
    if (same) {
      const before = parseJson<Occurrence[]>(same.occurrences) ?? [];
      const seen = new Set(f.occurrences.map((o) => o.record_id));
      const occurrences = [...f.occurrences, ...before.filter((o) => !seen.has(o.record_id))].slice(
        0,
        MAX_OCCURRENCES,
      );
      const examples = [...f.examples, ...(parseJson<FoundSignal['examples']>(same.examples) ?? [])].slice(
        0,
        5,
      );
      const severity = higherSeverity(f.severity, same.severity);
      const fields: Partial<SignalRow> = {
        last_signal_run_id: r.id,
        observation: f.observation || same.observation,
        details: f.details || same.details,
        suggested_action: f.suggested_action || same.suggested_action,
        severity,
        occurrences: JSON.stringify(occurrences),
        examples: JSON.stringify(examples),
        occurrence_count: Number(same.occurrence_count) + f.count,
        runs_seen: Number(same.runs_seen) + (same.last_signal_run_id === r.id ? 0 : 1),
        last_seen: now,
        updated_at: now,
      };
      const rose = severityRank(f.severity) > severityRank(same.severity);
      await this.repo.updateSignal(same.id, fields);
      // Later findings of this run merge into the updated signal.
      Object.assign(same, fields);
      return { row: same, notify: rose };
    }
    const row: SignalRow = {
      id: newId(),
      project_id: r.project_id,
      run_id: r.run_id,
      first_signal_run_id: r.id,
      last_signal_run_id: r.id,
      fingerprint: f.fingerprint,
      source: f.source,
      title: f.title,
      observation: f.observation,
      details: f.details,
      suggested_action: f.suggested_action,
      severity: f.severity,
      occurrences: JSON.stringify(f.occurrences),
      examples: JSON.stringify(f.examples),
      occurrence_count: f.count,
      runs_seen: 1,
      status: 'open',
      first_seen: now,
      last_seen: now,
      updated_at: now,
    };
    await this.repo.insertSignal(row);
    open.push(row);
    return { row, notify: true };
  }

  async listRuns(caller: Caller, projectId: string, runId: string, limit: number, offset: number) {
    const run = await this.runs.resolve(caller, projectId, runId);
    const rows = await this.repo.list(run.id, limit + 1, offset);
    return {
      runs: rows.slice(0, limit).map(describeRun),
      next_starting_token: rows.length > limit ? offset + limit : null,
    };
  }

  async getRun(caller: Caller, projectId: string, runId: string, signalRunId: string) {
    const run = await this.runs.resolve(caller, projectId, runId);
    const row = await this.repo.get(signalRunId);
    if (!row || row.run_id !== run.id) throw notFound('Signals run');
    return describeRun(row);
  }

  async listSignals(
    caller: Caller,
    projectId: string,
    runId: string,
    f: {
      severity?: string[];
      status?: string[];
      signal_run_id?: string;
      limit: number;
      starting_token: number;
    },
  ) {
    const run = await this.runs.resolve(caller, projectId, runId);
    const rows = await this.repo.signals(
      run.id,
      { severities: f.severity, statuses: f.status, signalRunId: f.signal_run_id },
      f.limit + 1,
      f.starting_token,
    );
    return {
      signals: rows.slice(0, f.limit).map(describeSignal),
      next_starting_token: rows.length > f.limit ? f.starting_token + f.limit : null,
    };
  }

  async getSignal(caller: Caller, projectId: string, runId: string, signalId: string) {
    const run = await this.runs.resolve(caller, projectId, runId);
    const row = await this.repo.signal(signalId);
    if (!row || row.run_id !== run.id) throw notFound('Signal');
    return describeSignal(row);
  }

  /** PATCH: resolved, dismissed, or open again (editors). */
  async setStatus(caller: Caller, projectId: string, runId: string, signalId: string, status: string) {
    await this.getSignal(caller, projectId, runId, signalId);
    await this.projects.access(caller, projectId, 'editor');
    await this.repo.updateSignal(signalId, { status, updated_at: us(this.clock.now()) });
    return this.getSignal(caller, projectId, runId, signalId);
  }
}

export function describeRun(r: SignalRunRow) {
  return {
    id: r.id,
    project_id: r.project_id,
    run_id: r.run_id,
    trigger: r.trigger,
    slot_time: isoOrNull(r.slot_time),
    status: r.status,
    window_start: toIso(Number(r.window_start)),
    window_end: toIso(Number(r.window_end)),
    model: r.model,
    integration_id: r.integration_id,
    records_read: Number(r.records_read),
    records_sampled: Number(r.records_sampled),
    tokens_in: Number(r.tokens_in),
    tokens_out: Number(r.tokens_out),
    cost: r.cost === null ? null : Number(r.cost),
    signals_found: Number(r.signals_found),
    skipped_reason: r.skipped_reason,
    error: r.error,
    created_by: r.created_by,
    created_at: toIso(Number(r.created_at)),
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
  };
}

/** A signal, in the hosted InsightV2 field names where they fit, plus Spanbase's merge figures. */
export function describeSignal(s: SignalRow) {
  const occurrences = parseJson<Occurrence[]>(s.occurrences) ?? [];
  const examples = parseJson<{ record_id: string; narrative: string }[]>(s.examples) ?? [];
  const byId = new Map(occurrences.map((o) => [o.record_id, o]));
  return {
    id: s.id,
    project_id: s.project_id,
    run_id: s.run_id,
    source: s.source,
    title: s.title,
    observation: s.observation,
    details: s.details,
    suggested_action: s.suggested_action,
    severity: s.severity,
    priority_category: s.severity === 'LOW' ? 'info' : s.severity === 'MEDIUM' ? 'warning' : 'error',
    status: s.status,
    occurrence_count: Number(s.occurrence_count),
    runs_seen: Number(s.runs_seen),
    first_seen: toIso(Number(s.first_seen)),
    last_seen: toIso(Number(s.last_seen)),
    first_signal_run_id: s.first_signal_run_id,
    last_signal_run_id: s.last_signal_run_id,
    all_occurrences: occurrences.map((o) => ({
      record_id: o.record_id,
      record_type: o.type,
      session_id: o.session_id,
      trace_id: o.trace_id ?? (o.type === 'trace' ? o.record_id : null),
      span_id: o.type === 'trace' || o.type === 'session' ? null : o.record_id,
      created_at: toIso(Number(o.created_at)),
    })),
    example_occurrences: examples.map((e) => ({
      record_id: e.record_id,
      trace_id: byId.get(e.record_id)?.trace_id ?? null,
      example_narrative: e.narrative,
    })),
  };
}

export function signalEvent(s: SignalRow) {
  const d = describeSignal(s);
  return {
    event: 'signal',
    project_id: d.project_id,
    log_stream_id: d.run_id,
    signal: {
      id: d.id,
      title: d.title,
      severity: d.severity,
      observation: d.observation,
      suggested_action: d.suggested_action,
      occurrence_count: d.occurrence_count,
      first_seen: d.first_seen,
      last_seen: d.last_seen,
    },
  };
}
