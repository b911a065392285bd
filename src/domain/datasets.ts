/**
 * Dataset rows and edits, without I/O: the values a row may hold (the hosted `DatasetRow` types),
 * column lists, the ETag of a dataset's content, and what a batch of edits does to the rows it names.
 */
import { valueError } from './errors.ts';
import { newId, isUuid } from './ids.ts';
import { storableValue } from './text.ts';

/** A flat object value (the hosted type allows one level: string, number or null inside). */
export type DatasetDict = Record<string, string | number | null>;
export type DatasetValue = string | number | DatasetDict | null;
export type DatasetValues = Record<string, DatasetValue>;

/** `valid_to` of a row state that is still current. */
export const CURRENT = 2_147_483_647;

const isFlat = (v: object): v is DatasetDict =>
  !Array.isArray(v) &&
  Object.values(v).every(
    (x) => x === null || typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x)),
  );

/**
 * A value as the hosted types hold it: strings, finite numbers, null and flat objects as they are;
 * anything else (booleans, lists, nested objects) as its JSON text, so nothing sent is lost.
 */
export function datasetValue(v: unknown): DatasetValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return storableValue(v);
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'object' && isFlat(v)) return storableValue({ ...v });
  return storableValue(JSON.stringify(v));
}

/** A row's values from a JSON object (each value through datasetValue). */
export function datasetValues(obj: Record<string, unknown>): DatasetValues {
  const out: DatasetValues = {};
  for (const [k, v] of Object.entries(obj)) out[storableValue(k)] = datasetValue(v);
  return out;
}

/** Adds the keys of `values` not yet in `columns` (in their order); returns how many were new. */
export function addColumns(columns: string[], seen: Set<string>, values: DatasetValues): number {
  let added = 0;
  for (const k of Object.keys(values)) {
    if (!seen.has(k)) {
      seen.add(k);
      columns.push(k);
      added++;
    }
  }
  return added;
}

/** The `values` list of a row: its values in column order, null where it has none. */
export function valuesInOrder(columns: readonly string[], values: DatasetValues): DatasetValue[] {
  return columns.map((c) => values[c] ?? null);
}

/** The content ETag: the dataset and its version (strong, quoted). */
export function contentEtag(datasetId: string, version: number): string {
  return `"${datasetId}:${version}"`;
}

/** Whether an If-Match header names the current content (`*` matches any; weak tags compare too). */
export function ifMatches(header: string, datasetId: string, version: number): boolean {
  const current = contentEtag(datasetId, version);
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === current || `"${t}"` === current);
}

export type DatasetEdit =
  | { edit_type: 'append_row' | 'prepend_row'; values: Record<string, unknown>; row_id?: string | null }
  | { edit_type: 'update_row'; row_id: string; values: Record<string, unknown> }
  | { edit_type: 'delete_row'; row_id: string };

/** A current row an edit batch reads: its id, position and values. */
export interface CurrentRow {
  row_id: string;
  position: number;
  values: DatasetValues;
  created_in_version: number;
  created_by: string | null;
  created_at: number;
}

/** What a batch of edits changes, as the rows of the new version that differ from the last. */
export interface EditPlan {
  /** Rows whose current state ends (updated or deleted). */
  ended: string[];
  /** New row states: rows added, and new states of rows updated. */
  written: (CurrentRow & { isNew: boolean })[];
  rowsAdded: number;
  rowsRemoved: number;
  rowsEdited: number;
}

/**
 * Applies edits in order (later edits see earlier ones: a row appended then updated in one batch is
 * one added row). `update_row` sets the columns it names and keeps the others. `existing` holds the
 * current rows the edits name; `ends` the smallest and largest position ever used in the dataset.
 */
export function planEdits(
  edits: DatasetEdit[],
  existing: Map<string, CurrentRow>,
  ends: { min: number; max: number },
  version: number,
  who: { userId: string | null; now: number },
): EditPlan {
  const rows = new Map<string, CurrentRow & { isNew: boolean; changed: boolean; gone: boolean }>();
  let { min, max } = ends;
  const rowOf = (id: string, i: number) => {
    let r = rows.get(id);
    if (!r) {
      const e = existing.get(id);
      if (!e) throw valueError(['body', 'edits', i, 'row_id'], `The dataset has no row ${id}`, id);
      r = { ...e, isNew: false, changed: false, gone: false };
      rows.set(id, r);
    }
    if (r.gone)
      throw valueError(['body', 'edits', i, 'row_id'], `Row ${id} was deleted by an earlier edit`, id);
    return r;
  };
  edits.forEach((edit, i) => {
    if (edit.edit_type === 'append_row' || edit.edit_type === 'prepend_row') {
      const id = edit.row_id ?? newId();
      if (!isUuid(id)) throw valueError(['body', 'edits', i, 'row_id'], 'A row id must be a UUID', id);
      if (rows.has(id) || existing.has(id))
        throw valueError(['body', 'edits', i, 'row_id'], `The dataset already has a row ${id}`, id);
      const position = edit.edit_type === 'append_row' ? ++max : --min;
      rows.set(id, {
        row_id: id,
        position,
        values: datasetValues(edit.values),
        created_in_version: version,
        created_by: who.userId,
        created_at: who.now,
        isNew: true,
        changed: true,
        gone: false,
      });
    } else if (edit.edit_type === 'update_row') {
      const r = rowOf(edit.row_id, i);
      r.values = { ...r.values, ...datasetValues(edit.values) };
      r.changed = true;
    } else if (edit.edit_type === 'delete_row') {
      rowOf(edit.row_id, i).gone = true;
    }
  });
  const plan: EditPlan = { ended: [], written: [], rowsAdded: 0, rowsRemoved: 0, rowsEdited: 0 };
  for (const r of rows.values()) {
    if (!r.isNew && (r.gone || r.changed)) plan.ended.push(r.row_id);
    if (r.gone) {
      if (!r.isNew) plan.rowsRemoved++;
      continue;
    }
    if (!r.changed) continue;
    const { changed: _c, gone: _g, ...state } = r;
    plan.written.push(state);
    if (r.isNew) plan.rowsAdded++;
    else plan.rowsEdited++;
  }
  return plan;
}

/** The row ids an edit batch reads before planning (those updated or deleted). */
export function rowIdsNamed(edits: DatasetEdit[]): string[] {
  const ids = new Set<string>();
  for (const e of edits) if (e.edit_type === 'update_row' || e.edit_type === 'delete_row') ids.add(e.row_id);
  return [...ids];
}
