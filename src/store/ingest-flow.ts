/**
 * The steps of each ingest operation, written once for both stores as generators: a flow yields the
 * reads it needs (rows by id, a session by external id) and finally returns the plan of writes and the
 * answer. The SQLite driver runs a flow synchronously inside one better-sqlite3 transaction; the
 * PostgreSQL driver runs it with awaits inside one transaction on one client.
 */
import { ValidationError, notFound } from '../domain/errors.ts';
import type { RecordPatch, SessionRequest, SpansRequest, TracesRequest } from '../domain/ingest.ts';
import { type Plan, Planner } from '../domain/ingest-plan.ts';
import type { Pricer } from '../domain/prices/pricer.ts';
import type { RunScoring } from '../domain/scorer-types.ts';
import { SPAN_TYPES, type StoredRecord } from '../domain/records.ts';

export type Read =
  | { op: 'ids'; ids: string[] }
  /** llm spans of a run after a (created_at, id) position, in that order. */
  | { op: 'llmPage'; runId: string; after: { createdAt: number; id: string }; limit: number }
  | { op: 'external'; runId: string; externalId: string }
  | { op: 'externals'; runId: string; externalIds: string[] };

export interface FlowResult<R> {
  plan: Plan | null;
  runId: string;
  result: R;
}

export type Flow<R> = Generator<Read, FlowResult<R>, StoredRecord[]>;

export interface Ctx {
  projectId: string;
  runId: string;
  now: number;
  /** The project's prices (llm spans are priced at their created_at). */
  pricer?: Pricer;
  /** The scorers of the project's runs (rule scores are computed as rows are written). */
  scoring?: (runId: string) => RunScoring | undefined;
}

function* loadInto(
  map: Map<string, StoredRecord>,
  ids: Iterable<string | null | undefined>,
): Generator<Read, void, StoredRecord[]> {
  const want = [...new Set([...ids].filter((x): x is string => !!x && !map.has(x)))];
  if (!want.length) return;
  const rows = yield { op: 'ids', ids: want };
  for (const r of rows) map.set(r.id, r);
}

export interface TracesResult {
  sessionId: string | null;
  traceIds: string[];
}

export function* tracesFlow(req: TracesRequest, ctx: Ctx): Flow<TracesResult> {
  const existing = new Map<string, StoredRecord>();
  const ids: (string | null)[] = [req.sessionId, ...req.sessions.map((x) => x.id)];
  for (const r of req.records) {
    ids.push(r.row.id);
    if (r.sessionId) ids.push(r.sessionId);
  }
  yield* loadInto(existing, ids);
  // Sessions of traces written again (their aggregates move).
  yield* loadInto(
    existing,
    [...existing.values()].filter((r) => r.type === 'trace').map((r) => r.session_id),
  );
  let external: StoredRecord | undefined;
  if (!req.sessionId && req.sessionExternalId !== null) {
    [external] = yield { op: 'external', runId: ctx.runId, externalId: req.sessionExternalId };
    if (external) existing.set(external.id, external);
  }
  const p = new Planner({ ...ctx, existing });
  // Sessions the batch creates (extension): new ones are planned; a stored one (a re-send) stays.
  const externals = req.sessions.filter((x) => x.externalId !== null).map((x) => x.externalId as string);
  const byExternal = new Map<string, StoredRecord>();
  if (externals.length) {
    const found = yield { op: 'externals', runId: ctx.runId, externalIds: [...new Set(externals)] };
    for (const r of found) byExternal.set(r.external_id as string, r);
  }
  const seenExternal = new Set<string>();
  for (const ns of req.sessions) {
    const prior = existing.get(ns.id);
    if (prior) {
      if (prior.type !== 'session' || prior.run_id !== ctx.runId) {
        throw new ValidationError({
          loc: [...ns.loc, 'id'],
          msg: 'This id is already used by another record',
          type: 'value_error',
          input: ns.id,
        });
      }
      continue;
    }
    if (ns.externalId !== null) {
      const other = byExternal.get(ns.externalId);
      if ((other && other.id !== ns.id) || seenExternal.has(ns.externalId)) {
        throw new ValidationError({
          loc: [...ns.loc, 'external_id'],
          msg: 'Another session of this run has this external_id',
          type: 'value_error',
          input: ns.externalId,
        });
      }
      seenExternal.add(ns.externalId);
    }
    p.newSession({
      id: ns.id,
      name: ns.name,
      externalId: ns.externalId,
      previousSessionId: ns.previousSessionId,
      userMetadata: ns.userMetadata,
      createdAt: ns.createdAt ?? ctx.now,
      byUser: true,
    });
  }
  if (req.sessionId) p.requestSession = p.session(req.sessionId);
  const sessionFor = (rec: (typeof req.records)[number]) => {
    if (rec.sessionId) return p.session(rec.sessionId);
    if (req.sessionPerTrace && !req.sessionId && req.sessionExternalId === null) {
      return p.newSession({ createdAt: rec.row.created_at });
    }
    if (!p.requestSession) {
      p.requestSession = external
        ? external.id
        : p.newSession({ externalId: req.sessionExternalId, createdAt: rec.row.created_at });
    }
    return p.requestSession;
  };
  const traceIds: string[] = [];
  for (let i = 0; i < req.records.length; i++) {
    const rec = req.records[i];
    if (rec.traceIndex === i) {
      p.trace(rec, sessionFor);
      traceIds.push(rec.row.id);
    } else p.span(rec);
  }
  const plan = p.finish();
  const sessionId = p.requestSession ?? p.rowOf(traceIds[0])?.session_id ?? null;
  return { plan, runId: ctx.runId, result: { sessionId, traceIds } };
}

