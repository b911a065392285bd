/**
 * Deleting records with everything derived from them, one batch of root records per transaction:
 * a session goes with its traces, a trace with its spans, a span with the spans below it. In the
 * same transaction: the deleted records' annotations, annotation aggregates and places in annotation
 * queues (those tables hold record ids without a foreign key), the run's trace and span counts, the
 * token-usage day rollups (tokens and cost), the aggregates of the sessions and traces that lose
 * children (token and cost sums among them, recomputed from what is left, domain/aggregates.ts), the
 * child counts of surviving parent spans, and the column catalogue (an entry whose first or last
 * sighting was a deleted record is narrowed to the records left, or removed). The text indexes follow
 * by their own triggers (migrations 004 and 008): a deleted record is never a search hit again.
 * `run_models` stays: it lists the models seen in a run (for prices to add), not the models of the
 * records left, and a model's price still applies to spans of it sent later.
 *
 * The steps of a batch are written once, as a generator that yields the statements it runs and
 * receives their rows (as ingestion's flows do, store/ingest-flow.ts). SQLite runs it synchronously on
 * the raw handle inside one transaction that takes the records' write lock with its first statement,
 * in Kysely's turn on the connection: no other request runs on the thread meanwhile, so the lock is
 * held for the batch's own work only and ingestion's group commits wait for one batch at most (with
 * an await per statement, parsing other requests' bodies between statements stretched each batch and
 * held ingestion back). PostgreSQL runs it with awaits on one connection: the roots and the sessions
 * and traces to recompute are locked (FOR UPDATE) before their children are read, as every ingest
 * write locks them; a batch that loses a deadlock runs again.
 */
import type SQLite from 'better-sqlite3';
import { type Compilable, type CompiledQuery, type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import {
  type SpanFacts,
  type TraceFacts,
  sessionAggregate,
  subtreeOf,
  traceAggregate,
} from '../domain/aggregates.ts';
import {
  type CatalogueScalar,
  catalogueDataType,
  forEachColumnKey,
  seenFrom,
  seenUntil,
} from '../domain/catalogue.ts';
import { DAY_US, storedCost, withCost } from '../domain/ingest-plan.ts';
import { PROMOTED_METRICS, type RecordBody, SPAN_TYPES, TOKEN_METRICS } from '../domain/records.ts';
import { hourOf } from '../domain/rollups.ts';
import { nowUs } from '../domain/time.ts';
import { type Store, parseJson } from './db.ts';
import { retryTransient } from './retry.ts';
import type { DB } from './tables.ts';

/** What a delete names: sessions, traces or spans (each with what hangs below it). */
export type RootKind = 'session' | 'trace' | 'span';

export const ROOT_TYPES: Record<RootKind, readonly string[]> = {
  session: ['session'],
  trace: ['trace'],
  span: SPAN_TYPES,
};

export interface DeleteCounts {
  /** Roots deleted (those still there when their batch ran). */
  roots: number;
  /** Records deleted in all (roots and what hung below them). */
  records: number;
}

const DELETED_COLUMNS = [
  'id',
  'type',
  'session_id',
  'trace_id',
  'created_at',
  ...PROMOTED_METRICS,
  'metrics',
  'user_metadata',
  'dataset_metadata',
] as const;

type Deleted = Record<(typeof DELETED_COLUMNS)[number], any>;
type Row = Record<string, any>;
type SpanRow = SpanFacts & { trace_id: string; num_children: number; created_at?: number };
/** One batch's statements, yielded in order; each receives its rows. */
type DeleteFlow = Generator<CompiledQuery, DeleteCounts, Row[]>;
type Promoted = Record<(typeof PROMOTED_METRICS)[number], number | null>;
/** A trace's or session's cost moved by a recompute (the catalogue follows). */
type CostMoved = (type: string, at: number, before: number | null, after: number | null) => void;

/** The metrics JSON as text (PostgreSQL hands jsonb back parsed). */
const metricsText = (v: unknown): string | null =>
  v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v);
const costOf = (metrics: unknown) => storedCost(metricsText(metrics));

interface Touched {
  column: string;
  type: string;
  dataType: string;
  min: number;
  max: number;
}

