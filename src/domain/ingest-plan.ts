/**
 * The ingest planner: given the normalised records of one request and the stored rows they touch,
 * decides every write of the batch (pure; the store runs it inside one transaction and applies the
 * result). It keeps the derived data current: child counts, trace token sums, session aggregates,
 * token usage per UTC day, costs (llm spans priced at their created_at, summed on traces and
 * sessions like the tokens), the models seen per run and the column catalogue. Re-sending an id
 * merges field by field and only applies differences, so nothing is counted twice.
 */
import { catalogueDataType, forEachColumnKey, seenFrom, seenUntil } from './catalogue.ts';
import type { RunScoring } from './scorer-types.ts';
import { type ScoreTask, applyInlineScores, llmTasksOf } from './scoring-plan.ts';
import { type Loc, ValidationError, notFound } from './errors.ts';
import { newId } from './ids.ts';
import { type NormalRecord, type Scalar, mergeRecord } from './ingest.ts';
import type { Pricer } from './prices/pricer.ts';
import {
  DERIVED_METRICS,
  INPUT_INCLUDES_CACHED,
  type RecordBody,
  type RecordRow,
  type SessionAgg,
  type StoredRecord,
  TOKEN_METRICS,
  type TokenMetric,
  recordToApi,
} from './records.ts';

export const DAY_US = 86_400_000_000;

export interface CatalogueEntry {
  column_id: string;
  record_type: string;
  data_type: string;
  first_seen: number;
  last_seen: number;
}

export interface TokenDelta {
  day: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Change of the day's cost; null when no span of the batch has or had a cost that day. */
  cost: number | null;
}

/** A model name seen on llm spans of the batch, with the created_at range of those spans. */
export interface ModelSeen {
  model: string;
  first_seen: number;
  last_seen: number;
}

export interface Plan {
  inserts: RecordRow[];
  updates: RecordRow[];
  /** The stored rows the updates replace, in the same order (the dashboard rollups take them off). */
  replaced: RecordRow[];
  newTraces: number;
  newSpans: number;
  tokenUsage: TokenDelta[];
  catalogue: CatalogueEntry[];
  models: ModelSeen[];
  /** The run gained a session made by POST /sessions. */
  userSession: boolean;
  /**
   * LLM score tasks of the written rows, written in the same transaction (not lost to a crash) as
   * batch jobs created at `writtenAt` (domain/scoring-plan.ts SCORE_BATCH_JOB).
   */
  scoreTasks: ScoreTask[];
  /** The rows' updated_at (epoch µs). */
  writtenAt: number;
}

/** A stored row (either store's JSON representation) as an insertable row with JSON as text. */
export function toRow(s: StoredRecord): RecordRow {
  const text = (v: unknown) =>
    v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v);
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: s.id,
    project_id: s.project_id,
    run_id: s.run_id,
    type: s.type,
    session_id: s.session_id,
    trace_id: s.trace_id,
    parent_id: s.parent_id,
    name: s.name,
    created_at: Number(s.created_at),
    updated_at: Number(s.updated_at),
    is_complete: Number(s.is_complete),
    status_code: n(s.status_code),
    duration_ns: n(s.duration_ns),
    num_input_tokens: n(s.num_input_tokens),
    num_output_tokens: n(s.num_output_tokens),
    num_total_tokens: n(s.num_total_tokens),
    num_cache_read_input_tokens: n(s.num_cache_read_input_tokens),
    num_cache_creation_input_tokens: n(s.num_cache_creation_input_tokens),
    time_to_first_token_ns: n(s.time_to_first_token_ns),
    model: s.model,
    external_id: s.external_id,
    error_message: s.error_message,
    num_children: Number(s.num_children),
    metrics: text(s.metrics),
    user_metadata: text(s.user_metadata),
    dataset_metadata: text(s.dataset_metadata),
    tags: text(s.tags),
    body: text(s.body),
    input_text: s.input_text,
    output_text: s.output_text,
  };
}

