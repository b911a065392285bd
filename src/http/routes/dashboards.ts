import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withErrors } from '../../schemas/common.ts';
import {
  CreateSection,
  CreateWidget,
  Dashboard,
  DashboardData,
  DashboardIdParams,
  DashboardParams,
  QueryDashboard,
  Section,
  SectionParams,
  UpdateDashboard,
  UpdateDashboardQuery,
  UpdateSection,
  UpdateWidget,
  Widget,
  WidgetParams,
} from '../../schemas/dashboards.ts';
import type { DashboardInput, QueryInput, SectionInput, WidgetInput } from '../../services/dashboards.ts';

type P = { project_id: string; log_stream_id: string };
type PD = P & { dashboard_id: string };
const tags = ['trends_dashboard'];
const BASE = '/v2/projects/:project_id/log_streams/:log_stream_id/trends';
const Deleted = Type.Object({ deleted: Type.Boolean() });

/** An absent (or null) body means "all defaults". */
async function emptyBodyIsObject(req: FastifyRequest) {
  if (req.body === undefined || req.body === null) req.body = {};
}

export default async function dashboardRoutes(app: FastifyInstance) {
  const { dashboards, widgetData } = app.services;

  app.put<{ Params: P; Querystring: { trends_dashboard_id?: string | null }; Body: DashboardInput }>(
    BASE,
    {
      schema: {
        tags,
        summary: 'Update trends dashboard',
        description:
          'Updates the dashboard named by trends_dashboard_id, or the default dashboard of the log stream (created on first use).',
        params: DashboardParams,
        querystring: UpdateDashboardQuery,
        body: UpdateDashboard,
        response: withErrors({ 200: Dashboard }),
      },
    },
    async (req) =>
      dashboards.update(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.query.trends_dashboard_id ?? null,
        req.body,
      ),
  );

  app.get<{ Params: P }>(
    BASE,
    {
      schema: {
        tags,
        summary: 'List the trends dashboards of a log stream',
        params: DashboardParams,
        response: withErrors({ 200: Type.Array(Dashboard) }),
      },
    },
    async (req) => dashboards.list(req.caller, req.params.project_id, req.params.log_stream_id),
  );

  app.post<{ Params: P; Body: DashboardInput }>(
    BASE,
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags,
        summary: 'Create a further (not default) trends dashboard',
        params: DashboardParams,
        body: UpdateDashboard,
        response: withErrors({ 200: Dashboard }),
      },
    },
    async (req) => dashboards.create(req.caller, req.params.project_id, req.params.log_stream_id, req.body),
  );

  app.get<{ Params: PD }>(
    `${BASE}/:dashboard_id`,
    {
      schema: {
        tags,
        summary: 'Get a trends dashboard',
        params: DashboardIdParams,
        response: withErrors({ 200: Dashboard }),
      },
    },
    async (req) =>
      dashboards.get(req.caller, req.params.project_id, req.params.log_stream_id, req.params.dashboard_id),
  );

  app.delete<{ Params: PD }>(
    `${BASE}/:dashboard_id`,
    {
      schema: {
        tags,
        summary: 'Delete a trends dashboard with its widgets and sections',
        params: DashboardIdParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await dashboards.remove(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
      );
      return { deleted: true };
    },
  );

  app.post<{ Params: PD; Body: QueryInput }>(
    `${BASE}/:dashboard_id/query`,
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags,
        summary: "Compute the dashboard's widget data",
        description:
          "Every widget's aggregation of its metric per interval_mins bucket over the dashboard's range, grouped by group_by and filtered by filter_tree. The body may pick widgets and override the range and interval. Dashboards without filter_tree, at intervals of whole hours, grouped by type, name, model, a metadata key or a score, are answered from rollups kept as records arrive (`answered_by: rollup`): Count, Sum, Average, Min, Max and the percentages equal to a scan of the records, P50 to P99 from a DDSketch within 1% relative error of the exact percentile. Others scan the records (`answered_by: scan`, with `fallback_reason`), percentiles exact.",
        params: DashboardIdParams,
        body: QueryDashboard,
        response: withErrors({ 200: DashboardData }),
      },
    },
    async (req) =>
      widgetData.query(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.body,
      ),
  );

  // ---- widgets ----
  app.post<{ Params: PD; Body: WidgetInput }>(
    `${BASE}/:dashboard_id/widgets`,
    {
      schema: {
        tags,
        summary: 'Add a widget',
        params: DashboardIdParams,
        body: CreateWidget,
        response: withErrors({ 200: Widget }),
      },
    },
    async (req) =>
      dashboards.addWidget(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.body,
      ),
  );

  app.put<{ Params: PD & { widget_id: string }; Body: WidgetInput }>(
    `${BASE}/:dashboard_id/widgets/:widget_id`,
    {
      schema: {
        tags,
        summary: 'Edit a widget',
        params: WidgetParams,
        body: UpdateWidget,
        response: withErrors({ 200: Widget }),
      },
    },
    async (req) =>
      dashboards.updateWidget(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.params.widget_id,
        req.body,
      ),
  );

  app.delete<{ Params: PD & { widget_id: string } }>(
    `${BASE}/:dashboard_id/widgets/:widget_id`,
    {
      schema: {
        tags,
        summary: 'Delete a widget',
        params: WidgetParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await dashboards.deleteWidget(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.params.widget_id,
      );
      return { deleted: true };
    },
  );

  // ---- sections ----
  app.post<{ Params: PD; Body: SectionInput }>(
    `${BASE}/:dashboard_id/sections`,
    {
      schema: {
        tags,
        summary: 'Add a section',
        params: DashboardIdParams,
        body: CreateSection,
        response: withErrors({ 200: Section }),
      },
    },
    async (req) =>
      dashboards.addSection(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.body,
      ),
  );

  app.put<{ Params: PD & { section_id: string }; Body: SectionInput }>(
    `${BASE}/:dashboard_id/sections/:section_id`,
    {
      schema: {
        tags,
        summary: 'Edit a section',
        params: SectionParams,
        body: UpdateSection,
        response: withErrors({ 200: Section }),
      },
    },
    async (req) =>
      dashboards.updateSection(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.params.section_id,
        req.body,
      ),
  );

  app.delete<{ Params: PD & { section_id: string } }>(
    `${BASE}/:dashboard_id/sections/:section_id`,
    {
      schema: {
        tags,
        summary: 'Delete a section and its widgets',
        params: SectionParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await dashboards.deleteSection(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.dashboard_id,
        req.params.section_id,
      );
      return { deleted: true };
    },
  );
}
