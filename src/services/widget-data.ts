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
import type { ColumnDef } from '../query/columns.ts';
import type { MetricSpec, WidgetCellsStore } from '../store/widget-cells.ts';
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
  ) {}

  /** Stops the widget-data reader threads. */
  async close(): Promise<void> {
    await this.cells.close();
  }

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
    const result = await this.cells.cells(
      {
        runId: logStreamId,
        startUs: range.start * 1e6,
        endUs: range.end * 1e6,
        firstUs: layout.first * 1e6,
        sizeUs: layout.size * 1e6,
        buckets: layout.count,
        tree,
        group: group && !group.multiValued ? group : null,
        metrics: [...specs.values()],
      },
      groupLimit,
    );
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
    });
  }
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
