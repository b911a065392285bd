/**
 * Counting, deleting and exporting records by filter (the hosted API's LogRecordsQueryCountRequest,
 * LogRecordsDeleteRequest, LogRecordsExportRequest), and retention settings. Filters and sorts are
 * those of record search (schemas/search.ts), validated in code with exact locations.
 */
import { Type } from '@sinclair/typebox';
import { MAX_LEAVES } from '../query/filters.ts';
import { Nullable } from './common.ts';
import { Filter, FilterExpression, Scope, Sort } from './search.ts';

const Filters = {
  filters: Type.Optional(Nullable(Type.Array(Filter, { 'x-validated-in-code': true, maxItems: MAX_LEAVES }))),
  filter_tree: Type.Optional(Nullable(FilterExpression)),
};

export const CountRecordsBody = Type.Object(
  { ...Scope, ...Filters },
  { title: 'LogRecordsQueryCountRequest' },
);

export const CountRecordsResponse = Type.Object(
  { total_count: Type.Integer({ description: 'Records matching the query' }) },
  { title: 'LogRecordsQueryCountResponse' },
);

export const DeleteRecordsBody = Type.Object(
  { ...Scope, ...Filters },
  {
    title: 'LogRecordsDeleteRequest',
    description: 'A log stream or experiment must be named; the filters are those of search',
  },
);

export const DeleteRecordsResponse = Type.Object(
  { message: Type.String() },
  { title: 'LogRecordsDeleteResponse' },
);

export const ExportRecordsBody = Type.Object(
  {
    ...Scope,
    ...Filters,
    root_type: Type.Unsafe<'session' | 'trace' | 'span'>({
      type: 'string',
      enum: ['session', 'trace', 'span'],
      description:
        'Sessions (each with its traces and their spans), traces (each with its span tree) or spans',
    }),
    sort: Type.Optional(Nullable(Sort)),
    column_ids: Type.Optional(
      Nullable(
        Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 500, description: 'Columns to keep' }),
      ),
    ),
    export_format: Type.Optional(
      Type.Unsafe<'jsonl' | 'csv'>({ type: 'string', enum: ['jsonl', 'csv'], default: 'jsonl' }),
    ),
    redact: Type.Optional(
      Type.Boolean({ default: true, description: 'Redacted input and output in place of the originals' }),
    ),
  },
  { title: 'LogRecordsExportRequest' },
);

const RetentionDays = Nullable(
  Type.Integer({
    minimum: 1,
    maximum: 36500,
    description: 'Days records are kept, by their creation time; null keeps them forever',
  }),
);

export const ProjectSettingsBody = Type.Object(
  { retention_days: Type.Optional(RetentionDays) },
  { title: 'ProjectSettingsUpdate', additionalProperties: false },
);

export const LogStreamSettingsBody = Type.Object(
  { retention_days: Type.Optional(RetentionDays) },
  {
    title: 'LogStreamSettingsUpdate',
    description: "A log stream's own retention wins over its project's",
    additionalProperties: false,
  },
);
