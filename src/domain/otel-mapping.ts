/**
 * OpenTelemetry spans → Spanbase records (decisions.md, "OpenTelemetry ingestion"). Pure.
 *
 * Each OTel span becomes one span record in the shape `POST /v2/projects/{id}/traces` takes; each
 * OTel trace becomes a trace record whose id is the 16-byte trace id written as a uuid, named after
 * its root span. Span ids (8 bytes) become uuid-formatted ids derived from (trace id, span id) by a
 * name-based hash, so a child exported before its parent already knows its parent's record id.
 *
 * Conventions read: gen_ai semantic conventions (current `gen_ai.input.messages` /
 * `gen_ai.output.messages`, the message events, and the older indexed `gen_ai.prompt.N.*` /
 * `gen_ai.completion.N.*` attributes), OpenInference (`openinference.span.kind`,
 * `llm.input_messages.N.message.*`, `input.value`, `output.value`, `retrieval.documents.N.document.*`,
 * `llm.token_count.*`), and HTTP client/server spans. Attributes not consumed go to `user_metadata`
 * as strings.
 */
import { createHash } from 'node:crypto';
import { INPUT_INCLUDES_CACHED, MESSAGE_ROLES, type SpanType } from './records.ts';
import { type AttrValue, type Attrs, type OtelSpan, cleanText } from './otel-decode.ts';
import { getKey, setKey } from './keys.ts';
import { toIso } from './time.ts';

type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Ids

/** A 32-hex-digit trace id as a uuid-formatted string. */
export function traceUuid(traceHex: string): string {
  const h = traceHex.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * The record id of a span: a version-5-style uuid of (trace id, span id). Deterministic, so every
 * export (and every process) maps the same span to the same id; scoped by the trace id, so span ids
 * that repeat across traces do not collide.
 */
export function spanUuid(traceHex: string, spanHex: string): string {
  const d = createHash('sha1')
    .update(`otel-span:${traceHex.toLowerCase()}:${spanHex.toLowerCase()}`)
    .digest();
  d[6] = (d[6] & 0x0f) | 0x50;
  d[8] = (d[8] & 0x3f) | 0x80;
  return traceUuid(d.subarray(0, 16).toString('hex'));
}

/** A usable OTLP id: `digits` lowercase hex digits, not all zero. */
const isId = (h: string, digits: number) => h.length === digits && /^[0-9a-f]+$/.test(h) && !/^0+$/.test(h);

// ---------------------------------------------------------------------------------------------
// Attribute helpers

function str(v: AttrValue | undefined): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** A non-negative integer from a number or a numeric string; undefined otherwise. */
function count(v: AttrValue | undefined): number | undefined {
  const n = typeof v === 'string' && /^\s*\d+(\.0*)?\s*$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return undefined;
  const i = Math.round(n);
  return i <= Number.MAX_SAFE_INTEGER ? i : undefined;
}

function num(v: AttrValue | undefined): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
}

/** Parses a JSON string attribute; the value itself when it is not a string or not JSON. */
function json(v: AttrValue | undefined): unknown {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return v;
  try {
    return JSON.parse(t);
  } catch {
    return v;
  }
}

/**
 * Groups flattened indexed attributes: `prefix.0.a.b = x`, `prefix.1.c = y` → [{`a.b`: x}, {c: y}]
 * (by index order), marking every grouped key as consumed.
 */
function indexed(a: Attrs, prefix: string, used: Set<string>): Attrs[] {
  const p = `${prefix}.`;
  const groups = new Map<number, Attrs>();
  for (const k in a) {
    if (!k.startsWith(p)) continue;
    const rest = k.slice(p.length);
    const dot = rest.indexOf('.');
    const idx = dot < 0 ? rest : rest.slice(0, dot);
    if (!/^\d+$/.test(idx) || idx.length > 6) continue;
    const i = Number(idx);
    const g = bucket(groups, i);
    setKey(g, dot < 0 ? '' : rest.slice(dot + 1), a[k]);
    used.add(k);
  }
  return [...groups.entries()].sort((x, y) => x[0] - y[0]).map((e) => e[1]);
}

