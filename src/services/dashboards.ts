import { rejectUnstorable, textFaults } from '../domain/text.ts';
import {
  type Aggregation,
  MAX_BUCKETS,
  aggregationNeeds,
  bucketLayout,
  relativeTimeProblem,
  resolveRange,
} from '../domain/dashboards.ts';
import { type ErrorItem, ValidationError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import type { Role } from '../domain/roles.ts';
import { nowUs, toIso } from '../domain/time.ts';
import { type ColumnDef, lookupColumn } from '../query/columns.ts';
import { type FilterTree, leavesOf, unknownMetricFaults, validateFilterTree } from '../query/filters.ts';
import type { CellRow } from '../domain/cell-columns.ts';
import {
  type DashboardDataRepo,
  type DashboardRow,
  type DashboardsRepo,
  DefaultExists,
  type MetricSpec,
  type SectionRow,
  type WidgetRow,
} from '../store/dashboards.ts';
import { parseJson, toJson } from '../store/db.ts';
import type { RunRow, RunsRepo } from '../store/runs.ts';
import type { SearchRepo } from '../store/search.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

/** api.md: widgets, sections, widgets of a section: at most 50 each. */
export const LIMIT = 50;

export interface DashboardInput {
  name?: string | null;
  description?: string | null;
  interval_mins?: number | null;
  layout_map?: Record<string, number[]> | null;
  start_time?: number | null;
  end_time?: number | null;
  relative_time?: string | null;
  filter_tree?: unknown;
  group_by?: string | null;
}

export interface WidgetInput {
  name?: string;
  description?: string | null;
  type?: string;
  dataset?: Record<string, string[]>[] | null;
  metric?: string;
  aggregation?: string;
  section_id?: string | null;
}

export interface SectionInput {
  name?: string;
  description?: string | null;
  color?: string | null;
}

export interface QueryInput {
  widget_ids?: string[] | null;
  interval_mins?: number | null;
  start_time?: number | null;
  end_time?: number | null;
  relative_time?: string | null;
  group_limit?: number | null;
}

const DEFAULT_GROUP_LIMIT = 10;

function describeWidget(w: WidgetRow) {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    type: w.type,
    dataset: parseJson<Record<string, string[]>[]>(w.dataset),
    metric: w.metric,
    aggregation: w.aggregation,
    section_id: w.section_id,
  };
}

function describeDashboard(d: DashboardRow, sections: SectionRow[], widgets: WidgetRow[], nowMs: number) {
  const range = resolveRange(
    { start_time: numOrNull(d.start_time), end_time: numOrNull(d.end_time), relative_time: d.relative_time },
    nowMs,
  );
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    is_default: Boolean(Number(d.is_default)),
    visibility: d.visibility,
    created_by: d.created_by,
    is_favorited: Boolean(Number(d.is_favorited)),
    log_stream_id: d.log_stream_id,
    project_id: d.project_id,
    widgets: widgets.filter((w) => w.section_id === null).map(describeWidget),
    sections: sections.map((s) => ({
      id: s.id,
      name: s.name,
      description: s.description,
      color: s.color,
      widgets: widgets.filter((w) => w.section_id === s.id).map(describeWidget),
    })),
    layout_map: parseJson<Record<string, unknown>>(d.layout_map) ?? {},
    interval_mins: Number(d.interval_mins),
    group_by: d.group_by,
    filter_tree: parseJson(d.filter_tree),
    start_time: range.start,
    end_time: range.end,
    relative_time: d.relative_time,
  };
}

const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const has = (o: object, k: string) => Object.hasOwn(o, k);

/**
 * A time range from a body (dashboard PUT or query): the changes to make to `current`, or faults.
 * `relative_time` and an absolute pair are exclusive; giving one clears the other. An absolute pair
 * may be completed from the current absolute range (give only start_time to move the start).
 */