const parse = <T>(v: string | null, fallback: T): T => (v === null ? fallback : (JSON.parse(v) as T));

interface Entry {
  row: RecordRow;
  /** The stored row before this batch; null for a record this batch creates. */
  old: RecordRow | null;
  /** Parsed metadata and other metrics when the normaliser already had them. */
  meta?: { metrics: Record<string, number>; user: Record<string, Scalar>; dataset: Record<string, Scalar> };
  /** Parsed body, for rows the planner edits (traces, sessions). */
  body?: RecordBody;
  /** The record's `metrics.cost` as the plan has it (undefined: not read yet, see costOf). */
  cost?: number | null;
  /** `cost` changed: finish() writes it into the row's metrics JSON. */
  costDirty?: boolean;
  dirty: boolean;
}

const parseMetrics = (text: string | null): Record<string, number> =>
  text === null ? {} : (JSON.parse(text) as Record<string, number>);

/** The `cost` of a metrics JSON text, or null. */
export function storedCost(text: string | null): number | null {
  // Most rows carry no other metric: skip the parse when the key cannot be there.
  if (text === null || !text.includes('"cost"')) return null;
  const v = parseMetrics(text).cost;
  return typeof v === 'number' ? v : null;
}

/** A metrics JSON text with `cost` set (or removed, for null). */
export function withCost(text: string | null, cost: number | null): string | null {
  if (text === null) return cost === null ? null : JSON.stringify({ cost });
  const m = parseMetrics(text);
  if (cost === null) delete m.cost;
  else m.cost = cost;
  return Object.keys(m).length ? JSON.stringify(m) : null;
}

const dupError = (loc: Loc, msg: string, input?: unknown) =>
  new ValidationError({ loc, msg, type: 'value_error', ...(input === undefined ? {} : { input }) });

export class Planner {
  private readonly entries = new Map<string, Entry>();
  private readonly order: string[] = [];
  private readonly tokens = new Map<number, TokenDelta>();
  private newTraces = 0;
  private newSpans = 0;
  private userSession = false;
  /** The session a request-level reference resolved to (created on first use). */
  requestSession: string | null = null;

  constructor(
    private readonly ctx: {
      projectId: string;
      runId: string;
      now: number;
      /** Stored rows by id (records of the request, their sessions, traces and parents). */
      existing: Map<string, StoredRecord>;
      /** Prices of the project (none: llm spans get no computed cost). */
      pricer?: Pricer;
      /** A run's scorers: rule and code scores are written into each row's metrics (scoring-plan.ts). */
      scoring?: (runId: string) => RunScoring | undefined;
    },
  ) {}

  private stored(id: string | null | undefined): StoredRecord | undefined {
    if (!id) return undefined;
    const s = this.ctx.existing.get(id);
    return s && s.run_id === this.ctx.runId ? s : undefined;
  }

  /** The working entry of a stored or already planned record. */
  private entry(id: string): Entry | undefined {
    let e = this.entries.get(id);
    if (e) return e;
    const s = this.stored(id);
    if (!s) return undefined;
    const row = toRow(s);
    e = { row, old: { ...row }, dirty: false };
    this.entries.set(id, e);
    this.order.push(id);
    return e;
  }

  private add(row: RecordRow, old: RecordRow | null, meta?: Entry['meta']): Entry {
    const e: Entry = { row, old, meta, dirty: true };
    if (!this.entries.has(row.id)) this.order.push(row.id);
    this.entries.set(row.id, e);
    return e;
  }

  private bodyOf(e: Entry): RecordBody {
    if (!e.body) e.body = parse<RecordBody>(e.row.body, {});
    return e.body;
  }

  private costOf(e: Entry): number | null {
    if (e.cost === undefined) e.cost = storedCost(e.row.metrics);
    return e.cost;
  }

  private setCost(e: Entry, cost: number | null) {
    if (this.costOf(e) === cost) return;
    e.cost = cost;
    e.costDirty = true;
    e.dirty = true;
  }

