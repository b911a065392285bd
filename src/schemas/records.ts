/**
 * Schemas of the ingestion and record read-back routes. The request bodies of ingestion are
 * validated by hand in src/domain/ingest.ts (recursive span trees with a depth bound, exact `loc`s,
 * the hot path); the schemas below document the same shapes in OpenAPI. Responses are serialized
 * through these schemas.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { RecordSchema } from '../domain/record-json.ts';
import { AnyKeyMap, DateTime, Nullable, Uuid } from './common.ts';

export { RecordSchema };

const StrMap = AnyKeyMap(Type.Union([Type.String(), Type.Number(), Type.Boolean()]));

export const Message = Type.Object(
  {
    content: Nullable(Type.String()),
    role: Type.Unsafe<string>({
      type: 'string',
      enum: ['agent', 'assistant', 'developer', 'function', 'system', 'tool', 'user'],
    }),
    tool_call_id: Type.Optional(Nullable(Type.String())),
    tool_calls: Type.Optional(
      Nullable(
        Type.Array(
          Type.Object({
            id: Type.String(),
            function: Type.Object({ name: Type.String(), arguments: Type.String() }),
          }),
        ),
      ),
    ),
  },
  { title: 'Message' },
);

export const Document = Type.Object(
  {
    page_content: Type.Optional(Type.String({ description: 'Also accepted as `content`.' })),
    content: Type.Optional(Type.String()),
    metadata: Type.Optional(StrMap),
  },
  { title: 'Document' },
);

const Input = Type.Union([
  Type.String(),
  Message,
  Type.Array(Type.Union([Message, Document, Type.String()])),
]);
const Output = Nullable(
  Type.Union([Type.String(), Message, Type.Array(Type.Union([Message, Document, Type.String()]))]),
);

export const MetricsIn = Type.Object(
  {
    duration_ns: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    num_input_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    num_output_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    num_total_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    time_to_first_token_ns: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    num_cache_read_input_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    num_cache_creation_input_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  },
  { additionalProperties: Type.Number(), description: 'Any other key: a number.' },
);

const common = {
  id: Type.Optional(Nullable(Uuid)),
  name: Type.Optional(Type.String()),
  input: Type.Optional(Nullable(Input)),
  output: Type.Optional(Output),
  redacted_input: Type.Optional(Nullable(Input)),
  redacted_output: Type.Optional(Output),
  created_at: Type.Optional(DateTime),
  user_metadata: Type.Optional(StrMap),
  dataset_metadata: Type.Optional(StrMap),
  dataset_input: Type.Optional(Nullable(Type.String())),
  dataset_output: Type.Optional(Nullable(Type.String())),
  tags: Type.Optional(Type.Array(Type.String())),
  status_code: Type.Optional(Nullable(Type.Integer())),
  error_message: Type.Optional(Nullable(Type.String())),
  metrics: Type.Optional(MetricsIn),
  external_id: Type.Optional(Nullable(Type.String())),
  session_id: Type.Optional(Nullable(Uuid)),
  trace_id: Type.Optional(Nullable(Uuid)),
  parent_id: Type.Optional(Nullable(Uuid)),
  step_number: Type.Optional(Nullable(Type.Integer())),
  is_complete: Type.Optional(Type.Boolean()),
};

export const SpanIn = Type.Recursive(
  (Self) =>
    Type.Object(
      {
        type: Type.Unsafe<string>({
          type: 'string',
          enum: ['agent', 'workflow', 'llm', 'tool', 'retriever', 'control', 'http'],
        }),
        ...common,
        spans: Type.Optional(Type.Array(Self, { description: 'Child spans, at most 64 levels deep.' })),
        model: Type.Optional(Nullable(Type.String({ description: 'llm spans' }))),
        temperature: Type.Optional(Nullable(Type.Number({ description: 'llm spans' }))),
        finish_reason: Type.Optional(Nullable(Type.String({ description: 'llm spans' }))),
        tools: Type.Optional(Nullable(Type.Array(AnyKeyMap(Type.Unknown())))),
        tool_call_id: Type.Optional(Nullable(Type.String({ description: 'tool spans' }))),
        agent_type: Type.Optional(Type.String({ description: 'agent spans' })),
      },
      { title: 'Span' },
    ),
  { $id: 'SpanIn' },
);

export const TraceIn = Type.Object(
  { type: Type.Optional(Type.Literal('trace')), ...common, spans: Type.Optional(Type.Array(SpanIn)) },
  { title: 'Trace' },
);

const targetFields = {
  log_stream_id: Type.Optional(Nullable(Uuid)),
  experiment_id: Type.Optional(Nullable(Uuid)),
  metrics_testing_id: Type.Optional(Nullable(Uuid)),
};

export const TracesIngestBody = Type.Object(
  {
    ...targetFields,
    session_id: Type.Optional(Nullable(Uuid)),
    session_external_id: Type.Optional(Nullable(Type.String())),
    traces: Type.Array(TraceIn, { minItems: 1 }),
    sessions: Type.Optional(
      Type.Array(
        Type.Object({
          id: Uuid,
          name: Type.Optional(Nullable(Type.String())),
          external_id: Type.Optional(Nullable(Type.String())),
          previous_session_id: Type.Optional(Nullable(Uuid)),
          user_metadata: Type.Optional(StrMap),
          created_at: Type.Optional(DateTime),
        }),
        {
          description:
            'Spanbase extension for batch clients: sessions created with the batch (as by POST .../sessions), ' +
            'which its traces name in session_id. A session already stored under that id is left as it is.',
        },
      ),
    ),
    is_complete: Type.Optional(Type.Boolean({ default: true })),
    include_trace_ids: Type.Optional(Type.Boolean({ default: false })),
  },
  { description: 'Exactly one of log_stream_id and experiment_id.' },
);

export const SpansIngestBody = Type.Object({
  ...targetFields,
  trace_id: Uuid,
  parent_id: Uuid,
  spans: Type.Array(SpanIn, { minItems: 1 }),
  is_complete: Type.Optional(Type.Boolean({ default: true })),
});

export const SessionCreateBody = Type.Object({
  ...targetFields,
  name: Type.Optional(Nullable(Type.String())),
  external_id: Type.Optional(Nullable(Type.String())),
  previous_session_id: Type.Optional(Nullable(Uuid)),
  user_metadata: Type.Optional(Nullable(StrMap)),
});

export const RecordUpdateBody = Type.Object({
  ...targetFields,
  input: Type.Optional(Nullable(Input)),
  output: Type.Optional(Output),
  name: Type.Optional(Type.String()),
  status_code: Type.Optional(Nullable(Type.Integer())),
  error_message: Type.Optional(Nullable(Type.String())),
  tags: Type.Optional(
    Nullable(Type.Array(Type.String(), { description: 'Added to the tags already there.' })),
  ),
  is_complete: Type.Optional(Nullable(Type.Boolean())),
  duration_ns: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  user_metadata: Type.Optional(Nullable(StrMap)),
});

const targetOut = {
  project_id: Uuid,
  project_name: Type.String(),
  log_stream_id: Nullable(Uuid),
  experiment_id: Nullable(Uuid),
  metrics_testing_id: Nullable(Uuid),
  session_id: Nullable(Uuid),
  records_count: Type.Integer(),
};

export const TracesIngestResponse = Type.Object({
  ...targetOut,
  records_added: Type.Integer({
    description:
      'Records this request created (sessions included); the others were already stored and were updated',
  }),
  traces_count: Type.Integer(),
  spans_count: Type.Integer(),
  trace_ids: Type.Optional(Type.Array(Uuid)),
});

export const SpansIngestResponse = Type.Object({ ...targetOut, trace_id: Uuid, parent_id: Uuid });
export const TraceUpdateResponse = Type.Object({ ...targetOut, trace_id: Uuid });
export const SpanUpdateResponse = Type.Object({ ...targetOut, span_id: Uuid });

export const SessionCreateResponse = Type.Object({
  id: Uuid,
  name: Nullable(Type.String()),
  project_id: Uuid,
  project_name: Type.String(),
  log_stream_id: Nullable(Uuid),
  experiment_id: Nullable(Uuid),
  previous_session_id: Nullable(Uuid),
  external_id: Nullable(Type.String()),
});

function withChildren(key: string, child: TSchema, title: string) {
  return Type.Object(
    { ...RecordSchema.properties, [key]: Type.Array(child) },
    { title, additionalProperties: true },
  );
}

/** A trace with its span tree: every span carries its children in `spans`. */
export const TraceWithSpans = withChildren('spans', Type.Unknown(), 'TraceWithSpans');
export const SessionWithTraces = withChildren('traces', RecordSchema, 'SessionWithTraces');

export const TraceParams = Type.Object({ project_id: Uuid, trace_id: Uuid });
export const SpanParams = Type.Object({ project_id: Uuid, span_id: Uuid });
export const SessionParams = Type.Object({ project_id: Uuid, session_id: Uuid });
