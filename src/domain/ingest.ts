/**
 * Validation and normalisation of ingestion bodies (traces, spans, sessions, updates), by hand:
 * one pass over the parsed JSON that checks every field, reports each fault with its exact `loc`,
 * and builds the rows to store. Written out rather than compiled from a JSON Schema because the
 * span tree is recursive (a schema validator would follow any depth; we stop at MAX_SPAN_DEPTH),
 * because cross-field rules (ids, parents, depth, duplicates) need the same walk, and because this
 * is the hot path of ingestion. The TypeBox schemas in src/schemas/records.ts document the same
 * shapes for OpenAPI.
 */
import type { ErrorItem, Loc } from './errors.ts';
import { ValidationError } from './errors.ts';
import { isUuid, newId } from './ids.ts';
import { setKey } from './keys.ts';
import {
  type IoValue,
  MESSAGE_ROLES,
  PROMOTED_METRICS,
  type RecordBody,
  type RecordRow,
  DERIVED_METRICS,
  INPUT_INCLUDES_CACHED,
  SPAN_TYPES,
  encodeIo,
} from './records.ts';
import { parseTimestamp } from './time.ts';

/** Spans may nest at most this many levels below their trace (a direct child is level 1). */
export const MAX_SPAN_DEPTH = 64;
/** At most this many 422 items are reported for one request. */
const MAX_ERRORS = 50;

export type Scalar = string | number | boolean;

/** One trace or span of a request, normalised. */
export interface NormalRecord {
  /** The row to insert (project_id, run_id and session_id are filled in when they are known). */
  row: RecordRow;
  /** Parsed body (the row's `body` is its JSON text). */
  body: RecordBody;
  /** The client's object without `spans`: what a re-send of an existing id overwrites, field by field. */
  raw: Record<string, unknown>;
  loc: Loc;
  /** Every metric the record carries (promoted and other keys). */
  metrics: Record<string, number>;
  userMetadata: Record<string, Scalar>;
  datasetMetadata: Record<string, Scalar>;
  /** Traces: the session the client named on the trace itself. */
  sessionId: string | null;
  /** Index (in `records`) of the trace this record belongs to; -1 for traces. */
  traceIndex: number;
  /** Index of the parent in `records`; -1 when the parent is the trace or lies outside the request. */
  parentIndex: number;
  /** Direct children in this request. */
  children: number;
}

export interface Target {
  log_stream_id: string | null;
  experiment_id: string | null;
  metrics_testing_id: string | null;
}

export interface TracesRequest {
  target: Target;
  sessionId: string | null;
  sessionExternalId: string | null;
  includeTraceIds: boolean;
  /**
   * New traces that name no session get one each (instead of one per request). Internal: set by
   * services whose batches hold unrelated traces (OTLP exports).
   */
  sessionPerTrace?: boolean;
  /**
   * Sessions to create with the batch (a Spanbase extension for batch clients: the hosted API creates
   * them one request each). Each needs an `id`, which the batch's traces name in `session_id`.
   */
  sessions: NewSession[];
  /** Traces and spans, each trace followed by its spans depth-first. */
  records: NormalRecord[];
  traces: number;
}

export interface NewSession {
  id: string;
  name: string;
  externalId: string | null;
  previousSessionId: string | null;
  userMetadata: Record<string, Scalar>;
  createdAt: number | null;
  loc: Loc;
}

export interface SpansRequest {
  target: Target;
  traceId: string;
  parentId: string;
  records: NormalRecord[];
}

export interface SessionRequest {
  target: Target;
  id: string | null;
  name: string;
  externalId: string | null;
  previousSessionId: string | null;
  userMetadata: Record<string, Scalar>;
}

/** Fields a PATCH may set; absent fields stay as they are. */
export interface RecordPatch {
  target: Target;
  raw: Record<string, unknown>;
}

type Obj = Record<string, unknown>;

/** Echo of an offending value in a 422 item: primitives, and small structures only. */
function echo(v: unknown): unknown {
  if (v === null || typeof v !== 'object') {
    return typeof v === 'string' && v.length > 1000 ? `${v.slice(0, 1000)}…` : v;
  }
  try {
    const text = JSON.stringify(v);
    return text.length <= 1000 ? v : undefined;
  } catch {
    return undefined;
  }
}

