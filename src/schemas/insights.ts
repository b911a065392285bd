import { Type } from '@sinclair/typebox';
import { DateTime, Nullable, PageEnvelope, Pagination, Uuid } from './common.ts';

const DateOperator = Type.Unsafe<'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'>({
  type: 'string',
  enum: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'],
});

const dateFilter = (name: 'created_at' | 'updated_at', title: string) =>
  Type.Object({ name: Type.Literal(name), operator: DateOperator, value: DateTime }, { title });

/** Filters discriminated by `name` (decisions.md, token-usage insights). */
export const TokenUsageFilter = Type.Unsafe<{
  name: 'created_at' | 'updated_at';
  operator: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
  value: string;
}>({
  oneOf: [
    dateFilter('created_at', 'LogStreamInsightTokenUsageCreatedAtFilter'),
    dateFilter('updated_at', 'LogStreamInsightTokenUsageUpdatedAtFilter'),
  ],
  discriminator: { propertyName: 'name' },
});

export const TokenUsageSort = Type.Object(
  {
    name: Type.Literal('created_at'),
    ascending: Type.Optional(Type.Boolean({ default: true })),
    sort_type: Type.Optional(Type.Literal('column')),
  },
  { title: 'LogStreamInsightTokenUsageCreatedAtSort' },
);

/** The body may be absent: every field has a default. */
export const TokenUsageQuery = Type.Object({
  ...Pagination,
  filters: Type.Optional(Nullable(Type.Array(TokenUsageFilter, { maxItems: 100 }))),
  sort: Type.Optional(Nullable(TokenUsageSort)),
});

export const TokenUsageRecord = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    log_stream_id: Uuid,
    created_at: DateTime,
    updated_at: DateTime,
    token_usage: Type.Object({
      input_tokens: Type.Integer(),
      output_tokens: Type.Integer(),
      cache_read_input_tokens: Type.Integer(),
      cache_creation_input_tokens: Type.Integer(),
    }),
    cost: Nullable(
      Type.Number({
        description: "US dollars: the sum of the day's llm span costs; null when none has a cost",
      }),
    ),
  },
  { title: 'LogStreamInsightTokenUsage' },
);

export const TokenUsagePage = Type.Object({ ...PageEnvelope, token_usages: Type.Array(TokenUsageRecord) });