export interface SpansResult {
  sessionId: string | null;
}

export function* spansFlow(req: SpansRequest, ctx: Ctx): Flow<SpansResult> {
  const existing = new Map<string, StoredRecord>();
  yield* loadInto(existing, [req.traceId, req.parentId, ...req.records.map((r) => r.row.id)]);
  const trace = existing.get(req.traceId);
  if (trace?.type !== 'trace' || trace.run_id !== ctx.runId) throw notFound('Trace');
  yield* loadInto(existing, [trace.session_id]);
  if (req.parentId !== req.traceId) {
    // A parent that is not stored yet is allowed (streaming clients and OpenTelemetry send children
    // before their parents): the spans keep parent_id and the parent counts them when it lands.
    const parent = existing.get(req.parentId);
    if (
      parent &&
      (parent.trace_id !== req.traceId || parent.run_id !== ctx.runId || parent.type === 'trace')
    ) {
      throw new ValidationError({
        loc: ['body', 'parent_id'],
        msg: 'The parent is a record of another trace',
        type: 'value_error',
        input: req.parentId,
      });
    }
  }
  const p = new Planner({ ...ctx, existing });
  for (const rec of req.records) p.span(rec);
  return { plan: p.finish(), runId: ctx.runId, result: { sessionId: trace.session_id } };
}

export interface PatchResult {
  record: StoredRecord;
  sessionId: string | null;
}

/** PATCH of a trace or span found by id in the project (and the run, when the body names one). */
export function* patchFlow(
  kind: 'trace' | 'span',
  id: string,
  patch: RecordPatch,
  projectId: string,
  runId: string | null,
  now: number,
  pricer?: Pricer,
  scoring?: (runId: string) => RunScoring | undefined,
): Flow<PatchResult> {
  const existing = new Map<string, StoredRecord>();
  yield* loadInto(existing, [id]);
  const rec = existing.get(id);
  const isKind =
    rec && (kind === 'trace' ? rec.type === 'trace' : (SPAN_TYPES as readonly string[]).includes(rec.type));
  if (!rec || !isKind || rec.project_id !== projectId || (runId !== null && rec.run_id !== runId)) {
    throw notFound(kind === 'trace' ? 'Trace' : 'Span');
  }
  yield* loadInto(existing, [rec.session_id, rec.trace_id]);
  const p = new Planner({ projectId, runId: rec.run_id, now, existing, pricer, scoring });
  const incoming: Record<string, unknown> = { ...patch.raw };
  if (incoming.duration_ns !== undefined) {
    incoming.metrics = { duration_ns: incoming.duration_ns };
    delete incoming.duration_ns;
  }
  if (Array.isArray(incoming.tags)) {
    const old =
      typeof rec.tags === 'string' ? (JSON.parse(rec.tags) as string[]) : ((rec.tags as string[]) ?? []);
    incoming.tags = [...old, ...(incoming.tags as string[]).filter((t) => !old.includes(t))];
  }
  p.update(rec, incoming, kind);
  const plan = p.finish();
  return { plan, runId: rec.run_id, result: { record: rec, sessionId: rec.session_id } };
}