class Checker {
  readonly items: ErrorItem[] = [];
  fail(loc: Loc, type: string, msg: string, input?: unknown, ctx?: Record<string, unknown>) {
    if (this.items.length >= MAX_ERRORS) return;
    const item: ErrorItem = { loc, msg, type };
    if (input !== undefined) {
      const e = echo(input);
      if (e !== undefined) item.input = e;
    }
    if (ctx) item.ctx = ctx;
    this.items.push(item);
  }
  get full() {
    return this.items.length >= MAX_ERRORS;
  }
  throwIfAny() {
    if (this.items.length) throw new ValidationError(this.items);
  }
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function at(loc: Loc, key: string | number): Loc {
  return [...loc, key];
}

/**
 * Longest external id, in UTF-16 units: a btree index entry (PostgreSQL allows 2704 bytes) must hold
 * it with its run id, and a unit is at most 3 bytes of UTF-8.
 */
export const MAX_EXTERNAL_ID_LENGTH = 512;
/** Longest metadata or metric key: keys are indexed in the column catalogue, as external ids are. */
export const MAX_KEY_LENGTH = 512;

/**
 * False (and a 422 item) when a metadata or metric key is too long to index. The item's location is
 * built only then: this runs for every key of every record.
 */
function keyFits(c: Checker, k: string, loc: () => Loc): boolean {
  if (k.length <= MAX_KEY_LENGTH) return true;
  c.fail(loc(), 'value_error', `Keys should have at most ${MAX_KEY_LENGTH} characters`, k.slice(0, 64), {
    max_length: MAX_KEY_LENGTH,
  });
  return false;
}

function str(
  c: Checker,
  o: Obj,
  key: string,
  loc: Loc,
  nullable = true,
  maxLength = Number.POSITIVE_INFINITY,
): string | null | undefined {
  const v = o[key];
  if (v === undefined || (v === null && nullable)) return v as null | undefined;
  if (typeof v !== 'string') {
    c.fail(at(loc, key), 'string_type', 'Input should be a valid string', v);
    return undefined;
  }
  if (v.length > maxLength) {
    c.fail(at(loc, key), 'string_too_long', `String should have at most ${maxLength} characters`, v, {
      max_length: maxLength,
    });
    return undefined;
  }
  return v;
}

function uuid(c: Checker, o: Obj, key: string, loc: Loc): string | null | undefined {
  const v = o[key];
  if (v === undefined || v === null) return v as null | undefined;
  if (!isUuid(v)) {
    c.fail(at(loc, key), 'uuid_parsing', 'Input should be a valid UUID', v);
    return undefined;
  }
  return (v as string).toLowerCase();
}

/** Bounds of the integer columns: int4 for small codes, the exactly representable range elsewhere. */
const INT32 = { min: -2147483648, max: 2147483647 };
const SAFE = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };
const NON_NEGATIVE = { min: 0, max: Number.MAX_SAFE_INTEGER };

function int(
  c: Checker,
  o: Obj,
  key: string,
  loc: Loc,
  bounds: { min: number; max: number } = SAFE,
): number | null | undefined {
  const v = o[key];
  if (v === undefined || v === null) return v as null | undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    c.fail(at(loc, key), 'int_type', 'Input should be a valid integer', v);
    return undefined;
  }
  if (v < bounds.min) {
    c.fail(at(loc, key), 'greater_than_equal', `Input should be greater than or equal to ${bounds.min}`, v, {
      ge: bounds.min,
    });
    return undefined;
  }
  if (v > bounds.max) {
    c.fail(at(loc, key), 'less_than_equal', `Input should be less than or equal to ${bounds.max}`, v, {
      le: bounds.max,
    });
    return undefined;
  }
  return v;
}

function num(c: Checker, o: Obj, key: string, loc: Loc): number | null | undefined {
  const v = o[key];
  if (v === undefined || v === null) return v as null | undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    c.fail(at(loc, key), 'float_type', 'Input should be a valid number', v);
    return undefined;
  }
  return v;
}

function bool(c: Checker, o: Obj, key: string, loc: Loc): boolean | null | undefined {
  const v = o[key];
  if (v === undefined || v === null) return v as null | undefined;
  if (typeof v !== 'boolean') {
    c.fail(at(loc, key), 'bool_type', 'Input should be a valid boolean', v);
    return undefined;
  }
  return v;
}

function timestamp(c: Checker, o: Obj, key: string, loc: Loc): number | null | undefined {
  const v = o[key];
  if (v === undefined || v === null) return v as null | undefined;
  const us = typeof v === 'string' ? parseTimestamp(v) : null;
  if (us === null) {
    c.fail(at(loc, key), 'datetime_parsing', 'Input should be a valid datetime', v);
    return undefined;
  }
  return us;
}

