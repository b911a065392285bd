/** A record's value in a column of the record tables, and how a cell writes it. */
import type { ApiRecord, Column } from './api-types.ts';
import { formatCost, formatCount, formatNs, formatTime } from './format.ts';
import { preview } from './messages.ts';

const NAMESPACES = ['metrics', 'user_metadata', 'dataset_metadata'] as const;

export function cellValue(record: ApiRecord, columnId: string): unknown {
  const slash = columnId.indexOf('/');
  if (slash > 0) {
    const ns = columnId.slice(0, slash) as (typeof NAMESPACES)[number];
    if (NAMESPACES.includes(ns))
      return (record[ns] as Record<string, unknown> | undefined)?.[columnId.slice(slash + 1)];
  }
  return (record as Record<string, unknown>)[columnId];
}

const NANOSECOND_METRICS = new Set(['metrics/duration_ns', 'metrics/time_to_first_token_ns']);
/** Columns in nanoseconds, which the console shows (and takes) in milliseconds. */
export const isNanosecondColumn = (columnId: string) => NANOSECOND_METRICS.has(columnId);
const COST = 'metrics/cost';

/** The cell's text; the table adds styling for kinds, status and tags. */
export function cellText(value: unknown, columnId: string, column: Column | undefined): string {
  // Dollars; a record without a cost says so ("—"), rather than looking free.
  if (columnId === COST) return formatCost(value);
  if (value === null || value === undefined) return '';
  if (NANOSECOND_METRICS.has(columnId)) return formatNs(value);
  if (columnId === 'input' || columnId === 'output')
    return preview(value, 160, columnId === 'input' ? 'user' : undefined);
  const type = column?.data_type;
  if (type === 'timestamp' && typeof value === 'string') return formatTime(value);
  // A scorer's value (a share of yes votes, a mean): three decimals at most, not 0.6666666666666666.
  if (column?.scorer_id && typeof value === 'number' && !Number.isInteger(value))
    return String(Math.round(value * 1000) / 1000);
  if (typeof value === 'number')
    return type === 'integer' || Number.isInteger(value) ? formatCount(value) : String(value);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value))
    return value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The header: the catalogue's label, without the unit when the cell writes its own ($, ms, s). */
export const columnTitle = (column: Column | undefined, columnId: string) =>
  (column?.label ?? columnId).replace(
    NANOSECOND_METRICS.has(columnId) ? / \(ns\)$/i : columnId === COST ? / \(USD\)$/i : /$^/,
    '',
  );

export function cellClass(column: Column | undefined, columnId: string): string | undefined {
  if (isNumericColumn(column, columnId)) return 'num';
  if (columnId === 'input' || columnId === 'output') return 'text-col';
  if (columnId === 'name') return 'name-col';
  if (column?.data_type === 'timestamp' || column?.data_type === 'uuid') return 'nowrap';
  return undefined;
}

export const isNumericColumn = (column: Column | undefined, columnId: string) =>
  NANOSECOND_METRICS.has(columnId) ||
  column?.data_type === 'integer' ||
  column?.data_type === 'floating_point';
