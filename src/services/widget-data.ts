/** Widget data of a trends dashboard: the metrics its widgets need, computed by the store, as series. */
import {
  type Aggregation,
  MAX_BUCKETS,
  applyTimeRange,
  aggregationNeeds,
  bucketLayout,
  resolveRange,
} from '../domain/dashboards.ts';
import { type ErrorItem, ValidationError } from '../domain/errors.ts';
import { NEEDS, assemble } from '../domain/widget-series.ts';
import { parseJson } from '../store/db.ts';
import type { DashboardsRepo } from '../store/dashboards.ts';
import type { CellRow } from '../domain/cell-columns.ts';
import type { ColumnDef } from '../query/columns.ts';
import {
  COUNT_COL,
  ROLLUP_BUCKET_US,
  ROLLUP_DAY_US,
  type RollupMetric,
  SCALAR_DIMS,
  SCALAR_METRICS,
  keptKey,
  rollupCells,
  valueKey,
} from '../domain/rollups.ts';
import { NEVER_NULL } from '../query/columns.ts';
import type { RollupsRepo } from '../store/rollups.ts';
import {
  type CellQuery,
  type MetricSpec,
  type WidgetCells,
  type WidgetCellsStore,
  shownGroups,
} from '../store/widget-cells.ts';
import type { Caller } from './auth.ts';
import type { DashboardAccess } from './dashboard-access.ts';
import { DashboardColumns, staticColumn, storedTree } from './dashboard-columns.ts';
import { type QueryInput, numOrNull } from './dashboards.ts';

const DEFAULT_GROUP_LIMIT = 10;

export class WidgetDataService {
  constructor(
    private readonly repo: DashboardsRepo,
    private readonly access: DashboardAccess,
    private readonly cells: WidgetCellsStore,
    private readonly columns: DashboardColumns,
    private readonly rollups: RollupsRepo | null = null,
  ) {}

  /** Recomputes of dirty rollup hours under way, by log stream (one at a time each). */
  private readonly recomputing = new Map<string, Promise<void>>();

  /**
   * Every widget's aggregation of its metric per `interval_mins` bucket over the dashboard's range,
   * grouped by `group_by` and filtered by `filter_tree`. The body may narrow the widgets and override
   * the range and interval.
   */
  async query(caller: Caller, projectId: string, logStreamId: string, dashboardId: string, body: QueryInput) {
    await this.access.logStream(caller, projectId, logStreamId, 'viewer');
    const d = await this.access.dashboard(logStreamId, dashboardId);
    const faults: ErrorItem[] = [];
    const current = {
      start_time: numOrNull(d.start_time),
      end_time: numOrNull(d.end_time),
      relative_time: d.relative_time,
    };
    const settings = { ...current, ...(applyTimeRange(body, current, faults) ?? {}) };
    const intervalMins = body.interval_mins ?? Number(d.interval_mins);
    const range = resolveRange(settings, Date.now());
    const layout = bucketLayout(range.start, range.end, intervalMins);
    if (!faults.length && layout.count > MAX_BUCKETS) {
      faults.push({
        loc: ['body', 'interval_mins'],
        msg: `Value error, the range needs ${layout.count} buckets of ${intervalMins} minutes; at most ${MAX_BUCKETS} are computed (widen interval_mins)`,
        type: 'value_error',
        input: intervalMins,
        ctx: { max_buckets: MAX_BUCKETS },
      });
    }
    let widgets = await this.repo.widgetsOf([dashboardId]);
    if (body.widget_ids) {
      const wanted = new Set(body.widget_ids);
      const found = new Set(widgets.map((w) => w.id));
      body.widget_ids.forEach((id, i) => {
        if (!found.has(id))
          faults.push({
            loc: ['body', 'widget_ids', i],
            msg: 'Value error, no such widget on this dashboard',
            type: 'value_error',
            input: id,
          });
      });
      widgets = widgets.filter((w) => wanted.has(w.id));
    }
    if (faults.length) throw new ValidationError(faults);

    // The settings were checked when saved; here they only need reading.
    const filterJson = d.filter_tree ? parseJson(d.filter_tree) : null;
    const ctx = await this.columns.context(
      projectId,
      filterJson,
      widgets.map((w) => w.metric),
    );
    const tree = filterJson ? storedTree(filterJson, ctx) : null;
    const group = d.group_by ? staticColumn(d.group_by) : null;
    // One metric spec per (column, kind): widgets on the same metric share their aggregates.
    const specs = new Map<string, MetricSpec>();
    const specOf = new Map<string, MetricSpec>();
    for (const w of widgets) {
      const column = staticColumn(w.metric, ctx);
      const agg = w.aggregation as Aggregation;
      if (!column || DashboardColumns.metricProblem(column, agg)) continue;
      const kind = specKind(column, agg);
      const key = `${kind}|${column.id}`;
      let spec = specs.get(key);
      if (!spec) {
        spec = {
          key: `m${specs.size}`,
          column,
          kind,
          needs: new Set(),
          percentiles: new Set(),
          totalPercentiles: new Set(),
        };
        specs.set(key, spec);
      }
      // A chart shows the buckets; a number or a table shows the value over the whole range.
      addNeed(spec, agg, w.type === 'number' || w.type === 'table');
      specOf.set(w.id, spec);
    }

    const groupLimit = body.group_limit ?? DEFAULT_GROUP_LIMIT;
    const q: CellQuery = {
      runId: logStreamId,
      startUs: range.start * 1e6,
      endUs: range.end * 1e6,
      firstUs: layout.first * 1e6,
      sizeUs: layout.size * 1e6,
      buckets: layout.count,
      tree,
      group: group && !group.multiValued ? group : null,
      metrics: [...specs.values()],
    };
    const byRollup = await this.fromRollups(q, groupLimit);
    const result = 'cells' in byRollup ? byRollup.cells : await this.cells.cells(q, groupLimit);
    const answered = {
      answered_by: 'cells' in byRollup ? ('rollup' as const) : ('scan' as const),
      fallback_reason: 'cells' in byRollup ? null : byRollup.reason,
    };
    return assemble({
      dashboardId,
      range,
      layout,
      intervalMins,
      groupBy: d.group_by,
      group,
      shown: result.shown,
      groupCount: result.groupCount,
      widgets,
      specOf,
      cells: result.cells,
      percentileTotals: result.percentileTotals,
      ...answered,
    });
  }