  /** The cost of an llm span row from the project's prices at its created_at (null: none). */
  private priced(row: RecordRow, x: Record<string, unknown> | undefined): number | null {
    const said = x?.[INPUT_INCLUDES_CACHED];
    return (
      this.ctx.pricer?.costOf(
        row.model,
        row.created_at,
        {
          input: row.num_input_tokens,
          output: row.num_output_tokens,
          cacheRead: row.num_cache_read_input_tokens,
          cacheCreation: row.num_cache_creation_input_tokens,
        },
        typeof said === 'boolean' ? said : null,
      ) ?? null
    );
  }

  // ---- sessions --------------------------------------------------------------------------

  /** A new session row. */
  newSession(opts: {
    id?: string | null;
    name?: string;
    externalId?: string | null;
    previousSessionId?: string | null;
    userMetadata?: Record<string, Scalar>;
    createdAt: number;
    byUser?: boolean;
  }): string {
    const id = opts.id ?? newId();
    const body: RecordBody = {};
    if (opts.previousSessionId) body.x = { previous_session_id: opts.previousSessionId };
    const row: RecordRow = {
      id,
      project_id: this.ctx.projectId,
      run_id: this.ctx.runId,
      type: 'session',
      session_id: id,
      trace_id: null,
      parent_id: null,
      name: opts.name ?? '',
      created_at: opts.createdAt,
      updated_at: this.ctx.now,
      is_complete: 1,
      status_code: null,
      duration_ns: null,
      num_input_tokens: null,
      num_output_tokens: null,
      num_total_tokens: null,
      num_cache_read_input_tokens: null,
      num_cache_creation_input_tokens: null,
      time_to_first_token_ns: null,
      model: null,
      external_id: opts.externalId ?? null,
      error_message: null,
      num_children: 0,
      metrics: null,
      user_metadata: JSON.stringify(opts.userMetadata ?? {}),
      dataset_metadata: '{}',
      tags: '[]',
      body: JSON.stringify(body),
      input_text: null,
      output_text: null,
    };
    const e = this.add(row, null, { metrics: {}, user: opts.userMetadata ?? {}, dataset: {} });
    e.body = body;
    if (opts.byUser) this.userSession = true;
    return id;
  }

  /** A session of the run (stored, or created by this batch), or 404. */
  session(id: string): string {
    if (this.entries.get(id)?.row.type === 'session') return id;
    const s = this.stored(id);
    if (s?.type !== 'session') throw notFound('Session');
    return s.id;
  }

  // ---- traces and spans ----------------------------------------------------------------------

  /**
   * A trace of a traces request. `sessionFor` resolves the session of a new trace (it may create
   * one); an existing trace keeps its session.
   */
  trace(rec: NormalRecord, sessionFor: (rec: NormalRecord) => string): void {
    const id = rec.row.id;
    const prior = this.ctx.existing.get(id);
    if (prior) {
      if (prior.run_id !== this.ctx.runId || prior.type !== 'trace') {
        throw dupError([...rec.loc, 'id'], 'This id is already used by another record', id);
      }
      if (rec.sessionId && rec.sessionId !== prior.session_id) {
        throw dupError(
          [...rec.loc, 'session_id'],
          'The trace already belongs to another session',
          rec.sessionId,
        );
      }
      this.update(prior, rec.raw, 'trace');
      return;
    }
    // A copy: a flow may run again (PostgreSQL retries a transaction that lost a race).
    const row = { ...rec.row };
    row.project_id = this.ctx.projectId;
    row.run_id = this.ctx.runId;
    row.session_id = sessionFor(rec);
    const e = this.add(row, null, {
      metrics: rec.metrics,
      user: rec.userMetadata,
      dataset: rec.datasetMetadata,
    });
    e.body = rec.body;
    this.newTraces++;
  }

