import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { ProjectParams, Uuid, withErrors } from '../../schemas/common.ts';
import {
  CountRecordsBody,
  CountRecordsResponse,
  DeleteRecordsBody,
  DeleteRecordsResponse,
  ExportRecordsBody,
  LogStreamSettingsBody,
  ProjectSettingsBody,
} from '../../schemas/lifecycle.ts';
import { Project, Run } from '../../schemas/projects.ts';
import { forAjv } from '../../schemas/search.ts';
import type { ExportBody } from '../../services/record-lifecycle.ts';
import type { SearchBody, SearchTarget } from '../../services/search.ts';
import { validatorCompiler } from '../validation.ts';

/** Filters and sorts are documented in the schema but validated in code (exact locs), as in search. */
const compileOpenedUp: FastifySchemaCompiler<any> = (route) =>
  validatorCompiler({ ...route, schema: route.httpPart === 'body' ? forAjv(route.schema) : route.schema });

/** Counting, deleting and exporting records by filter; retention settings. */
export default async function lifecycleRoutes(app: FastifyInstance) {
  const { lifecycle, projects, runs } = app.services;
  type P = { project_id: string };

  for (const target of ['sessions', 'traces', 'spans'] as SearchTarget[]) {
    app.post<{ Params: P; Body: SearchBody }>(
      `/v2/projects/:project_id/${target}/count`,
      {
        schema: {
          tags: ['records'],
          summary: `Count ${target} matching filters`,
          params: ProjectParams,
          body: CountRecordsBody,
          response: withErrors({ 200: CountRecordsResponse }),
        },
        validatorCompiler: compileOpenedUp,
      },
      async (req) => lifecycle.count(req.caller, req.params.project_id, target, req.body),
    );
    app.post<{ Params: P; Body: SearchBody }>(
      `/v2/projects/:project_id/${target}/delete`,
      {
        schema: {
          tags: ['records'],
          summary: `Delete ${target} matching filters, with everything below them`,
          params: ProjectParams,
          body: DeleteRecordsBody,
          response: withErrors({ 200: DeleteRecordsResponse, 503: Type.Object({ detail: Type.String() }) }),
        },
        validatorCompiler: compileOpenedUp,
      },
      async (req) => lifecycle.delete(req.caller, req.params.project_id, target, req.body),
    );
  }

  app.post<{ Params: P; Body: ExportBody }>(
    '/v2/projects/:project_id/export_records',
    {
      schema: {
        tags: ['records'],
        summary: 'Export records matching filters as JSON lines or CSV (streamed)',
        params: ProjectParams,
        body: ExportRecordsBody,
        response: withErrors({
          200: Type.String({ description: 'JSON lines (application/x-ndjson) or CSV (text/csv)' }),
        }),
      },
      validatorCompiler: compileOpenedUp,
    },
    async (req, reply) => {
      const out = await lifecycle.export(req.caller, req.params.project_id, req.body);
      // A client that goes away destroys the stream, which ends the generator and its read (closing
      // it on its reader thread).
      return reply
        .type(out.contentType)
        .header('content-disposition', `attachment; filename="${out.fileName}"`)
        .send(Readable.from(out.chunks, { objectMode: false }));
    },
  );

  app.patch<{ Params: P; Body: { retention_days?: number | null } }>(
    '/v2/projects/:project_id',
    {
      schema: {
        tags: ['projects'],
        summary: "Change a project's settings (retention)",
        params: ProjectParams,
        body: ProjectSettingsBody,
        response: withErrors({ 200: Project }),
      },
    },
    async (req) => projects.update(req.caller, req.params.project_id, req.body),
  );

  app.patch<{ Params: P & { log_stream_id: string }; Body: { retention_days?: number | null } }>(
    '/v2/projects/:project_id/log_streams/:log_stream_id',
    {
      schema: {
        tags: ['log_streams'],
        summary: "Change a log stream's settings (retention)",
        params: Type.Object({ project_id: Uuid, log_stream_id: Uuid }),
        body: LogStreamSettingsBody,
        response: withErrors({ 200: Run }),
      },
    },
    async (req) => runs.update(req.caller, req.params.project_id, req.params.log_stream_id, req.body),
  );
}
