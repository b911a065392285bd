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

/** Room for one label of the waterfall's axis ("1 min 23 s" and a gap), in pixels. */
const AXIS_LABEL_PX = 90;

/**
 * The waterfall axis' ticks as fractions of the time line: as many equal steps (up to four) as the
 * axis has room for, so its labels never run into each other.
 */
export function axisTicks(widthPx: number): number[] {
  const steps = Math.max(1, Math.min(4, Math.floor(widthPx / AXIS_LABEL_PX)));
  return Array.from({ length: steps + 1 }, (_, i) => i / steps);
}

/**
 * A record's duration in milliseconds: its own, else (a trace sent without one) the time from its
 * start to the end of its last span that has a duration; null when neither is known.
 */
export function derivedDurationMs(root: TreeRecord): number | null {
  const own = durationOf(root);
  const start = Date.parse(root.created_at);
  if (own !== null || !Number.isFinite(start)) return own;
  let end: number | null = null;
  const stack = [...(root.spans ?? [])];
  while (stack.length) {
    const r = stack.pop()!;
    const d = durationOf(r);
    const t = Date.parse(r.created_at);
    if (d !== null && Number.isFinite(t)) end = Math.max(end ?? t + d, t + d);
    if (r.spans) stack.push(...r.spans);
  }
  return end === null ? null : Math.max(0, end - start);
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
      durationMs: depth === 0 ? derivedDurationMs(record) : durationOf(record),
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