  /** A span of a traces or spans request; its trace (and parent) are stored or planned already. */
  span(rec: NormalRecord): void {
    const id = rec.row.id;
    const prior = this.ctx.existing.get(id);
    if (prior) {
      if (prior.run_id !== this.ctx.runId || prior.type === 'trace' || prior.type === 'session') {
        throw dupError([...rec.loc, 'id'], 'This id is already used by another record', id);
      }
      if (prior.type !== rec.row.type) {
        throw dupError([...rec.loc, 'type'], `This span was stored as a ${prior.type} span`, rec.row.type);
      }
      if (prior.trace_id !== rec.row.trace_id || prior.parent_id !== rec.row.parent_id) {
        throw dupError([...rec.loc, 'id'], 'This span is already stored under another parent', id);
      }
      this.update(prior, rec.raw, 'span');
      return;
    }
    const trace = this.entry(rec.row.trace_id as string);
    if (!trace)
      throw dupError([...rec.loc, 'trace_id'], 'The trace of this span does not exist', rec.row.trace_id);
    const row = { ...rec.row };
    row.project_id = this.ctx.projectId;
    row.run_id = this.ctx.runId;
    row.session_id = trace.row.session_id;
    const e = this.add(row, null, {
      metrics: rec.metrics,
      user: rec.userMetadata,
      dataset: rec.datasetMetadata,
    });
    if (row.type === 'llm') {
      // A cost the client sent wins; otherwise the price in force at the span's created_at.
      e.cost = rec.metrics.cost ?? null;
      if (!rec.body.tok?.includes('cost')) this.setCost(e, this.priced(row, rec.body.x));
    }
    this.newSpans++;
    trace.row.num_children++;
    trace.dirty = true;
    const tb = this.bodyOf(trace);
    // Children that arrived before this span (stored under a parent that did not exist yet).
    const early = tb.pend?.[row.id];
    if (early && tb.pend) {
      row.num_children += early;
      delete tb.pend[row.id];
      if (!Object.keys(tb.pend).length) delete tb.pend;
    }
    if (row.parent_id !== trace.row.id) {
      const parent = this.entry(row.parent_id as string);
      if (parent) {
        parent.row.num_children++;
        parent.dirty = true;
      } else {
        // The parent has not arrived yet: it gets this child counted when it lands.
        tb.pend ??= {};
        tb.pend[row.parent_id as string] = (tb.pend[row.parent_id as string] ?? 0) + 1;
      }
    }
    if (row.type === 'llm') this.llmChanged(trace, null, row, null, e.cost ?? null);
  }

  /**
   * A stored trace or span written again (re-send or PATCH): fields of `incoming` replace the
   * stored ones; derived data moves by the difference.
   */
  update(prior: StoredRecord, sent: Record<string, unknown>, kind: 'trace' | 'span'): void {
    const e = this.entry(prior.id) as Entry;
    const before = e.row;
    const costBefore = this.costOf(e);
    const oldBody = this.bodyOf(e);
    const api = recordToApi({ ...before, metrics: before.metrics, body: before.body } as StoredRecord);
    // Pricing-only fields are not in the API view: keep them unless the write sends them again.
    const said = oldBody.x?.[INPUT_INCLUDES_CACHED];
    const incoming =
      said !== undefined && sent[INPUT_INCLUDES_CACHED] === undefined
        ? { ...sent, [INPUT_INCLUDES_CACHED]: said }
        : sent;
    const sentCost = (incoming.metrics as Record<string, unknown> | undefined)?.cost;
    const m = mergeRecord(api, incoming, kind, this.ctx.now);
    const row = m.row;
    row.id = before.id;
    row.project_id = before.project_id;
    row.run_id = before.run_id;
    row.session_id = before.session_id;
    row.trace_id = before.trace_id;
    row.parent_id = before.parent_id;
    row.created_at = before.created_at;
    row.num_children = before.num_children;
    let costAfter: number | null = m.metrics.cost ?? null;
    if (kind === 'trace') {
      // Token and cost keys the client never set stay the sums of the llm spans.
      const set = new Set<string>(oldBody.tok ?? []);
      const sent = incoming.metrics as Record<string, unknown> | undefined;
      if (sent && typeof sent === 'object') for (const k of DERIVED_METRICS) if (sent[k] != null) set.add(k);
      for (const k of TOKEN_METRICS) if (!set.has(k)) row[k] = before[k];
      if (!set.has('cost')) costAfter = costBefore;
      if (set.size) m.body.tok = [...set];
      else delete m.body.tok;
      // The merge rebuilds the body from the API view, which does not carry the counts of children
      // stored before their parent: keep them, or the parent landing with this trace misses them.
      if (oldBody.pend) m.body.pend = oldBody.pend;
      row.body = JSON.stringify(m.body);
      e.body = m.body;
    } else if (row.type === 'llm' && sentCost == null && !oldBody.tok?.includes('cost')) {
      // The stored cost was computed (the merge saw it as sent): price the merged span again.
      delete m.body.tok;
      row.body = JSON.stringify(m.body);
      costAfter = this.priced(row, m.body.x);
      e.body = undefined;
    } else {
      e.body = undefined;
    }
    e.row = row;
    e.meta = { metrics: m.metrics, user: m.userMetadata, dataset: m.datasetMetadata };
    e.dirty = true;
    // The merged row's metrics carry the cost the merge saw; the plan's own value replaces it.
    e.cost = storedCost(row.metrics);
    this.setCost(e, costAfter);
    if (row.type === 'llm') {
      const trace = this.entry(row.trace_id as string);
      if (trace) this.llmChanged(trace, before, row, costBefore, costAfter);
    }
  }

