import { Type } from '@sinclair/typebox';
import { ErrorBody, Uuid, withErrors } from './common.ts';

/** The headers that pick the target of an OTLP export (names are case-insensitive on the wire). */
export const OtelHeaders = Type.Object({
  projectid: Type.Optional(Uuid),
  project: Type.Optional(Type.String({ description: 'Project name (when projectid is not given)' })),
  logstreamid: Type.Optional(Uuid),
  logstream: Type.Optional(Type.String({ description: 'Log stream name; created when missing' })),
  experimentid: Type.Optional(Uuid),
  experiment: Type.Optional(Type.String({ description: 'Experiment name' })),
  sessionid: Type.Optional(
    Type.String({
      description:
        'Session of the traces that carry no session.id / gen_ai.conversation.id: a session id of the run, or an external id (found or created)',
    }),
  ),
});

/** OTLP/JSON ExportTraceServiceRequest (opentelemetry-proto); only the outline, the decoder checks the rest. */
export const OtlpJsonRequest = Type.Object(
  { resourceSpans: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))) },
  { additionalProperties: true },
);

/** OTLP ExportTraceServiceResponse in OTLP/JSON; empty when every span was accepted. */
export const OtlpJsonResponse = Type.Object({
  partialSuccess: Type.Optional(
    Type.Object({
      rejectedSpans: Type.String({ description: 'int64 as a decimal string (OTLP/JSON)' }),
      errorMessage: Type.String(),
    }),
  ),
});

const Binary = Type.String({ format: 'binary' });

export const OtelRequestBody = {
  content: {
    'application/x-protobuf': { schema: Binary },
    'application/json': { schema: OtlpJsonRequest },
  },
};

export const OtelResponses = withErrors({
  200: {
    description: 'ExportTraceServiceResponse: protobuf for a protobuf request, JSON for a JSON one',
    content: {
      'application/json': { schema: OtlpJsonResponse },
      'application/x-protobuf': { schema: Binary },
    },
  } as any,
  400: ErrorBody,
  415: ErrorBody,
});
