/** Sorts: validation of a `sort` object into a typed sort on a registry column. */
import { type ErrorItem, type Loc, ValidationError } from '../domain/errors.ts';
import { type ColumnContext, type ColumnDef, lookupColumn } from './columns.ts';

export interface SortSpec {
  column: ColumnDef;
  ascending: boolean;
  /** A `metrics/<key>` that is not a standard metric: it must be in the catalogue. */
  needsCatalogue: boolean;
  columnLoc: Loc;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `{ name | column_id, ascending?, sort_type? }` → a sort (ascending defaults to true), or null when
 * no sort is given (the caller then uses the native order: created_at, then id, both descending).
 */
export function validateSort(json: unknown, locPrefix: Loc, ctx: ColumnContext = {}): SortSpec | null {
  if (json === undefined || json === null) return null;
  const fail = (item: ErrorItem) => {
    throw new ValidationError(item);
  };
  if (!isObject(json))
    return fail({
      loc: locPrefix,
      msg: 'Input should be a valid dictionary or object',
      type: 'dict_type',
      input: json,
    });
  const field = json.name !== undefined ? 'name' : json.column_id !== undefined ? 'column_id' : null;
  if (field === null) return fail({ loc: [...locPrefix, 'name'], msg: 'Field required', type: 'missing' });
  const columnLoc = [...locPrefix, field];
  const id = json[field];
  if (typeof id !== 'string')
    return fail({ loc: columnLoc, msg: 'Input should be a valid string', type: 'string_type', input: id });
  const found = lookupColumn(id, ctx);
  if (!found.ok)
    return fail({
      loc: columnLoc,
      msg: `Value error, unknown column '${id}'`,
      type: 'value_error',
      input: id,
    });
  if (!found.column.sortable)
    return fail({
      loc: columnLoc,
      msg: `Value error, column '${id}' is not sortable`,
      type: 'value_error',
      input: id,
    });
  const ascending = json.ascending ?? true;
  if (typeof ascending !== 'boolean')
    return fail({
      loc: [...locPrefix, 'ascending'],
      msg: 'Input should be a valid boolean',
      type: 'bool_type',
      input: ascending,
    });
  if (json.sort_type !== undefined && json.sort_type !== null && json.sort_type !== 'column')
    return fail({
      loc: [...locPrefix, 'sort_type'],
      msg: "Input should be 'column'",
      type: 'literal_error',
      input: json.sort_type,
      ctx: { expected: "'column'" },
    });
  return { column: found.column, ascending, needsCatalogue: found.needsCatalogue, columnLoc };
}
