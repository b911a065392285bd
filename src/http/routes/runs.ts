import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../../domain/errors.ts';
import { parseTimestamp } from '../../domain/time.ts';
import { ProjectParams, Uuid, withErrors } from '../../schemas/common.ts';
import { CreateRun, Run, RunsPage, SearchRuns } from '../../schemas/projects.ts';
import type { RunFilter, RunKind } from '../../store/runs.ts';

/** Schema-valid filters → repository filters (defaults applied, date-times in microseconds). */
function toRunFilters(filters: any[]): RunFilter[] {
  return filters.map((f, i) => {
    if (f.name === 'created_at' || f.name === 'updated_at') {
      const value = parseTimestamp(f.value);
      if (value === null) {
        throw new ValidationError({
          loc: ['body', 'filters', i, 'value'],
          msg: 'Input should be a valid datetime',
          type: 'datetime_parsing',
          input: f.value,
        });
      }
      return { name: f.name, operator: f.operator, value };
    }
    const operator = f.operator ?? 'eq';
    const listOp = operator === 'one_of' || operator === 'not_in';
    if (listOp !== Array.isArray(f.value)) {
      throw new ValidationError({
        loc: ['body', 'filters', i, 'value'],
        msg: listOp
          ? `Operator '${operator}' takes a list of strings`
          : `Operator '${operator}' takes one string`,
        type: listOp ? 'list_type' : 'string_type',
        input: f.value,
      });
    }
    return { name: f.name, operator, value: f.value, case_sensitive: f.case_sensitive ?? true };
  });
}

export default async function runRoutes(app: FastifyInstance) {
  const { runs } = app.services;
  type P = { project_id: string };

  for (const [kind, segment, tag] of [
    ['log_stream', 'log_streams', 'log_streams'],
    ['experiment', 'experiments', 'experiments'],
  ] as [RunKind, string, string][]) {
    app.post<{ Params: P; Body: { name: string } }>(
      `/v2/projects/:project_id/${segment}`,
      { schema: { tags: [tag], params: ProjectParams, body: CreateRun, response: withErrors({ 200: Run }) } },
      async (req) => runs.create(req.caller, req.params.project_id, kind, req.body.name),
    );
    app.get<{ Params: P }>(
      `/v2/projects/:project_id/${segment}`,
      { schema: { tags: [tag], params: ProjectParams, response: withErrors({ 200: Type.Array(Run) }) } },
      async (req) => runs.list(req.caller, req.params.project_id, kind),
    );
    app.get<{ Params: P & { run_id: string } }>(
      `/v2/projects/:project_id/${segment}/:run_id`,
      {
        schema: {
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
        tags: ['log_streams'],
        params: ProjectParams,
        body: SearchRuns,
        response: withErrors({ 200: RunsPage }),
      },
    },
    async (req) => {
      const b = req.body as any;
      return runs.search(req.caller, req.params.project_id, {
        filters: toRunFilters(b.filters ?? []),
        sort: b.sort
          ? { name: b.sort.name, ascending: b.sort.ascending ?? true }
          : { name: 'created_at', ascending: false },
        starting_token: b.starting_token,
        limit: b.limit,
        include_counts: b.include_counts ?? false,
      });
    },
  );
}
