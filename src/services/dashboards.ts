import { type Aggregation, applyTimeRange, resolveRange } from '../domain/dashboards.ts';
import { type ErrorItem, ValidationError, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { rejectUnstorable, textFaults } from '../domain/text.ts';
import { nowUs } from '../domain/time.ts';
import {
  type DashboardRow,
  type DashboardsRepo,
  DefaultExists,
  type SectionRow,
  type WidgetRow,
} from '../store/dashboards.ts';
import { parseJson, toJson } from '../store/db.ts';
import type { Caller } from './auth.ts';
import type { DashboardAccess } from './dashboard-access.ts';
import type { DashboardColumns } from './dashboard-columns.ts';

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
  is_favorited?: boolean | null;
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

export const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const has = (o: object, k: string) => Object.hasOwn(o, k);

/** Trends dashboards of log streams: settings, widgets and sections (their data: widget-data.ts). */
export class DashboardsService {
  constructor(
    private readonly repo: DashboardsRepo,
    private readonly access: DashboardAccess,
    private readonly columns: DashboardColumns,
  ) {}

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
    await this.access.logStream(caller, projectId, logStreamId, 'editor');
    let row = dashboardId
      ? await this.access.dashboard(logStreamId, dashboardId)
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
    await this.access.logStream(caller, projectId, logStreamId, 'editor');
    const base = this.defaults(caller, projectId, logStreamId, false);
    const row = { ...base, ...(await this.patchFrom(projectId, base, body)) };
    await this.repo.insert(row);
    return this.describeOne(row);
  }

  async list(caller: Caller, projectId: string, logStreamId: string) {
    await this.access.logStream(caller, projectId, logStreamId, 'viewer');
    return this.describe(await this.repo.list(logStreamId));
  }

  async get(caller: Caller, projectId: string, logStreamId: string, dashboardId: string) {
    await this.access.logStream(caller, projectId, logStreamId, 'viewer');
    return this.describeOne(await this.access.dashboard(logStreamId, dashboardId));
  }

  async remove(caller: Caller, projectId: string, logStreamId: string, dashboardId: string) {
    await this.access.logStream(caller, projectId, logStreamId, 'editor');
    await this.access.dashboard(logStreamId, dashboardId);
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
   * (name, interval_mins, layout_map, is_favorited and the time range), leave the value as it is; null clears
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
    if (body.is_favorited !== undefined && body.is_favorited !== null)
      patch.is_favorited = body.is_favorited ? 1 : 0;
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
      else if (
        await this.columns.checkFilterTree(projectId, body.filter_tree, ['body', 'filter_tree'], faults)
      )
        patch.filter_tree = toJson(body.filter_tree);
    }
    if (has(body, 'group_by')) {
      if (body.group_by === null || body.group_by === undefined) patch.group_by = null;
      else if (await this.columns.checkGroupBy(projectId, body.group_by, faults))
        patch.group_by = body.group_by;
    }
    if (faults.length) throw new ValidationError(faults);
    return patch;
  }

  // ---- widgets and sections ------------------------------------------------------------------

  private async editable(caller: Caller, projectId: string, logStreamId: string, dashboardId: string) {
    await this.access.logStream(caller, projectId, logStreamId, 'editor');
    return this.access.dashboard(logStreamId, dashboardId);
  }

  private async checkWidget(projectId: string, w: { metric: string; aggregation: string }) {
    const faults: ErrorItem[] = [];
    await this.columns.checkMetric(projectId, w.metric, w.aggregation as Aggregation, faults);
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
    // The metric is checked before the lock: on SQLite the lock's transaction holds the store's one
    // connection, and the check's reads (the column catalogue) would wait for it for ever.
    if (body.metric !== undefined || body.aggregation !== undefined) {
      const before = await this.repo.widget(dashboardId, widgetId);
      if (!before) throw notFound('Widget');
      await this.checkWidget(projectId, {
        metric: body.metric ?? before.metric,
        aggregation: body.aggregation ?? before.aggregation,
      });
    }
    const now = nowUs();
    return this.repo.locked(dashboardId, async (repo) => {
      const current = await repo.widget(dashboardId, widgetId);
      if (!current) throw notFound('Widget');
      const patch: Partial<WidgetRow> = { updated_at: now };
      for (const k of ['name', 'type', 'metric', 'aggregation'] as const)
        if (body[k] !== undefined) patch[k] = body[k];
      if (has(body, 'description')) patch.description = body.description ?? null;
      if (has(body, 'dataset')) patch.dataset = toJson(body.dataset ?? null);
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
}
