import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  AvailableColumns,
  AvailableColumnsBody,
  SearchRecordsBody,
  SearchRecordsPage,
  forAjv,
} from '../../schemas/search.ts';
import type { ColumnsBody, SearchBody, SearchTarget } from '../../services/search.ts';
import { validatorCompiler } from '../validation.ts';

/** Filters, filter trees and sorts are documented in the schema but validated in code (exact locs). */
const compileOpenedUp: FastifySchemaCompiler<any> = (route) =>
  validatorCompiler({ ...route, schema: route.httpPart === 'body' ? forAjv(route.schema) : route.schema });

const SUMMARY: Record<SearchTarget, string> = {
  sessions: 'Query sessions',
  traces: 'Query traces',
  spans: 'Query spans',
};

export default async function searchRoutes(app: FastifyInstance) {
  const { search, scoring } = app.services;
  type P = { project_id: string };

  // The trigram indexer (SQLite) runs while the app is up.
  app.addHook('onReady', async () => search.start());
  app.addHook('onClose', async () => search.close());

  for (const target of ['sessions', 'traces', 'spans'] as SearchTarget[]) {
    app.post<{ Params: P; Body: SearchBody }>(
      `/v2/projects/:project_id/${target}/search`,
      {
        schema: {
          tags: ['search'],
          summary: SUMMARY[target],
          params: ProjectParams,
          body: SearchRecordsBody,
          response: withErrors({ 200: SearchRecordsPage }),
        },
        validatorCompiler: compileOpenedUp,
      },
      // The service answers the page as a body already serialized through SearchRecordsPage.
      async (req, reply) => {
        const page = await search.search(req.caller, req.params.project_id, target, req.body);
        return reply
          .type('application/json; charset=utf-8')
          .send(
            req.body.include_code_metric_metadata
              ? await scoring.attachToPage(req.params.project_id, page)
              : page,
          );
      },
    );
    app.post<{ Params: P; Body: ColumnsBody }>(
      `/v2/projects/:project_id/${target}/available_columns`,
      {
        schema: {
          tags: ['search'],
          summary: `Columns of ${target}`,
          params: ProjectParams,
          body: AvailableColumnsBody,
          response: withErrors({ 200: AvailableColumns }),
        },
      },
      async (req) =>
        scoring.describeColumns(
          req.params.project_id,
          req.body,
          await search.availableColumns(req.caller, req.params.project_id, target, req.body),
        ),
    );
  }
}