export function applyTimeRange(
  body: { start_time?: number | null; end_time?: number | null; relative_time?: string | null },
  current: { start_time: number | null; end_time: number | null; relative_time: string | null },
  faults: ErrorItem[],
): { start_time: number | null; end_time: number | null; relative_time: string | null } | null {
  const rel = body.relative_time ?? null;
  const start = body.start_time ?? null;
  const end = body.end_time ?? null;
  if (rel !== null && (start !== null || end !== null)) {
    faults.push({
      loc: ['body'],
      msg: 'Value error, give start_time and end_time, or relative_time, not both',
      type: 'value_error',
    });
    return null;
  }
  if (rel !== null) {
    const problem = relativeTimeProblem(rel);
    if (problem) {
      faults.push({
        loc: ['body', 'relative_time'],
        msg: `Value error, ${problem}`,
        type: 'value_error',
        input: rel,
      });
      return null;
    }
    return { relative_time: rel, start_time: null, end_time: null };
  }
  if (start === null && end === null) return null;
  const absolute = current.relative_time === null;
  const s = start ?? (absolute ? current.start_time : null);
  const e = end ?? (absolute ? current.end_time : null);
  if (s === null || e === null) {
    const missing = s === null ? 'start_time' : 'end_time';
    faults.push({
      loc: ['body', missing],
      msg: `Value error, give start_time and end_time together (the range is relative, so there is no ${missing} to keep)`,
      type: 'value_error',
    });
    return null;
  }
  if (s >= e) {
    faults.push({
      loc: ['body'],
      msg: 'Value error, start_time must be before end_time',
      type: 'value_error',
      input: { start_time: s, end_time: e },
    });
    return null;
  }
  return { relative_time: null, start_time: s, end_time: e };
}

/** Trends dashboards of log streams: settings, widgets and sections, and the computed widget data. */
export class DashboardsService {
  constructor(
    private readonly repo: DashboardsRepo,
    private readonly data: DashboardDataRepo,
    private readonly runs: RunsRepo,
    private readonly projects: ProjectsService,
    private readonly search: SearchRepo,
  ) {}

  /** Stops the widget-data reader threads. */
  async close(): Promise<void> {
    await this.data.close();
  }

  /** The log stream, if the caller may see its project with `role` (404 / 403 as for projects). */
  private async logStream(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    role: Role,
  ): Promise<RunRow> {
    await this.projects.access(caller, projectId, role);
    const run = await this.runs.byId(projectId, logStreamId, 'log_stream');
    if (!run) throw notFound('Log stream');
    return run;
  }

  private async dashboard(logStreamId: string, id: string): Promise<DashboardRow> {
    const d = await this.repo.byId(logStreamId, id);
    if (!d) throw notFound('Trends dashboard');
    return d;
  }

  private async describe(rows: DashboardRow[]) {
    const ids = rows.map((d) => d.id);
    const [sections, widgets] = await Promise.all([this.repo.sectionsOf(ids), this.repo.widgetsOf(ids)]);
    const now = Date.now();
    return rows.map((d) =>
      describeDashboard(
        d,
        sections.filter((s) => s.dashboard_id === d.id),
        widgets.filter((w) => w.dashboard_id === d.id),
        now,
      ),
    );
  }

  private async describeOne(row: DashboardRow) {
    return (await this.describe([row]))[0];
  }

  /**
   * The column a dashboard names (filter, group_by, metric): a standard column, any metadata key, a
   * `metrics/<key>` the catalogue has seen in the project, or a bare standard metric name
   * (`duration_ns` for `metrics/duration_ns`). Null when unknown.
   */
  private async column(projectId: string, id: string): Promise<ColumnDef | null> {
    let found = lookupColumn(id);
    if (!found.ok) {
      const asMetric = lookupColumn(`metrics/${id}`);
      if (!asMetric.ok || asMetric.needsCatalogue) return null;
      found = asMetric;
    }
    if (found.needsCatalogue) {
      const known = await this.search.knownMetricColumns(projectId, [found.column.id]);
      if (!known.has(found.column.id)) return null;
    }
    return found.column;
  }

  private async checkFilterTree(
    projectId: string,
    json: unknown,
    loc: (string | number)[],
    faults: ErrorItem[],
  ) {
    let tree: FilterTree;
    try {
      tree = validateFilterTree(json, loc);
    } catch (err) {
      if (err instanceof ValidationError) {
        faults.push(...err.items);
        return null;
      }
      throw err;
    }
    const needed = [
      ...new Set(
        leavesOf(tree)
          .filter((l) => l.needsCatalogue)
          .map((l) => l.filter.column.id),
      ),
    ];
    if (needed.length) {
      const known = await this.search.knownMetricColumns(projectId, needed);
      const items = unknownMetricFaults(tree, known);
      if (items.length) {
        faults.push(...items);
        return null;
      }
    }
    return tree;
  }

