/**
 * Realistic ingest data for benchmarks, generated deterministically from a seed: sessions of 1–5
 * traces; each trace is a workflow span with an llm, a tool and a retriever child (5 records per
 * trace); inputs and outputs of 200–2000 bytes; user metadata; token metrics.
 *
 * Two profiles. `default`: metadata of four few-valued keys on traces (and a prompt version on llm
 * spans). `metadata`: what applications attach in practice: every record carries 20 metadata keys,
 * 10 of few values (region, plan, locale…) and 10 of many (user, request, conversation and device
 * ids…, new for each request or record), in records of about 2.6 KB of JSON.
 */
import { randomUUID } from 'node:crypto';

/** mulberry32: small, fast, seeded. */
export function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the a of to and in is that for it as with was on be by this are or from at an which have not ' +
  'model prompt answer customer order refund invoice shipping account password reset delivery ' +
  'product price discount subscription cancel upgrade billing error timeout retry latency token ' +
  'context document search query result summary policy support ticket agent tool function call ' +
  'weather forecast temperature city booking flight hotel reservation payment card balance ' +
  'transfer loan interest rate mortgage insurance claim coverage premium deductible warranty ' +
  'Kubernetes Postgres index migration deploy rollback incident alert dashboard metric trace span'
).split(' ');

const CUSTOMERS = Array.from({ length: 200 }, (_, i) => `cust-${i}`);
const REGIONS = ['eu-west', 'us-east', 'us-west', 'ap-south', 'sa-east'];
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-3-5-sonnet', 'llama-3-70b', 'mistral-large'];
const TOOLS = ['lookup_order', 'get_weather', 'search_docs', 'create_ticket', 'refund'];

export type DataProfile = 'default' | 'metadata';

/** The `metadata` profile's few-valued keys and their values. */
const FEW: [string, string[]][] = [
  ['region', REGIONS],
  ['env', ['prod', 'staging', 'dev']],
  ['plan', ['free', 'pro', 'team', 'enterprise']],
  ['locale', ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'es-ES', 'ja-JP', 'pt-BR']],
  ['app_version', ['3.14.0', '3.14.1', '3.15.0', '3.15.2', '3.16.0', '4.0.0-beta.1']],
  ['platform', ['web', 'ios', 'android', 'api', 'slack']],
  ['channel', ['chat', 'email', 'voice', 'widget']],
  ['feature_flag', ['new-retriever', 'control', 'long-context', 'tools-v2']],
  ['tenant_tier', ['t1', 't2', 't3']],
  ['prompt_variant', ['a', 'b', 'c', 'd']],
];
/**
 * The `metadata` profile's many-valued keys: those of the request (`T`: one value for the records of
 * a trace, new for every trace) and those of the record (`R`: new for every record).
 */
export const MANY_KEYS: [string, 'T' | 'R'][] = [
  ['user_id', 'T'],
  ['request_id', 'T'],
  ['conversation_id', 'T'],
  ['device_id', 'T'],
  ['client_ip', 'T'],
  ['correlation_id', 'T'],
  ['message_id', 'R'],
  ['event_id', 'R'],
  ['idempotency_key', 'R'],
  ['otel_span_id', 'R'],
];
const MANY_KIND = new Map(MANY_KEYS);

/** A new value of a many-valued key (each key its own shape, as real ids have). */
export function manyValue(key: string): string {
  const u = randomUUID();
  switch (key) {
    case 'user_id':
      return `usr_${u.slice(0, 8)}${u.slice(9, 13)}`;
    case 'client_ip':
      return `10.${parseInt(u.slice(0, 2), 16)}.${parseInt(u.slice(2, 4), 16)}.${parseInt(u.slice(4, 6), 16)}`;
    case 'otel_span_id':
      return u.slice(19, 23) + u.slice(24);
    case 'device_id':
      return u.toUpperCase();
    case 'message_id':
      return `msg_${u.replaceAll('-', '').slice(0, 24)}`;
    default:
      return u;
  }
}

export class DataGen {
  private readonly r: () => number;
  /** Base time: records spread over the last ~10 days. */
  private t: number;

  constructor(
    seed = 42,
    readonly profile: DataProfile = 'default',
  ) {
    this.r = rng(seed);
    this.t = Date.UTC(2024, 4, 1) * 1000;
  }

  int(lo: number, hi: number) {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }

  private pick<T>(list: T[]): T {
    return list[Math.floor(this.r() * list.length)];
  }

  /** Text of roughly `lo`–`hi` bytes. */
  text(lo = 200, hi = 2000): string {
    const n = this.int(lo, hi);
    const parts: string[] = [];
    let len = 0;
    while (len < n) {
      const w = WORDS[Math.floor(this.r() * WORDS.length)];
      parts.push(w);
      len += w.length + 1;
    }
    return parts.join(' ').slice(0, n);
  }

  private iso(us: number) {
    return new Date(Math.floor(us / 1000)).toISOString();
  }

