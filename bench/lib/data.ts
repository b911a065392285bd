/**
 * Realistic ingest data for benchmarks, generated deterministically from a seed: sessions of 1–5
 * traces; each trace is a workflow span with an llm, a tool and a retriever child (5 records per
 * trace); inputs and outputs of 200–2000 bytes; user metadata; token metrics.
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

export class DataGen {
  private readonly r: () => number;
  /** Base time: records spread over the last ~10 days. */
  private t: number;

  constructor(seed = 42) {
    this.r = rng(seed);
    this.t = Date.UTC(2024, 4, 1) * 1000;
  }

  private int(lo: number, hi: number) {
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

  /** One trace (5 records) in the shape the hosted API's clients send. */
  trace(sessionId: string | null) {
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
 * string join.
 */
export class TraceTemplates {
  private readonly parts: string[][] = [];
  private next = 0;
  private clock = Date.UTC(2024, 4, 1);

  constructor(count = 256, seed = 42) {
    const gen = new DataGen(seed);
    for (let i = 0; i < count; i++) {
      const t = gen.trace(null) as any;
      t.id = '@@I0@@';
      t.created_at = '@@C0@@';
      let k = 1;
      const walk = (spans: any[]) => {
        for (const s of spans) {
          s.id = `@@I${k}@@`;
          s.created_at = `@@C${k}@@`;
          k++;
          if (s.spans) walk(s.spans);
        }
      };
      walk(t.spans);
      this.parts.push(JSON.stringify(t).split(/@@(\w+)@@/));
    }
  }

  /** The JSON text of a new trace in the given session. */
  fill(sessionId: string | null): string {
    const parts = this.parts[this.next++ % this.parts.length];
    this.clock += 1000 + (this.next % 7) * 1000;
    const base = this.clock;
    let out = sessionId ? `{"session_id":"${sessionId}",` : '{';
    for (let i = 0; i < parts.length; i++) {
      if (i % 2 === 0) out += i === 0 ? parts[0].slice(1) : parts[i];
      else {
        const key = parts[i];
        if (key[0] === 'I') out += randomUUID();
        else out += new Date(base + Number(key.slice(1))).toISOString();
      }
    }
    return out;
  }
}