/** The object stored under `key`, created empty on first use. */
function bucket<V extends object>(map: Map<number, V>, key: number): V {
  let v = map.get(key);
  if (!v) {
    v = {} as V;
    map.set(key, v);
  }
  return v;
}

function take(a: Attrs, used: Set<string>, ...keys: string[]): AttrValue | undefined {
  for (const k of keys) {
    if (a[k] !== undefined && a[k] !== null) {
      used.add(k);
      return a[k];
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Kinds

const GEN_AI_KINDS: Record<string, SpanType> = {
  chat: 'llm',
  text_completion: 'llm',
  generate_content: 'llm',
  embeddings: 'llm',
  execute_tool: 'tool',
  invoke_agent: 'agent',
  create_agent: 'agent',
};

const OPENINFERENCE_KINDS: Record<string, SpanType> = {
  LLM: 'llm',
  TOOL: 'tool',
  RETRIEVER: 'retriever',
  AGENT: 'agent',
  CHAIN: 'workflow',
  EMBEDDING: 'llm',
  RERANKER: 'retriever',
};

const HTTP_KEYS = ['http.request.method', 'http.method', 'url.full', 'http.url', 'http.route', 'http.target'];

/** The record type of a span (decisions.md): gen_ai operation, OpenInference kind, HTTP, else workflow. */
export function spanType(s: Pick<OtelSpan, 'attributes' | 'kind'>): SpanType {
  const a = s.attributes;
  const op =
    typeof a['gen_ai.operation.name'] === 'string'
      ? (a['gen_ai.operation.name'] as string).toLowerCase()
      : '';
  const genAi = getKey(GEN_AI_KINDS, op);
  if (genAi) return genAi;
  const oi =
    typeof a['openinference.span.kind'] === 'string'
      ? (a['openinference.span.kind'] as string).toUpperCase()
      : '';
  const openInference = getKey(OPENINFERENCE_KINDS, oi);
  if (openInference) return openInference;
  if (oi) return 'workflow';
  if ((s.kind === 2 || s.kind === 3) && HTTP_KEYS.some((k) => a[k] !== undefined)) return 'http';
  return 'workflow';
}

// ---------------------------------------------------------------------------------------------
// Messages

export interface Message {
  role: string;
  content: string;
  tool_call_id?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
}

const ROLE_ALIASES: Record<string, string> = {
  model: 'assistant',
  ai: 'assistant',
  bot: 'assistant',
  chatbot: 'assistant',
  human: 'user',
  ipython: 'tool',
};

function role(v: unknown, fallback: string): string {
  const r = typeof v === 'string' ? v.toLowerCase() : '';
  if (MESSAGE_ROLES.includes(r)) return r;
  return getKey(ROLE_ALIASES, r) ?? fallback;
}

/** Message content as text: strings as is, text parts joined, anything else as JSON. */
function text(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const parts = v.map((p) => {
      if (typeof p === 'string') return p;
      if (p && typeof p === 'object') {
        const o = p as Obj;
        if (typeof o.text === 'string') return o.text;
        if (typeof o.content === 'string') return o.content;
      }
      return null;
    });
    if (parts.every((p) => p !== null)) return parts.join('\n');
  }
  if (typeof v === 'object' && v !== null && typeof (v as Obj).text === 'string')
    return (v as Obj).text as string;
  return JSON.stringify(v);
}

function toolCall(
  id: unknown,
  name: unknown,
  args: unknown,
): Message['tool_calls'] extends (infer T)[] | undefined ? T : never {
  return {
    id: typeof id === 'string' ? id : id === undefined || id === null ? '' : String(id),
    type: 'function',
    function: {
      name: typeof name === 'string' ? name : name === undefined || name === null ? '' : String(name),
      arguments:
        typeof args === 'string' ? args : args === undefined || args === null ? '' : JSON.stringify(args),
    },
  };
}

/** A message object in any of the shapes seen (OpenAI-style, gen_ai parts, OpenInference flattened). */
function messageFrom(o: unknown, fallbackRole: string): Message | null {
  if (typeof o === 'string') return { role: fallbackRole, content: o };
  if (!o || typeof o !== 'object' || Array.isArray(o)) return null;
  const m = o as Obj;
  const msg: Message = { role: role(m.role, fallbackRole), content: '' };
  const calls: NonNullable<Message['tool_calls']> = [];
  if (Array.isArray(m.parts)) {
    // gen_ai.input.messages / gen_ai.output.messages: typed parts.
    const texts: string[] = [];
    for (const p of m.parts) {
      if (!p || typeof p !== 'object') continue;
      const part = p as Obj;
      if (part.type === 'tool_call') calls.push(toolCall(part.id, part.name, part.arguments));
      else if (part.type === 'tool_call_response') {
        if (part.id !== undefined) msg.tool_call_id = String(part.id);
        texts.push(text(part.response ?? part.result));
      } else if (part.content !== undefined) texts.push(text(part.content));
      else if (part.text !== undefined) texts.push(text(part.text));
    }
    msg.content = texts.join('\n');
  } else {
    msg.content = text(m.content ?? m.text ?? (m.message as Obj | undefined)?.content);
  }
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls) {
      if (!c || typeof c !== 'object') continue;
      const call = c as Obj;
      const fn = (call.function && typeof call.function === 'object' ? call.function : call) as Obj;
      calls.push(toolCall(call.id, fn.name, fn.arguments));
    }
  }
  if (calls.length) msg.tool_calls = calls;
  if (typeof m.tool_call_id === 'string') msg.tool_call_id = m.tool_call_id;
  else if (typeof m.id === 'string' && msg.role === 'tool') msg.tool_call_id = m.id;
  return msg;
}