  /**
   * The widget cells from the dashboard rollups (store/rollups.ts), or why they cannot answer:
   * filters, interval, group column or metric they do not keep, a log stream not rebuilt yet, an
   * overflowing group column, too many changed hours. Dirty hours met are recomputed afterwards.
   */
  private async fromRollups(
    q: CellQuery,
    groupLimit: number,
  ): Promise<{ cells: WidgetCells } | { reason: string }> {
    if (!this.rollups) return { reason: 'rollups are not kept by this server' };
    if (q.tree) return { reason: 'filter_tree: rollups answer dashboards without filters' };
    if (q.sizeUs % ROLLUP_BUCKET_US !== 0 || q.firstUs % ROLLUP_BUCKET_US !== 0)
      return { reason: 'interval_mins: rollups answer intervals of whole hours (multiples of 60)' };
    const dim = q.group ? rollupDim(q.group) : '';
    if (dim === null) return { reason: `group_by ${q.group!.id}: not kept in rollups` };
    const metrics: RollupMetric[] = [];
    for (const m of q.metrics) {
      const col = rollupColumn(m);
      if (col === null) return { reason: `metric ${m.column.id}: not kept in rollups` };
      metrics.push({
        key: m.key,
        col,
        needs: m.needs,
        percentiles: m.percentiles,
        totalPercentiles: m.totalPercentiles,
      });
    }
    const cols = [...new Set(metrics.map((m) => m.col))];
    const binCols = [
      ...new Set(
        metrics.filter((m) => m.percentiles.size > 0 || m.totalPercentiles.size > 0).map((m) => m.col),
      ),
    ];
    let ranked: { shown: unknown[]; groupCount: number } = { shown: [], groupCount: 0 };
    const read = await this.rollups.read(
      q.runId,
      dim,
      q.startUs,
      q.endUs,
      cols,
      binCols,
      (counts) => {
        const byValue = new Map<unknown, number>();
        for (const [key, n] of counts) byValue.set(JSON.parse(key), n);
        ranked = shownGroups(q, byValue, groupLimit);
        return new Set(ranked.shown.map(valueKey));
      },
      q.sizeUs % ROLLUP_DAY_US === 0,
    );
    if ('reason' in read) {
      if ('pending' in read && read.pending === 'recompute') this.recomputeDirty(q.runId);
      if ('pending' in read && read.pending === 'rebuild') this.rebuild(q.runId);
      return { reason: read.reason };
    }
    const answer = rollupCells(
      { firstUs: q.firstUs, sizeUs: q.sizeUs, buckets: q.buckets, dim, metrics },
      read.shown,
      read.rows,
      read.records,
    );
    if (read.dirty.length) this.recomputeDirty(q.runId);
    if (!answer) return { reason: 'min or max of records without the group_by value: not kept in rollups' };
    return {
      cells: {
        shown: ranked.shown,
        groupCount: ranked.groupCount,
        cells: answer.cells as CellRow[],
        percentileTotals: q.metrics.some((m) => m.totalPercentiles.size > 0)
          ? (answer.totals as CellRow[])
          : null,
      },
    };
  }

