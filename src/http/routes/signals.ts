import type { FastifyInstance } from 'fastify';
import { withErrors } from '../../schemas/common.ts';
import {
  SignalsConfigurationEnvelope,
  SignalsParams,
  type SignalsUpdate,
  UpdateSignalsConfiguration,
} from '../../schemas/signals.ts';

export default async function signalsRoutes(app: FastifyInstance) {
  const { signals } = app.services;
  type P = { project_id: string; run_id: string };
  const url = '/v2/projects/:project_id/runs/:run_id/signals/configuration';
  const tags = ['signals'];

  app.get<{ Params: P }>(
    url,
    {
      schema: {
        summary: 'Get the Signals configuration of a run',
        description: 'A run with none saved answers the defaults with `id: null`.',
        tags,
        params: SignalsParams,
        response: withErrors({ 200: SignalsConfigurationEnvelope }),
      },
    },
    async (req) => signals.get(req.caller, req.params.project_id, req.params.run_id),
  );
  app.put<{ Params: P; Body: SignalsUpdate }>(
    url,
    {
      schema: {
        summary: 'Save the Signals configuration of a run (editors)',
        description:
          'Fields at the top level of the body; fields left out keep their saved value. Stored only: Spanbase does not run Signals yet.',
        tags,
        params: SignalsParams,
        body: UpdateSignalsConfiguration,
        response: withErrors({ 200: SignalsConfigurationEnvelope }),
      },
    },
    async (req) => signals.put(req.caller, req.params.project_id, req.params.run_id, req.body),
  );
}
