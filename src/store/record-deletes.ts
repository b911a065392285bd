/**
 * Deleting records with everything derived from them, one batch of root records per transaction:
 * a session goes with its traces, a trace with its spans, a span with the spans below it. In the
 * same transaction: the run's trace and span counts, the token-usage day rollups, the aggregates of
 * the sessions and traces that lose children (recomputed from what is left, domain/aggregates.ts),
 * the child counts of surviving parent spans, and the column catalogue (an entry whose first or last
 * sighting was a deleted record is narrowed to the records left, or removed). The text indexes follow
 * by their own triggers (migrations 004 and 008): a deleted record is never a search hit again.
 *
 * SQLite: the transaction takes the records' write lock with its first statement, as ingestion does
 * (store/ingest.ts), and holds Kysely's connection, so ingestion's group commits wait for one batch at
 * most. PostgreSQL: the roots and the sessions and traces to recompute are locked (FOR UPDATE) before
 * their children are read, as every ingest write locks them; a batch that loses a deadlock runs again.
 */
import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import {
  type SpanFacts,
  type TraceFacts,
  sessionAggregate,
  subtreeOf,
  traceAggregate,
} from '../domain/aggregates.ts';
import { type CatalogueScalar, catalogueDataType, forEachColumnKey } from '../domain/catalogue.ts';
import { DAY_US } from '../domain/ingest-plan.ts';
import { PROMOTED_METRICS, type RecordBody, SPAN_TYPES, TOKEN_METRICS } from '../domain/records.ts';
import { nowUs } from '../domain/time.ts';
import { type Store, parseJson } from './db.ts';
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

const RETRYABLE = new Set(['40P01', '40001']);

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
type Promoted = Record<(typeof PROMOTED_METRICS)[number], number | null>;

interface Touched {
  column: string;
  type: string;
  dataType: string;
  min: number;
  max: number;
}

export class RecordDeletes {
  private readonly pg: boolean;

  constructor(private readonly store: Store) {
    this.pg = store.dialect === 'postgres';
  }

