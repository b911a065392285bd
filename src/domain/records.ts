/**
 * Records (traces, spans of every kind, sessions) as stored and as the API shows them.
 *
 * Storage keeps each input and output ONCE: the flattened plain text that text filters search
 * (`input_text` / `output_text`, uncompressed and queryable), plus, when the value is structured
 * (messages or documents), a "skeleton" in `body` where each content string is replaced by its length.
 * Decoding slices the contents back out of the text, so nothing is stored twice.
 */
import { NO_FEEDBACK, type RecordFeedback, feedbackFields } from './annotations.ts';
import { setKey } from './keys.ts';
import { toIso } from './time.ts';

export const RECORD_TYPES = [
  'trace',
  'agent',
  'workflow',
  'llm',
  'tool',
  'retriever',
  'control',
  'http',
  'session',
] as const;
export type RecordType = (typeof RECORD_TYPES)[number];
export const SPAN_TYPES = ['agent', 'workflow', 'llm', 'tool', 'retriever', 'control', 'http'] as const;
export type SpanType = (typeof SPAN_TYPES)[number];

export const MESSAGE_ROLES = ['agent', 'assistant', 'developer', 'function', 'system', 'tool', 'user'];

/** Metrics that are real columns (integers). Any other numeric metric key lives in the `metrics` JSON. */
export const PROMOTED_METRICS = [
  'duration_ns',
  'num_input_tokens',
  'num_output_tokens',
  'num_total_tokens',
  'num_cache_read_input_tokens',
  'num_cache_creation_input_tokens',
  'time_to_first_token_ns',
] as const;

/** Token metrics that traces sum from their llm spans and sessions from their traces. */
export const TOKEN_METRICS = [
  'num_input_tokens',
  'num_output_tokens',
  'num_total_tokens',
  'num_cache_read_input_tokens',
  'num_cache_creation_input_tokens',
] as const;
export type TokenMetric = (typeof TOKEN_METRICS)[number];

/** Metrics a trace derives from its spans unless the client sets them: the token sums and the cost. */
export const DERIVED_METRICS = [...TOKEN_METRICS, 'cost'] as const;

/**
 * The llm span field that says whether `num_input_tokens` already counts the cache reads and writes
 * (kept in the body's `x`, read by pricing only).
 */
export const INPUT_INCLUDES_CACHED = 'input_includes_cached_tokens';

/**
 * Everything a record keeps besides its promoted columns (stored as JSON in `records.body`).
 * Short keys: this object is written for every record.
 */
export interface RecordBody {
  /** Skeleton of a structured input (absent: the input is the plain string `input_text`). */
  in?: unknown;
  /** Skeleton of a structured output. */
  out?: unknown;
  /** redacted_input / redacted_output as the client sent them. */
  rin?: unknown;
  rout?: unknown;
  /** dataset_input / dataset_output. */
  din?: string | null;
  dout?: string | null;
  /** Step order within the trace (client's step_number or the position in the request). */
  step?: number;
  /** Kind-specific fields: model parameters, tools, events, agent_type, tool_call_id, previous_session_id. */
  x?: Record<string, unknown>;
  /**
   * Derived metric keys the client set itself: on a trace, token sums or cost not summed from its llm
   * spans; on an llm span, a cost not computed from prices.
   */
  tok?: string[];
  /** Session aggregate state (see domain/ingest-plan.ts). */
  agg?: SessionAgg;
  /** Traces: spans stored under a parent that has not arrived yet, counted by parent id. */
  pend?: Record<string, number>;
}

export interface SessionAgg {
  /** created_at (µs) and id of the first trace. */
  fc: number;
  fi: string;
  /** created_at (µs) and id of the last trace. */
  lc: number;
  li: string;
  /** The latest end over the traces, as created_at (µs) and duration_ns of that trace. */
  eu: number;
  ed: number;
}