  private async checkGroupBy(projectId: string, groupBy: string, faults: ErrorItem[]) {
    const column = await this.column(projectId, groupBy);
    if (!column) {
      faults.push({
        loc: ['body', 'group_by'],
        msg: `Value error, unknown column '${groupBy}'`,
        type: 'value_error',
        input: groupBy,
      });
    } else if (column.multiValued) {
      faults.push({
        loc: ['body', 'group_by'],
        msg: `Value error, cannot group by the list column '${groupBy}'`,
        type: 'value_error',
        input: groupBy,
      });
    }
    return column;
  }

  /** Whether an aggregation applies to a column, or why not. */
  private metricProblem(column: ColumnDef, agg: Aggregation): string | null {
    const needs = aggregationNeeds(agg);
    if (needs === 'any')
      return column.multiValued ? `${agg} does not apply to the list column '${column.id}'` : null;
    // Metadata keys hold any JSON: aggregate the values of the wanted type; the rest count as missing.
    if (column.source.kind === 'json' && column.source.column !== 'metrics') return null;
    const numeric = column.dataType === 'integer' || column.dataType === 'floating_point';
    if (needs === 'number' && !numeric)
      return `${agg} needs a numeric column; '${column.id}' is ${column.dataType}`;
    if (needs === 'boolean' && column.dataType !== 'boolean')
      return `${agg} needs a boolean column; '${column.id}' is ${column.dataType}`;
    return null;
  }

  private async checkMetric(projectId: string, metric: string, agg: Aggregation, faults: ErrorItem[]) {
    const column = await this.column(projectId, metric);
    const problem = column ? this.metricProblem(column, agg) : `unknown column '${metric}'`;
    if (problem)
      faults.push({
        loc: ['body', 'metric'],
        msg: `Value error, ${problem}`,
        type: 'value_error',
        input: metric,
      });
  }

  // ---- dashboards ----------------------------------------------------------------------------

  /**
   * api.md endpoint 1: updates the dashboard `dashboardId` of the log stream, or without it the
   * default dashboard, which is created on first use.
   */
  async update(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string | null,
    body: DashboardInput,
  ) {
    await this.logStream(caller, projectId, logStreamId, 'editor');
    let row = dashboardId
      ? await this.dashboard(logStreamId, dashboardId)
      : await this.repo.defaultOf(logStreamId);
    const base = row ?? this.defaults(caller, projectId, logStreamId, true);
    const patch = await this.patchFrom(projectId, base, body);
    if (!row) {
      try {
        await this.repo.insert({ ...base, ...patch });
        return this.describeOne({ ...base, ...patch });
      } catch (err) {
        if (!(err instanceof DefaultExists)) throw err;
        row = (await this.repo.defaultOf(logStreamId))!;
      }
    }
    await this.repo.update(row.id, patch);
    return this.describeOne({ ...row, ...patch });
  }

  /** A further (not default) dashboard on the log stream, with the defaults where the body is silent. */
  async create(caller: Caller, projectId: string, logStreamId: string, body: DashboardInput) {
    await this.logStream(caller, projectId, logStreamId, 'editor');
    const base = this.defaults(caller, projectId, logStreamId, false);
    const row = { ...base, ...(await this.patchFrom(projectId, base, body)) };
    await this.repo.insert(row);
    return this.describeOne(row);
  }

  async list(caller: Caller, projectId: string, logStreamId: string) {
    await this.logStream(caller, projectId, logStreamId, 'viewer');
    return this.describe(await this.repo.list(logStreamId));
  }

  async get(caller: Caller, projectId: string, logStreamId: string, dashboardId: string) {
    await this.logStream(caller, projectId, logStreamId, 'viewer');
    return this.describeOne(await this.dashboard(logStreamId, dashboardId));
  }

  async remove(caller: Caller, projectId: string, logStreamId: string, dashboardId: string) {
    await this.logStream(caller, projectId, logStreamId, 'editor');
    await this.dashboard(logStreamId, dashboardId);
    await this.repo.delete(dashboardId);
  }