function metadata(c: Checker, o: Obj, key: string, loc: Loc): Record<string, Scalar> | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) {
    c.fail(at(loc, key), 'dict_type', 'Input should be a valid dictionary', v);
    return undefined;
  }
  const out: Record<string, Scalar> = {};
  for (const k in v) {
    const x = v[k];
    if (x === null || x === undefined || !keyFits(c, k, () => [...loc, key, k])) continue;
    if (typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x))) {
      setKey(out, k, x);
    } else {
      c.fail([...loc, key, k], 'string_type', 'Input should be a valid string', x);
    }
  }
  return out;
}

function stringList(c: Checker, o: Obj, key: string, loc: Loc): string[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) {
    c.fail(at(loc, key), 'list_type', 'Input should be a valid list', v);
    return undefined;
  }
  for (let i = 0; i < v.length; i++) {
    if (typeof v[i] !== 'string')
      c.fail([...loc, key, i], 'string_type', 'Input should be a valid string', v[i]);
  }
  return v as string[];
}

function objectList(c: Checker, o: Obj, key: string, loc: Loc): Obj[] | null | undefined {
  const v = o[key];
  if (v === undefined || v === null) return v as null | undefined;
  if (!Array.isArray(v)) {
    c.fail(at(loc, key), 'list_type', 'Input should be a valid list', v);
    return undefined;
  }
  for (let i = 0; i < v.length; i++) {
    if (!isObj(v[i])) c.fail([...loc, key, i], 'dict_type', 'Input should be a valid dictionary', v[i]);
  }
  return v as Obj[];
}

function checkMessage(c: Checker, m: Obj, loc: Loc): Obj {
  const content = m.content;
  if (content !== null && content !== undefined && typeof content !== 'string') {
    c.fail(at(loc, 'content'), 'string_type', 'Input should be a valid string', content);
  }
  if (typeof m.role !== 'string' || !MESSAGE_ROLES.includes(m.role)) {
    c.fail(
      at(loc, 'role'),
      'enum',
      `Input should be ${MESSAGE_ROLES.map((r) => `'${r}'`).join(', ')}`,
      m.role,
      { expected: MESSAGE_ROLES },
    );
  }
  str(c, m, 'tool_call_id', loc);
  const calls = objectList(c, m, 'tool_calls', loc);
  if (calls) {
    calls.forEach((call, i) => {
      if (!isObj(call)) return;
      const cl = [...loc, 'tool_calls', i];
      str(c, call, 'id', cl);
      const fn = call.function;
      if (fn !== undefined && fn !== null && !isObj(fn)) {
        c.fail(at(cl, 'function'), 'dict_type', 'Input should be a valid dictionary', fn);
      }
    });
  }
  const out: Obj = { ...m };
  if (content === undefined) out.content = '';
  return out;
}

function checkDocument(c: Checker, d: Obj, loc: Loc): Obj {
  const key = 'page_content' in d ? 'page_content' : 'content';
  const text = d[key];
  if (typeof text !== 'string') c.fail(at(loc, key), 'string_type', 'Input should be a valid string', text);
  const meta = metadata(c, d, 'metadata', loc);
  const out: Obj = { page_content: text, metadata: meta ?? {} };
  for (const k in d) if (k !== 'content' && k !== 'page_content' && k !== 'metadata') setKey(out, k, d[k]);
  return out;
}

/**
 * An input or output: a string, a message, a document, or a list of messages, documents and
 * strings. Documents come as `{page_content, metadata}` or `{content, metadata}` and are kept as
 * `{page_content, metadata}`.
 */
function io(c: Checker, o: Obj, key: string, loc: Loc): IoValue | undefined {
  const v = o[key];
  if (v === undefined || v === null || typeof v === 'string') return v as IoValue | undefined;
  const l = at(loc, key);
  const item = (x: unknown, il: Loc): Obj | string | undefined => {
    if (typeof x === 'string') return x;
    if (!isObj(x)) {
      c.fail(il, 'string_type', 'Input should be a valid string, message or document', x);
      return undefined;
    }
    if ('role' in x) return checkMessage(c, x, il);
    if ('page_content' in x || 'content' in x) return checkDocument(c, x, il);
    c.fail(il, 'string_type', 'Input should be a valid string, message or document', x);
    return undefined;
  };
  if (Array.isArray(v)) return v.map((x, i) => item(x, at(l, i))) as (Obj | string)[];
  const one = item(v, l);
  return one as IoValue | undefined;
}