  /**
   * The `metadata` profile's user metadata of one record: the few-valued keys drawn, the many-valued
   * ones from `request` (the trace's) or new.
   */
  private richMeta(request: Record<string, string>): Record<string, string> {
    const m: Record<string, string> = {};
    for (const [k, values] of FEW) m[k] = this.pick(values);
    for (const [k, kind] of MANY_KEYS) m[k] = kind === 'T' ? request[k] : manyValue(k);
    return m;
  }

  /** One trace (5 records) in the shape the hosted API's clients send. */
  trace(sessionId: string | null) {
    return this.profile === 'metadata' ? this.richTrace(sessionId) : this.plainTrace(sessionId);
  }

  /**
   * The `metadata` profile's trace: shorter texts than the default's (records of about 2.6 KB with
   * their metadata), every record with 20 metadata keys.
   */
  private richTrace(sessionId: string | null) {
    this.t += this.int(1, 60) * 1_000_000;
    const start = this.t;
    const inTok = this.int(50, 3000);
    const outTok = this.int(10, 800);
    const request: Record<string, string> = {};
    for (const [k, kind] of MANY_KEYS) if (kind === 'T') request[k] = manyValue(k);
    const ms = (n: number) => n * 1_000_000;
    const question = this.text(300, 1800);
    return {
      id: randomUUID(),
      ...(sessionId ? { session_id: sessionId } : {}),
      name: 'chat',
      input: question,
      output: this.text(300, 1800),
      created_at: this.iso(start),
      user_metadata: this.richMeta(request),
      tags: this.r() < 0.3 ? ['beta'] : [],
      metrics: { duration_ns: ms(this.int(200, 5000)) },
      spans: [
        {
          type: 'workflow',
          id: randomUUID(),
          name: 'answer',
          input: question,
          output: this.text(300, 1800),
          created_at: this.iso(start + 1000),
          user_metadata: this.richMeta(request),
          metrics: { duration_ns: ms(this.int(150, 4000)) },
          spans: [
            {
              type: 'retriever',
              id: randomUUID(),
              name: 'search',
              input: this.text(100, 300),
              output: [
                { content: this.text(100, 800), metadata: { source: 'kb', score: this.r() } },
                { content: this.text(100, 800), metadata: { source: 'kb', score: this.r() } },
              ],
              created_at: this.iso(start + 2000),
              user_metadata: this.richMeta(request),
              metrics: { duration_ns: ms(this.int(5, 200)) },
            },
            {
              type: 'llm',
              id: randomUUID(),
              name: 'generate',
              model: this.pick(MODELS),
              temperature: 0.7,
              input: [
                { role: 'system', content: this.text(100, 300) },
                { role: 'user', content: this.text(100, 1300) },
              ],
              output: { role: 'assistant', content: this.text(200, 1400) },
              created_at: this.iso(start + 3000),
              user_metadata: this.richMeta(request),
              metrics: {
                duration_ns: ms(this.int(100, 3000)),
                num_input_tokens: inTok,
                num_output_tokens: outTok,
                num_total_tokens: inTok + outTok,
                time_to_first_token_ns: ms(this.int(20, 400)),
              },
            },
            {
              type: 'tool',
              id: randomUUID(),
              name: this.pick(TOOLS),
              tool_call_id: `call_${this.int(1, 1e9)}`,
              input: this.text(100, 500),
              output: this.text(200, 1800),
              created_at: this.iso(start + 4000),
              user_metadata: this.richMeta(request),
              metrics: { duration_ns: ms(this.int(1, 500)) },
            },
          ],
        },
      ],
    };
  }

  private plainTrace(sessionId: string | null) {
    this.t += this.int(1, 60) * 1_000_000;
    const start = this.t;
    const inTok = this.int(50, 3000);
    const outTok = this.int(10, 800);
    const meta = {
      customer: this.pick(CUSTOMERS),
      region: this.pick(REGIONS),
      env: this.r() < 0.8 ? 'prod' : 'staging',
      attempt: String(this.int(1, 3)),
    };
    const ms = (n: number) => n * 1_000_000;
    const question = this.text();
    return {
      id: randomUUID(),
      ...(sessionId ? { session_id: sessionId } : {}),
      name: 'chat',
      input: question,
      output: this.text(),
      created_at: this.iso(start),
      user_metadata: meta,
      tags: this.r() < 0.3 ? ['beta'] : [],
      metrics: { duration_ns: ms(this.int(200, 5000)) },
      spans: [
        {
          type: 'workflow',
          id: randomUUID(),
          name: 'answer',
          input: question,
          output: this.text(),
          created_at: this.iso(start + 1000),
          metrics: { duration_ns: ms(this.int(150, 4000)) },
          spans: [
            {
              type: 'retriever',
              id: randomUUID(),
              name: 'search',
              input: this.text(200, 400),
              output: [
                { content: this.text(100, 700), metadata: { source: 'kb', score: this.r() } },
                { content: this.text(100, 700), metadata: { source: 'kb', score: this.r() } },
              ],
              created_at: this.iso(start + 2000),
              metrics: { duration_ns: ms(this.int(5, 200)) },
            },
            {
              type: 'llm',
              id: randomUUID(),
              name: 'generate',
              model: this.pick(MODELS),
              temperature: 0.7,
              input: [
                { role: 'system', content: this.text(100, 400) },
                { role: 'user', content: this.text(100, 1600) },
              ],
              output: { role: 'assistant', content: this.text() },
              created_at: this.iso(start + 3000),
              user_metadata: { prompt_version: `v${this.int(1, 5)}` },
              metrics: {
                duration_ns: ms(this.int(100, 3000)),
                num_input_tokens: inTok,
                num_output_tokens: outTok,
                num_total_tokens: inTok + outTok,
                time_to_first_token_ns: ms(this.int(20, 400)),
              },
            },
            {
              type: 'tool',
              id: randomUUID(),
              name: this.pick(TOOLS),
              tool_call_id: `call_${this.int(1, 1e9)}`,
              input: this.text(200, 600),
              output: this.text(),
              created_at: this.iso(start + 4000),
              metrics: { duration_ns: ms(this.int(1, 500)) },
            },
          ],
        },
      ],
    };
  }

