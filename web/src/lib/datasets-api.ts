/** Datasets as the console reads them: the hosted shapes, an upload with progress, and a version diff. */
import { ApiError, csrfToken, errorText, get } from './api.ts';

export type DatasetValue = string | number | Record<string, string | number | null> | null;

export interface Dataset {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
  project_count: number;
  num_rows: number | null;
  column_names: string[] | null;
  current_version_index: number;
  draft: boolean;
  permissions: { action: string; allowed: boolean }[];
}

export interface DatasetRow {
  row_id: string;
  index: number;
  values_dict: Record<string, DatasetValue>;
}

export interface DatasetContent {
  column_names: string[];
  rows: DatasetRow[];
  next_starting_token: number | null;
}

export interface DatasetVersion {
  version_index: number;
  name: string | null;
  created_at: string;
  num_rows: number;
  column_names: string[];
  rows_added: number;
  rows_removed: number;
  rows_edited: number;
  columns_added: number;
}

export const can = (d: Dataset | undefined, action: string) =>
  d?.permissions.some((p) => p.action === action && p.allowed) ?? false;

/**
 * POST /v2/datasets as multipart, through XMLHttpRequest: fetch cannot report how much of a body has
 * been sent, and the progress bar needs that.
 */
export function uploadDataset(
  form: { name: string; projectId: string | null; file: File },
  onProgress: (fraction: number) => void,
): Promise<Dataset> {
  const body = new FormData();
  body.append('name', form.name);
  if (form.projectId) body.append('project_id', form.projectId);
  body.append('file', form.file, form.file.name);
  const format = /\.csv$/i.test(form.file.name) ? 'csv' : 'jsonl';
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/v2/datasets?format=${format}`);
    xhr.setRequestHeader('x-csrf-token', csrfToken());
    xhr.setRequestHeader('accept', 'application/json');
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onerror = () =>
      reject(new ApiError(0, 'Spanbase cannot be reached: check that the server is running'));
    xhr.onload = () => {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(xhr.responseText);
      } catch {
        parsed = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(parsed as Dataset);
      else reject(new ApiError(xhr.status, errorText(xhr.status, parsed)));
    };
    xhr.send(body);
  });
}

/** Rows a diff reads of each version at most. */
export const DIFF_LIMIT = 5000;

async function versionRows(id: string, version: number): Promise<{ rows: DatasetRow[]; complete: boolean }> {
  const rows: DatasetRow[] = [];
  let token: number | null = 0;
  while (token !== null && rows.length < DIFF_LIMIT) {
    const page: DatasetContent = await get<DatasetContent>(
      `/v2/datasets/${id}/versions/${version}/content?starting_token=${token}&limit=1000`,
    );
    rows.push(...page.rows);
    token = page.next_starting_token;
  }
  return { rows, complete: token === null };
}

export interface VersionDiff {
  added: DatasetRow[];
  removed: DatasetRow[];
  changed: { before: DatasetRow; after: DatasetRow; columns: string[] }[];
  complete: boolean;
}

/** What changed from version `a` to version `b`, row by row (rows keep their id across versions). */
export async function diffVersions(id: string, a: number, b: number): Promise<VersionDiff> {
  const [from, to] = await Promise.all([versionRows(id, a), versionRows(id, b)]);
  const before = new Map(from.rows.map((r) => [r.row_id, r]));
  const after = new Map(to.rows.map((r) => [r.row_id, r]));
  const diff: VersionDiff = { added: [], removed: [], changed: [], complete: from.complete && to.complete };
  for (const r of to.rows) {
    const old = before.get(r.row_id);
    if (!old) {
      diff.added.push(r);
      continue;
    }
    const keys = new Set([...Object.keys(old.values_dict), ...Object.keys(r.values_dict)]);
    const columns = [...keys].filter(
      (k) => JSON.stringify(old.values_dict[k] ?? null) !== JSON.stringify(r.values_dict[k] ?? null),
    );
    if (columns.length) diff.changed.push({ before: old, after: r, columns });
  }
  for (const r of from.rows) if (!after.has(r.row_id)) diff.removed.push(r);
  return diff;
}

/** A value as one line of text (objects as JSON). */
export const cellText = (v: DatasetValue | undefined) =>
  v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