  /** Recomputes a log stream's dirty rollup hours in the background (a batch at a time). */
  private recomputeDirty(runId: string): void {
    if (!this.rollups || this.recomputing.has(runId)) return;
    const rollups = this.rollups;
    const work = (async () => {
      const hours = await rollups.dirtyHours(runId, 100);
      await rollups.recompute(runId, hours);
    })()
      .catch(() => {})
      .finally(() => this.recomputing.delete(runId));
    this.recomputing.set(runId, work);
  }

  /**
   * Builds a log stream's rollups from its records in the background (its records came before
   * rollups were kept): one log stream at a time, hour by hour; its dashboards scan until done.
   */
  private rebuild(runId: string): void {
    if (!this.rollups || this.recomputing.size > 0) return;
    const rollups = this.rollups;
    const work = rollups
      .rebuild(runId, 1)
      .catch(() => {})
      .finally(() => this.recomputing.delete(runId));
    this.recomputing.set(runId, work);
  }

  /** Recomputes every dirty rollup hour of a log stream now. */
  async recomputeAll(runId: string): Promise<void> {
    if (!this.rollups) return;
    for (;;) {
      const hours = await this.rollups.dirtyHours(runId, 500);
      if (!hours.length) return;
      await this.rollups.recompute(runId, hours);
    }
  }

  /** Waits for the recomputes under way (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all([...this.recomputing.values()]);
  }
}

/** The rollups' dim of a group column, or null when they do not keep it. */
export function rollupDim(column: ColumnDef): string | null {
  const src = column.source;
  if (src.kind === 'scalar')
    return (SCALAR_DIMS as readonly string[]).includes(src.column) ? src.column : null;
  const dim =
    src.kind === 'json' && src.column === 'user_metadata'
      ? `u:${src.key}`
      : src.kind === 'json' && src.column === 'metrics'
        ? `m:${src.key}`
        : null;
  return dim !== null && keptKey(dim) ? dim : null;
}

/** The rollups' column of a metric (COUNT_COL for the record count), or null when they do not keep it. */
export function rollupColumn(m: MetricSpec): string | null {
  const src = m.column.source;
  if (src.kind === 'scalar') {
    if ((SCALAR_METRICS as readonly string[]).includes(src.column)) return src.column;
    // Count of a column every record has (id, type, name): the record count.
    if (NEVER_NULL.has(src.column) && m.needs.size === 0 && m.percentiles.size === 0) return COUNT_COL;
    return null;
  }
  if (src.kind === 'json' && src.column === 'metrics' && m.kind !== 'boolean' && keptKey(`m:${src.key}`))
    return `m:${src.key}`;
  return null;
}

/** How a metric column is read for an aggregation: Count counts records that have the value (of a
 * metadata key, a value of any JSON type). */
export function specKind(column: ColumnDef, agg: Aggregation): MetricSpec['kind'] {
  const needs = aggregationNeeds(agg);
  return needs === 'boolean'
    ? 'boolean'
    : needs === 'any' && column.source.kind === 'json'
      ? 'any'
      : 'number';
}

/** Asks a spec for what `agg` needs; `total`: also its percentile over the whole range. */
export function addNeed(spec: MetricSpec, agg: Aggregation, total: boolean): void {
  const need = NEEDS[agg];
  if (typeof need === 'number') {
    spec.percentiles.add(need);
    if (total) spec.totalPercentiles.add(need);
  } else if (need) spec.needs.add(need);
}
