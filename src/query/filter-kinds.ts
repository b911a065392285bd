/**
 * The filter kinds of record search and the operators each takes: one list that the server validates
 * with (filters.ts), the OpenAPI schemas document (schemas/search.ts) and the web console's filter
 * builder offers. No imports, so the console's bundle can take it as it is.
 */
export const OPERATORS = {
  id: ['eq', 'ne', 'one_of', 'not_in', 'contains'],
  text: ['eq', 'ne', 'contains', 'one_of', 'not_in'],
  date: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'between'],
  boolean: ['eq', 'ne'],
  collection: ['eq', 'contains', 'one_of', 'not_in'],
} as const;

/** The kinds a column can take; `fully_annotated` (below) is not about a column. */
export type FilterKind = keyof typeof OPERATORS;

/** Operators that may be left out, and what they mean then. */
export const DEFAULT_OPERATOR: Partial<Record<FilterKind, string>> = { id: 'eq', boolean: 'eq' };

/** Every `type` a filter may name: the column kinds and `fully_annotated` (annotation queues only). */
export const FILTER_TYPES = [
  'id',
  'date',
  'number',
  'boolean',
  'collection',
  'text',
  'fully_annotated',
] as const;
export type FilterType = (typeof FILTER_TYPES)[number];
