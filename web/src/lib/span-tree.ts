/**
 * A trace's span tree as the rows a virtualised list shows: depth-first, children of collapsed spans
 * left out, each with its place on the trace's time line. Pure and linear in the number of spans.
 */
import type { TreeRecord } from './api-types.ts';

export interface TreeRow {
  record: TreeRecord;
  depth: number;
  childCount: number;
  /** Milliseconds from the trace's start to this record's start. */
  offsetMs: number;
  /** Milliseconds; null when the record has no duration. */
  durationMs: number | null;
}

export interface Timeline {
  startMs: number;
  /** At least 1 ms, so a trace of instant spans still draws. */
  totalMs: number;
}

const durationOf = (r: TreeRecord) => {
  const ns = r.metrics?.duration_ns;
  return typeof ns === 'number' ? ns / 1e6 : null;
};

/** The span of time the trace and its spans cover (iterative: a 5,000-deep chain must not recurse). */
export function timelineOf(root: TreeRecord): Timeline {
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  const stack: TreeRecord[] = [root];
  while (stack.length) {
    const r = stack.pop()!;
    const t = Date.parse(r.created_at);
    if (Number.isFinite(t)) {
      start = Math.min(start, t);
      end = Math.max(end, t + (durationOf(r) ?? 0));
    }
    if (r.spans) stack.push(...r.spans);
  }
  if (!Number.isFinite(start)) return { startMs: 0, totalMs: 1 };
  return { startMs: start, totalMs: Math.max(1, end - start) };
}

/** Rows in display order: the root, then each span under its parent unless an ancestor is collapsed. */
export function visibleRows(root: TreeRecord, collapsed: ReadonlySet<string>, timeline: Timeline): TreeRow[] {
  const rows: TreeRow[] = [];
  const stack: { record: TreeRecord; depth: number }[] = [{ record: root, depth: 0 }];
  while (stack.length) {
    const { record, depth } = stack.pop()!;
    const children = record.spans ?? [];
    const t = Date.parse(record.created_at);
    rows.push({
      record,
      depth,
      childCount: children.length,
      offsetMs: Number.isFinite(t) ? t - timeline.startMs : 0,
      durationMs: durationOf(record),
    });
    if (!collapsed.has(record.id)) {
      for (let i = children.length - 1; i >= 0; i--) stack.push({ record: children[i], depth: depth + 1 });
    }
  }
  return rows;
}

/** Every record of the tree by id (for a span deep link and the selected panel). */
export function indexTree(root: TreeRecord): Map<string, TreeRecord> {
  const byId = new Map<string, TreeRecord>();
  const stack = [root];
  while (stack.length) {
    const r = stack.pop()!;
    byId.set(r.id, r);
    if (r.spans) stack.push(...r.spans);
  }
  return byId;
}

/** Ids of the ancestors of `id` (to expand them when a deep link selects a span deep inside). */
export function ancestorsOf(byId: Map<string, TreeRecord>, id: string): string[] {
  const out: string[] = [];
  let cur = byId.get(id);
  while (cur?.parent_id && byId.has(cur.parent_id)) {
    out.push(cur.parent_id);
    cur = byId.get(cur.parent_id);
  }
  return out;
}