  /**
   * Recompute: an llm span's cost with today's prices (spans whose cost the client sent keep it);
   * its trace, session and day move by the difference. Returns whether the cost changed.
   */
  reprice(prior: StoredRecord): boolean {
    if (prior.type !== 'llm' || prior.run_id !== this.ctx.runId) return false;
    const e = this.entry(prior.id) as Entry;
    const body = this.bodyOf(e);
    if (body.tok?.includes('cost')) return false;
    const before = this.costOf(e);
    const after = this.priced(e.row, body.x);
    if (before === after) return false;
    this.setCost(e, after);
    const trace = this.entry(e.row.trace_id as string);
    if (trace) this.llmChanged(trace, e.row, e.row, before, after);
    return true;
  }

  /** An llm span appeared or changed: token usage and cost of its day, its trace's sums. */
  private llmChanged(
    trace: Entry,
    before: RecordRow | null,
    after: RecordRow,
    costBefore: number | null,
    costAfter: number | null,
  ) {
    const d = (k: TokenMetric) => (after[k] ?? 0) - (before?.[k] ?? 0);
    const din = d('num_input_tokens');
    const dout = d('num_output_tokens');
    const dread = d('num_cache_read_input_tokens');
    const dcreate = d('num_cache_creation_input_tokens');
    const priced = costBefore !== null || costAfter !== null;
    const dcost = (costAfter ?? 0) - (costBefore ?? 0);
    if (din || dout || dread || dcreate || priced) {
      const day = Math.floor(after.created_at / DAY_US) * DAY_US;
      let t = this.tokens.get(day);
      if (!t) {
        t = {
          day,
          input_tokens: 0,
          output_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: 0,
          cost: null,
        };
        this.tokens.set(day, t);
      }
      t.input_tokens += din;
      t.output_tokens += dout;
      t.cache_read_input_tokens += dread;
      t.cache_creation_input_tokens += dcreate;
      if (priced) t.cost = (t.cost ?? 0) + dcost;
    }
    const tok = this.bodyOf(trace).tok;
    if (!tok?.includes('cost') && (dcost !== 0 || (costAfter !== null && this.costOf(trace) === null))) {
      this.setCost(trace, (this.costOf(trace) ?? 0) + dcost);
    }
    for (const k of TOKEN_METRICS) {
      if (tok?.includes(k)) continue;
      const delta = d(k);
      const had = before?.[k] !== null && before?.[k] !== undefined;
      if (delta === 0 && (had || after[k] === null)) continue;
      trace.row[k] = (trace.row[k] ?? 0) + delta;
      trace.dirty = true;
    }
  }

