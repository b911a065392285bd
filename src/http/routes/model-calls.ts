import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  ModelCallsPage,
  ModelCallsQuery,
  ModelSpend,
  ModelSpendQuery,
  PlaygroundResult,
  PlaygroundRunBody,
} from '../../schemas/model-calls.ts';
import type { PlaygroundInput } from '../../services/playground.ts';

const tags = ['model calls'];

/** A project's model calls and spend, and the playground (a model call of the caller's own). */
export default async function modelCallRoutes(app: FastifyInstance) {
  const { modelSpend, playground } = app.services;
  type P = { project_id: string };

  app.get<{ Params: P; Querystring: { starting_token: number; limit: number; purpose?: string } }>(
    '/v2/projects/:project_id/model_calls',
    {
      schema: {
        summary: 'The model calls Spanbase made for a project, newest first',
        description:
          'Every call: purpose (scorer, experiment, signals, playground), run, integration, model, tokens, cost (null when the model has no price), latency, attempts and outcome.',
        tags,
        params: ProjectParams,
        querystring: ModelCallsQuery,
        response: withErrors({ 200: ModelCallsPage }),
      },
    },
    async (req) => modelSpend.calls(req.caller, req.params.project_id, req.query),
  );
  app.get<{ Params: P; Querystring: { days: number } }>(
    '/v2/projects/:project_id/model_calls/spend',
    {
      schema: {
        summary: "A project's model spend per day and purpose",
        description:
          'Calls, errors, tokens and cost per UTC day and purpose over the last `days` days. Calls of models without a price are counted in unpriced_calls, never as $0.',
        tags,
        params: ProjectParams,
        querystring: ModelSpendQuery,
        response: withErrors({ 200: ModelSpend }),
      },
    },
    async (req) => modelSpend.spend(req.caller, req.params.project_id, req.query.days),
  );
  app.post<{ Params: P; Body: PlaygroundInput & { stream?: boolean } }>(
    '/v2/projects/:project_id/playground/runs',
    {
      schema: {
        summary: 'Run a prompt in the playground (editors)',
        description:
          "Fills the messages' {{variables}}, calls the model through the integration and answers the reply with tokens, cost, latency and the raw request and response (no headers). The call is recorded as the project's playground spend, so it takes an editor of the project. A model error is answered in `error` (status 200). With stream: true the answer is application/x-ndjson: delta lines as the reply arrives, then the result.",
        tags,
        params: ProjectParams,
        body: PlaygroundRunBody,
        response: withErrors({ 200: PlaygroundResult }),
      },
    },
    async (req, reply) => {
      const run = await playground.prepare(req.caller, req.params.project_id, req.body);
      if (!req.body.stream) return run();
      const out = new PassThrough();
      const stop = new AbortController();
      // The client went away before the reply was done: stop the call.
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) stop.abort();
      });
      const line = (v: unknown) => out.write(`${JSON.stringify(v)}\n`);
      run({ onDelta: (text) => line({ type: 'delta', text }), signal: stop.signal })
        .then((result) => line({ type: 'result', ...result }))
        .catch((err) => {
          req.log.error({ err }, 'playground run failed');
          line({ type: 'error', detail: 'The playground run failed' });
        })
        .finally(() => out.end());
      return reply.type('application/x-ndjson').send(out);
    },
  );
}