function metricsOf(c: Checker, o: Obj, loc: Loc, type: string): Record<string, number> {
  const v = o.metrics;
  const out: Record<string, number> = {};
  if (v === undefined || v === null) return out;
  if (!isObj(v)) {
    c.fail(at(loc, 'metrics'), 'dict_type', 'Input should be a valid dictionary', v);
    return out;
  }
  const ml = at(loc, 'metrics');
  for (const k in v) {
    const x = v[k];
    if (x === null || x === undefined || !keyFits(c, k, () => at(ml, k))) continue;
    if ((PROMOTED_METRICS as readonly string[]).includes(k)) {
      const n = int(c, v, k, ml, NON_NEGATIVE);
      if (typeof n === 'number') out[k] = n;
    } else if (k === 'cost') {
      const n = num(c, v, k, ml);
      if (typeof n === 'number' && n < 0) {
        c.fail(at(ml, k), 'greater_than_equal', 'Input should be greater than or equal to 0', n, { ge: 0 });
      } else if (typeof n === 'number') out.cost = n;
    } else if (typeof x === 'number' && Number.isFinite(x)) {
      setKey(out, k, x);
    } else {
      c.fail(at(ml, k), 'float_type', 'Input should be a valid number', x);
    }
  }
  if (
    type === 'llm' &&
    out.num_total_tokens === undefined &&
    (out.num_input_tokens !== undefined || out.num_output_tokens !== undefined)
  ) {
    out.num_total_tokens = (out.num_input_tokens ?? 0) + (out.num_output_tokens ?? 0);
  }
  return out;
}

/** The target ids a request names, in its body or else its query string (each checked to be a uuid). */
function targetIds(c: Checker, o: Obj, query: Obj): Target {
  const pick = (k: string) => (o[k] === undefined || o[k] === null ? query[k] : o[k]);
  const src: Obj = {
    log_stream_id: pick('log_stream_id'),
    experiment_id: pick('experiment_id'),
    metrics_testing_id: pick('metrics_testing_id'),
  };
  return {
    log_stream_id: uuid(c, src, 'log_stream_id', ['body']) ?? null,
    experiment_id: uuid(c, src, 'experiment_id', ['body']) ?? null,
    metrics_testing_id: uuid(c, src, 'metrics_testing_id', ['body']) ?? null,
  };
}

/** The request's target run: exactly one of log_stream_id and experiment_id (or metrics_testing_id). */
function target(c: Checker, o: Obj, query: Obj): Target {
  const t = targetIds(c, o, query);
  const given = [t.log_stream_id, t.experiment_id, t.metrics_testing_id].filter((x) => x !== null).length;
  if (given === 0 && !c.items.length) {
    c.fail(['body'], 'value_error', 'Give log_stream_id or experiment_id');
  } else if (given > 1) {
    c.fail(['body'], 'value_error', 'Give only one of log_stream_id, experiment_id and metrics_testing_id');
  }
  return t;
}

const SPAN_KIND_FIELDS: Record<string, string[]> = {
  llm: ['temperature', 'finish_reason', 'tools', 'events'],
  tool: ['tool_call_id'],
  agent: ['agent_type'],
};

interface Walk {
  c: Checker;
  now: number;
  isComplete: boolean;
  records: NormalRecord[];
  ids: Map<string, Loc>;
}

/**
 * Checks one trace or span object and builds its row. Returns the record, or null when the object
 * is not an object at all. `parent` is the enclosing record (null for a trace).
 */