function messageList(v: unknown, fallbackRole: string): Message[] {
  const parsed = json(v as AttrValue);
  if (Array.isArray(parsed))
    return parsed.map((x) => messageFrom(x, fallbackRole)).filter((m): m is Message => m !== null);
  const one = messageFrom(parsed, fallbackRole);
  return one ? [one] : [];
}

/** OpenInference flattened messages: `llm.input_messages.N.message.role`, `.content`, `.contents.M...`. */
function openInferenceMessages(a: Attrs, prefix: string, used: Set<string>, fallbackRole: string): Message[] {
  return indexed(a, prefix, used).map((g) => {
    const msg: Message = { role: role(g['message.role'], fallbackRole), content: '' };
    if (g['message.content'] !== undefined) msg.content = str(g['message.content']) ?? '';
    else {
      const parts: string[] = [];
      const byIndex = new Map<number, string>();
      for (const k in g) {
        const m = /^message\.contents\.(\d+)\.message_content\.text$/.exec(k);
        if (m) byIndex.set(Number(m[1]), str(g[k]) ?? '');
      }
      for (const i of [...byIndex.keys()].sort((x, y) => x - y)) parts.push(byIndex.get(i) as string);
      msg.content = parts.join('\n');
    }
    const calls = new Map<number, Obj>();
    for (const k in g) {
      const m = /^message\.tool_calls\.(\d+)\.tool_call\.(.+)$/.exec(k);
      if (!m) continue;
      const i = Number(m[1]);
      setKey(bucket(calls, i), m[2], g[k]);
    }
    if (calls.size) {
      msg.tool_calls = [...calls.entries()]
        .sort((x, y) => x[0] - y[0])
        .map(([, c]) => toolCall(c.id, c['function.name'], c['function.arguments']));
    }
    const tc = g['message.tool_call_id'];
    if (tc !== undefined && tc !== null) msg.tool_call_id = str(tc);
    return msg;
  });
}

