/** A trace as the API reads it back, with its spans nested in display order. */
import type { RecordFeedback } from './annotations.ts';
import { type StoredRecord, parseBody, recordToApi } from './records.ts';

type Api = Record<string, any>;

/** Children in display order: by created_at, then step, then id. */
function order(a: StoredRecord, b: StoredRecord): number {
  const ca = Number(a.created_at);
  const cb = Number(b.created_at);
  if (ca !== cb) return ca - cb;
  const sa = parseBody(a).step ?? 0;
  const sb = parseBody(b).step ?? 0;
  if (sa !== sb) return sa - sb;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * A trace as the API reads it back: with `spans`, each span with its own `spans`, in display order
 * (a span whose parent is missing hangs under the trace). `rows` may hold the trace itself.
 */
export function traceTree(
  trace: StoredRecord,
  rows: readonly StoredRecord[],
  feedback?: ReadonlyMap<string, RecordFeedback>,
): Api {
  const spans = rows.filter((r) => r.id !== trace.id).sort(order);
  const api = new Map<string, Api>();
  const root = recordToApi(trace, { includeCounts: true, feedback: feedback?.get(trace.id) });
  root.spans = [];
  api.set(trace.id, root);
  for (const r of spans) {
    const a = recordToApi(r, { includeCounts: true, feedback: feedback?.get(r.id) });
    a.spans = [];
    api.set(r.id, a);
  }
  for (const r of spans) (api.get(r.parent_id ?? trace.id) ?? root).spans.push(api.get(r.id));
  return root;
}
