/**
 * Alerts on a log stream: a rule is a metric with an aggregation (as a dashboard widget's, computed by
 * the same widget-cells store), a filter, a window, a comparison and a threshold. A leased job
 * evaluates every enabled rule each minute over the window ending then; a rule fires once when its
 * condition starts holding and recovers once when it stops (state moved under a condition, so a
 * transition is recorded and notified once), with its history kept.
 */
import { type Comparison, holds, transition } from '../domain/alerts.ts';
import { rejectUnstorable } from '../domain/text.ts';
import type { Clock } from '../domain/clock.ts';
import type { Aggregation } from '../domain/dashboards.ts';
import { type ErrorItem, ValidationError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { toIso } from '../domain/time.ts';
import { cellValue } from '../domain/widget-series.ts';
import { parseJson } from '../store/db.ts';
import type { AlertEventRow, AlertRuleRow, AlertsRepo } from '../store/alerts.ts';
import type { Leases } from '../store/leases.ts';
import type { MetricSpec, WidgetCellsStore } from '../store/widget-cells.ts';
import type { Caller } from './auth.ts';
import type { DashboardAccess } from './dashboard-access.ts';
import { type DashboardColumns, staticColumn, storedTree } from './dashboard-columns.ts';
import { LeasedJob } from './leased-job.ts';
import type { Notifier } from './notifications.ts';
import { addNeed, specKind } from './widget-data.ts';

export const ALERTS_JOB = 'alerts';
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const us = (ms: number) => ms * 1000;

export interface AlertInput {
  name: string;
  metric: string;
  aggregation: Aggregation;
  filter_tree?: unknown;
  window_minutes: number;
  comparison: Comparison;
  threshold: number;
  enabled?: boolean;
}

export type MetricInput = Pick<AlertInput, 'metric' | 'aggregation' | 'filter_tree' | 'window_minutes'>;

export class AlertsService {
  readonly job: LeasedJob;

  constructor(
    private readonly repo: AlertsRepo,
    private readonly access: DashboardAccess,
    private readonly columns: DashboardColumns,
    private readonly cells: WidgetCellsStore,
    private readonly notifier: Notifier,
    private readonly clock: Clock,
    leases: Leases,
    tickMs = MINUTE_MS,
  ) {
    this.job = new LeasedJob(ALERTS_JOB, leases, tickMs, async (signal) => {
      await this.evaluateAll(signal);
      return signal.aborted ? 'stopped' : 'done';
    });
  }

  async list(caller: Caller, projectId: string, logStreamId: string) {
    await this.access.logStream(caller, projectId, logStreamId, 'viewer');
    return { alerts: (await this.repo.list(logStreamId)).map(describeRule) };
  }

  async get(caller: Caller, projectId: string, logStreamId: string, id: string) {
    return describeRule(await this.rule(caller, projectId, logStreamId, id, 'viewer'));
  }

  async create(caller: Caller, projectId: string, logStreamId: string, input: AlertInput) {
    await this.access.logStream(caller, projectId, logStreamId, 'editor');
    await this.check(projectId, input);
    const now = us(this.clock.now());
    const row: AlertRuleRow = {
      id: newId(),
      project_id: projectId,
      run_id: logStreamId,
      name: input.name,
      metric: input.metric,
      aggregation: input.aggregation,
      filter_tree: input.filter_tree ? JSON.stringify(input.filter_tree) : null,
      window_minutes: input.window_minutes,
      comparison: input.comparison,
      threshold: input.threshold,
      enabled: input.enabled === false ? 0 : 1,
      state: 'ok',
      last_value: null,
      last_evaluated_at: null,
      created_by: caller.id,
      created_at: now,
      updated_at: now,
    };
    await this.repo.insert(row);
    return describeRule(row);
  }

  /** PATCH: the fields given replace the saved ones; a changed condition starts again from ok. */
  async update(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    id: string,
    patch: Partial<AlertInput>,
  ) {
    const row = await this.rule(caller, projectId, logStreamId, id, 'editor');
    const merged: AlertInput = {
      name: patch.name ?? row.name,
      metric: patch.metric ?? row.metric,
      aggregation: patch.aggregation ?? (row.aggregation as Aggregation),
      filter_tree: patch.filter_tree !== undefined ? patch.filter_tree : parseJson(row.filter_tree),
      window_minutes: patch.window_minutes ?? Number(row.window_minutes),
      comparison: patch.comparison ?? (row.comparison as Comparison),
      threshold: patch.threshold ?? Number(row.threshold),
      enabled: patch.enabled ?? Boolean(row.enabled),
    };
    await this.check(projectId, merged);
    const fields: Partial<AlertRuleRow> = {
      name: merged.name,
      metric: merged.metric,
      aggregation: merged.aggregation,
      filter_tree: merged.filter_tree ? JSON.stringify(merged.filter_tree) : null,
      window_minutes: merged.window_minutes,
      comparison: merged.comparison,
      threshold: merged.threshold,
      enabled: merged.enabled ? 1 : 0,
      updated_at: us(this.clock.now()),
    };
    await this.repo.update(id, fields);
    return describeRule({ ...row, ...fields });
  }

  async remove(caller: Caller, projectId: string, logStreamId: string, id: string) {
    await this.rule(caller, projectId, logStreamId, id, 'editor');
    await this.repo.delete(id);
  }

  async history(caller: Caller, projectId: string, logStreamId: string, id: string) {
    await this.rule(caller, projectId, logStreamId, id, 'viewer');
    return { events: (await this.repo.events(id, 200)).map(describeEvent) };
  }

  /**
   * The metric over the last day, one point per window (each the value the rule would have seen at
   * the window's end), with whether the condition held: the console draws it with the threshold.
   */
  async preview(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    input: MetricInput & { comparison?: Comparison; threshold?: number },
  ) {
    await this.access.logStream(caller, projectId, logStreamId, 'viewer');
    await this.check(projectId, { ...input, name: 'preview', comparison: 'gt', threshold: 0 });
    const sizeMs = input.window_minutes * MINUTE_MS;
    const end = Math.floor(this.clock.now() / MINUTE_MS) * MINUTE_MS;
    const buckets = Math.ceil(DAY_MS / sizeMs);
    const values = await this.values(projectId, logStreamId, input, end - buckets * sizeMs, sizeMs, buckets);
    return {
      metric: input.metric,
      aggregation: input.aggregation,
      window_minutes: input.window_minutes,
      threshold: input.threshold ?? null,
      comparison: input.comparison ?? null,
      points: values.map((value, i) => ({
        start: new Date(end - (buckets - i) * sizeMs).toISOString(),
        end: new Date(end - (buckets - i - 1) * sizeMs).toISOString(),
        value,
        holds:
          input.threshold === undefined || input.comparison === undefined
            ? null
            : holds(value, input.comparison, input.threshold),
      })),
    };
  }

  /** The aggregation of the metric in `buckets` windows of `sizeMs` from `startMs`. */
  private async values(
    projectId: string,
    runId: string,
    m: MetricInput,
    startMs: number,
    sizeMs: number,
    buckets: number,
  ): Promise<(number | null)[]> {
    const [series] = await this.series(
      projectId,
      runId,
      m.filter_tree ?? null,
      [m],
      startMs,
      sizeMs,
      buckets,
    );
    return series;
  }

  /**
   * Several metrics over the same filter and buckets in one query (one read of the window's rows):
   * a series per metric, all null for a metric that names no column.
   */
  private async series(
    projectId: string,
    runId: string,
    filterTree: unknown,
    metrics: Pick<MetricInput, 'metric' | 'aggregation'>[],
    startMs: number,
    sizeMs: number,
    buckets: number,
  ): Promise<(number | null)[][]> {
    const ctx = await this.columns.context(
      projectId,
      filterTree,
      metrics.map((m) => m.metric),
    );
    // One spec per distinct metric and aggregation; rules that share them share the aggregate.
    const specs = new Map<string, MetricSpec>();
    const specOf = metrics.map((m) => {
      const column = staticColumn(m.metric, ctx);
      if (!column) return null;
      const id = `${m.metric}\n${m.aggregation}`;
      let spec = specs.get(id);
      if (!spec) {
        spec = {
          key: `m${specs.size}`,
          column,
          kind: specKind(column, m.aggregation),
          needs: new Set(),
          percentiles: new Set(),
          totalPercentiles: new Set(),
        };
        addNeed(spec, m.aggregation, false);
        specs.set(id, spec);
      }
      return spec;
    });
    if (!specs.size) return metrics.map(() => Array(buckets).fill(null));
    const result = await this.cells.cells(
      {
        runId,
        startUs: us(startMs),
        endUs: us(startMs + buckets * sizeMs),
        firstUs: us(startMs),
        sizeUs: us(sizeMs),
        buckets,
        tree: filterTree ? storedTree(filterTree, ctx) : null,
        group: null,
        metrics: [...specs.values()],
      },
      1,
    );
    const byBucket = new Map(result.cells.map((c) => [Number(c.b), c]));
    return metrics.map((m, i) => {
      const spec = specOf[i];
      return Array.from({ length: buckets }, (_, b) =>
        spec ? cellValue(byBucket.get(b), spec, m.aggregation) : null,
      );
    });
  }

  /**
   * The job's pass: every enabled rule over the window ending now. Rules of the same log stream,
   * window and filter are computed together, one query for all their metrics: 100 rules over a few
   * windows read the records a few times, not 100.
   */
  async evaluateAll(signal?: AbortSignal): Promise<number> {
    const now = this.clock.now();
    const groups = new Map<string, AlertRuleRow[]>();
    for (const rule of await this.repo.enabled()) {
      const key = [rule.project_id, rule.run_id, rule.window_minutes, rule.filter_tree ?? ''].join('\n');
      groups.set(key, [...(groups.get(key) ?? []), rule]);
    }
    let n = 0;
    for (const rules of groups.values()) {
      if (signal?.aborted) break;
      const [first] = rules;
      const sizeMs = Number(first.window_minutes) * MINUTE_MS;
      const series = await this.series(
        first.project_id,
        first.run_id,
        parseJson(first.filter_tree),
        rules.map((r) => ({ metric: r.metric, aggregation: r.aggregation as Aggregation })),
        now - sizeMs,
        sizeMs,
        1,
      );
      for (const [i, rule] of rules.entries()) {
        await this.apply(rule, series[i][0], now);
        n++;
      }
    }
    return n;
  }

  /** Records the value a rule saw; fires or recovers it when its condition starts or stops holding. */
  private async apply(rule: AlertRuleRow, value: number | null, now: number): Promise<void> {
    const comparison = rule.comparison as Comparison;
    const threshold = Number(rule.threshold);
    const change = transition(rule.state, holds(value, comparison, threshold));
    if (!change) {
      await this.repo.update(rule.id, { last_value: value, last_evaluated_at: us(now) });
      return;
    }
    const state = change === 'fired' ? 'firing' : 'ok';
    const event: AlertEventRow = {
      id: newId(),
      rule_id: rule.id,
      project_id: rule.project_id,
      kind: change,
      value,
      threshold,
      at: us(now),
    };
    if (!(await this.repo.transition(rule, rule.state, state, event))) return;
    await this.notifier.notify(rule.project_id, 'alert', {
      event: 'alert',
      project_id: rule.project_id,
      log_stream_id: rule.run_id,
      alert: {
        id: rule.id,
        name: rule.name,
        state,
        metric: rule.metric,
        aggregation: rule.aggregation,
        window_minutes: Number(rule.window_minutes),
        comparison,
        threshold,
        value,
        at: toIso(us(now)),
      },
    });
  }

  private async rule(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    id: string,
    role: 'viewer' | 'editor',
  ) {
    await this.access.logStream(caller, projectId, logStreamId, role);
    const row = await this.repo.get(id);
    if (!row || row.run_id !== logStreamId) throw notFound('Alert');
    return row;
  }

  private async check(projectId: string, input: AlertInput): Promise<void> {
    rejectUnstorable(['body', 'name'], input.name);
    const faults: ErrorItem[] = [];
    await this.columns.checkMetric(projectId, input.metric, input.aggregation, faults);
    if (input.filter_tree)
      await this.columns.checkFilterTree(projectId, input.filter_tree, ['body', 'filter_tree'], faults);
    if (faults.length) throw new ValidationError(faults);
  }
}

function describeRule(r: AlertRuleRow) {
  return {
    id: r.id,
    project_id: r.project_id,
    log_stream_id: r.run_id,
    name: r.name,
    metric: r.metric,
    aggregation: r.aggregation,
    filter_tree: parseJson(r.filter_tree),
    window_minutes: Number(r.window_minutes),
    comparison: r.comparison,
    threshold: Number(r.threshold),
    enabled: Boolean(r.enabled),
    state: r.state,
    last_value: r.last_value === null ? null : Number(r.last_value),
    last_evaluated_at: r.last_evaluated_at === null ? null : toIso(Number(r.last_evaluated_at)),
    created_at: toIso(Number(r.created_at)),
    updated_at: toIso(Number(r.updated_at)),
  };
}

function describeEvent(e: AlertEventRow) {
  return {
    id: e.id,
    kind: e.kind,
    value: e.value === null ? null : Number(e.value),
    threshold: Number(e.threshold),
    at: toIso(Number(e.at)),
  };
}