/** Older gen_ai (OpenLLMetry) flattened messages: `gen_ai.prompt.N.role`, `.content`, `.tool_calls.M.*`. */
function indexedGenAiMessages(a: Attrs, prefix: string, used: Set<string>, fallbackRole: string): Message[] {
  return indexed(a, prefix, used).map((g) => {
    const msg: Message = { role: role(g.role, fallbackRole), content: text(json(g.content)) };
    const calls = new Map<number, Obj>();
    for (const k in g) {
      const m = /^tool_calls\.(\d+)\.(.+)$/.exec(k);
      if (!m) continue;
      const i = Number(m[1]);
      setKey(bucket(calls, i), m[2], g[k]);
    }
    if (calls.size) {
      msg.tool_calls = [...calls.entries()]
        .sort((x, y) => x[0] - y[0])
        .map(([, c]) => toolCall(c.id, c.name, c.arguments));
    }
    if (g.tool_call_id !== undefined && g.tool_call_id !== null) msg.tool_call_id = str(g.tool_call_id);
    return msg;
  });
}

const MESSAGE_EVENTS: Record<string, string> = {
  'gen_ai.system.message': 'system',
  'gen_ai.user.message': 'user',
  'gen_ai.assistant.message': 'assistant',
  'gen_ai.tool.message': 'tool',
};

interface Messages {
  input: Message[];
  output: Message[];
  finishReason?: string;
}

