/**
 * Derived values of sessions and traces recomputed from the children they still have (after a
 * delete), with the meaning ingestion gives them incrementally (domain/ingest-plan.ts): a session's
 * trace count, token and cost sums, first and last trace and duration; a trace's span count, token
 * and cost sums over its llm spans (for the keys its client did not set), and children waiting for a
 * parent that has not arrived; a span's child count. A cost sum is null when no record summed has one.
 */
import { type SessionAgg, TOKEN_METRICS, type TokenMetric } from './records.ts';

export type Tokens = Record<TokenMetric, number | null>;

export interface TraceFacts extends Tokens {
  id: string;
  /** `metrics.cost`, or null. */
  cost: number | null;
  created_at: number;
  duration_ns: number | null;
}

export interface SpanFacts extends Tokens {
  id: string;
  /** `metrics.cost`, or null. */
  cost: number | null;
  parent_id: string | null;
  type: string;
}

/** Sums of the values that are set; null where none is (SQL's SUM). */
function sumTokens(rows: readonly Tokens[]): Tokens {
  const out = {} as Tokens;
  for (const k of TOKEN_METRICS) {
    let sum: number | null = null;
    for (const r of rows) if (r[k] !== null && r[k] !== undefined) sum = (sum ?? 0) + Number(r[k]);
    out[k] = sum;
  }
  return out;
}

/** The sum of the costs that are set; null where none is (as ingestion keeps it). */
function sumCost(rows: readonly { cost: number | null }[]): number | null {
  let sum: number | null = null;
  for (const r of rows) if (r.cost !== null && r.cost !== undefined) sum = (sum ?? 0) + Number(r.cost);
  return sum;
}

export interface SessionAggregate {
  numTraces: number;
  tokens: Tokens;
  cost: number | null;
  /** Null when no trace is left. */
  agg: SessionAgg | null;
  duration_ns: number | null;
}

/** A session's aggregates over the traces it has. */
export function sessionAggregate(traces: readonly TraceFacts[]): SessionAggregate {
  let agg: SessionAgg | null = null;
  for (const t of traces) {
    const at = Number(t.created_at);
    const dur = Number(t.duration_ns ?? 0);
    if (!agg) {
      agg = { fc: at, fi: t.id, lc: at, li: t.id, eu: at, ed: dur };
      continue;
    }
    if (at < agg.fc || (at === agg.fc && t.id < agg.fi)) {
      agg.fc = at;
      agg.fi = t.id;
    }
    if (at > agg.lc || (at === agg.lc && t.id > agg.li)) {
      agg.lc = at;
      agg.li = t.id;
    }
    // Ends compared as (µs, ns) pairs: epoch nanoseconds exceed 2^53.
    if ((at - agg.eu) * 1000 + (dur - agg.ed) > 0) {
      agg.eu = at;
      agg.ed = dur;
    }
  }
  return {
    numTraces: traces.length,
    tokens: sumTokens(traces),
    cost: sumCost(traces),
    agg,
    duration_ns: agg ? (agg.eu - agg.fc) * 1000 + agg.ed : null,
  };
}

export interface TraceAggregate {
  numSpans: number;
  /** Sums over the llm spans, for the token keys the client did not set on the trace. */
  tokens: Partial<Tokens>;
  /** Sum of the llm spans' costs; undefined when the client set the trace's cost itself. */
  cost: number | null | undefined;
  /** Spans whose parent is not stored, counted by that parent's id (absent when none). */
  pend: Record<string, number> | undefined;
  /** Direct children of each span that has any. */
  children: Map<string, number>;
}

/** A trace's aggregates over the spans it has; `clientSet`: its token keys the client set itself. */
export function traceAggregate(
  traceId: string,
  clientSet: readonly string[],
  spans: readonly SpanFacts[],
): TraceAggregate {
  const llm = spans.filter((s) => s.type === 'llm');
  const sums = sumTokens(llm);
  const tokens: Partial<Tokens> = {};
  for (const k of TOKEN_METRICS) if (!clientSet.includes(k)) tokens[k] = sums[k];
  const cost = clientSet.includes('cost') ? undefined : sumCost(llm);
  const ids = new Set(spans.map((s) => s.id));
  const children = new Map<string, number>();
  let pend: Record<string, number> | undefined;
  for (const s of spans) {
    const p = s.parent_id;
    if (!p || p === traceId) continue;
    if (ids.has(p)) children.set(p, (children.get(p) ?? 0) + 1);
    else {
      pend ??= {};
      pend[p] = (pend[p] ?? 0) + 1;
    }
  }
  return { numSpans: spans.length, tokens, cost, pend, children };
}

/** The ids of `roots` and of every span below them. */
export function subtreeOf(
  spans: readonly { id: string; parent_id: string | null }[],
  roots: Iterable<string>,
): Set<string> {
  const byParent = new Map<string, string[]>();
  for (const s of spans) {
    if (!s.parent_id) continue;
    const list = byParent.get(s.parent_id);
    if (list) list.push(s.id);
    else byParent.set(s.parent_id, [s.id]);
  }
  const out = new Set<string>();
  const stack = [...roots];
  while (stack.length) {
    const id = stack.pop() as string;
    if (out.has(id)) continue;
    out.add(id);
    for (const c of byParent.get(id) ?? []) stack.push(c);
  }
  return out;
}