/** A record row as written to the store (JSON columns already encoded as text). */
export interface RecordRow {
  id: string;
  project_id: string;
  run_id: string;
  type: string;
  session_id: string | null;
  trace_id: string | null;
  parent_id: string | null;
  name: string;
  created_at: number;
  updated_at: number;
  is_complete: number;
  status_code: number | null;
  duration_ns: number | null;
  num_input_tokens: number | null;
  num_output_tokens: number | null;
  num_total_tokens: number | null;
  num_cache_read_input_tokens: number | null;
  num_cache_creation_input_tokens: number | null;
  time_to_first_token_ns: number | null;
  model: string | null;
  external_id: string | null;
  error_message: string | null;
  num_children: number;
  metrics: string | null;
  user_metadata: string | null;
  dataset_metadata: string | null;
  tags: string | null;
  body: string | null;
  input_text: string | null;
  output_text: string | null;
}

/** Column order of the records table (the ingest statements bind values in this order). */
export const RECORD_COLUMNS: (keyof RecordRow)[] = [
  'id',
  'project_id',
  'run_id',
  'type',
  'session_id',
  'trace_id',
  'parent_id',
  'name',
  'created_at',
  'updated_at',
  'is_complete',
  'status_code',
  'duration_ns',
  'num_input_tokens',
  'num_output_tokens',
  'num_total_tokens',
  'num_cache_read_input_tokens',
  'num_cache_creation_input_tokens',
  'time_to_first_token_ns',
  'model',
  'external_id',
  'error_message',
  'num_children',
  'metrics',
  'user_metadata',
  'dataset_metadata',
  'tags',
  'body',
  'input_text',
  'output_text',
];

// ---------------------------------------------------------------------------------------------
// Input / output encoding

/** A value already checked to be a string, a message, or a list of messages and documents. */
export type IoValue = string | Record<string, unknown> | (Record<string, unknown> | string)[] | null;

const SEP = '\n';

/**
 * Splits an input or output into the flattened text and the skeleton. Strings are stored as is
 * (no skeleton); a message keeps `content` as text; lists keep each item's `content` /
 * `page_content` (or the item itself when it is a string), joined by newlines. Documents are normalised to `{ page_content, metadata }`.
 */
export function encodeIo(value: IoValue | undefined): { text: string | null; skeleton: unknown } {
  if (value === undefined || value === null) return { text: null, skeleton: undefined };
  if (typeof value === 'string') return { text: value, skeleton: undefined };
  const parts: string[] = [];
  const strip = (item: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    for (const k in item) {
      const v = item[k];
      if (v === undefined) continue;
      if ((k === 'content' || k === 'page_content') && typeof v === 'string') {
        out[k] = v.length;
        parts.push(v);
      } else setKey(out, k, v);
    }
    return out;
  };
  if (Array.isArray(value)) {
    const sk = value.map((item) => {
      if (typeof item !== 'string') return strip(item);
      parts.push(item);
      return item.length;
    });
    return { text: parts.join(SEP), skeleton: sk };
  }
  const sk = strip(value);
  // A single message is marked by being an object (not an array).
  return { text: parts.join(SEP), skeleton: sk };
}

/** Inverse of encodeIo. */
export function decodeIo(text: string | null, skeleton: unknown): unknown {
  if (skeleton === undefined || skeleton === null) return text;
  let pos = 0;
  const t = text ?? '';
  let first = true;
  const fill = (item: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    for (const k in item) {
      const v = item[k];
      if ((k === 'content' || k === 'page_content') && typeof v === 'number') {
        if (!first) pos += SEP.length;
        first = false;
        out[k] = t.slice(pos, pos + v);
        pos += v;
      } else setKey(out, k, v);
    }
    return out;
  };
  if (Array.isArray(skeleton))
    return skeleton.map((i) => {
      if (typeof i !== 'number') return fill(i as Record<string, unknown>);
      if (!first) pos += SEP.length;
      first = false;
      const s = t.slice(pos, pos + i);
      pos += i;
      return s;
    });
  if (typeof skeleton === 'object') return fill(skeleton as Record<string, unknown>);
  return text;
}

// ---------------------------------------------------------------------------------------------
// Row → API

/** A row as read back: JSON columns are text on SQLite and already parsed on PostgreSQL. */
export type StoredRecord = Omit<
  RecordRow,
  'metrics' | 'user_metadata' | 'dataset_metadata' | 'tags' | 'body'