  private defaults(caller: Caller, projectId: string, logStreamId: string, isDefault: boolean): DashboardRow {
    const now = nowUs();
    return {
      id: newId(),
      project_id: projectId,
      log_stream_id: logStreamId,
      name: isDefault ? 'Default' : 'Dashboard',
      description: null,
      is_default: isDefault ? 1 : 0,
      visibility: 'private',
      created_by: caller.id,
      is_favorited: 0,
      layout_map: '{}',
      interval_mins: 60,
      group_by: null,
      filter_tree: null,
      start_time: null,
      end_time: null,
      relative_time: 'last_7_days',
      created_at: now,
      updated_at: now,
    };
  }

  /**
   * The changes a PUT body makes. Absent fields, and null for the fields a dashboard always has
   * (name, interval_mins, layout_map, and the time range), leave the value as it is; null clears
   * description, group_by and filter_tree.
   */
  private async patchFrom(projectId: string, current: DashboardRow, body: DashboardInput) {
    const faults: ErrorItem[] = textFaults(body, ['body']);
    const patch: Partial<DashboardRow> = { updated_at: nowUs() };
    if (body.name !== undefined && body.name !== null) patch.name = body.name;
    if (has(body, 'description')) patch.description = body.description ?? null;
    if (body.interval_mins !== undefined && body.interval_mins !== null)
      patch.interval_mins = body.interval_mins;
    if (body.layout_map !== undefined && body.layout_map !== null)
      patch.layout_map = toJson(body.layout_map)!;
    const range = applyTimeRange(
      body,
      {
        start_time: numOrNull(current.start_time),
        end_time: numOrNull(current.end_time),
        relative_time: current.relative_time,
      },
      faults,
    );
    if (range) Object.assign(patch, range);
    if (has(body, 'filter_tree')) {
      if (body.filter_tree === null || body.filter_tree === undefined) patch.filter_tree = null;
      else if (await this.checkFilterTree(projectId, body.filter_tree, ['body', 'filter_tree'], faults))
        patch.filter_tree = toJson(body.filter_tree);
    }
    if (has(body, 'group_by')) {
      if (body.group_by === null || body.group_by === undefined) patch.group_by = null;
      else if (await this.checkGroupBy(projectId, body.group_by, faults)) patch.group_by = body.group_by;
    }
    if (faults.length) throw new ValidationError(faults);
    return patch;
  }

  // ---- widgets and sections ------------------------------------------------------------------

  private async editable(caller: Caller, projectId: string, logStreamId: string, dashboardId: string) {
    await this.logStream(caller, projectId, logStreamId, 'editor');
    return this.dashboard(logStreamId, dashboardId);
  }

  private async checkWidget(projectId: string, w: { metric: string; aggregation: string }) {
    const faults: ErrorItem[] = [];
    await this.checkMetric(projectId, w.metric, w.aggregation as Aggregation, faults);
    if (faults.length) throw new ValidationError(faults);
  }

  /** Room for one more widget in a section (or outside sections), and the section on this dashboard. */
  private async checkPlacement(repo: DashboardsRepo, dashboardId: string, sectionId: string | null) {
    if (sectionId !== null && !(await repo.section(dashboardId, sectionId))) {
      throw new ValidationError({
        loc: ['body', 'section_id'],
        msg: 'Value error, no such section on this dashboard',
        type: 'value_error',
        input: sectionId,
      });
    }
    if ((await repo.countWidgets(dashboardId, sectionId)) >= LIMIT) {
      throw new ValidationError({
        loc: sectionId === null ? ['body'] : ['body', 'section_id'],
        msg:
          sectionId === null
            ? `A dashboard holds at most ${LIMIT} widgets outside sections`
            : `A section holds at most ${LIMIT} widgets`,
        type: 'too_long',
        ctx: { max_length: LIMIT },
      });
    }
  }