export class RecordDeletes {
  private readonly pg: boolean;
  /** Builds (compiles) the statements; they run on the transaction's connection. */
  private readonly db: Kysely<DB>;

  constructor(private readonly store: Store) {
    this.pg = store.dialect === 'postgres';
    this.db = store.db;
  }

  /** `column` is one of `ids` (a JSON array on SQLite, a text array on PostgreSQL: one statement text). */
  private idIn(column: string, ids: readonly string[]): RawBuilder<SqlBool> {
    return this.pg
      ? sql<SqlBool>`${sql.ref(column)} = any(${[...ids]}::text[])`
      : sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(ids)}))`;
  }

  /**
   * Deletes these roots of the run (ids of other kinds or runs, or already gone, are skipped).
   *
   * A batch first lets the event loop turn: Kysely's SQLite connection lock is not fair (on release,
   * whoever asks first in the same turn gets it), so a delete that asked again at once kept every
   * other request's query (authentication, access checks, ingestion) waiting until it was done. While
   * ingestion is under way in this process, it then pauses as long as the batch took: a large delete
   * takes at most half of the writer's time, and ingestion the rest.
   */
  async deleteRoots(runId: string, kind: RootKind, ids: readonly string[]): Promise<DeleteCounts> {
    if (!ids.length) return { roots: 0, records: 0 };
    await new Promise((r) => setImmediate(r));
    return this.write(() => this.batch(runId, kind, ids));
  }

  private async write(flow: () => DeleteFlow): Promise<DeleteCounts> {
    if (!this.pg) return this.runSqlite(flow);
    return retryTransient(() =>
      this.store.db.transaction().execute(async (trx) => {
        const gen = flow();
        let step = gen.next();
        while (!step.done) step = gen.next((await trx.executeQuery(step.value)).rows as Row[]);
        return step.value;
      }),
    );
  }

  private readonly statements = new Map<string, SQLite.Statement>();

  /** SQLite: the flow in one transaction on the raw handle, in Kysely's turn on the connection. */
  private runSqlite(flow: () => DeleteFlow): Promise<DeleteCounts> {
    const h = this.store.sqlite as SQLite.Database;
    const run = (q: CompiledQuery): Row[] => {
      let stmt = this.statements.get(q.sql);
      if (!stmt) {
        if (this.statements.size >= 64) this.statements.clear();
        stmt = h.prepare(q.sql);
        this.statements.set(q.sql, stmt);
      }
      const params = q.parameters as unknown[];
      if (stmt.reader) return stmt.all(params) as Row[];
      stmt.run(params);
      return [];
    };
    return this.store.db.connection().execute(async () =>
      h
        .transaction(() => {
          // The records' write lock first (not at the first delete: another writer could take it
          // between a read and that delete), and only that database's (not the text index's).
          h.prepare('update runs set num_traces = num_traces where 0').run();
          const gen = flow();
          let step = gen.next();
          while (!step.done) step = gen.next(run(step.value));
          return step.value;
        })
        .deferred(),
    );
  }

  /** Locks rows by id, in id order (PostgreSQL; SQLite's write lock already covers them). */
  private *lock(ids: readonly string[]): Generator<CompiledQuery, void, Row[]> {
    if (!this.pg || !ids.length) return;
    yield this.db
      .selectFrom('records')
      .select('id')
      .where(this.idIn('records.id', ids))
      .orderBy('id')
      .forUpdate()
      .compile();
  }

  /**
   * `run_id = ?` as a check only: SQLite (without statistics) would otherwise walk the run's index
   * and read every record of the run to find a batch's few by trace or session, once per batch.
   */
  private inRun(runId: string): RawBuilder<SqlBool> {
    return this.pg ? sql<SqlBool>`run_id = ${runId}` : sql<SqlBool>`+run_id = ${runId}`;
  }

  private *deleteWhere(
    where: RawBuilder<SqlBool>,
    runId: string,
  ): Generator<CompiledQuery, Deleted[], Row[]> {
    return (yield this.db
      .deleteFrom('records')
      .where(where)
      .where(this.inRun(runId))
      .returning([...DELETED_COLUMNS])
      .compile()) as Deleted[];
  }

  private *batch(runId: string, kind: RootKind, ids: readonly string[]): DeleteFlow {
    const db = this.db;
    let rootsQuery = db
      .selectFrom('records')
      .select(['id', 'session_id', 'trace_id'])
      .where(this.idIn('records.id', ids))
      .where('run_id', '=', runId)
      .where('type', 'in', [...ROOT_TYPES[kind]])
      .orderBy('id');
    if (this.pg) rootsQuery = rootsQuery.forUpdate();
    const roots = (yield rootsQuery.compile()) as {
      id: string;
      session_id: string | null;
      trace_id: string | null;
    }[];
    if (!roots.length) return { roots: 0, records: 0 };
    const rootIds = roots.map((r) => r.id);
    const distinct = (xs: (string | null)[]) => [...new Set(xs.filter((x): x is string => !!x))];

    let deleted: Deleted[];
    /** Surviving traces that lost spans, with their spans before the delete. */
    let traceSpans = new Map<string, SpanRow[]>();
    let sessions: string[] = [];
    if (kind === 'session') {
      const traces = (yield db
        .selectFrom('records')
        .select('id')
        .where(this.idIn('records.session_id', rootIds))
        .where('type', '=', 'trace')
        .where(this.inRun(runId))
        .compile()) as { id: string }[];
      deleted = traces.length
        ? yield* this.deleteWhere(
            this.idIn(
              'records.trace_id',
              traces.map((t) => t.id),
            ),
            runId,
          )
        : [];
      deleted.push(...(yield* this.deleteWhere(this.idIn('records.id', rootIds), runId)));
    } else if (kind === 'trace') {
      sessions = distinct(roots.map((r) => r.session_id));
      yield* this.lock(sessions);
      deleted = yield* this.deleteWhere(this.idIn('records.trace_id', rootIds), runId);
    } else {
      const traceIds = distinct(roots.map((r) => r.trace_id));
      yield* this.lock(traceIds);
      sessions = distinct(roots.map((r) => r.session_id));
      yield* this.lock(sessions);
      const spans = (
        (yield db
          .selectFrom('records')
          .select([
            'id',
            'parent_id',
            'type',
            'trace_id',
            'num_children',
            'created_at',
            'metrics',
            ...TOKEN_METRICS,
          ])
          .where(this.idIn('records.trace_id', traceIds))
          .where('type', '<>', 'trace')
          .compile()) as (SpanRow & { metrics: unknown })[]
      ).map(({ metrics, ...sp }) => ({
        ...sp,
        cost: sp.type === 'llm' ? costOf(metrics) : null,
      }));
      const gone = subtreeOf(spans, rootIds);
      deleted = yield* this.deleteWhere(this.idIn('records.id', [...gone]), runId);
      traceSpans = new Map(traceIds.map((t) => [t, []]));
      for (const s of spans) if (!gone.has(s.id)) traceSpans.get(s.trace_id)?.push(s);
    }

    const now = nowUs();
    const touched = new Map<string, Touched>();
    const touch = (type: string, at: number, column: string, v: CatalogueScalar) => {
      const dataType = catalogueDataType(v);
      const key = `${column}\u0000${type}\u0000${dataType}`;
      const t = touched.get(key);
      if (!t) touched.set(key, { column, type, dataType, min: at, max: at });
      else {
        t.min = Math.min(t.min, at);
        t.max = Math.max(t.max, at);
      }
    };
    // Dashboard rollups: every hour that loses a record or holds one that changes is recomputed
    // (store/rollups.ts); until then dashboards read those hours' records.
    const dirtyHours = new Set<number>();
    const dirty = (at: unknown) => dirtyHours.add(hourOf(Number(at)));
    for (const d of deleted) dirty(d.created_at);
    const touchPromoted = (type: string, at: number, row: Promoted) => {
      dirty(at);
      forEachColumnKey({ row, metrics: {}, user: {}, dataset: {} }, (c, v) => touch(type, at, c, v));
    };
    for (const d of deleted) {
      forEachColumnKey(
        {
          row: d,
          metrics: parseJson<Record<string, number>>(d.metrics) ?? {},
          user: parseJson<Record<string, CatalogueScalar>>(d.user_metadata) ?? {},
          dataset: parseJson<Record<string, CatalogueScalar>>(d.dataset_metadata) ?? {},
        },
        (c, v) => touch(d.type, Number(d.created_at), c, v),
      );
    }

    const costs: { type: string; at: number; cost: number }[] = [];
    const costMoved: CostMoved = (type, at, before, after) => {
      dirty(at);
      if (before !== null) touch(type, at, 'metrics/cost', before);
      if (after !== null) costs.push({ type, at, cost: after });
    };

    const deletedIds = new Set(deleted.map((d) => d.id));
    yield* this.feedback([...deletedIds]);
    yield* this.runCounts(runId, deleted);
    yield* this.tokenUsage(runId, deleted, now);
    if (traceSpans.size) yield* this.recomputeTraces(traceSpans, now, touchPromoted, costMoved);
    const surviving = sessions.filter((x) => !deletedIds.has(x));
    if (surviving.length) yield* this.recomputeSessions(surviving, now, touchPromoted, costMoved);
    for (const c of costs) yield* this.widenCatalogue(runId, c.type, c.at, c.cost);
    for (const t of touched.values()) yield* this.narrowCatalogue(runId, t);
    for (const spans of traceSpans.values())
      for (const sp of spans) if (sp.created_at !== undefined) dirty(sp.created_at);
    yield* this.markDirty(runId, [...dirtyHours]);
    return { roots: roots.length, records: deleted.length };
  }

  /** Marks the dashboard rollups' hours dirty (store/rollups.ts recomputes them). */
  private *markDirty(runId: string, hours: number[]): Generator<CompiledQuery, void, Row[]> {
    const sorted = hours.sort((a, b) => a - b);
    for (let i = 0; i < sorted.length; i += 500)
      yield this.db
        .insertInto('rollup_dirty')
        .values(sorted.slice(i, i + 500).map((hour) => ({ run_id: runId, hour })))
        .onConflict((oc) => oc.doNothing())
        .compile();
  }

  /**
   * The annotations, annotation aggregates, queue places and score results (a judge's explanation
   * may quote the record) of deleted records.
   */
  private *feedback(ids: string[]): Generator<CompiledQuery, void, Row[]> {
    if (!ids.length) return;
    yield this.db.deleteFrom('score_results').where(this.idIn('score_results.record_id', ids)).compile();
    yield this.db.deleteFrom('annotations').where(this.idIn('annotations.record_id', ids)).compile();
    yield this.db
      .deleteFrom('annotation_aggregates')
      .where(this.idIn('annotation_aggregates.record_id', ids))
      .compile();
    yield this.db
      .deleteFrom('annotation_queue_records')
      .where(this.idIn('annotation_queue_records.record_id', ids))
      .compile();
  }

  private *runCounts(runId: string, deleted: Deleted[]): Generator<CompiledQuery, void, Row[]> {
    const traces = deleted.filter((d) => d.type === 'trace').length;
    const spans = deleted.filter((d) => d.type !== 'trace' && d.type !== 'session').length;
    if (!traces && !spans) return;
    yield this.db
      .updateTable('runs')
      .set((eb) => ({
        num_traces: eb('num_traces', '-', traces),
        num_spans: eb('num_spans', '-', spans),
      }))
      .where('id', '=', runId)
      .compile();
  }

  /**
   * Takes the tokens and cost of deleted llm spans off their days. A day whose llm spans left have no
   * cost gets a null cost again (as if they alone had been sent); a day left with no tokens and no
   * cost goes.
   */
  private *tokenUsage(runId: string, deleted: Deleted[], now: number): Generator<CompiledQuery, void, Row[]> {
    const days = new Map<number, { tokens: [number, number, number, number]; cost: number | null }>();
    for (const d of deleted) {
      if (d.type !== 'llm') continue;
      const day = Math.floor(Number(d.created_at) / DAY_US) * DAY_US;
      const t = days.get(day) ?? { tokens: [0, 0, 0, 0], cost: null };
      t.tokens[0] += Number(d.num_input_tokens ?? 0);
      t.tokens[1] += Number(d.num_output_tokens ?? 0);
      t.tokens[2] += Number(d.num_cache_read_input_tokens ?? 0);
      t.tokens[3] += Number(d.num_cache_creation_input_tokens ?? 0);
      const cost = costOf(d.metrics);
      if (cost !== null) t.cost = (t.cost ?? 0) + cost;
      days.set(day, t);
    }
    const changed = [...days].filter(([, t]) => t.tokens.some((x) => x !== 0) || t.cost !== null);
    for (const [day, { tokens, cost }] of changed) {
      const [i, o, r, c] = tokens;
      yield this.db
        .updateTable('token_usage')
        .set((eb) => ({
          input_tokens: eb('input_tokens', '-', i),
          output_tokens: eb('output_tokens', '-', o),
          cache_read_input_tokens: eb('cache_read_input_tokens', '-', r),
          cache_creation_input_tokens: eb('cache_creation_input_tokens', '-', c),
          ...(cost === null ? {} : { cost: eb('cost', '-', cost) }),
          updated_at: now,
        }))
        .where('log_stream_id', '=', runId)
        .where('day', '=', day)
        .compile();
    }
    const priced = changed.filter(([, t]) => t.cost !== null).map(([day]) => day);
    for (const day of priced) {
      yield this.db
        .updateTable('token_usage')
        .set({ cost: null })
        .where('log_stream_id', '=', runId)
        .where('day', '=', day)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('records')
                .select('records.id')
                .where('records.run_id', '=', runId)
                .where('records.type', '=', 'llm')
                .where('records.created_at', '>=', day)
                .where('records.created_at', '<', day + DAY_US)
                .where(this.hasCost()),
            ),
          ),
        )
        .compile();
    }
    if (changed.length) {
      yield this.db
        .deleteFrom('token_usage')
        .where('log_stream_id', '=', runId)
        .where(
          'day',
          'in',
          changed.map(([day]) => day),
        )
        .where('input_tokens', '=', 0)
        .where('output_tokens', '=', 0)
        .where('cache_read_input_tokens', '=', 0)
        .where('cache_creation_input_tokens', '=', 0)
        .where('cost', 'is', null)
        .compile();
    }
  }

  /** A record's metrics JSON has a `cost`. */
  private hasCost(): RawBuilder<SqlBool> {
    return this.pg
      ? sql<SqlBool>`(records.metrics ->> 'cost') is not null`
      : sql<SqlBool>`json_extract(records.metrics, '$.cost') is not null`;
  }

  /** The metrics JSON of a recomputed trace or session with its new cost (reported when it moved). */
  private static withNewCost(
    row: { type: string; created_at: number; metrics: unknown },
    cost: number | null | undefined,
    costMoved: CostMoved,
  ): { metrics?: string | null } {
    const before = costOf(row.metrics);
    if (cost === undefined || cost === before) return {};
    costMoved(row.type, Number(row.created_at), before, cost);
    return { metrics: withCost(metricsText(row.metrics), cost) };
  }

  /**
   * Surviving traces that lost spans: their counts, token and cost sums and waiting children, and
   * their spans' child counts.
   */
  private *recomputeTraces(
    traceSpans: Map<string, SpanRow[]>,
    now: number,
    touchPromoted: (type: string, at: number, row: Promoted) => void,
    costMoved: CostMoved,
  ): Generator<CompiledQuery, void, Row[]> {
    const traces = (yield this.db
      .selectFrom('records')
      .select(['id', 'type', 'created_at', 'body', 'metrics', ...PROMOTED_METRICS])
      .where(this.idIn('records.id', [...traceSpans.keys()]))
      .compile()) as (Promoted & {
      id: string;
      type: string;
      created_at: number;
      body: unknown;
      metrics: unknown;
    })[];
    for (const trace of traces) {
      const spans = traceSpans.get(trace.id) as SpanRow[];
      const body = parseJson<RecordBody>(trace.body) ?? {};
      const agg = traceAggregate(trace.id, body.tok ?? [], spans);
      if (agg.pend) body.pend = agg.pend;
      else delete body.pend;
      touchPromoted('trace', Number(trace.created_at), trace);
      yield this.db
        .updateTable('records')
        .set({
          num_children: agg.numSpans,
          ...agg.tokens,
          ...RecordDeletes.withNewCost(trace, agg.cost, costMoved),
          body: JSON.stringify(body),
          updated_at: now,
        })
        .where('id', '=', trace.id)
        .compile();
      for (const s of spans) {
        const n = agg.children.get(s.id) ?? 0;
        if (n === Number(s.num_children)) continue;
        yield this.db
          .updateTable('records')
          .set({ num_children: n, updated_at: now })
          .where('id', '=', s.id)
          .compile();
      }
    }
  }

  /** Surviving sessions whose traces changed: their aggregates from the traces they have left. */
  private *recomputeSessions(
    ids: string[],
    now: number,
    touchPromoted: (type: string, at: number, row: Promoted) => void,
    costMoved: CostMoved,
  ): Generator<CompiledQuery, void, Row[]> {
    const sessions = (yield this.db
      .selectFrom('records')
      .select(['id', 'type', 'created_at', 'body', 'metrics', ...PROMOTED_METRICS])
      .where(this.idIn('records.id', ids))
      .where('type', '=', 'session')
      .compile()) as (Promoted & {
      id: string;
      type: string;
      created_at: number;
      body: unknown;
      metrics: unknown;
    })[];
    if (!sessions.length) return;
    const traces = (
      (yield this.db
        .selectFrom('records')
        .select(['id', 'session_id', 'created_at', 'duration_ns', 'metrics', ...TOKEN_METRICS])
        .where(this.idIn('records.session_id', ids))
        .where('type', '=', 'trace')
        .compile()) as (TraceFacts & { session_id: string; metrics: unknown })[]
    ).map(({ metrics, ...t }) => ({ ...t, cost: costOf(metrics) }));
    const bySession = new Map<string, TraceFacts[]>(sessions.map((x) => [x.id, []]));
    for (const t of traces) bySession.get(t.session_id)?.push(t);
    const aggs = new Map(sessions.map((x) => [x.id, sessionAggregate(bySession.get(x.id) ?? [])]));
    const endIds = [...aggs.values()].flatMap((a) => (a.agg ? [a.agg.fi, a.agg.li] : []));
    const ends = endIds.length
      ? ((yield this.db
          .selectFrom('records')
          .select(['id', 'input_text', 'output_text', 'body'])
          .where(this.idIn('records.id', [...new Set(endIds)]))
          .compile()) as {
          id: string;
          input_text: string | null;
          output_text: string | null;
          body: unknown;
        }[])
      : [];
    const endById = new Map(ends.map((e) => [e.id, e]));
    for (const session of sessions) {
      const agg = aggs.get(session.id) as ReturnType<typeof sessionAggregate>;
      const body = parseJson<RecordBody>(session.body) ?? {};
      delete body.in;
      delete body.out;
      delete body.agg;
      let input: string | null = null;
      let output: string | null = null;
      if (agg.agg) {
        body.agg = agg.agg;
        const first = endById.get(agg.agg.fi);
        const last = endById.get(agg.agg.li);
        const fb = parseJson<RecordBody>(first?.body) ?? {};
        const lb = parseJson<RecordBody>(last?.body) ?? {};
        input = first?.input_text ?? null;
        output = last?.output_text ?? null;
        if (fb.in !== undefined) body.in = fb.in;
        if (lb.out !== undefined) body.out = lb.out;
      }
      touchPromoted('session', Number(session.created_at), session);
      yield this.db
        .updateTable('records')
        .set({
          num_children: agg.numTraces,
          ...agg.tokens,
          ...RecordDeletes.withNewCost(session, agg.cost, costMoved),
          duration_ns: agg.duration_ns,
          input_text: input,
          output_text: output,
          body: JSON.stringify(body),
          updated_at: now,
        })
        .where('id', '=', session.id)
        .compile();
    }
  }

  /** A recomputed cost's catalogue entry covers its record (its data type may be new to the run). */
  private *widenCatalogue(
    runId: string,
    type: string,
    at: number,
    cost: number,
  ): Generator<CompiledQuery, void, Row[]> {
    const c = 'column_catalogue';
    yield this.db
      .insertInto('column_catalogue')
      .values({
        run_id: runId,
        column_id: 'metrics/cost',
        record_type: type,
        data_type: catalogueDataType(cost),
        first_seen: seenFrom(at),
        last_seen: seenUntil(at),
      })
      .onConflict((oc) =>
        oc.columns(['run_id', 'column_id', 'record_type', 'data_type']).doUpdateSet({
          first_seen: sql`case when excluded.first_seen < ${sql.ref(`${c}.first_seen`)} then excluded.first_seen else ${sql.ref(`${c}.first_seen`)} end`,
          last_seen: sql`case when excluded.last_seen > ${sql.ref(`${c}.last_seen`)} then excluded.last_seen else ${sql.ref(`${c}.last_seen`)} end`,
        }),
      )
      .compile();
  }

  /**
   * A catalogue entry a deleted or changed record may have bounded: when its first (last) sighting is
   * at or after (before) the touched records', it becomes that of the records left, or goes. On
   * PostgreSQL the entry is locked first, so an ingest that widens it meanwhile widens the result.
   */
  private *narrowCatalogue(runId: string, t: Touched): Generator<CompiledQuery, void, Row[]> {
    const key = <Q extends { where: (...a: any[]) => Q }>(q: Q): Q =>
      q
        .where('run_id', '=', runId)
        .where('column_id', '=', t.column)
        .where('record_type', '=', t.type)
        .where('data_type', '=', t.dataType);
    let q = key(this.db.selectFrom('column_catalogue').select(['first_seen', 'last_seen']));
    if (this.pg) q = q.forUpdate();
    const [entry] = (yield q.compile()) as { first_seen: number; last_seen: number }[];
    if (!entry) return;
    const needFirst = Number(entry.first_seen) >= seenFrom(t.min);
    const needLast = Number(entry.last_seen) <= seenUntil(t.max);
    if (!needFirst && !needLast) return;
    const has = this.carries(t.column, t.dataType);
    const seen = (dir: 'asc' | 'desc'): Compilable =>
      this.db
        .selectFrom('records')
        .select('created_at')
        .where('run_id', '=', runId)
        .where('type', '=', t.type)
        .where(has)
        .orderBy('created_at', dir)
        .limit(1);
    const found = (rows: Row[], round: (at: number) => number) =>
      rows.length ? round(Number(rows[0].created_at)) : null;
    const first = needFirst ? found(yield seen('asc').compile(), seenFrom) : Number(entry.first_seen);
    // The catalogue may be wider than the records (a write that dropped a key leaves its entry), so
    // either bound may find no record left: the entry goes.
    const last =
      first === null
        ? null
        : needLast
          ? found(yield seen('desc').compile(), seenUntil)
          : Number(entry.last_seen);
    if (first === null || last === null) {
      yield key(this.db.deleteFrom('column_catalogue')).compile();
      return;
    }
    yield key(this.db.updateTable('column_catalogue').set({ first_seen: first, last_seen: last })).compile();
  }

  /** A record carries catalogue column `column` with a value of `dataType`. */
  private carries(column: string, dataType: string): RawBuilder<SqlBool> {
    const slash = column.indexOf('/');
    const ns = column.slice(0, slash);
    const key = column.slice(slash + 1);
    if (ns === 'metrics' && (PROMOTED_METRICS as readonly string[]).includes(key)) {
      const ref = sql.ref(`records.${key}`);
      return dataType === 'integer'
        ? sql<SqlBool>`(${ref} is not null and ${ref} = round(${ref}))`
        : sql<SqlBool>`(${ref} is not null and ${ref} <> round(${ref}))`;
    }
    const ref = sql.ref(`records.${ns}`);
    if (this.pg) {
      const type = sql`jsonb_typeof(${ref} -> ${key}::text)`;
      const num = sql`(${ref} ->> ${key}::text)::numeric`;
      if (dataType === 'text') return sql<SqlBool>`${type} = 'string'`;
      if (dataType === 'boolean') return sql<SqlBool>`${type} = 'boolean'`;
      const op = dataType === 'integer' ? sql`=` : sql`<>`;
      return sql<SqlBool>`(${type} = 'number' and ${num} ${op} trunc(${num}))`;
    }
    const path = `$.${JSON.stringify(key)}`;
    const type = sql`json_type(${ref}, ${path})`;
    const num = sql`json_extract(${ref}, ${path})`;
    if (dataType === 'text') return sql<SqlBool>`${type} = 'text'`;
    if (dataType === 'boolean') return sql<SqlBool>`${type} in ('true', 'false')`;
    if (dataType === 'integer')
      return sql<SqlBool>`(${type} = 'integer' or (${type} = 'real' and ${num} = round(${num})))`;
    return sql<SqlBool>`(${type} = 'real' and ${num} <> round(${num}))`;
  }
}