function normalise(
  w: Walk,
  o: unknown,
  loc: Loc,
  kind: 'trace' | 'span',
  ctx: { traceId: string | null; parentId: string | null; parentCreated: number; traceIndex: number },
  step: number,
): NormalRecord | null {
  const { c } = w;
  if (!isObj(o)) {
    c.fail(loc, 'dict_type', 'Input should be a valid dictionary', o);
    return null;
  }
  let type: string;
  if (kind === 'trace') {
    if (o.type !== undefined && o.type !== null && o.type !== 'trace') {
      c.fail(at(loc, 'type'), 'literal_error', "Input should be 'trace'", o.type, { expected: "'trace'" });
    }
    type = 'trace';
  } else if (o.type === undefined || o.type === null) {
    c.fail(at(loc, 'type'), 'missing', 'Field required');
    type = 'workflow';
  } else if (typeof o.type !== 'string' || !(SPAN_TYPES as readonly string[]).includes(o.type)) {
    c.fail(at(loc, 'type'), 'enum', `Input should be ${SPAN_TYPES.map((t) => `'${t}'`).join(', ')}`, o.type, {
      expected: SPAN_TYPES,
    });
    type = 'workflow';
  } else type = o.type;

  let id = uuid(c, o, 'id', loc);
  if (id === null || id === undefined) id = newId();
  else {
    const seen = w.ids.get(id);
    if (seen) {
      c.fail(at(loc, 'id'), 'value_error', `The id ${id} appears more than once in this request`, id);
    }
  }
  w.ids.set(id, loc);

  const traceIdGiven = uuid(c, o, 'trace_id', loc);
  const parentGiven = uuid(c, o, 'parent_id', loc);
  const traceId = kind === 'trace' ? id : (ctx.traceId as string);
  if (kind === 'trace') {
    if (traceIdGiven && traceIdGiven !== id) {
      c.fail(at(loc, 'trace_id'), 'value_error', "A trace's trace_id must equal its id", o.trace_id);
    }
    if (parentGiven) c.fail(at(loc, 'parent_id'), 'value_error', 'A trace has no parent', o.parent_id);
  } else {
    if (traceIdGiven && traceIdGiven !== traceId) {
      c.fail(at(loc, 'trace_id'), 'value_error', 'The span is not in this trace', o.trace_id);
    }
    if (parentGiven && parentGiven !== ctx.parentId) {
      c.fail(
        at(loc, 'parent_id'),
        'value_error',
        'The parent of the span is not the enclosing record',
        o.parent_id,
      );
    }
  }

  const sessionId = uuid(c, o, 'session_id', loc) ?? null;
  const name = str(c, o, 'name', loc) ?? '';
  const input = io(c, o, 'input', loc);
  const output = io(c, o, 'output', loc);
  const redIn = io(c, o, 'redacted_input', loc);
  const redOut = io(c, o, 'redacted_output', loc);
  const created = timestamp(c, o, 'created_at', loc) ?? (kind === 'trace' ? w.now : ctx.parentCreated);
  const userMetadata = metadata(c, o, 'user_metadata', loc) ?? {};
  const datasetMetadata = metadata(c, o, 'dataset_metadata', loc) ?? {};
  const tags = stringList(c, o, 'tags', loc) ?? [];
  const statusCode = int(c, o, 'status_code', loc, INT32) ?? null;
  const metrics = metricsOf(c, o, loc, type);
  const externalId = str(c, o, 'external_id', loc, true, MAX_EXTERNAL_ID_LENGTH) ?? null;
  const datasetInput = str(c, o, 'dataset_input', loc);
  const datasetOutput = str(c, o, 'dataset_output', loc);
  const stepNumber = int(c, o, 'step_number', loc, INT32);
  const errorMessage = str(c, o, 'error_message', loc) ?? null;
  const complete = bool(c, o, 'is_complete', loc) ?? w.isComplete;
  const model = type === 'llm' ? (str(c, o, 'model', loc) ?? null) : null;
  const x: Obj = {};
  if (type === 'llm') {
    const t = num(c, o, 'temperature', loc);
    if (t !== undefined && t !== null) x.temperature = t;
    const fr = str(c, o, 'finish_reason', loc);
    if (fr !== undefined && fr !== null) x.finish_reason = fr;
    const tools = objectList(c, o, 'tools', loc);
    if (tools) x.tools = tools;
    const ev = o.events;
    if (ev !== undefined && ev !== null) {
      if (!Array.isArray(ev)) c.fail(at(loc, 'events'), 'list_type', 'Input should be a valid list', ev);
      else x.events = ev;
    }
    // How the client counted cached input (see domain/prices/cost.ts); kept for pricing only.
    const cached = bool(c, o, INPUT_INCLUDES_CACHED, loc);
    if (cached !== undefined && cached !== null) x[INPUT_INCLUDES_CACHED] = cached;
  } else if (type === 'tool') {
    const t = str(c, o, 'tool_call_id', loc);
    if (t !== undefined && t !== null) x.tool_call_id = t;
  } else if (type === 'agent') {
    const a = str(c, o, 'agent_type', loc);
    if (a !== undefined && a !== null) x.agent_type = a;
  }

  const inp = encodeIo(input ?? (kind === 'trace' ? '' : ''));
  const outp = encodeIo(output);
  const body: RecordBody = {};
  if (inp.skeleton !== undefined) body.in = inp.skeleton;
  if (outp.skeleton !== undefined) body.out = outp.skeleton;
  if (redIn !== undefined && redIn !== null) body.rin = redIn;
  if (redOut !== undefined && redOut !== null) body.rout = redOut;
  if (datasetInput !== undefined && datasetInput !== null) body.din = datasetInput;
  if (datasetOutput !== undefined && datasetOutput !== null) body.dout = datasetOutput;
  if (kind === 'span') body.step = stepNumber ?? step;
  if (Object.keys(x).length) body.x = x;
  if (kind === 'trace') {
    const tok = DERIVED_METRICS.filter((k) => metrics[k] !== undefined);
    if (tok.length) body.tok = tok;
  } else if (type === 'llm' && metrics.cost !== undefined) body.tok = ['cost'];

  let extra: Record<string, number> | null = null;
  for (const k in metrics) {
    if ((PROMOTED_METRICS as readonly string[]).includes(k)) continue;
    if (!extra) extra = {};
    setKey(extra, k, metrics[k]);
  }

  const raw: Obj = {};
  for (const k in o) if (k !== 'spans') setKey(raw, k, o[k]);

  const row: RecordRow = {
    id,
    project_id: '',
    run_id: '',
    type,
    session_id: null,
    trace_id: traceId,
    parent_id: kind === 'trace' ? null : ctx.parentId,
    name,
    created_at: created,
    updated_at: w.now,
    is_complete: complete ? 1 : 0,
    status_code: statusCode,
    duration_ns: metrics.duration_ns ?? null,
    num_input_tokens: metrics.num_input_tokens ?? null,
    num_output_tokens: metrics.num_output_tokens ?? null,
    num_total_tokens: metrics.num_total_tokens ?? null,
    num_cache_read_input_tokens: metrics.num_cache_read_input_tokens ?? null,
    num_cache_creation_input_tokens: metrics.num_cache_creation_input_tokens ?? null,
    time_to_first_token_ns: metrics.time_to_first_token_ns ?? null,
    model,
    external_id: externalId,
    error_message: errorMessage,
    num_children: 0,
    metrics: extra ? JSON.stringify(extra) : null,
    user_metadata: JSON.stringify(userMetadata),
    dataset_metadata: JSON.stringify(datasetMetadata),
    tags: JSON.stringify(tags),
    body: JSON.stringify(body),
    input_text: inp.text,
    output_text: outp.text,
  };
  return {
    row,
    body,
    raw,
    loc,
    metrics,
    userMetadata,
    datasetMetadata,
    sessionId,
    traceIndex: ctx.traceIndex,
    parentIndex: -1,
    children: 0,
  };
}

