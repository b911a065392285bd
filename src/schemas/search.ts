/**
 * Record search (sessions, traces, spans) and available columns.
 *
 * `filters`, `filter_tree` and `sort` are documented here in full but validated in code
 * (src/query/filters.ts, sorts.ts) so that each fault's `loc` points at the exact field: the parts
 * marked `x-validated-in-code` are replaced by an open schema before Ajv compiles the body.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { OPERATORS } from '../query/filter-kinds.ts';
import { MAX_DEPTH, MAX_LEAVES } from '../query/filters.ts';
import { DateTime, Nullable, Uuid } from './common.ts';
import { RecordSchema } from './records.ts';

const CODE = { 'x-validated-in-code': true };

const column = {
  column_id: Type.String({
    description:
      'Column to filter (for example `input`, `metrics/duration_ns`, `user_metadata/customer`); `name` is accepted as the same thing',
  }),
};
const StringOrList = Type.Union([Type.String(), Type.Array(Type.String())]);

const kind = <K extends string>(k: K) => Type.Optional(Type.Literal(k, { default: k }));

export const IdFilter = Type.Object(
  {
    ...column,
    operator: Type.Optional(
      Type.Unsafe<string>({
        type: 'string',
        enum: [...OPERATORS.id],
        default: 'eq',
      }),
    ),
    value: StringOrList,
    type: kind('id'),
  },
  { title: 'IdFilter' },
);
export const DateFilter = Type.Object(
  {
    ...column,
    operator: Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.date] }),
    value: DateTime,
    type: kind('date'),
  },
  { title: 'DateFilter' },
);
export const NumberFilter = Type.Object(
  {
    ...column,
    operator: Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.number] }),
    value: Type.Union([Type.Number(), Type.Array(Type.Number(), { description: '[low, high] for between' })]),
    type: kind('number'),
  },
  { title: 'NumberFilter' },
);
export const BooleanFilter = Type.Object(
  {
    ...column,
    operator: Type.Optional(
      Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.boolean], default: 'eq' }),
    ),
    value: Type.Boolean(),
    type: kind('boolean'),
  },
  { title: 'BooleanFilter' },
);
export const CollectionFilter = Type.Object(
  {
    ...column,
    operator: Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.collection] }),
    value: StringOrList,
    case_sensitive: Type.Optional(Type.Boolean({ default: true })),
    type: kind('collection'),
  },
  { title: 'CollectionFilter' },
);
export const TextFilter = Type.Object(
  {
    ...column,
    operator: Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.text] }),
    value: StringOrList,
    case_sensitive: Type.Optional(Type.Boolean({ default: true })),
    type: kind('text'),
  },
  { title: 'TextFilter' },
);
export const FullyAnnotatedFilter = Type.Object(
  {
    column_id: Type.Optional(Type.Literal('fully_annotated')),
    user_ids: Type.Optional(Nullable(Type.Array(Uuid, { minItems: 1 }))),
    type: Type.Literal('fully_annotated'),
  },
  { title: 'FullyAnnotatedFilter', description: 'Only in annotation-queue searches; elsewhere 422' },
);

const FILTER_KINDS = [
  IdFilter,
  DateFilter,
  NumberFilter,
  BooleanFilter,
  CollectionFilter,
  TextFilter,
  FullyAnnotatedFilter,
];

export const Filter: TSchema = {
  ...CODE,
  title: 'Filter',
  description:
    'One filter, selected by `type` (inferred from the column when absent). A record without the value never matches a positive operator and always matches `ne` and `not_in`.',
  oneOf: FILTER_KINDS,
} as any;

export const FilterExpression: TSchema = {
  ...CODE,
  title: 'FilterExpression',
  description: `A leaf \`{filter}\` or a node \`{and: [...]}\`, \`{or: [...]}\`, \`{not: ...}\` of FilterExpressions; nodes nest at most ${MAX_DEPTH} levels of and/or/not and a search carries at most ${MAX_LEAVES} filters.`,
  oneOf: [
    Type.Object({ filter: Type.Object({}, { description: 'A Filter' }) }, { title: 'FilterLeaf' }),
    Type.Object(
      { and: Type.Array(Type.Object({}, { description: 'A FilterExpression' })) },
      { title: 'AndNode' },
    ),
    Type.Object(
      { or: Type.Array(Type.Object({}, { description: 'A FilterExpression' })) },
      { title: 'OrNode' },
    ),
    Type.Object({ not: Type.Object({}, { description: 'A FilterExpression' }) }, { title: 'NotNode' }),
  ],
} as any;

export const Sort: TSchema = {
  ...CODE,
  ...Type.Object(
    {
      name: Type.String({ description: 'Sortable column (`column_id` is accepted as the same thing)' }),
      ascending: Type.Optional(Type.Boolean({ default: true })),
      sort_type: Type.Optional(Type.Literal('column')),
    },
    { title: 'Sort', description: 'Default: created_at, then id, both descending' },
  ),
} as any;

const Limit = Type.Integer({ minimum: 1, maximum: 1000, description: 'Default 100' });
const StartingToken = Type.Integer({ minimum: 0, description: 'Offset of the page; default 0' });

export const Scope = {
  log_stream_id: Type.Optional(Nullable(Uuid)),
  experiment_id: Type.Optional(Nullable(Uuid)),
  metrics_testing_id: Type.Optional(Nullable(Uuid)),
};

export const SearchRecordsBody = Type.Object(
  {
    ...Scope,
    filters: Type.Optional(Nullable(Type.Array(Filter, { ...CODE, maxItems: MAX_LEAVES }))),
    filter_tree: Type.Optional(Nullable(FilterExpression)),
    sort: Type.Optional(Nullable(Sort)),
    pagination: Type.Optional(
      Nullable(Type.Object({ starting_token: Type.Optional(StartingToken), limit: Type.Optional(Limit) })),
    ),
    starting_token: Type.Optional(StartingToken),
    limit: Type.Optional(Limit),
    include_counts: Type.Optional(
      Type.Boolean({ description: 'Adds num_traces to sessions and num_spans to traces', default: false }),
    ),
    include_code_metric_metadata: Type.Optional(
      Type.Boolean({
        description:
          'Adds per-row scorer metadata to successful metrics (accepted; Spanbase runs no scorers, so there is none to add)',
        default: false,
      }),
    ),
  },
  { title: 'RecordsSearchRequest' },
);

export const SearchRecordsPage = Type.Object(
  {
    records: Type.Array(RecordSchema),
    num_rows: Type.Integer(),
    next_starting_token: Nullable(Type.Integer()),
    paginated: Type.Boolean(),
    last_row_id: Nullable(Type.String()),
  },
  { title: 'RecordsSearchResponse' },
);

export const AvailableColumnsBody = Type.Object(
  {
    ...Scope,
    start_time: Type.Optional(Nullable(DateTime)),
    end_time: Type.Optional(Nullable(DateTime)),
  },
  { title: 'AvailableColumnsRequest' },
);

export const ColumnDescriptor = Type.Object(
  {
    id: Type.String(),
    label: Type.String(),
    description: Type.String(),
    category: Type.String({ description: 'standard, metric, user_metadata, dataset_metadata or tags' }),
    group_label: Type.String(),
    data_type: Type.String({
      description: 'uuid, text, integer, floating_point, boolean, timestamp or string_list',
    }),
    filter_type: Type.String({ description: 'The filter kind (`type`) that applies' }),
    multi_valued: Type.Boolean(),
    allowed_values: Nullable(Type.Array(Type.Unknown())),
    sortable: Type.Boolean(),
    filterable: Type.Boolean(),
    is_empty: Type.Boolean(),
    applicable_types: Type.Array(Type.String()),
    is_optional: Type.Boolean(),
    roll_up_method: Nullable(Type.String()),
    metric_key_alias: Nullable(Type.String()),
    scorer_id: Nullable(Type.String()),
    scorer_config: Nullable(Type.Object({}, { additionalProperties: true })),
    threshold: Nullable(Type.Object({}, { additionalProperties: true })),
  },
  { title: 'ColumnDescriptor' },
);

export const AvailableColumns = Type.Object(
  { columns: Type.Array(ColumnDescriptor) },
  { title: 'AvailableColumnsResponse' },
);

/** The body schema with every `x-validated-in-code` part opened up, for Ajv. */
export function forAjv<T>(schema: T): T {
  const walk = (node: any): any => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    if (node['x-validated-in-code']) {
      // Keep a null check where the schema allowed null alongside (Nullable wraps in anyOf).
      return {};
    }
    const out: any = {};
    for (const k of Object.keys(node)) out[k] = walk(node[k]);
    for (const s of Object.getOwnPropertySymbols(node)) out[s] = node[s];
    return out;
  };
  return walk(schema);
}