  async addWidget(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string,
    body: WidgetInput,
  ) {
    await this.editable(caller, projectId, logStreamId, dashboardId);
    rejectUnstorable(['body'], body);
    await this.checkWidget(projectId, body as { metric: string; aggregation: string });
    const now = nowUs();
    const row: WidgetRow = {
      id: newId(),
      dashboard_id: dashboardId,
      section_id: body.section_id ?? null,
      name: body.name!,
      description: body.description ?? null,
      type: body.type!,
      dataset: toJson(body.dataset ?? null),
      metric: body.metric!,
      aggregation: body.aggregation!,
      position: 0,
      created_at: now,
      updated_at: now,
    };
    await this.repo.locked(dashboardId, async (repo) => {
      await this.checkPlacement(repo, dashboardId, row.section_id);
      row.position = await repo.nextPosition('dashboard_widgets', dashboardId);
      await repo.insertWidget(row);
      await repo.update(dashboardId, { updated_at: now });
    });
    return describeWidget(row);
  }

  async updateWidget(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string,
    widgetId: string,
    body: WidgetInput,
  ) {
    await this.editable(caller, projectId, logStreamId, dashboardId);
    rejectUnstorable(['body'], body);
    const now = nowUs();
    return this.repo.locked(dashboardId, async (repo) => {
      const current = await repo.widget(dashboardId, widgetId);
      if (!current) throw notFound('Widget');
      const patch: Partial<WidgetRow> = { updated_at: now };
      for (const k of ['name', 'type', 'metric', 'aggregation'] as const)
        if (body[k] !== undefined) patch[k] = body[k];
      if (has(body, 'description')) patch.description = body.description ?? null;
      if (has(body, 'dataset')) patch.dataset = toJson(body.dataset ?? null);
      const next = { ...current, ...patch };
      if (body.metric !== undefined || body.aggregation !== undefined)
        await this.checkWidget(projectId, next);
      if (has(body, 'section_id') && (body.section_id ?? null) !== current.section_id) {
        patch.section_id = body.section_id ?? null;
        await this.checkPlacement(repo, dashboardId, patch.section_id);
      }
      await repo.updateWidget(widgetId, patch);
      await repo.update(dashboardId, { updated_at: now });
      return describeWidget({ ...current, ...patch });
    });
  }

  async deleteWidget(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string,
    widgetId: string,
  ) {
    await this.editable(caller, projectId, logStreamId, dashboardId);
    if (!(await this.repo.widget(dashboardId, widgetId))) throw notFound('Widget');
    await this.repo.deleteWidget(widgetId);
    await this.repo.update(dashboardId, { updated_at: nowUs() });
  }

  private describeSection(s: SectionRow, widgets: WidgetRow[]) {
    return {
      id: s.id,
      name: s.name,
      description: s.description,
      color: s.color,
      widgets: widgets.filter((w) => w.section_id === s.id).map(describeWidget),
    };
  }

  async addSection(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string,
    body: SectionInput,
  ) {
    await this.editable(caller, projectId, logStreamId, dashboardId);
    rejectUnstorable(['body'], body);
    const now = nowUs();
    const row: SectionRow = {
      id: newId(),
      dashboard_id: dashboardId,
      name: body.name!,
      description: body.description ?? null,
      color: body.color ?? null,
      position: 0,
      created_at: now,
      updated_at: now,
    };
    await this.repo.locked(dashboardId, async (repo) => {
      if ((await repo.countSections(dashboardId)) >= LIMIT) {
        throw new ValidationError({
          loc: ['body'],
          msg: `A dashboard holds at most ${LIMIT} sections`,
          type: 'too_long',
          ctx: { max_length: LIMIT },
        });
      }
      row.position = await repo.nextPosition('dashboard_sections', dashboardId);
      await repo.insertSection(row);
      await repo.update(dashboardId, { updated_at: now });
    });
    return this.describeSection(row, []);
  }

  async updateSection(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string,
    sectionId: string,
    body: SectionInput,
  ) {
    await this.editable(caller, projectId, logStreamId, dashboardId);
    rejectUnstorable(['body'], body);
    const current = await this.repo.section(dashboardId, sectionId);
    if (!current) throw notFound('Section');
    const now = nowUs();
    const patch: Partial<SectionRow> = { updated_at: now };
    if (body.name !== undefined) patch.name = body.name;
    if (has(body, 'description')) patch.description = body.description ?? null;
    if (has(body, 'color')) patch.color = body.color ?? null;
    await this.repo.updateSection(sectionId, patch);
    await this.repo.update(dashboardId, { updated_at: now });
    return this.describeSection({ ...current, ...patch }, await this.repo.widgetsOf([dashboardId]));
  }