  private sessions = 0;

  /** A session of 1–5 traces: its create body and its traces (external ids unique per generator). */
  session() {
    const n = this.int(1, 5);
    return { external_id: `conv-${++this.sessions}`, name: 'conversation', traces: n };
  }
}

export const RECORDS_PER_TRACE = 5;

/**
 * Pre-serialised trace templates: generating and stringifying every trace would make the bench client
 * as costly as the server it measures. Each template is the JSON text of a generated trace with its
 * ids, session id and timestamps as holes; `fill` makes a new trace (fresh ids, later times) with one
 * string join. In the `metadata` profile the many-valued metadata are holes too (`T…` one value per
 * trace, `R…` a new value at each), so that every request carries values never sent before. The LLM
 * span's token counts are holes as well (`K…`), drawn for each trace as `trace` draws them: with
 * only the templates' own counts, a range filter's matches would depend on which 256 counts the seed
 * happened to give (one stage of bench:growth held 7× fewer records in 1,000–1,100 tokens than the
 * one before, and its search walked 7× as far).
 */
/** The LLM span's token counts in a template: filled for each trace (`TraceTemplates.fill`). */
const TOKEN_HOLES = {
  num_input_tokens: '@@Kin@@',
  num_output_tokens: '@@Kout@@',
  num_total_tokens: '@@Ktotal@@',
};

export class TraceTemplates {
  private readonly parts: string[][] = [];
  private readonly gen: DataGen;
  private next = 0;
  private clock = Date.UTC(2024, 4, 1);
  /** The time (ms) of the last trace filled (the first's, less a second, before any). */
  get now(): number {
    return this.clock;
  }

  constructor(count = 256, seed = 42, profile: DataProfile = 'default') {
    const gen = new DataGen(seed, profile);
    this.gen = gen;
    const holes = (meta: Record<string, string> | undefined) => {
      if (!meta) return;
      for (const k in meta) {
        const kind = MANY_KIND.get(k);
        if (kind) meta[k] = `@@${kind}${k}@@`;
      }
    };
    for (let i = 0; i < count; i++) {
      const t = gen.trace(null) as any;
      t.id = '@@I0@@';
      t.created_at = '@@C0@@';
      holes(t.user_metadata);
      let k = 1;
      const walk = (spans: any[]) => {
        for (const s of spans) {
          s.id = `@@I${k}@@`;
          s.created_at = `@@C${k}@@`;
          holes(s.user_metadata);
          if (s.metrics?.num_input_tokens !== undefined) Object.assign(s.metrics, TOKEN_HOLES);
          k++;
          if (s.spans) walk(s.spans);
        }
      };
      walk(t.spans);
      // A number's hole is written without the quotes its placeholder string gets.
      this.parts.push(
        JSON.stringify(t)
          .replace(/"(@@K\w+@@)"/g, '$1')
          .split(/@@(\w+)@@/),
      );
    }
  }

  /** The JSON text of a new trace in the given session. */
  fill(sessionId: string | null): string {
    const parts = this.parts[this.next++ % this.parts.length];
    this.clock += 1000 + (this.next % 7) * 1000;
    const base = this.clock;
    let out = sessionId ? `{"session_id":"${sessionId}",` : '{';
    let request: Map<string, string> | null = null;
    const tokensIn = this.gen.int(50, 3000);
    const tokensOut = this.gen.int(10, 800);
    for (let i = 0; i < parts.length; i++) {
      if (i % 2 === 0) out += i === 0 ? parts[0].slice(1) : parts[i];
      else {
        const key = parts[i];
        if (key[0] === 'I') out += randomUUID();
        else if (key[0] === 'C') out += new Date(base + Number(key.slice(1))).toISOString();
        else if (key[0] === 'R') out += manyValue(key.slice(1));
        else if (key[0] === 'K')
          out += key === 'Kin' ? tokensIn : key === 'Kout' ? tokensOut : tokensIn + tokensOut;
        else {
          request ??= new Map();
          let v = request.get(key);
          if (v === undefined) {
            v = manyValue(key.slice(1));
            request.set(key, v);
          }
          out += v;
        }
      }
    }
    return out;
  }
}