/**
 * Walks `spans` of a record, depth-first, appending each span after its parent. `depth` is the
 * level the children would have.
 */
function walkSpans(
  w: Walk,
  parent: NormalRecord,
  parentIndex: number,
  spans: unknown,
  loc: Loc,
  depth: number,
  traceIndex: number,
  step: { n: number },
) {
  if (spans === undefined || spans === null) return;
  if (!Array.isArray(spans)) {
    w.c.fail(loc, 'list_type', 'Input should be a valid list', spans);
    return;
  }
  if (spans.length && depth > MAX_SPAN_DEPTH) {
    w.c.fail(
      loc,
      'value_error',
      `Spans may nest at most ${MAX_SPAN_DEPTH} levels below their trace`,
      undefined,
      {
        max_depth: MAX_SPAN_DEPTH,
      },
    );
    return;
  }
  for (let i = 0; i < spans.length && !w.c.full; i++) {
    const sl = at(loc, i);
    const rec = normalise(
      w,
      spans[i],
      sl,
      'span',
      {
        traceId: parent.row.trace_id,
        parentId: parent.row.id,
        parentCreated: parent.row.created_at,
        traceIndex,
      },
      step.n++,
    );
    if (!rec) continue;
    rec.parentIndex = parentIndex;
    const index = w.records.length;
    w.records.push(rec);
    parent.children++;
    walkSpans(w, rec, index, (spans[i] as Obj).spans, at(sl, 'spans'), depth + 1, traceIndex, step);
  }
}

function requireObject(c: Checker, body: unknown): Obj {
  if (body === undefined) {
    c.fail(['body'], 'missing', 'Field required');
    c.throwIfAny();
  }
  if (!isObj(body)) {
    c.fail(['body'], 'dict_type', 'Input should be a valid dictionary', body);
    c.throwIfAny();
  }
  return body as Obj;
}