export interface SessionResult {
  id: string;
  name: string;
  externalId: string | null;
  previousSessionId: string | null;
}

export function* sessionFlow(req: SessionRequest, ctx: Ctx): Flow<SessionResult> {
  const existing = new Map<string, StoredRecord>();
  const describe = (r: StoredRecord): FlowResult<SessionResult> => {
    const body = typeof r.body === 'string' ? JSON.parse(r.body) : ((r.body as any) ?? {});
    return {
      plan: null,
      runId: ctx.runId,
      result: {
        id: r.id,
        name: r.name,
        externalId: r.external_id,
        previousSessionId: body.x?.previous_session_id ?? null,
      },
    };
  };
  if (req.id) {
    yield* loadInto(existing, [req.id]);
    const prior = existing.get(req.id);
    if (prior) {
      if (prior.type !== 'session' || prior.run_id !== ctx.runId) {
        throw new ValidationError({
          loc: ['body', 'id'],
          msg: 'This id is already used by another record',
          type: 'value_error',
          input: req.id,
        });
      }
      return describe(prior);
    }
  }
  if (req.externalId !== null) {
    const [found] = yield { op: 'external', runId: ctx.runId, externalId: req.externalId };
    if (found) return describe(found);
  }
  const p = new Planner({ ...ctx, existing });
  const id = p.newSession({
    id: req.id,
    name: req.name,
    externalId: req.externalId,
    previousSessionId: req.previousSessionId,
    userMetadata: req.userMetadata,
    createdAt: ctx.now,
    byUser: true,
  });
  return {
    plan: p.finish(),
    runId: ctx.runId,
    result: { id, name: req.name, externalId: req.externalId, previousSessionId: req.previousSessionId },
  };
}

export interface RecomputeResult {
  /** llm spans read in this page. */
  scanned: number;
  /** Of those, spans whose cost changed. */
  changed: number;
  /** Where the next page starts; null after the last page. */
  next: { createdAt: number; id: string } | null;
}

/**
 * One page of a cost recompute: the run's next `limit` llm spans priced again with the pricer's prices
 * (a cost the client sent stays), their traces, sessions and days moved by the differences. Each page
 * is its own transaction, so ingestion goes on between pages.
 */
export function* recomputeFlow(
  ctx: Ctx,
  after: { createdAt: number; id: string },
  limit: number,
): Flow<RecomputeResult> {
  const spans = yield { op: 'llmPage', runId: ctx.runId, after, limit };
  const existing = new Map<string, StoredRecord>();
  for (const r of spans) existing.set(r.id, r);
  yield* loadInto(
    existing,
    spans.map((r) => r.trace_id),
  );
  yield* loadInto(
    existing,
    [...existing.values()].filter((r) => r.type === 'trace').map((r) => r.session_id),
  );
  const p = new Planner({ ...ctx, existing });
  let changed = 0;
  for (const r of spans) if (p.reprice(r)) changed++;
  const last = spans[spans.length - 1];
  return {
    plan: changed ? p.finish() : null,
    runId: ctx.runId,
    result: {
      scanned: spans.length,
      changed,
      next: spans.length < limit ? null : { createdAt: Number(last.created_at), id: last.id },
    },
  };
}

/**
 * A backfill page: the records `ids` scored again by the inline scorers of `scoring` (only those),
 * each written when its score changed, in one transaction.
 */
export function* rescoreFlow(ctx: Ctx, ids: string[], scoring: RunScoring): Flow<{ changed: number }> {
  const existing = new Map<string, StoredRecord>();
  yield* loadInto(existing, ids);
  const p = new Planner({ ...ctx, existing });
  let changed = 0;
  for (const id of ids) if (p.rescore(id, scoring)) changed++;
  return { plan: changed ? p.finish() : null, runId: ctx.runId, result: { changed } };
}

/** A background score (an LLM judge's) written into one record's metrics, in one transaction. */
export function* scoreFlow(
  ctx: Ctx,
  id: string,
  name: string,
  value: number | null,
): Flow<{ found: boolean; changed: boolean }> {
  const existing = new Map<string, StoredRecord>();
  yield* loadInto(existing, [id]);
  const p = new Planner({ ...ctx, existing });
  const changed = p.setScore(id, name, value);
  return {
    plan: changed ? p.finish() : null,
    runId: ctx.runId,
    result: { found: existing.has(id), changed },
  };
}