/** Messages of a span from every convention, first found wins for each side. */
function messagesOf(s: OtelSpan, used: Set<string>): Messages {
  const a = s.attributes;
  const out: Messages = { input: [], output: [] };
  // Current gen_ai conventions: JSON attributes.
  const sys = take(a, used, 'gen_ai.system_instructions');
  const inMsgs = take(a, used, 'gen_ai.input.messages');
  const outMsgs = take(a, used, 'gen_ai.output.messages');
  if (inMsgs !== undefined) out.input = messageList(inMsgs, 'user');
  if (sys !== undefined) {
    const parsed = json(sys);
    const content = text(parsed);
    if (content) out.input.unshift({ role: 'system', content });
  }
  if (outMsgs !== undefined) {
    const parsed = json(outMsgs);
    out.output = messageList(parsed as AttrValue, 'assistant');
    if (Array.isArray(parsed)) {
      const fr = (parsed[0] as Obj | undefined)?.finish_reason;
      if (typeof fr === 'string') out.finishReason = fr;
    }
  }
  // OpenInference.
  if (!out.input.length) out.input = openInferenceMessages(a, 'llm.input_messages', used, 'user');
  else indexed(a, 'llm.input_messages', used);
  if (!out.output.length) out.output = openInferenceMessages(a, 'llm.output_messages', used, 'assistant');
  else indexed(a, 'llm.output_messages', used);
  // Older gen_ai: indexed attributes, then plain prompt/completion attributes.
  if (!out.input.length) out.input = indexedGenAiMessages(a, 'gen_ai.prompt', used, 'user');
  if (!out.output.length) out.output = indexedGenAiMessages(a, 'gen_ai.completion', used, 'assistant');
  if (!out.input.length) {
    const p = take(a, used, 'gen_ai.prompt');
    if (p !== undefined) out.input = messageList(p, 'user');
  }
  if (!out.output.length) {
    const c = take(a, used, 'gen_ai.completion');
    if (c !== undefined) out.output = messageList(c, 'assistant');
  }
  // Message events.
  if (!out.input.length || !out.output.length) {
    const evIn: Message[] = [];
    const evOut: Message[] = [];
    for (const e of s.events) {
      const ea = e.attributes;
      const eventRole = getKey(MESSAGE_EVENTS, e.name);
      if (eventRole) {
        const m = messageFrom(
          {
            role: ea.role ?? eventRole,
            content: json(ea.content ?? ea['gen_ai.event.content']),
            tool_calls: json(ea.tool_calls),
            tool_call_id: ea.id ?? ea.tool_call_id,
          },
          eventRole,
        );
        if (m) evIn.push(m);
      } else if (e.name === 'gen_ai.choice') {
        const raw = json(ea.message ?? ea['gen_ai.event.content']);
        const m = messageFrom(
          raw && typeof raw === 'object' ? raw : { role: 'assistant', content: raw ?? ea.content },
          'assistant',
        );
        if (m) evOut.push(m);
        if (typeof ea.finish_reason === 'string' && !out.finishReason) out.finishReason = ea.finish_reason;
      } else if (e.name === 'gen_ai.content.prompt' && ea['gen_ai.prompt'] !== undefined) {
        evIn.push(...messageList(ea['gen_ai.prompt'], 'user'));
      } else if (e.name === 'gen_ai.content.completion' && ea['gen_ai.completion'] !== undefined) {
        evOut.push(...messageList(ea['gen_ai.completion'], 'assistant'));
      }
    }
    if (!out.input.length) out.input = evIn;
    if (!out.output.length) out.output = evOut;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Spans

export interface MappedSpan {
  /** Record id of the trace (uuid-formatted OTel trace id). */
  traceId: string;
  /** Record id of the span. */
  id: string;
  /** Record id of the parent span; null for a root span. */
  parentId: string | null;
  otelSpanId: string;
  otelParentSpanId: string;
  /** Session grouping key from `session.id` / `gen_ai.conversation.id`; null when none. */
  session: string | null;
  /** Start in epoch microseconds (0 when the span has none). */
  startUs: number;
  /** The span in the shape of a `spans[]` item of POST /v2/projects/{id}/traces (without `spans`). */
  record: Obj;
}

export type MapResult = { ok: true; span: MappedSpan } | { ok: false; reason: string };

const MAX_DURATION_NS = BigInt(Number.MAX_SAFE_INTEGER);

const TOKEN_KEYS: [string, string[]][] = [
  [
    'num_input_tokens',
    [
      'gen_ai.usage.input_tokens',
      'gen_ai.usage.prompt_tokens',
      'llm.token_count.prompt',
      'llm.usage.prompt_tokens',
    ],
  ],
  [
    'num_output_tokens',
    [
      'gen_ai.usage.output_tokens',
      'gen_ai.usage.completion_tokens',
      'llm.token_count.completion',
      'llm.usage.completion_tokens',
    ],
  ],
  ['num_total_tokens', ['gen_ai.usage.total_tokens', 'llm.token_count.total', 'llm.usage.total_tokens']],
  [
    'num_cache_read_input_tokens',
    [
      'gen_ai.usage.cache_read_input_tokens',
      'gen_ai.usage.cache_read.input_tokens',
      'llm.token_count.prompt_details.cache_read',
    ],
  ],
  [
    'num_cache_creation_input_tokens',
    [
      'gen_ai.usage.cache_creation_input_tokens',
      'gen_ai.usage.cache_creation.input_tokens',
      'llm.token_count.prompt_details.cache_write',
    ],
  ],
];

/** Cost in dollars computed by the instrumentation. */
const COST_KEYS = ['gen_ai.usage.cost', 'llm.cost.total'];

/** Attributes that only describe the kind (consumed even when they add nothing). */
const KIND_KEYS = ['gen_ai.operation.name', 'openinference.span.kind'];

/** Maps one span; a span without valid trace or span ids is refused (counted in partialSuccess). */
export function mapSpan(s: OtelSpan): MapResult {
  if (!isId(s.traceId, 32))
    return { ok: false, reason: 'invalid trace id: a trace id is 32 hex digits, not all zero' };
  if (!isId(s.spanId, 16))
    return { ok: false, reason: 'invalid span id: a span id is 16 hex digits, not all zero' };
  const hasParent = isId(s.parentSpanId, 16);
  const a = s.attributes;
  const used = new Set<string>(KIND_KEYS);
  const type = spanType(s);
  const rec: Obj = { type, id: spanUuid(s.traceId, s.spanId), name: s.name };

  // Times: created_at from the start, duration from start to end.
  const startUs = s.startNs > 0n ? Number(s.startNs / 1000n) : 0;
  if (startUs > 0 && startUs < 253402300800000000) rec.created_at = toIso(startUs);
  const metrics: Record<string, number> = {};
  if (s.startNs > 0n && s.endNs >= s.startNs && s.endNs - s.startNs <= MAX_DURATION_NS) {
    metrics.duration_ns = Number(s.endNs - s.startNs);
  }
  for (const [metric, keys] of TOKEN_KEYS) {
    for (const k of keys) {
      const n = count(a[k]);
      if (n !== undefined) {
        used.add(k);
        if (metrics[metric] === undefined) metrics[metric] = n;
      }
    }
  }
  // A cost the instrumentation computed itself wins over Spanbase's (as on the JSON routes).
  for (const k of COST_KEYS) {
    const n = num(a[k]);
    if (n === undefined || n < 0) continue;
    used.add(k);
    if (metrics.cost === undefined) metrics.cost = n;
  }
  rec.metrics = metrics;

  // Messages and plain values.
  const msgs = messagesOf(s, used);
  const inputValue = take(a, used, 'input.value');
  const outputValue = take(a, used, 'output.value');
  take(a, used, 'input.mime_type', 'output.mime_type');
  let input: unknown = msgs.input.length ? msgs.input : str(inputValue);
  let output: unknown = msgs.output.length
    ? type === 'llm' && msgs.output.length === 1
      ? msgs.output[0]
      : msgs.output
    : str(outputValue);

  if (type === 'llm') {
    const model = take(
      a,
      used,
      'gen_ai.request.model',
      'gen_ai.response.model',
      'llm.model_name',
      'embedding.model_name',
    );
    if (model !== undefined) rec.model = str(model);
    // The gen_ai and OpenInference conventions count cache reads and writes inside the input tokens.
    rec[INPUT_INCLUDES_CACHED] = true;
    const temp = num(take(a, used, 'gen_ai.request.temperature'));
    if (temp !== undefined) rec.temperature = temp;
    else {
      const params = json(a['llm.invocation_parameters']);
      if (
        params &&
        typeof params === 'object' &&
        num((params as Obj).temperature as AttrValue) !== undefined
      ) {
        rec.temperature = num((params as Obj).temperature as AttrValue);
      }
    }
    const reasons = take(a, used, 'gen_ai.response.finish_reasons');
    const fr = Array.isArray(reasons) ? reasons[0] : json(reasons);
    if (typeof fr === 'string') rec.finish_reason = fr;
    else if (Array.isArray(fr) && typeof fr[0] === 'string') rec.finish_reason = fr[0];
    else if (msgs.finishReason) rec.finish_reason = msgs.finishReason;
    const tools = indexed(a, 'llm.tools', used)
      .map((g) => json(g['tool.json_schema']))
      .filter((t): t is Obj => !!t && typeof t === 'object' && !Array.isArray(t));
    const defs = json(take(a, used, 'gen_ai.tool.definitions'));
    if (Array.isArray(defs))
      tools.push(...defs.filter((t): t is Obj => !!t && typeof t === 'object' && !Array.isArray(t)));
    if (tools.length) rec.tools = tools;
  } else if (type === 'tool') {
    const callId = take(a, used, 'gen_ai.tool.call.id', 'tool_call.id');
    if (callId !== undefined) rec.tool_call_id = str(callId);
    const args = take(a, used, 'gen_ai.tool.call.arguments', 'tool.parameters');
    const result = take(a, used, 'gen_ai.tool.call.result');
    if ((input === undefined || (Array.isArray(input) && !input.length)) && args !== undefined)
      input = str(args);
    if (output === undefined && result !== undefined) output = str(result);
  } else if (type === 'retriever') {
    const docs = indexed(a, 'retrieval.documents', used).map((g) => {
      const metadata: Record<string, string | number | boolean> = {};
      if (g['document.id'] !== undefined && g['document.id'] !== null)
        metadata.id = str(g['document.id']) as string;
      const score = num(g['document.score']);
      if (score !== undefined) metadata.score = score;
      const meta = json(g['document.metadata']);
      if (meta && typeof meta === 'object' && !Array.isArray(meta)) {
        for (const [k, v] of Object.entries(meta as Obj)) {
          if (v === null || v === undefined) continue;
          setKey(
            metadata,
            k,
            typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))
              ? v
              : JSON.stringify(v),
          );
        }
      }
      return { content: str(g['document.content']) ?? '', metadata };
    });
    if (docs.length) output = docs;
    if (input === undefined) {
      const q = take(a, used, 'gen_ai.retrieval.query.text');
      if (q !== undefined) input = str(q);
    }
  }
  if (input !== undefined) rec.input = input;
  if (output !== undefined) rec.output = output;

  // Status.
  const httpStatus = count(take(a, used, 'http.response.status_code', 'http.status_code'));
  if (s.status.code === 2) {
    rec.status_code = httpStatus !== undefined && httpStatus >= 400 ? httpStatus : 500;
    const exception = s.events.find((e) => e.name === 'exception');
    const msg =
      s.status.message ||
      str(exception?.attributes['exception.message']) ||
      str(exception?.attributes['exception.type']);
    rec.error_message = msg || 'error';
  } else if (httpStatus !== undefined && httpStatus <= 2_147_483_647) {
    rec.status_code = httpStatus;
  } else if (s.status.code === 1) {
    rec.status_code = 200;
  }

  // Session, tags, the rest as metadata.
  const session = str(take(a, used, 'session.id', 'gen_ai.conversation.id')) ?? null;
  const tags = take(a, used, 'tag.tags');
  const tagList = Array.isArray(tags)
    ? tags.map((t) => str(t) ?? '').filter((t) => t !== '')
    : typeof tags === 'string'
      ? [tags]
      : [];
  if (tagList.length) rec.tags = tagList;
  const meta: Record<string, string> = {};
  for (const k in a) {
    if (used.has(k)) continue;
    const v = str(a[k]);
    if (v !== undefined) setKey(meta, k, v);
  }
  const service = s.resource['service.name'];
  if (service !== undefined && meta['service.name'] === undefined)
    meta['service.name'] = str(service) as string;
  if (Object.keys(meta).length) rec.user_metadata = meta;

  return {
    ok: true,
    span: {
      traceId: traceUuid(s.traceId),
      id: rec.id as string,
      parentId: hasParent ? spanUuid(s.traceId, s.parentSpanId) : null,
      otelSpanId: s.spanId,
      otelParentSpanId: hasParent ? s.parentSpanId : '',
      session: session === null ? null : cleanText(session),
      startUs,
      record: rec,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Traces of one export

/** A span with the spans of the same export that hang below it. */
export interface SpanNode {
  span: MappedSpan;
  children: SpanNode[];
}

export interface TraceGroup {
  traceId: string;
  /** The root span (no parent) when it is in this export. */
  root: MappedSpan | null;
  /** Spans whose parent is the trace itself (roots), with their in-export descendants. */
  top: SpanNode[];
  /** Spans whose parent is not in this export, with their in-export descendants. */
  orphans: SpanNode[];
  session: string | null;
  /** Earliest start (µs) in this export; 0 when none has one. */
  startUs: number;
}

/** Spans nest at most this deep below their trace in one write (domain/ingest.ts MAX_SPAN_DEPTH is 64). */
export const MAX_NEST = 60;

/**
 * Groups mapped spans by trace and links each to its parent when the parent is in the same export.
 * A span id sent twice in one export keeps its last copy. Children are ordered by start time.
 */
export function groupTraces(spans: MappedSpan[]): TraceGroup[] {
  const byId = new Map<string, MappedSpan>();
  for (const s of spans) {
    byId.delete(s.id);
    byId.set(s.id, s);
  }
  const nodes = new Map<string, SpanNode>();
  for (const s of byId.values()) nodes.set(s.id, { span: s, children: [] });
  const groups = new Map<string, TraceGroup>();
  for (const n of nodes.values()) {
    const s = n.span;
    let g = groups.get(s.traceId);
    if (!g) {
      g = { traceId: s.traceId, root: null, top: [], orphans: [], session: null, startUs: 0 };
      groups.set(s.traceId, g);
    }
    if (s.startUs > 0 && (g.startUs === 0 || s.startUs < g.startUs)) g.startUs = s.startUs;
    const parent = s.parentId ? nodes.get(s.parentId) : undefined;
    if (!s.parentId) {
      g.root = s;
      g.top.push(n);
    } else if (parent && parent.span.traceId === s.traceId && !createsCycle(nodes, s))
      parent.children.push(n);
    else g.orphans.push(n);
  }
  for (const g of groups.values()) {
    // Session: the root's, else any span's.
    g.session = g.root?.session ?? null;
    if (g.session === null) {
      for (const n of nodes.values()) {
        if (n.span.traceId === g.traceId && n.span.session !== null) {
          g.session = n.span.session;
          break;
        }
      }
    }
    const byStart = (x: SpanNode, y: SpanNode) => x.span.startUs - y.span.startUs;
    const sortAll = (list: SpanNode[]) => {
      list.sort(byStart);
      for (const c of list) sortAll(c.children);
    };
    // Iterative depth cut: subtrees deeper than MAX_NEST become orphans (written at the trace level).
    const cut = (list: SpanNode[], depth: number) => {
      for (const c of list) {
        if (depth >= MAX_NEST) {
          g.orphans.push(...c.children);
          c.children = [];
        } else cut(c.children, depth + 1);
      }
    };
    cut(g.top, 1);
    cut(g.orphans, 1);
    sortAll(g.top);
    sortAll(g.orphans);
  }
  return [...groups.values()];
}

/** True when following parents from `s` within the export comes back to `s` (malformed input). */
function createsCycle(nodes: Map<string, SpanNode>, s: MappedSpan): boolean {
  let cur = s.parentId;
  for (let i = 0; cur && i <= nodes.size; i++) {
    if (cur === s.id) return true;
    cur = nodes.get(cur)?.span.parentId ?? null;
  }
  return false;
}

/** A node and its descendants as nested `spans[]` items for the traces and spans routes. */
export function nestedRecord(n: SpanNode): Obj {
  const out: Obj = { ...n.span.record };
  if (n.children.length) out.spans = n.children.map(nestedRecord);
  return out;
}

/**
 * The trace record of a group: named and filled from its root span when the root is in this export;
 * otherwise only the id and a start (so a trace first seen through its children exists, and a later
 * export with the root fills it in without overwriting anything).
 */
export function traceRecord(g: TraceGroup): Obj {
  const t: Obj = { id: g.traceId };
  if (g.root) {
    const r = g.root.record;
    t.name = r.name;
    for (const k of ['created_at', 'status_code', 'error_message', 'tags', 'user_metadata'] as const) {
      if (r[k] !== undefined) t[k] = r[k];
    }
    if (r.input !== undefined) t.input = r.input;
    if (r.output !== undefined) t.output = r.output;
    const d = (r.metrics as Record<string, number>).duration_ns;
    if (d !== undefined) t.metrics = { duration_ns: d };
  } else if (g.startUs > 0) {
    t.created_at = toIso(g.startUs);
  }
  return t;
}