/** `POST /v2/projects/{id}/traces`. Throws ValidationError with every fault found. */
export function parseTracesRequest(body: unknown, query: Obj = {}, now: number): TracesRequest {
  const c = new Checker();
  const o = requireObject(c, body);
  const t = target(c, o, query);
  const sessionId = uuid(c, o, 'session_id', ['body']) ?? null;
  const sessionExternalId = str(c, o, 'session_external_id', ['body'], true, MAX_EXTERNAL_ID_LENGTH) ?? null;
  const isComplete = bool(c, o, 'is_complete', ['body']) ?? true;
  const includeTraceIds = bool(c, o, 'include_trace_ids', ['body']) ?? false;
  const traces = o.traces;
  const w: Walk = { c, now, isComplete, records: [], ids: new Map() };
  let count = 0;
  if (traces === undefined || traces === null) c.fail(['body', 'traces'], 'missing', 'Field required');
  else if (!Array.isArray(traces))
    c.fail(['body', 'traces'], 'list_type', 'Input should be a valid list', traces);
  else if (traces.length === 0) {
    c.fail(['body', 'traces'], 'too_short', 'List should have at least 1 item after validation, not 0', [], {
      min_length: 1,
    });
  } else {
    for (let i = 0; i < traces.length && !c.full; i++) {
      const loc: Loc = ['body', 'traces', i];
      const index = w.records.length;
      const rec = normalise(
        w,
        traces[i],
        loc,
        'trace',
        { traceId: null, parentId: null, parentCreated: now, traceIndex: -1 },
        0,
      );
      if (!rec) continue;
      rec.traceIndex = index;
      w.records.push(rec);
      count++;
      walkSpans(w, rec, index, (traces[i] as Obj).spans, at(loc, 'spans'), 1, index, { n: 1 });
    }
  }
  const sessions: NewSession[] = [];
  const list = o.sessions;
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list)) c.fail(['body', 'sessions'], 'list_type', 'Input should be a valid list', list);
    else {
      for (let i = 0; i < list.length && !c.full; i++) {
        const loc: Loc = ['body', 'sessions', i];
        const so = list[i];
        if (!isObj(so)) {
          c.fail(loc, 'dict_type', 'Input should be a valid dictionary', so);
          continue;
        }
        const id = uuid(c, so, 'id', loc);
        if (so.id === undefined || so.id === null) c.fail(at(loc, 'id'), 'missing', 'Field required');
        else if (id && w.ids.has(id)) {
          c.fail(at(loc, 'id'), 'value_error', `The id ${id} appears more than once in this request`, id);
        }
        if (id) w.ids.set(id, loc);
        const ns: NewSession = {
          id: id ?? '',
          name: str(c, so, 'name', loc) ?? '',
          externalId: str(c, so, 'external_id', loc, true, MAX_EXTERNAL_ID_LENGTH) ?? null,
          previousSessionId: uuid(c, so, 'previous_session_id', loc) ?? null,
          userMetadata: metadata(c, so, 'user_metadata', loc) ?? {},
          createdAt: timestamp(c, so, 'created_at', loc) ?? null,
          loc,
        };
        sessions.push(ns);
      }
    }
  }
  c.throwIfAny();
  return {
    target: t,
    sessionId,
    sessionExternalId,
    includeTraceIds,
    sessions,
    records: w.records,
    traces: count,
  };
}

/** `POST /v2/projects/{id}/spans`: spans (possibly nested) under `parent_id` of trace `trace_id`. */
export function parseSpansRequest(body: unknown, query: Obj = {}, now: number): SpansRequest {
  const c = new Checker();
  const o = requireObject(c, body);
  const t = target(c, o, query);
  const traceId = uuid(c, o, 'trace_id', ['body']);
  const parentId = uuid(c, o, 'parent_id', ['body']);
  if (o.trace_id === undefined || o.trace_id === null)
    c.fail(['body', 'trace_id'], 'missing', 'Field required');
  if (o.parent_id === undefined || o.parent_id === null)
    c.fail(['body', 'parent_id'], 'missing', 'Field required');
  const isComplete = bool(c, o, 'is_complete', ['body']) ?? true;
  const w: Walk = { c, now, isComplete, records: [], ids: new Map() };
  const spans = o.spans;
  if (spans === undefined || spans === null) c.fail(['body', 'spans'], 'missing', 'Field required');
  else if (!Array.isArray(spans))
    c.fail(['body', 'spans'], 'list_type', 'Input should be a valid list', spans);
  else if (spans.length === 0) {
    c.fail(['body', 'spans'], 'too_short', 'List should have at least 1 item after validation, not 0', [], {
      min_length: 1,
    });
  } else if (traceId && parentId) {
    // A stand-in for the parent; its created_at is unknown here, so children without their own
    // created_at get the request time. Depth below an existing parent is counted from it.
    const anchor = {
      row: { id: parentId, trace_id: traceId, created_at: now },
      children: 0,
    } as unknown as NormalRecord;
    walkSpans(w, anchor, -1, spans, ['body', 'spans'], 1, -1, { n: 0 });
  }
  c.throwIfAny();
  return { target: t, traceId: traceId as string, parentId: parentId as string, records: w.records };
}

