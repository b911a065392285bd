import type { FastifyInstance } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  ByNameQuery,
  CreateTemplateBody,
  CreateVersionBody,
  GlobalCreateQuery,
  PageQuery,
  ProjectTemplateParams,
  ProjectVersionParams,
  PromptTemplate,
  RenderBody,
  RenderResult,
  TemplateDeleted,
  TemplateList,
  TemplateParams,
  TemplateQueryBody,
  TemplateVersion,
  UpdateTemplateBody,
  VersionList,
  VersionParams,
  VersionQueryBody,
} from '../../schemas/prompt-templates.ts';
import type {
  CreateBody,
  Page,
  QueryBody,
  RenderBody as RenderInput,
  VersionBody,
  VersionQueryBody as VersionQueryInput,
} from '../../services/prompt-templates.ts';
import { Type } from '@sinclair/typebox';

/**
 * Prompt templates on the hosted routes: the project routes (`/projects/{p}/templates...`) and the
 * global ones (`/templates...`, which the official client uses), and `/render_template`.
 */
export default async function promptTemplateRoutes(app: FastifyInstance) {
  const { promptTemplates: templates } = app.services;
  const tags = ['prompt templates'];
  type P = { project_id: string };
  type T = { template_id: string };
  type PT = P & T;
  type V = T & { version: number };
  type PV = PT & { version: number };
  const deleted = { message: 'Prompt template deleted' };

  // --- project routes
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/templates',
    {
      schema: {
        tags,
        summary: "A project's prompt templates and the global ones shared with it",
        params: ProjectParams,
        response: withErrors({ 200: Type.Array(PromptTemplate) }),
      },
    },
    async (req) => templates.listOfProject(req.caller, req.params.project_id),
  );
  app.post<{ Params: P; Body: CreateBody }>(
    '/v2/projects/:project_id/templates',
    {
      schema: {
        tags,
        summary: 'Create a prompt template of the project with its first version',
        params: ProjectParams,
        body: CreateTemplateBody,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) => templates.createInProject(req.caller, req.params.project_id, req.body),
  );
  app.get<{ Params: P; Querystring: { template_name: string; version?: number | null } }>(
    '/v2/projects/:project_id/templates/versions',
    {
      schema: {
        tags,
        summary: 'A version of a template by its name (default: the selected version)',
        params: ProjectParams,
        querystring: ByNameQuery,
        response: withErrors({ 200: TemplateVersion }),
      },
    },
    async (req) =>
      templates.byName(req.caller, req.params.project_id, req.query.template_name, req.query.version),
  );
  app.get<{ Params: PT }>(
    '/v2/projects/:project_id/templates/:template_id',
    {
      schema: {
        tags,
        summary: 'A prompt template of the project, with all its versions',
        params: ProjectTemplateParams,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) => templates.get(req.caller, req.params.project_id, req.params.template_id),
  );
  app.delete<{ Params: PT }>(
    '/v2/projects/:project_id/templates/:template_id',
    {
      schema: {
        tags,
        summary: 'Delete a prompt template and its versions',
        params: ProjectTemplateParams,
        response: withErrors({ 200: TemplateDeleted }),
      },
    },
    async (req) => {
      await templates.remove(req.caller, req.params.project_id, req.params.template_id);
      return deleted;
    },
  );
  app.post<{ Params: PT; Body: VersionBody }>(
    '/v2/projects/:project_id/templates/:template_id/versions',
    {
      schema: {
        tags,
        summary: 'Add a version (it becomes the selected one)',
        params: ProjectTemplateParams,
        body: CreateVersionBody,
        response: withErrors({ 200: TemplateVersion }),
      },
    },
    async (req) => templates.addVersion(req.caller, req.params.project_id, req.params.template_id, req.body),
  );
  app.get<{ Params: PV }>(
    '/v2/projects/:project_id/templates/:template_id/versions/:version',
    {
      schema: {
        tags,
        summary: 'One version of a prompt template',
        params: ProjectVersionParams,
        response: withErrors({ 200: TemplateVersion }),
      },
    },
    async (req) =>
      templates.getVersion(req.caller, req.params.project_id, req.params.template_id, req.params.version),
  );
  app.put<{ Params: PV }>(
    '/v2/projects/:project_id/templates/:template_id/versions/:version',
    {
      schema: {
        tags,
        summary: 'Select a version',
        params: ProjectVersionParams,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) =>
      templates.select(req.caller, req.params.project_id, req.params.template_id, req.params.version),
  );

  // --- global routes
  app.post<{ Querystring: { project_id?: string | null }; Body: CreateBody }>(
    '/v2/templates',
    {
      schema: {
        tags,
        summary: 'Create a global prompt template, shared with project_id when given',
        querystring: GlobalCreateQuery,
        body: CreateTemplateBody,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) => templates.createGlobal(req.caller, req.query.project_id ?? null, req.body),
  );
  app.post<{ Querystring: Page; Body: QueryBody | undefined }>(
    '/v2/templates/query',
    {
      schema: {
        tags,
        summary: 'The prompt templates the caller may see, filtered, sorted and paged',
        querystring: PageQuery,
        body: Type.Optional(TemplateQueryBody),
        response: withErrors({ 200: TemplateList }),
      },
    },
    async (req) => templates.query(req.caller, req.body ?? {}, req.query),
  );
  app.get<{ Params: T }>(
    '/v2/templates/:template_id',
    {
      schema: {
        tags,
        summary: 'A prompt template, with all its versions',
        params: TemplateParams,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) => templates.get(req.caller, null, req.params.template_id),
  );
  app.patch<{ Params: T; Body: { name?: string | null } }>(
    '/v2/templates/:template_id',
    {
      schema: {
        tags,
        summary: 'Rename a prompt template',
        params: TemplateParams,
        body: UpdateTemplateBody,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) => templates.rename(req.caller, req.params.template_id, req.body.name),
  );
  app.delete<{ Params: T }>(
    '/v2/templates/:template_id',
    {
      schema: {
        tags,
        summary: 'Delete a prompt template and its versions',
        params: TemplateParams,
        response: withErrors({ 200: TemplateDeleted }),
      },
    },
    async (req) => {
      await templates.remove(req.caller, null, req.params.template_id);
      return deleted;
    },
  );
  app.post<{ Params: T; Body: VersionBody }>(
    '/v2/templates/:template_id/versions',
    {
      schema: {
        tags,
        summary: 'Add a version (it becomes the selected one)',
        params: TemplateParams,
        body: CreateVersionBody,
        response: withErrors({ 200: TemplateVersion }),
      },
    },
    async (req) => templates.addVersion(req.caller, null, req.params.template_id, req.body),
  );
  app.post<{ Params: T; Querystring: Page; Body: VersionQueryInput | undefined }>(
    '/v2/templates/:template_id/versions/query',
    {
      schema: {
        tags,
        summary: 'The versions of a prompt template, each with what changed from the one before',
        params: TemplateParams,
        querystring: PageQuery,
        body: Type.Optional(VersionQueryBody),
        response: withErrors({ 200: VersionList }),
      },
    },
    async (req) => templates.queryVersions(req.caller, req.params.template_id, req.body ?? {}, req.query),
  );
  app.get<{ Params: V }>(
    '/v2/templates/:template_id/versions/:version',
    {
      schema: {
        tags,
        summary: 'One version of a prompt template',
        params: VersionParams,
        response: withErrors({ 200: TemplateVersion }),
      },
    },
    async (req) => templates.getVersion(req.caller, null, req.params.template_id, req.params.version),
  );
  app.put<{ Params: V }>(
    '/v2/templates/:template_id/versions/:version',
    {
      schema: {
        tags,
        summary: 'Select a version',
        params: VersionParams,
        response: withErrors({ 200: PromptTemplate }),
      },
    },
    async (req) => templates.select(req.caller, null, req.params.template_id, req.params.version),
  );

  // --- rendering
  app.post<{ Querystring: Page; Body: RenderInput }>(
    '/v2/render_template',
    {
      schema: {
        tags,
        summary: "Render a template for input strings or a dataset version's rows",
        querystring: PageQuery,
        body: RenderBody,
        response: withErrors({ 200: RenderResult }),
      },
    },
    async (req) => templates.render(req.caller, req.body, req.query),
  );
}
