import type { FastifyInstance } from 'fastify';
import { withErrors } from '../../schemas/common.ts';
import type { Static } from '@sinclair/typebox';
import {
  Signal,
  SignalList,
  SignalParams,
  SignalRunEnvelope,
  SignalRunList,
  SignalRunParams,
  SignalRunsQuery,
  SignalsConfigurationEnvelope,
  SignalsParams,
  SignalsQuery,
  type SignalsUpdate,
  SignalRun,
  UpdateSignal,
  UpdateSignalsConfiguration,
} from '../../schemas/signals.ts';

export default async function signalsRoutes(app: FastifyInstance) {
  const { signals, signalRuns } = app.services;
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
          "Fields at the top level of the body; fields left out keep their saved value. Runs happen at each cron slot (in the schedule's time zone, between start_date and end_date) when run_mode is SCHEDULED and scheduled_runs_enabled is true; POST .../signals/runs starts one now.",
        tags,
        params: SignalsParams,
        body: UpdateSignalsConfiguration,
        response: withErrors({ 200: SignalsConfigurationEnvelope }),
      },
    },
    async (req) => signals.put(req.caller, req.params.project_id, req.params.run_id, req.body),
  );

  const base = '/v2/projects/:project_id/runs/:run_id/signals';
  type SR = P & { signal_run_id: string };
  type S = P & { signal_id: string };

  app.post<{ Params: P }>(
    `${base}/runs`,
    {
      schema: {
        summary: 'Start a Signals run now (editors)',
        description:
          'Answers 202 with the queued run; it reads the records since the previous run, reports model-free findings (error bursts, latency and cost outliers) and, with an integration and a model configured, asks the model. Poll GET .../signals/runs/{id}.',
        tags,
        params: SignalsParams,
        response: withErrors({ 202: SignalRunEnvelope }),
      },
    },
    async (req, reply) => {
      const out = await signalRuns.startNow(req.caller, req.params.project_id, req.params.run_id);
      reply.code(202);
      return out;
    },
  );
  app.get<{ Params: P; Querystring: Static<typeof SignalRunsQuery> }>(
    `${base}/runs`,
    {
      schema: {
        summary: 'List the Signals runs of a run, latest first, with their figures and spend',
        tags,
        params: SignalsParams,
        querystring: SignalRunsQuery,
        response: withErrors({ 200: SignalRunList }),
      },
    },
    async (req) =>
      signalRuns.listRuns(
        req.caller,
        req.params.project_id,
        req.params.run_id,
        req.query.limit,
        req.query.starting_token,
      ),
  );
  app.get<{ Params: SR }>(
    `${base}/runs/:signal_run_id`,
    {
      schema: {
        summary: 'Get one Signals run',
        tags,
        params: SignalRunParams,
        response: withErrors({ 200: SignalRun }),
      },
    },
    async (req) =>
      signalRuns.getRun(req.caller, req.params.project_id, req.params.run_id, req.params.signal_run_id),
  );
  app.get<{ Params: P; Querystring: Static<typeof SignalsQuery> }>(
    base,
    {
      schema: {
        summary: 'List the signals found in a run, most severe first',
        description:
          'Filter by severity and status (repeat the parameter for several), or by the Signals run that last saw them. Shaped after the hosted InsightV2: title, observation, details, suggested_action, all_occurrences, example_occurrences, priority_category; plus severity, status, first/last seen and counts.',
        tags,
        params: SignalsParams,
        querystring: SignalsQuery,
        response: withErrors({ 200: SignalList }),
      },
    },
    async (req) => signalRuns.listSignals(req.caller, req.params.project_id, req.params.run_id, req.query),
  );
  app.get<{ Params: S }>(
    `${base}/:signal_id`,
    {
      schema: {
        summary: 'Get one signal with its occurrences',
        tags,
        params: SignalParams,
        response: withErrors({ 200: Signal }),
      },
    },
    async (req) =>
      signalRuns.getSignal(req.caller, req.params.project_id, req.params.run_id, req.params.signal_id),
  );
  app.patch<{ Params: S; Body: Static<typeof UpdateSignal> }>(
    `${base}/:signal_id`,
    {
      schema: {
        summary: 'Mark a signal resolved or dismissed, or open again (editors)',
        description: 'A resolved or dismissed signal is not merged into; seen again, it is a new signal.',
        tags,
        params: SignalParams,
        body: UpdateSignal,
        response: withErrors({ 200: Signal }),
      },
    },
    async (req) =>
      signalRuns.setStatus(
        req.caller,
        req.params.project_id,
        req.params.run_id,
        req.params.signal_id,
        req.body.status,
      ),
  );
}
