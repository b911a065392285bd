import { Type } from '@sinclair/typebox';
import { CALL_PURPOSES } from '../domain/model-call-purposes.ts';
import { DateTime, Nullable, PageEnvelope, Pagination, Uuid } from './common.ts';

const Purpose = Type.Unsafe<string>({ type: 'string', enum: [...CALL_PURPOSES] });

const Attempt = Type.Object({
  status: Nullable(Type.Integer()),
  kind: Nullable(Type.String()),
  latency_ms: Type.Integer(),
  wait_ms: Type.Integer(),
});

export const ModelCall = Type.Object(
  {
    id: Uuid,
    created_at: DateTime,
    purpose: Purpose,
    run_id: Nullable(Type.String()),
    integration_id: Nullable(Type.String()),
    integration_name: Type.String(),
    model: Type.String(),
    status: Type.Unsafe<string>({ type: 'string', enum: ['ok', 'error'] }),
    error_kind: Nullable(Type.String()),
    error: Nullable(Type.String()),
    provider_status: Nullable(Type.Integer()),
    tokens_in: Type.Integer(),
    tokens_out: Type.Integer(),
    cost_usd: Nullable(Type.Number({ description: 'null: the model has no price (not $0)' })),
    priced: Type.Boolean(),
    latency_ms: Type.Integer(),
    attempts: Type.Integer(),
    attempt_log: Type.Array(Attempt),
  },
  { title: 'ModelCall' },
);

export const ModelCallsQuery = Type.Object({ ...Pagination, purpose: Type.Optional(Purpose) });

export const ModelCallsPage = Type.Object(
  { ...PageEnvelope, calls: Type.Array(ModelCall) },
  { title: 'ModelCallsPage' },
);

const SpendFigures = {
  calls: Type.Integer(),
  errors: Type.Integer(),
  tokens_in: Type.Integer(),
  tokens_out: Type.Integer(),
  cost_usd: Type.Number({ description: 'The priced calls only' }),
  unpriced_calls: Type.Integer({ description: 'Calls that used tokens of a model without a price' }),
};

export const ModelSpend = Type.Object(
  {
    from_day: Type.String({ format: 'date' }),
    days: Type.Array(
      Type.Object({ day: Type.String({ format: 'date' }), purpose: Purpose, ...SpendFigures }),
    ),
    total: Type.Object(SpendFigures),
  },
  { title: 'ModelSpend' },
);

export const ModelSpendQuery = Type.Object({ days: Type.Integer({ minimum: 1, maximum: 366, default: 30 }) });

const Role = Type.Unsafe<'system' | 'user' | 'assistant'>({
  type: 'string',
  enum: ['system', 'user', 'assistant'],
});

export const PlaygroundRunBody = Type.Object({
  integration_id: Uuid,
  model: Type.String({ minLength: 1, maxLength: 255 }),
  messages: Type.Array(Type.Object({ role: Role, content: Type.String({ maxLength: 1_000_000 }) }), {
    minItems: 1,
    maxItems: 100,
  }),
  variables: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  json: Type.Optional(Type.Boolean({ description: 'Ask for a JSON object' })),
  stream: Type.Optional(
    Type.Boolean({
      description:
        'Answer application/x-ndjson: {"type":"delta","text":...} lines as the reply arrives, then one {"type":"result",...} line with the result below',
    }),
  ),
});

const Raw = Nullable(Type.Object({ method: Type.String(), url: Type.String(), body: Type.String() }));
const RawResponse = Nullable(Type.Object({ status: Type.Integer(), body: Type.String() }));

export const PlaygroundResult = Type.Object(
  {
    call_id: Nullable(Uuid),
    model: Type.String(),
    text: Type.String(),
    messages: Type.Array(Type.Object({ role: Type.String(), content: Type.String() })),
    tokens_in: Type.Integer(),
    tokens_out: Type.Integer(),
    cost_usd: Nullable(Type.Number({ description: 'null: the model has no price (not $0)' })),
    latency_ms: Nullable(Type.Integer()),
    attempts: Type.Integer(),
    error: Nullable(
      Type.Object({
        kind: Type.String(),
        message: Type.String(),
        provider_status: Nullable(Type.Integer()),
        pauses: Type.Boolean(),
      }),
    ),
    request: Raw,
    response: RawResponse,
  },
  { title: 'PlaygroundResult' },
);