  // ---- sessions ------------------------------------------------------------------------------

  /** Folds every planned trace into its session (count, tokens, first/last, duration). */
  private aggregateSessions() {
    for (const id of [...this.order]) {
      const t = this.entries.get(id) as Entry;
      if (t.row.type !== 'trace' || !t.dirty || !t.row.session_id) continue;
      const s = this.entry(t.row.session_id);
      if (s?.row.type !== 'session') continue;
      const body = this.bodyOf(s);
      const row = t.row;
      if (!t.old) s.row.num_children++;
      for (const k of TOKEN_METRICS) {
        const delta = (row[k] ?? 0) - (t.old?.[k] ?? 0);
        if (delta !== 0 || (row[k] !== null && s.row[k] === null)) s.row[k] = (s.row[k] ?? 0) + delta;
      }
      const cost = this.costOf(t);
      const dcost = (cost ?? 0) - (t.old ? (storedCost(t.old.metrics) ?? 0) : 0);
      if (dcost !== 0 || (cost !== null && this.costOf(s) === null))
        this.setCost(s, (this.costOf(s) ?? 0) + dcost);
      // Ends are compared as (created_at µs, duration ns) pairs: epoch nanoseconds exceed 2^53.
      const dur = row.duration_ns ?? 0;
      let agg = body.agg as SessionAgg | undefined;
      if (!agg) {
        agg = { fc: row.created_at, fi: row.id, lc: row.created_at, li: row.id, eu: row.created_at, ed: dur };
        body.agg = agg;
        this.copyIo(s, t, 'in');
        this.copyIo(s, t, 'out');
      } else {
        if (row.created_at < agg.fc || (row.created_at === agg.fc && row.id < agg.fi)) {
          agg.fc = row.created_at;
          agg.fi = row.id;
        }
        if (row.created_at > agg.lc || (row.created_at === agg.lc && row.id > agg.li)) {
          agg.lc = row.created_at;
          agg.li = row.id;
        }
        if ((row.created_at - agg.eu) * 1000 + (dur - agg.ed) > 0) {
          agg.eu = row.created_at;
          agg.ed = dur;
        }
        if (agg.fi === row.id) this.copyIo(s, t, 'in');
        if (agg.li === row.id) this.copyIo(s, t, 'out');
      }
      s.row.duration_ns = (agg.eu - agg.fc) * 1000 + agg.ed;
      if (!s.old && row.created_at < s.row.created_at) s.row.created_at = row.created_at;
      s.row.body = JSON.stringify(body);
      s.row.updated_at = this.ctx.now;
      s.dirty = true;
    }
  }

  private copyIo(s: Entry, t: Entry, which: 'in' | 'out') {
    const sb = this.bodyOf(s);
    const tb = this.bodyOf(t);
    if (which === 'in') {
      s.row.input_text = t.row.input_text;
      if (tb.in === undefined) delete sb.in;
      else sb.in = tb.in;
    } else {
      s.row.output_text = t.row.output_text;
      if (tb.out === undefined) delete sb.out;
      else sb.out = tb.out;
    }
  }

  /**
   * A stored record scored again by the inline scorers of `scoring` (a backfill): written when a
   * score changed. Answers whether it did.
   */
  rescore(id: string, scoring: RunScoring): boolean {
    const e = this.entry(id);
    if (!e || !applyInlineScores(e.row, scoring.scorers, scoring.segments)) return false;
    e.dirty = true;
    e.meta = undefined;
    return true;
  }

  /**
   * A stored record's score from a background scorer (an LLM judge): `value` under `name` in its
   * metrics, or the key removed when null. Answers whether the record changed.
   */
  setScore(id: string, name: string, value: number | null): boolean {
    const e = this.entry(id);
    if (!e) return false;
    const metrics = (e.row.metrics ? JSON.parse(e.row.metrics) : {}) as Record<string, number>;
    if ((metrics[name] ?? null) === value) return false;
    if (value === null) delete metrics[name];
    else metrics[name] = value;
    e.row.metrics = Object.keys(metrics).length ? JSON.stringify(metrics) : null;
    e.dirty = true;
    e.meta = undefined;
    return true;
  }