  /** Deletes a section with its widgets. */
  async deleteSection(
    caller: Caller,
    projectId: string,
    logStreamId: string,
    dashboardId: string,
    sectionId: string,
  ) {
    await this.editable(caller, projectId, logStreamId, dashboardId);
    if (!(await this.repo.section(dashboardId, sectionId))) throw notFound('Section');
    await this.repo.locked(dashboardId, async (repo) => {
      await repo.deleteSection(sectionId);
      await repo.update(dashboardId, { updated_at: nowUs() });
    });
  }

  // ---- widget data ---------------------------------------------------------------------------

  /**
   * Every widget's aggregation of its metric per `interval_mins` bucket over the dashboard's range,
   * grouped by `group_by` and filtered by `filter_tree`. The body may narrow the widgets and override
   * the range and interval.
   */
  async query(caller: Caller, projectId: string, logStreamId: string, dashboardId: string, body: QueryInput) {
    await this.logStream(caller, projectId, logStreamId, 'viewer');
    const d = await this.dashboard(logStreamId, dashboardId);
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
    const tree = d.filter_tree ? storedTree(parseJson(d.filter_tree)) : null;
    const group = d.group_by ? staticColumn(d.group_by) : null;
    // One metric spec per (column, kind): widgets on the same metric share their aggregates.
    const specs = new Map<string, MetricSpec>();
    const specOf = new Map<string, MetricSpec>();
    for (const w of widgets) {
      const column = staticColumn(w.metric);
      const agg = w.aggregation as Aggregation;
      if (!column || this.metricProblem(column, agg)) continue;
      const needs = aggregationNeeds(agg);
      // Count counts records that have the value; of a metadata key, a value of any JSON type.
      const kind =
        needs === 'boolean' ? 'boolean' : needs === 'any' && column.source.kind === 'json' ? 'any' : 'number';
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
      const need = NEEDS[agg];
      if (typeof need === 'number') {
        spec.percentiles.add(need);
        // A chart shows the buckets; a number or a table shows the value over the whole range.
        if (w.type === 'number' || w.type === 'table') spec.totalPercentiles.add(need);
      } else if (need) spec.needs.add(need);
      specOf.set(w.id, spec);
    }

    const groupLimit = body.group_limit ?? DEFAULT_GROUP_LIMIT;
    const result = await this.data.cells(
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
        textCandidates: (db, t) => this.search.textCandidates(db, t),
        pgTextCandidates: (db, t) => this.search.pgTextCandidates(db, t),
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

/** Which aggregate (or percentile) each aggregation reads. */
const NEEDS: Record<Aggregation, 'sum' | 'min' | 'max' | 'true' | number | null> = {
  Count: null,
  Sum: 'sum',
  Average: 'sum',
  Min: 'min',
  Max: 'max',
  P50: 50,
  P90: 90,
  P95: 95,
  P99: 99,
  PercentageTrue: 'true',
  PercentageFalse: 'true',
};

/** A column id (or bare standard metric name) from the static registry, without the catalogue check. */
function staticColumn(id: string): ColumnDef | null {
  const found = lookupColumn(id);
  if (found.ok) return found.column;
  const asMetric = lookupColumn(`metrics/${id}`);
  return asMetric.ok && !asMetric.needsCatalogue ? asMetric.column : null;
}

/** A filter tree saved with a dashboard (validated when saved). */
function storedTree(json: unknown): FilterTree {
  try {
    return validateFilterTree(json, ['body', 'filter_tree']);
  } catch {
    // Only possible if the registry shrank since the dashboard was saved.
    throw new ValidationError({
      loc: ['path', 'dashboard_id'],
      msg: 'Value error, the filter_tree saved with this dashboard is no longer valid; save a new one',
      type: 'value_error',
    });
  }
}

/** Adds up the cells of each group over the whole range (percentiles come from their own query). */
function totalsOf(cells: CellRow[], percentileTotals: CellRow[] | null): Map<unknown, CellRow> {
  const totals = new Map<unknown, CellRow>();
  for (const c of cells) {
    const t = totals.get(c.g);
    if (!t) {
      totals.set(c.g, { ...c, b: -1 });
      continue;
    }
    for (const [k, v] of Object.entries(c)) {
      if (k === 'b' || k === 'g' || v === null || v === undefined) continue;
      const cur = t[k];
      if (cur === null || cur === undefined) t[k] = v;
      else if (k.endsWith('_min')) t[k] = Math.min(Number(cur), Number(v));
      else if (k.endsWith('_max')) t[k] = Math.max(Number(cur), Number(v));
      else if (!/_p\d+$/.test(k)) t[k] = Number(cur) + Number(v);
    }
  }
  for (const t of totals.values()) for (const k of Object.keys(t)) if (/_p\d+$/.test(k)) t[k] = null;
  for (const p of percentileTotals ?? []) {
    const t = totals.get(p.g);
    if (t) for (const [k, v] of Object.entries(p)) if (/_p\d+$/.test(k)) t[k] = v;
  }
  return totals;
}

/** Turns aggregate cells into the widget series of the query answer. */
function assemble(a: {
  dashboardId: string;
  range: { start: number; end: number };
  layout: { first: number; size: number; count: number };
  intervalMins: number;
  groupBy: string | null;
  group: ColumnDef | null;
  /** The groups shown, in order, and how many there are in all. */
  shown: unknown[];
  groupCount: number;
  widgets: WidgetRow[];
  specOf: Map<string, MetricSpec>;
  cells: CellRow[];
  percentileTotals: CellRow[] | null;
}) {
  const totals = totalsOf(a.cells, a.percentileTotals);
  const shown = a.shown;
  const index = new Map(shown.map((g, i) => [g, i]));
  const byCell = new Map<string, CellRow>();
  for (const c of a.cells) if (index.has(c.g)) byCell.set(`${c.b}|${index.get(c.g)}`, c);
  return {
    dashboard_id: a.dashboardId,
    start_time: a.range.start,
    end_time: a.range.end,
    interval_mins: a.intervalMins,
    group_by: a.groupBy,
    buckets: Array.from({ length: a.layout.count }, (_, i) => a.layout.first + i * a.layout.size),
    groups: shown.map((g) => presentGroup(g, a.group)),
    other_groups: a.group ? Math.max(0, a.groupCount - shown.length) : 0,
    widgets: a.widgets.map((w) => {
      const spec = a.specOf.get(w.id);
      const agg = w.aggregation as Aggregation;
      return {
        id: w.id,
        name: w.name,
        metric: w.metric,
        aggregation: w.aggregation,
        section_id: w.section_id,
        series: shown.map((g, gi) => ({
          group: presentGroup(g, a.group),
          values: Array.from({ length: a.layout.count }, (_, b) =>
            spec ? cellValue(byCell.get(`${b}|${gi}`), spec, agg) : null,
          ),
          total: spec ? cellValue(totals.get(g), spec, agg) : null,
        })),
      };
    }),
  };
}

/** One aggregation from a cell's aggregates (see store/dashboards.ts for their names). */
export function cellValue(cell: CellRow | undefined, spec: MetricSpec, agg: Aggregation): number | null {
  const count = cell ? Number(cell[`${spec.key}_n`] ?? 0) : 0;
  if (agg === 'Count') return count;
  if (!cell || count === 0) return null;
  const num = (k: string) => {
    const v = cell[`${spec.key}_${k}`];
    return v === null || v === undefined ? null : Number(v);
  };
  switch (agg) {
    case 'Sum':
      return num('sum');
    case 'Average':
      return num('sum')! / count;
    case 'Min':
      return num('min');
    case 'Max':
      return num('max');
    case 'PercentageTrue':
      return (100 * num('true')!) / count;
    case 'PercentageFalse':
      return (100 * (count - num('true')!)) / count;
    default:
      return num(`p${{ P50: 50, P90: 90, P95: 95, P99: 99 }[agg]}`);
  }
}

/** A group value as the API shows it: booleans as booleans, timestamps as date-times. */
function presentGroup(g: unknown, column: ColumnDef | null): unknown {
  if (g === null || g === undefined || !column) return null;
  if (column.dataType === 'boolean' && column.source.kind === 'scalar') return Number(g) === 1;
  if (column.dataType === 'timestamp') return toIso(Number(g));
  const numeric = column.dataType === 'integer' || column.dataType === 'floating_point';
  // PostgreSQL answers numeric values as text.
  return numeric || typeof g === 'bigint' ? Number(g) : g;
}