> & {
  metrics: unknown;
  user_metadata: unknown;
  dataset_metadata: unknown;
  tags: unknown;
  body: unknown;
};

function json<T>(v: unknown, fallback: T): T {
  if (v === null || v === undefined) return fallback;
  if (typeof v === 'string') return JSON.parse(v) as T;
  return v as T;
}

export function parseBody(row: { body: unknown }): RecordBody {
  return json<RecordBody>(row.body, {});
}

/**
 * The `metrics` object of a record: promoted columns that are set, plus the other metric keys (any
 * key, `constructor` and `__proto__` too; a promoted column wins over a stored key of its name).
 */
export function metricsOf(row: StoredRecord): Record<string, number> {
  const m: Record<string, number> = {};
  for (const k of PROMOTED_METRICS) {
    const v = row[k];
    if (v !== null && v !== undefined) m[k] = Number(v);
  }
  const extra = json<Record<string, number>>(row.metrics, {});
  for (const k of Object.keys(extra)) if (!Object.hasOwn(m, k)) setKey(m, k, extra[k]);
  return m;
}

export interface ApiRecordOptions {
  /** Adds num_traces to sessions and num_spans to traces. */
  includeCounts?: boolean;
  /** The record's annotations, their aggregates and its queues (none when left out). */
  feedback?: RecordFeedback;
}

/**
 * The JSON shape of one record in every response (read-back and search routes reuse this).
 * Kind-specific fields appear only on their kind.
 */
export function recordToApi(row: StoredRecord, opts: ApiRecordOptions = {}): Record<string, any> {
  const body = parseBody(row);
  const x = body.x ?? {};
  const type = row.type;
  const feedback = feedbackFields(opts.feedback ?? NO_FEEDBACK);
  // Keys go in the order the schema's serializer writes them (RecordSchema's required fields, then
  // its optional ones), so JSON.stringify of the result is that serializer's text
  // (domain/record-json.ts relies on it; test/unit/search-json.test.ts checks it).
  const out: Record<string, any> = {
    id: row.id,
    type,
    name: row.name,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
    input: decodeIo(row.input_text, body.in) ?? (type === 'session' ? null : ''),
    output: decodeIo(row.output_text, body.out),
    redacted_input: body.rin ?? null,
    redacted_output: body.rout ?? null,
    is_complete: Boolean(row.is_complete),
    error_message: row.error_message,
    project_id: row.project_id,
    run_id: row.run_id,
    session_id: row.session_id,
    trace_id: row.trace_id,
    parent_id: row.parent_id,
    external_id: row.external_id,
    status_code: row.status_code === null ? null : Number(row.status_code),
    tags: json<string[]>(row.tags, []),
    user_metadata: json<Record<string, unknown>>(row.user_metadata, {}),
    dataset_metadata: json<Record<string, unknown>>(row.dataset_metadata, {}),
    dataset_input: body.din ?? null,
    dataset_output: body.dout ?? null,
    metrics: metricsOf(row),
    has_children: Number(row.num_children) > 0,
    annotations: feedback.annotations,
    annotation_aggregates: feedback.annotation_aggregates,
    annotation_agreement: {},
    annotation_queue_ids: feedback.annotation_queue_ids,
    feedback_rating_info: {},
    file_ids: [],
    file_modalities: [],
  };
  if (type !== 'session' && type !== 'trace') out.step_number = body.step ?? null;
  if (type === 'llm') {
    out.model = row.model;
    out.temperature = x.temperature ?? null;
    out.finish_reason = x.finish_reason ?? null;
    out.tools = x.tools ?? null;
    if (x.events !== undefined) out.events = x.events;
  } else if (row.model !== null) out.model = row.model;
  if (type === 'tool') out.tool_call_id = x.tool_call_id ?? null;
  if (type === 'agent') out.agent_type = x.agent_type ?? 'default';
  if (type === 'session') out.previous_session_id = x.previous_session_id ?? null;
  if (opts.includeCounts) {
    if (type === 'session') out.num_traces = Number(row.num_children);
    if (type === 'trace') out.num_spans = Number(row.num_children);
  }
  return out;
}