  // ---- result --------------------------------------------------------------------------------

  finish(): Plan {
    this.aggregateSessions();
    const inserts: RecordRow[] = [];
    const updates: RecordRow[] = [];
    const replaced: RecordRow[] = [];
    const cat = new Map<string, CatalogueEntry>();
    const see = (column: string, type: string, v: Scalar, at: number) => {
      const dt = catalogueDataType(v);
      const key = `${column}\u0000${type}\u0000${dt}`;
      const c = cat.get(key);
      const from = seenFrom(at);
      const until = seenUntil(at);
      if (!c)
        cat.set(key, {
          column_id: column,
          record_type: type,
          data_type: dt,
          first_seen: from,
          last_seen: until,
        });
      else {
        if (from < c.first_seen) c.first_seen = from;
        if (until > c.last_seen) c.last_seen = until;
      }
    };
    const models = new Map<string, ModelSeen>();
    const scoreTasks: ScoreTask[] = [];
    for (const id of this.order) {
      const e = this.entries.get(id) as Entry;
      if (!e.dirty) continue;
      const row = e.row;
      if (row.type === 'trace' && e.body) row.body = JSON.stringify(e.body);
      if (e.costDirty) row.metrics = withCost(row.metrics, e.cost ?? null);
      if (e.cost !== undefined && e.cost !== null) see('metrics/cost', row.type, e.cost, row.created_at);
      if (row.type === 'llm' && row.model) {
        const m = models.get(row.model);
        if (!m)
          models.set(row.model, { model: row.model, first_seen: row.created_at, last_seen: row.created_at });
        else {
          if (row.created_at < m.first_seen) m.first_seen = row.created_at;
          if (row.created_at > m.last_seen) m.last_seen = row.created_at;
        }
      }
      if (e.old) {
        row.updated_at = this.ctx.now;
        updates.push(row);
        replaced.push(e.old);
      } else inserts.push(row);
      const scoring = this.ctx.scoring?.(row.run_id);
      if (scoring) {
        // The metadata parsed already stay; only the metrics changed.
        const metrics = applyInlineScores(row, scoring.scorers, scoring.segments);
        if (metrics) e.meta = e.meta && { ...e.meta, metrics };
        scoreTasks.push(...llmTasksOf(row, scoring));
      }
      const meta = e.meta ?? {
        metrics: parse<Record<string, number>>(row.metrics, {}),
        user: parse<Record<string, Scalar>>(row.user_metadata, {}),
        dataset: parse<Record<string, Scalar>>(row.dataset_metadata, {}),
      };
      forEachColumnKey({ row, ...meta }, (column, v) => see(column, row.type, v, row.created_at));
    }
    // Parents before children: stored order is request order, and sessions are created first.
    inserts.sort((a, b) => rank(a.type) - rank(b.type));
    return {
      inserts,
      updates,
      replaced,
      newTraces: this.newTraces,
      newSpans: this.newSpans,
      tokenUsage: [...this.tokens.values()].filter(
        (t) =>
          t.input_tokens ||
          t.output_tokens ||
          t.cache_read_input_tokens ||
          t.cache_creation_input_tokens ||
          t.cost !== null,
      ),
      catalogue: [...cat.values()],
      models: [...models.values()],
      userSession: this.userSession,
      scoreTasks,
      writtenAt: this.ctx.now,
    };
  }

  /** The current state of a planned or stored record (for responses). */
  rowOf(id: string): RecordRow | undefined {
    return (
      this.entries.get(id)?.row ?? (this.stored(id) ? toRow(this.stored(id) as StoredRecord) : undefined)
    );
  }
}

const rank = (type: string) => (type === 'session' ? 0 : type === 'trace' ? 1 : 2);