/** `POST /v2/projects/{id}/sessions`. */
export function parseSessionRequest(body: unknown, query: Obj = {}): SessionRequest {
  const c = new Checker();
  const o = requireObject(c, body);
  const t = target(c, o, query);
  const r: SessionRequest = {
    target: t,
    id: uuid(c, o, 'id', ['body']) ?? null,
    name: str(c, o, 'name', ['body']) ?? '',
    externalId: str(c, o, 'external_id', ['body'], true, MAX_EXTERNAL_ID_LENGTH) ?? null,
    previousSessionId: uuid(c, o, 'previous_session_id', ['body']) ?? null,
    userMetadata: metadata(c, o, 'user_metadata', ['body']) ?? {},
  };
  c.throwIfAny();
  return r;
}

/** Fields a PATCH of a trace or span may carry; `kind` decides the input/output shapes allowed. */
export function parsePatch(body: unknown, query: Obj = {}): RecordPatch {
  const c = new Checker();
  const o = body === undefined ? {} : requireObject(c, body);
  const t = targetIds(c, o, query);
  const raw: Obj = {};
  const loc: Loc = ['body'];
  if (o.input !== undefined) raw.input = io(c, o, 'input', loc);
  if (o.output !== undefined) raw.output = io(c, o, 'output', loc);
  if (o.name !== undefined) raw.name = str(c, o, 'name', loc, false);
  if (o.status_code !== undefined) raw.status_code = int(c, o, 'status_code', loc, INT32);
  if (o.error_message !== undefined) raw.error_message = str(c, o, 'error_message', loc);
  if (o.tags !== undefined && o.tags !== null) raw.tags = stringList(c, o, 'tags', loc);
  if (o.is_complete !== undefined && o.is_complete !== null) raw.is_complete = bool(c, o, 'is_complete', loc);
  if (o.duration_ns !== undefined) raw.duration_ns = int(c, o, 'duration_ns', loc, NON_NEGATIVE);
  if (o.user_metadata !== undefined && o.user_metadata !== null)
    raw.user_metadata = metadata(c, o, 'user_metadata', loc);
  c.throwIfAny();
  return { target: t, raw };
}

/**
 * Re-normalises a stored record merged with the fields of a new write (last write wins field by
 * field; metrics key by key). `api` is the stored record in its API shape.
 */
export function mergeRecord(
  api: Record<string, unknown>,
  incoming: Record<string, unknown>,
  kind: 'trace' | 'span',
  now: number,
): NormalRecord {
  const merged: Obj = {};
  const keep = [
    'type',
    'id',
    'name',
    'input',
    'output',
    'redacted_input',
    'redacted_output',
    'created_at',
    'user_metadata',
    'dataset_metadata',
    'tags',
    'status_code',
    'external_id',
    'dataset_input',
    'dataset_output',
    'step_number',
    'error_message',
    'is_complete',
    'model',
    ...Object.values(SPAN_KIND_FIELDS).flat(),
  ];
  for (const k of keep) if (api[k] !== undefined && api[k] !== null) merged[k] = api[k];
  for (const k in incoming) {
    if (k === 'metrics' || k === 'created_at' || k === 'id' || k === 'type') continue;
    setKey(merged, k, incoming[k]);
  }
  // Key by key, with setKey: Object.assign would set the prototype for a `__proto__` key.
  const m: Obj = { ...(api.metrics as Obj) };
  if (isObj(incoming.metrics))
    for (const k of Object.keys(incoming.metrics)) setKey(m, k, incoming.metrics[k]);
  merged.metrics = m;
  delete merged.trace_id;
  delete merged.parent_id;
  delete merged.session_id;
  const w: Walk = {
    c: new Checker(),
    now,
    isComplete: Boolean(api.is_complete),
    records: [],
    ids: new Map(),
  };
  const rec = normalise(
    w,
    merged,
    [],
    kind,
    {
      traceId: (api.trace_id as string) ?? null,
      parentId: (api.parent_id as string) ?? null,
      parentCreated: now,
      traceIndex: -1,
    },
    (api.step_number as number) ?? 0,
  );
  if (!rec) throw new Error('merge of a stored record failed');
  w.c.throwIfAny();
  return rec;
}
