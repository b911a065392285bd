import { Type } from '@sinclair/typebox';
import { MAX_PATTERN_LENGTH } from '../domain/prices/pricer.ts';
import { DateTime, Nullable, Uuid } from './common.ts';

/** Dollars per million tokens: at most a million dollars, never negative. */
const Price = Type.Number({ minimum: 0, maximum: 1_000_000 });
const Pattern = Type.String({
  minLength: 1,
  maxLength: MAX_PATTERN_LENGTH,
  description:
    'A case-insensitive regular expression (RE2 syntax, matched in linear time) that must match the whole model name',
});
const StartDate = Type.String({
  maxLength: 64,
  description:
    'The price applies to records created from this moment (an RFC 3339 date-time, or a date: 00:00 UTC)',
});
const Convention = Type.Boolean({
  description:
    'Whether num_input_tokens already counts the cache reads and writes (OpenAI style); absent or null: as the catalogue says for the model, else true',
});

export const ModelPriceParams = Type.Object({ project_id: Uuid, price_id: Uuid });
export const RunModelsParams = Type.Object({ project_id: Uuid, run_id: Uuid });

export const CreateModelPrice = Type.Object({
  model_pattern: Pattern,
  input_price_per_million: Price,
  output_price_per_million: Price,
  cache_read_input_price_per_million: Type.Optional(Nullable(Price)),
  cache_creation_input_price_per_million: Type.Optional(Nullable(Price)),
  input_includes_cached_tokens: Type.Optional(Nullable(Convention)),
  start_date: Type.Optional(Nullable(StartDate)),
});

/** PATCH: fields left out keep their value; null clears an optional one. */
export const UpdateModelPrice = Type.Object({
  model_pattern: Type.Optional(Pattern),
  input_price_per_million: Type.Optional(Price),
  output_price_per_million: Type.Optional(Price),
  cache_read_input_price_per_million: Type.Optional(Nullable(Price)),
  cache_creation_input_price_per_million: Type.Optional(Nullable(Price)),
  input_includes_cached_tokens: Type.Optional(Nullable(Convention)),
  start_date: Type.Optional(Nullable(StartDate)),
});

export const ModelPrice = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    model_pattern: Type.String(),
    input_price_per_million: Type.Number(),
    output_price_per_million: Type.Number(),
    cache_read_input_price_per_million: Nullable(Type.Number()),
    cache_creation_input_price_per_million: Nullable(Type.Number()),
    input_includes_cached_tokens: Nullable(Type.Boolean()),
    start_date: Nullable(DateTime),
    source: Type.Literal('project'),
    created_by: Nullable(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { title: 'ModelPrice' },
);

const LongContext = Type.Object({
  above_input_tokens: Type.Integer(),
  input: Type.Number(),
  output: Type.Optional(Type.Number()),
  cache_read: Type.Optional(Type.Number()),
  cache_creation: Type.Optional(Type.Number()),
});

export const CatalogueModelPrice = Type.Object(
  {
    model_pattern: Type.String({ description: 'The normalised model name the entry matches' }),
    provider: Type.String(),
    host: Nullable(Type.String()),
    input_price_per_million: Type.Number(),
    output_price_per_million: Type.Number(),
    cache_read_input_price_per_million: Nullable(Type.Number()),
    cache_creation_input_price_per_million: Nullable(Type.Number()),
    long_context: Nullable(LongContext),
    input_includes_cached_tokens: Type.Boolean(),
    source: Type.String({ description: '`<source id>:<key in that source>`' }),
  },
  { title: 'CatalogueModelPrice' },
);

export const ModelPriceList = Type.Object({
  project_prices: Type.Array(ModelPrice),
  catalogue: Type.Object({
    checked: Type.String(),
    sources: Type.Record(Type.String(), Type.Record(Type.String(), Type.String())),
    models: Type.Array(CatalogueModelPrice),
  }),
});

export const ModelsWithoutPrice = Type.Object({
  run_id: Uuid,
  models: Type.Array(
    Type.Object(
      { model: Type.String(), first_seen: DateTime, last_seen: DateTime },
      { title: 'ModelWithoutPrice' },
    ),
  ),
});

export const RecomputeMetricsResult = Type.Object({
  run_id: Uuid,
  records_scanned: Type.Integer({ description: 'llm spans read' }),
  records_updated: Type.Integer({
    description: 'llm spans whose cost changed (their traces and sessions moved with them)',
  }),
  batches: Type.Integer(),
});