  /** `column` is one of `ids` (a JSON array on SQLite, a text array on PostgreSQL: one statement text). */
  private idIn(column: string, ids: readonly string[]): RawBuilder<SqlBool> {
    return this.pg
      ? sql<SqlBool>`${sql.ref(column)} = any(${[...ids]}::text[])`
      : sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(ids)}))`;
  }

  /** Deletes these roots of the run (ids of other kinds or runs, or already gone, are skipped). */
  async deleteRoots(runId: string, kind: RootKind, ids: readonly string[]): Promise<DeleteCounts> {
    if (!ids.length) return { roots: 0, records: 0 };
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.store.db.transaction().execute((trx) => this.batch(trx, runId, kind, ids));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (this.pg && code && RETRYABLE.has(code) && attempt < 5) {
          await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
          continue;
        }
        throw err;
      }
    }
  }

  /** Locks rows by id, in id order (PostgreSQL; SQLite's write lock already covers them). */
  private async lock(trx: Kysely<DB>, ids: readonly string[]): Promise<void> {
    if (!this.pg || !ids.length) return;
    await trx
      .selectFrom('records')
      .select('id')
      .where(this.idIn('records.id', ids))
      .orderBy('id')
      .forUpdate()
      .execute();
  }

  private deleteWhere(trx: Kysely<DB>, where: RawBuilder<SqlBool>, runId: string): Promise<Deleted[]> {
    return trx
      .deleteFrom('records')
      .where(where)
      .where('run_id', '=', runId)
      .returning([...DELETED_COLUMNS])
      .execute() as Promise<Deleted[]>;
  }

  private async batch(
    trx: Kysely<DB>,
    runId: string,
    kind: RootKind,
    ids: readonly string[],
  ): Promise<DeleteCounts> {
    // SQLite: the records' write lock now, not at the first delete (another writer could take it
    // between a read and that delete).
    if (!this.pg) await sql`update runs set num_traces = num_traces where 0`.execute(trx);
    let rootsQuery = trx
      .selectFrom('records')
      .select(['id', 'session_id', 'trace_id'])
      .where(this.idIn('records.id', ids))
      .where('run_id', '=', runId)
      .where('type', 'in', [...ROOT_TYPES[kind]])
      .orderBy('id');
    if (this.pg) rootsQuery = rootsQuery.forUpdate();
    const roots = await rootsQuery.execute();
    if (!roots.length) return { roots: 0, records: 0 };
    const rootIds = roots.map((r) => r.id);
    const distinct = (xs: (string | null)[]) => [...new Set(xs.filter((x): x is string => !!x))];

    let deleted: Deleted[];
    /** Surviving traces that lost spans, with their spans before the delete. */
    let traceSpans = new Map<string, SpanFacts[]>();
    let sessions: string[] = [];
    if (kind === 'session') {
      const traces = await trx
        .selectFrom('records')
        .select('id')
        .where(this.idIn('records.session_id', rootIds))
        .where('type', '=', 'trace')
        .where('run_id', '=', runId)
        .execute();
      deleted = traces.length
        ? await this.deleteWhere(
            trx,
            this.idIn(
              'records.trace_id',
              traces.map((t) => t.id),
            ),
            runId,
          )
        : [];
      deleted.push(...(await this.deleteWhere(trx, this.idIn('records.id', rootIds), runId)));
    } else if (kind === 'trace') {
      sessions = distinct(roots.map((r) => r.session_id));
      await this.lock(trx, sessions);
      deleted = await this.deleteWhere(trx, this.idIn('records.trace_id', rootIds), runId);
    } else {
      const traceIds = distinct(roots.map((r) => r.trace_id));
      await this.lock(trx, traceIds);
      sessions = distinct(roots.map((r) => r.session_id));
      await this.lock(trx, sessions);
      const spans = (await trx
        .selectFrom('records')
        .select(['id', 'parent_id', 'type', 'trace_id', 'num_children', ...TOKEN_METRICS])
        .where(this.idIn('records.trace_id', traceIds))
        .where('type', '<>', 'trace')
        .execute()) as (SpanFacts & { trace_id: string; num_children: number })[];
      const gone = subtreeOf(spans, rootIds);
      deleted = await this.deleteWhere(trx, this.idIn('records.id', [...gone]), runId);
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
    const touchPromoted = (type: string, at: number, row: Promoted) =>
      forEachColumnKey({ row, metrics: {}, user: {}, dataset: {} }, (c, v) => touch(type, at, c, v));
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

    await this.runCounts(trx, runId, deleted);
    await this.tokenUsage(trx, runId, deleted, now);
    for (const [traceId, spans] of traceSpans) {
      await this.recomputeTrace(
        trx,
        traceId,
        spans as (SpanFacts & { num_children: number })[],
        now,
        touchPromoted,
      );
    }
    const deletedIds = new Set(deleted.map((d) => d.id));
    for (const s of sessions) {
      if (!deletedIds.has(s)) await this.recomputeSession(trx, s, now, touchPromoted);
    }
    for (const t of touched.values()) await this.narrowCatalogue(trx, runId, t);
    return { roots: roots.length, records: deleted.length };
  }

  private async runCounts(trx: Kysely<DB>, runId: string, deleted: Deleted[]): Promise<void> {
    const traces = deleted.filter((d) => d.type === 'trace').length;
    const spans = deleted.filter((d) => d.type !== 'trace' && d.type !== 'session').length;
    if (!traces && !spans) return;
    await trx
      .updateTable('runs')
      .set((eb) => ({
        num_traces: eb('num_traces', '-', traces),
        num_spans: eb('num_spans', '-', spans),
      }))
      .where('id', '=', runId)
      .execute();
  }

  /** Takes the tokens of deleted llm spans off their days; a day left with none goes. */
  private async tokenUsage(trx: Kysely<DB>, runId: string, deleted: Deleted[], now: number): Promise<void> {
    const days = new Map<number, [number, number, number, number]>();
    for (const d of deleted) {
      if (d.type !== 'llm') continue;
      const day = Math.floor(Number(d.created_at) / DAY_US) * DAY_US;
      const t = days.get(day) ?? [0, 0, 0, 0];
      t[0] += Number(d.num_input_tokens ?? 0);
      t[1] += Number(d.num_output_tokens ?? 0);
      t[2] += Number(d.num_cache_read_input_tokens ?? 0);
      t[3] += Number(d.num_cache_creation_input_tokens ?? 0);
      days.set(day, t);
    }
    for (const [day, [i, o, r, c]] of days) {
      if (!i && !o && !r && !c) continue;
      await trx
        .updateTable('token_usage')
        .set((eb) => ({
          input_tokens: eb('input_tokens', '-', i),
          output_tokens: eb('output_tokens', '-', o),
          cache_read_input_tokens: eb('cache_read_input_tokens', '-', r),
          cache_creation_input_tokens: eb('cache_creation_input_tokens', '-', c),
          updated_at: now,
        }))
        .where('log_stream_id', '=', runId)
        .where('day', '=', day)
        .execute();
    }
    if (days.size) {
      await trx
        .deleteFrom('token_usage')
        .where('log_stream_id', '=', runId)
        .where('day', 'in', [...days.keys()])
        .where('input_tokens', '=', 0)
        .where('output_tokens', '=', 0)
        .where('cache_read_input_tokens', '=', 0)
        .where('cache_creation_input_tokens', '=', 0)
        .execute();
    }
  }

  /** A surviving trace that lost spans: its counts, token sums and waiting children, and its spans' child counts. */
  private async recomputeTrace(
    trx: Kysely<DB>,
    traceId: string,
    spans: (SpanFacts & { num_children: number })[],
    now: number,
    touchPromoted: (type: string, at: number, row: Promoted) => void,
  ): Promise<void> {
    const trace = await trx
      .selectFrom('records')
      .select(['id', 'type', 'created_at', 'body', ...PROMOTED_METRICS])
      .where('id', '=', traceId)
      .executeTakeFirst();
    if (!trace) return;
    const body = parseJson<RecordBody>(trace.body) ?? {};
    const agg = traceAggregate(traceId, body.tok ?? [], spans);
    if (agg.pend) body.pend = agg.pend;
    else delete body.pend;
    touchPromoted('trace', Number(trace.created_at), trace as Promoted);
    await trx
      .updateTable('records')
      .set({ num_children: agg.numSpans, ...agg.tokens, body: JSON.stringify(body), updated_at: now })
      .where('id', '=', traceId)
      .execute();
    for (const s of spans) {
      const n = agg.children.get(s.id) ?? 0;
      if (n === Number(s.num_children)) continue;
      await trx
        .updateTable('records')
        .set({ num_children: n, updated_at: now })
        .where('id', '=', s.id)
        .execute();
    }
  }

  /** A surviving session whose traces changed: its aggregates from the traces it has left. */
  private async recomputeSession(
    trx: Kysely<DB>,
    sessionId: string,
    now: number,
    touchPromoted: (type: string, at: number, row: Promoted) => void,
  ): Promise<void> {
    const session = await trx
      .selectFrom('records')
      .select(['id', 'type', 'created_at', 'body', ...PROMOTED_METRICS])
      .where('id', '=', sessionId)
      .where('type', '=', 'session')
      .executeTakeFirst();
    if (!session) return;
    const traces = (await trx
      .selectFrom('records')
      .select(['id', 'created_at', 'duration_ns', ...TOKEN_METRICS])
      .where('session_id', '=', sessionId)
      .where('type', '=', 'trace')
      .execute()) as TraceFacts[];
    const agg = sessionAggregate(traces);
    const body = parseJson<RecordBody>(session.body) ?? {};
    let input: string | null = null;
    let output: string | null = null;
    delete body.in;
    delete body.out;
    delete body.agg;
    if (agg.agg) {
      body.agg = agg.agg;
      const ends = await trx
        .selectFrom('records')
        .select(['id', 'input_text', 'output_text', 'body'])
        .where('id', 'in', [agg.agg.fi, agg.agg.li])
        .execute();
      const first = ends.find((e) => e.id === agg.agg?.fi);
      const last = ends.find((e) => e.id === agg.agg?.li);
      const fb = parseJson<RecordBody>(first?.body) ?? {};
      const lb = parseJson<RecordBody>(last?.body) ?? {};
      input = first?.input_text ?? null;
      output = last?.output_text ?? null;
      if (fb.in !== undefined) body.in = fb.in;
      if (lb.out !== undefined) body.out = lb.out;
    }
    touchPromoted('session', Number(session.created_at), session as Promoted);
    await trx
      .updateTable('records')
      .set({
        num_children: agg.numTraces,
        ...agg.tokens,
        duration_ns: agg.duration_ns,
        input_text: input,
        output_text: output,
        body: JSON.stringify(body),
        updated_at: now,
      })
      .where('id', '=', sessionId)
      .execute();
  }

  /**
   * A catalogue entry a deleted or changed record may have bounded: when its first (last) sighting is
   * at or after (before) the touched records', it becomes that of the records left, or goes. On
   * PostgreSQL the entry is locked first, so an ingest that widens it meanwhile widens the result.
   */
  private async narrowCatalogue(trx: Kysely<DB>, runId: string, t: Touched): Promise<void> {
    let q = trx
      .selectFrom('column_catalogue')
      .select(['first_seen', 'last_seen'])
      .where('run_id', '=', runId)
      .where('column_id', '=', t.column)
      .where('record_type', '=', t.type)
      .where('data_type', '=', t.dataType);
    if (this.pg) q = q.forUpdate();
    const entry = await q.executeTakeFirst();
    if (!entry) return;
    const needFirst = Number(entry.first_seen) >= t.min;
    const needLast = Number(entry.last_seen) <= t.max;
    if (!needFirst && !needLast) return;
    const has = this.carries(t.column, t.dataType);
    const seen = async (dir: 'asc' | 'desc') => {
      const row = await trx
        .selectFrom('records')
        .select('created_at')
        .where('run_id', '=', runId)
        .where('type', '=', t.type)
        .where(has)
        .orderBy('created_at', dir)
        .limit(1)
        .executeTakeFirst();
      return row ? Number(row.created_at) : null;
    };
    const first = needFirst ? await seen('asc') : Number(entry.first_seen);
    const key = (q: any) =>
      q
        .where('run_id', '=', runId)
        .where('column_id', '=', t.column)
        .where('record_type', '=', t.type)
        .where('data_type', '=', t.dataType);
    if (first === null) {
      await key(trx.deleteFrom('column_catalogue')).execute();
      return;
    }
    const last = needLast ? ((await seen('desc')) as number) : Number(entry.last_seen);
    await key(trx.updateTable('column_catalogue').set({ first_seen: first, last_seen: last })).execute();
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
