import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  RecordSchema,
  RecordUpdateBody,
  SessionCreateBody,
  SessionCreateResponse,
  SessionParams,
  SessionWithTraces,
  SpanParams,
  SpanUpdateResponse,
  SpansIngestBody,
  SpansIngestResponse,
  TraceParams,
  TraceUpdateResponse,
  TraceWithSpans,
  TracesIngestBody,
  TracesIngestResponse,
} from '../../schemas/records.ts';
import { validatorCompiler } from '../validation.ts';

/**
 * Ingestion bodies are checked by domain/ingest.ts (one pass that validates, normalises and reports
 * exact locs, bounded in depth); their schemas only document them. Path and query go through the
 * usual validator.
 */
const bodyCheckedByService: FastifySchemaCompiler<any> = (route) =>
  route.httpPart === 'body' ? () => true : validatorCompiler(route);

/** Captured text is kept: NUL and lone surrogates become U+FFFD instead of refusing the batch. */
const STORABLE_TEXT = { storableText: true };

type Q = Record<string, unknown>;

export default async function recordRoutes(app: FastifyInstance) {
  const { ingest, records } = app.services;
  type P = { project_id: string };
  app.addHook('onClose', async () => ingest.close());

  app.post<{ Params: P; Querystring: Q }>(
    '/v2/projects/:project_id/traces',
    {
      validatorCompiler: bodyCheckedByService,
      config: STORABLE_TEXT,
      schema: {
        tags: ['ingest'],
        summary: 'Log a batch of traces with their nested spans',
        params: ProjectParams,
        body: TracesIngestBody,
        response: withErrors({ 200: TracesIngestResponse }),
      },
    },
    async (req) => ingest.traces(req.caller, req.params.project_id, req.body, req.query ?? {}),
  );

  app.post<{ Params: P; Querystring: Q }>(
    '/v2/projects/:project_id/spans',
    {
      validatorCompiler: bodyCheckedByService,
      config: STORABLE_TEXT,
      schema: {
        tags: ['ingest'],
        summary: 'Add spans to a trace',
        params: ProjectParams,
        body: SpansIngestBody,
        response: withErrors({ 200: SpansIngestResponse }),
      },
    },
    async (req) => ingest.spans(req.caller, req.params.project_id, req.body, req.query ?? {}),
  );

  app.post<{ Params: P; Querystring: Q }>(
    '/v2/projects/:project_id/sessions',
    {
      validatorCompiler: bodyCheckedByService,
      config: STORABLE_TEXT,
      schema: {
        tags: ['ingest'],
        summary: 'Create a session (or find the one with this external_id)',
        params: ProjectParams,
        body: SessionCreateBody,
        response: withErrors({ 200: SessionCreateResponse }),
      },
    },
    async (req) => ingest.createSession(req.caller, req.params.project_id, req.body, req.query ?? {}),
  );

  app.patch<{ Params: P & { trace_id: string }; Querystring: Q }>(
    '/v2/projects/:project_id/traces/:trace_id',
    {
      validatorCompiler: bodyCheckedByService,
      config: STORABLE_TEXT,
      schema: {
        tags: ['ingest'],
        summary: 'Update a trace',
        params: TraceParams,
        body: RecordUpdateBody,
        response: withErrors({ 200: TraceUpdateResponse }),
      },
    },
    async (req) =>
      ingest.update(
        req.caller,
        'trace',
        req.params.project_id,
        req.params.trace_id,
        req.body,
        req.query ?? {},
      ),
  );

  app.patch<{ Params: P & { span_id: string }; Querystring: Q }>(
    '/v2/projects/:project_id/spans/:span_id',
    {
      validatorCompiler: bodyCheckedByService,
      config: STORABLE_TEXT,
      schema: {
        tags: ['ingest'],
        summary: 'Update a span',
        params: SpanParams,
        body: RecordUpdateBody,
        response: withErrors({ 200: SpanUpdateResponse }),
      },
    },
    async (req) =>
      ingest.update(req.caller, 'span', req.params.project_id, req.params.span_id, req.body, req.query ?? {}),
  );

  app.get<{ Params: P & { trace_id: string } }>(
    '/v2/projects/:project_id/traces/:trace_id',
    {
      schema: {
        tags: ['records'],
        summary: 'A trace with its span tree',
        params: TraceParams,
        response: withErrors({ 200: TraceWithSpans }),
      },
    },
    async (req) => records.trace(req.caller, req.params.project_id, req.params.trace_id),
  );

  app.get<{ Params: P & { span_id: string } }>(
    '/v2/projects/:project_id/spans/:span_id',
    {
      schema: {
        tags: ['records'],
        summary: 'A span',
        params: SpanParams,
        response: withErrors({ 200: RecordSchema }),
      },
    },
    async (req) => records.span(req.caller, req.params.project_id, req.params.span_id),
  );

  app.get<{ Params: P & { session_id: string } }>(
    '/v2/projects/:project_id/sessions/:session_id',
    {
      schema: {
        tags: ['records'],
        summary: 'A session with its traces',
        params: SessionParams,
        response: withErrors({ 200: SessionWithTraces }),
      },
    },
    async (req) => records.session(req.caller, req.params.project_id, req.params.session_id),
  );
}
