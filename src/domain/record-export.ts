/**
 * How exported records are written: JSON lines (each line a root record as the API reads it back,
 * a session with its `traces`, a trace with its `spans` tree, so that `spanbase import` can load the
 * file again) or CSV (one row per root record, flat columns). `redact` puts the redacted input and
 * output in place of the originals where the client sent them; `column_ids` keeps only those columns
 * (ids and types stay, and so does the nesting).
 */
import { type StoredRecord, recordToApi } from './records.ts';
import { traceTree } from './trace-tree.ts';

type Api = Record<string, any>;

/** A root record with the records below it (a session's traces and spans; a trace's spans). */
export interface ExportItem {
  root: StoredRecord;
  children: StoredRecord[];
}

export interface ExportOptions {
  format: 'jsonl' | 'csv';
  columns: string[] | null;
  redact: boolean;
}

/** Columns of a CSV export when the request names none. */
export const DEFAULT_CSV_COLUMNS = [
  'id',
  'type',
  'name',
  'created_at',
  'updated_at',
  'input',
  'output',
  'session_id',
  'trace_id',
  'parent_id',
  'external_id',
  'status_code',
  'is_complete',
  'error_message',
  'model',
  'tags',
  'user_metadata',
  'metrics',
];

const KEPT = ['id', 'type', 'spans', 'traces'];

/** A root with its children in the API's shape. */
export function apiItem(item: ExportItem): Api {
  const { root, children } = item;
  if (root.type === 'trace') return traceTree(root, children);
  if (root.type !== 'session') return recordToApi(root, { includeCounts: true });
  const spansOf = new Map<string, typeof children>();
  for (const c of children) {
    if (c.type === 'trace') continue;
    const list = spansOf.get(c.trace_id as string) ?? [];
    list.push(c);
    spansOf.set(c.trace_id as string, list);
  }
  const traces = children
    .filter((c) => c.type === 'trace')
    .sort((a, b) => Number(a.created_at) - Number(b.created_at) || (a.id < b.id ? -1 : 1));
  return {
    ...recordToApi(root, { includeCounts: true }),
    traces: traces.map((t) => traceTree(t, spansOf.get(t.id) ?? [])),
  };
}

/** The value of a column id in an API record (`metrics/x`: `metrics.x`; the key is all after the first `/`). */
export function columnValue(api: Api, column: string): unknown {
  if (Object.hasOwn(api, column)) return api[column];
  const slash = column.indexOf('/');
  if (slash < 0) return undefined;
  const ns = api[column.slice(0, slash)];
  return ns && typeof ns === 'object' ? ns[column.slice(slash + 1)] : undefined;
}

/** Redaction and column choice, applied to a record and everything nested in it. */
export function shapeRecord(api: Api, opts: ExportOptions): Api {
  let out = api;
  if (opts.redact) {
    out = { ...out };
    if (out.redacted_input !== null && out.redacted_input !== undefined) out.input = out.redacted_input;
    if (out.redacted_output !== null && out.redacted_output !== undefined) out.output = out.redacted_output;
    delete out.redacted_input;
    delete out.redacted_output;
  }
  if (opts.columns) {
    const picked: Api = {};
    for (const k of KEPT) if (out[k] !== undefined) picked[k] = out[k];
    for (const c of opts.columns) {
      const v = columnValue(out, c);
      if (v === undefined) continue;
      if (Object.hasOwn(out, c)) picked[c] = v;
      else {
        const slash = c.indexOf('/');
        const ns = c.slice(0, slash);
        picked[ns] = { ...(picked[ns] ?? {}), [c.slice(slash + 1)]: v };
      }
    }
    out = picked;
  }
  for (const nested of ['spans', 'traces']) {
    if (Array.isArray(out[nested])) {
      if (out === api) out = { ...out };
      out[nested] = out[nested].map((c: Api) => shapeRecord(c, opts));
    }
  }
  return out;
}

function csvField(v: unknown): string {
  if (v === undefined || v === null) return '';
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The CSV line of a record (RFC 4180 quoting; objects and lists as JSON). */
export function csvLine(api: Api, columns: readonly string[]): string {
  return `${columns.map((c) => csvField(columnValue(api, c))).join(',')}\r\n`;
}

/** A CSV export's columns: those asked for after `id` and `type`, which stay (as in JSON lines). */
function csvColumns(opts: ExportOptions): readonly string[] {
  if (!opts.columns) return DEFAULT_CSV_COLUMNS;
  return [...new Set(['id', 'type', ...opts.columns])];
}

/** The text of a chunk of exported items. */
export function exportChunk(items: readonly ExportItem[], opts: ExportOptions): string {
  let out = '';
  for (const item of items) {
    if (opts.format === 'csv') {
      const api = shapeRecord(recordToApi(item.root, { includeCounts: true }), { ...opts, columns: null });
      out += csvLine(api, csvColumns(opts));
    } else out += `${JSON.stringify(shapeRecord(apiItem(item), opts))}\n`;
  }
  return out;
}

/** The first line of a CSV export. */
export function csvHeader(opts: ExportOptions): string {
  return `${csvColumns(opts).map(csvField).join(',')}\r\n`;
}

/** An export's text, a chunk of items at a time (a CSV export starts with its header). */
export async function* renderExport(
  source: AsyncIterable<readonly ExportItem[]>,
  opts: ExportOptions,
): AsyncGenerator<string> {
  if (opts.format === 'csv') yield csvHeader(opts);
  for await (const items of source) yield exportChunk(items, opts);
}
