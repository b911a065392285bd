import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ProjectParams, Uuid, withErrors } from '../../schemas/common.ts';
import { CreateRun, Run, RunsPage, SearchRuns } from '../../schemas/projects.ts';
import type { RunKind } from '../../services/runs.ts';

export default async function runRoutes(app: FastifyInstance) {
  const { runs } = app.services;
  type P = { project_id: string };

  // Experiments have their own routes (routes/experiments.ts).
  for (const [kind, segment, tag, label] of [['log_stream', 'log_streams', 'log_streams', 'log stream']] as [
    RunKind,
    string,
    string,
    string,
  ][]) {
    app.post<{ Params: P; Body: { name: string } }>(
      `/v2/projects/:project_id/${segment}`,
      {
        schema: {
          summary: `Create a ${label}`,
          description: 'Names are unique within the project (409 when taken).',
          tags: [tag],
          params: ProjectParams,
          body: CreateRun,
          response: withErrors({ 200: Run }),
        },
      },
      async (req) => runs.create(req.caller, req.params.project_id, kind, req.body.name),
    );
    app.get<{ Params: P }>(
      `/v2/projects/:project_id/${segment}`,
      {
        schema: {
          summary: `List the ${label}s of a project`,
          tags: [tag],
          params: ProjectParams,
          response: withErrors({ 200: Type.Array(Run) }),
        },
      },
      async (req) => runs.list(req.caller, req.params.project_id, kind),
    );
    app.get<{ Params: P & { run_id: string } }>(
      `/v2/projects/:project_id/${segment}/:run_id`,
      {
        schema: {
          summary: `Get a ${label}`,
          tags: [tag],
          params: Type.Object({ project_id: Uuid, run_id: Uuid }),
          response: withErrors({ 200: Run }),
        },
      },
      async (req) => runs.get(req.caller, req.params.project_id, req.params.run_id, kind),
    );
  }

  app.post<{ Params: P; Body: any }>(
    '/v2/projects/:project_id/log_streams/search',
    {
      schema: {
        summary: 'Search log streams',
        description:
          'Filters by `id`, `name`, `created_by`, `created_at`, `updated_at` (ANDed); sorts by `name`, `created_at` or `updated_at` (default `created_at` descending). `num_traces` and `num_spans` are always filled (kept current at ingestion), as in every log stream answer; `include_counts` is accepted and changes nothing.',
        tags: ['log_streams'],
        params: ProjectParams,
        body: SearchRuns,
        response: withErrors({ 200: RunsPage }),
      },
    },
    async (req) => {
      const b = req.body as any;
      return runs.search(req.caller, req.params.project_id, {
        filters: b.filters ?? [],
        sort: b.sort
          ? { name: b.sort.name, ascending: b.sort.ascending ?? true }
          : { name: 'created_at', ascending: false },
        starting_token: b.starting_token,
        limit: b.limit,
      });
    },
  );
}
