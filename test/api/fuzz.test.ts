/**
 * Fuzzing of every route in `/openapi.json`, on each store: generated valid and invalid bodies,
 * query strings and path parameters (derived from each operation's schemas), and hostile inputs
 * (invalid JSON, deep nesting, huge strings and arrays, wrong types, unicode edge cases, injection
 * strings, prototype keys). Every answer must be a 2xx or a 4xx with the JSON error shape, within a
 * per-request timeout; data written before the run must be intact after it.
 *
 * SPANBASE_FUZZ_RUNS (default 6) sets the generated inputs per route and kind; SPANBASE_FUZZ_SEED
 * replays a run; SPANBASE_FUZZ_ONLY fuzzes only the routes its regular expression matches.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fs from 'node:fs';
import zlib from 'node:zlib';
import fc from 'fast-check';
import {
  HOSTILE_KEYS,
  HOSTILE_NUMBERS,
  HOSTILE_STRINGS,
  deepText,
  findRecursion,
  hostileJsonArb,
  invalidArb,
  nestedArrays,
  nestedObjects,
  put,
  validArb,
} from '../helpers/arbitraries.ts';
import {
  type JsonSchema,
  type Operation,
  RefResolver,
  contractProblem,
  fillPath,
  isReadOnly,
  operations,
  queryString,
} from '../helpers/openapi.ts';
import { OTEL_PATHS } from '../../src/http/routes/otel.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { dbSnapshot, furnish, knownBatch, readBackBatch } from '../helpers/world.ts';

const RUNS = Number(process.env.SPANBASE_FUZZ_RUNS ?? 6);
const SEED = Number(process.env.SPANBASE_FUZZ_SEED ?? Date.now() % 2 ** 31);
const BODY_LIMIT = 256 * 1024;
const TIMEOUT_MS = 20_000;
/** A file to append every faulty input to, in full (JSON lines), for replay. */
const DUMP = process.env.SPANBASE_FUZZ_DUMP;
/** A regular expression: fuzz only the routes whose key ("METHOD /path") it matches (to replay a fault). */
const ONLY = process.env.SPANBASE_FUZZ_ONLY ? new RegExp(process.env.SPANBASE_FUZZ_ONLY) : undefined;
const CONCURRENCY = 4;

interface Attempt {
  kind: string;
  url: string;
  method: string;
  contentType?: string;
  payload?: string | Buffer;
  /** Extra headers: the operation's header parameters, content encodings. */
  headers?: Record<string, string>;
  /** Expected status, when the input pins one (a body over the limit is 413). */
  expect?: number;
}

interface Finding {
  route: string;
  kind: string;
  status: number | 'timeout';
  problem: string;
  url: string;
  payload: string;
}

const summary: string[] = [];

const COLUMNS = [
  'id',
  'name',
  'input',
  'output',
  'created_at',
  'updated_at',
  'tags',
  'status_code',
  'is_complete',
  'error_message',
  'external_id',
  'session_id',
  'trace_id',
  'parent_id',
  'type',
  'model',
  'metrics/duration_ns',
  'metrics/num_input_tokens',
  'metrics/num_total_tokens',
  'user_metadata/env',
  'user_metadata/i',
  'dataset_metadata/split',
];

/** mulberry32: a small seeded generator for leaf mutations. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A copy of a (valid) value where some string leaves become hostile strings, some numbers extreme
 * numbers, and some objects gain a hostile key: injection in column ids, metadata keys and values.
 */
export function mutateLeaves(value: unknown, seed: number): unknown {
  const r = rng(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)];
  // Light to heavy: a light touch keeps most bodies valid, so hostile values reach storage.
  const rate = pick([0.03, 0.08, 0.2, 0.4]);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return r() < rate ? pick(HOSTILE_STRINGS) : v;
    if (typeof v === 'number') return r() < rate / 2 ? pick(HOSTILE_NUMBERS) : v;
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) put(o, k, walk(x));
      if (r() < rate)
        put(o, pick(HOSTILE_KEYS), r() < 0.5 ? pick(HOSTILE_STRINGS) : { [pick(HOSTILE_KEYS)]: 1 });
      return o;
    }
    return v;
  };
  return walk(value);
}

type Ctx = Record<string, string>;
type Creds = { email: string; password: string; key: string };

const filterTree = {
  and: [
    {
      filter: {
        type: 'text',
        column_id: 'user_metadata/env',
        operator: 'eq',
        value: 'prod',
        case_sensitive: false,
      },
    },
    {
      or: [
        {
          filter: {
            type: 'number',
            column_id: 'metrics/duration_ns',
            operator: 'between',
            value: [1, 10_000],
          },
        },
      ],
    },
    { not: { filter: { type: 'collection', column_id: 'tags', operator: 'contains', value: 'known' } } },
  ],
};

const searchBody = (c: Ctx) => ({
  log_stream_id: c.log_stream_id,
  filters: [
    { type: 'text', column_id: 'input', operator: 'contains', value: 'question', case_sensitive: true },
  ],
  filter_tree: filterTree,
  sort: { name: 'created_at', ascending: false, sort_type: 'column' },
  pagination: { starting_token: 0, limit: 10 },
  include_counts: true,
});

/** Known-good bodies per route, given the playground's ids. */
/** A valid OTLP/JSON export of one llm span. */
const otlpExport = () => ({
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'fuzz' } }] },
      scopeSpans: [
        {
          scope: { name: 'fuzz' },
          spans: [
            {
              traceId: '5b8efff798038103d269b633813fc60c',
              spanId: 'eee19b7ec3c1b174',
              parentSpanId: '',
              name: 'chat',
              kind: 3,
              startTimeUnixNano: '1750000000000000000',
              endTimeUnixNano: '1750000000500000000',
              attributes: [
                { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o' } },
                { key: 'gen_ai.usage.input_tokens', value: { intValue: '12' } },
                { key: 'user.tier', value: { stringValue: 'gold' } },
              ],
              status: { code: 1 },
            },
          ],
        },
      ],
    },
  ],
});

const EXAMPLES: Record<string, (c: Ctx, creds: Creds) => unknown> = {
  'POST /login': (_c, k) => ({ username: k.email, password: k.password }),
  'POST /v2/login': (_c, k) => ({ username: k.email, password: k.password }),
  'POST /v2/login/api_key': (_c, k) => ({ api_key: k.key }),
  'POST /v2/projects/{project_id}/traces': (c) => ({
    ...knownBatch(c.log_stream_id, 2, 'fuzz'),
    session_id: c.session_id,
  }),
  'POST /v2/projects/{project_id}/spans': (c) => ({
    log_stream_id: c.log_stream_id,
    trace_id: c.trace_id,
    parent_id: c.trace_id,
    spans: [
      {
        type: 'llm',
        name: 'extra',
        input: [{ role: 'user', content: 'hi' }],
        output: { role: 'assistant', content: 'yo' },
        metrics: { num_input_tokens: 3, num_output_tokens: 4 },
        user_metadata: { k: 'v' },
        tags: ['t'],
      },
    ],
  }),
  'POST /v2/projects/{project_id}/sessions': (c) => ({
    log_stream_id: c.log_stream_id,
    name: 'fuzzed session',
    external_id: 'ext-1',
    user_metadata: { customer: 'c1' },
  }),
  'PATCH /v2/projects/{project_id}/traces/{trace_id}': (c) => ({
    log_stream_id: c.log_stream_id,
    output: 'patched',
    tags: ['patched'],
    status_code: 200,
    user_metadata: { patched: 'yes' },
    duration_ns: 1234,
  }),
  'PATCH /v2/projects/{project_id}/spans/{span_id}': (c) => ({
    log_stream_id: c.log_stream_id,
    output: 'patched',
    tags: ['patched'],
    user_metadata: { patched: 'yes' },
  }),
  'POST /v2/projects/{project_id}/sessions/search': searchBody,
  'POST /v2/projects/{project_id}/traces/search': searchBody,
  'POST /v2/projects/{project_id}/spans/search': searchBody,
  'POST /v2/projects/{project_id}/sessions/count': searchBody,
  'POST /v2/projects/{project_id}/traces/count': searchBody,
  'POST /v2/projects/{project_id}/spans/count': searchBody,
  // Deletes that match nothing: the playground's records serve the routes fuzzed after them.
  ...Object.fromEntries(
    ['sessions', 'traces', 'spans'].map((t) => [
      `POST /v2/projects/{project_id}/${t}/delete`,
      (c: Ctx) => ({
        log_stream_id: c.log_stream_id,
        filters: [{ type: 'text', column_id: 'name', operator: 'eq', value: 'no record has this name' }],
        filter_tree: filterTree,
      }),
    ]),
  ),
  'POST /v2/projects/{project_id}/export_records': (c) => ({
    log_stream_id: c.log_stream_id,
    root_type: 'trace',
    filter_tree: filterTree,
    sort: { column_id: 'created_at', ascending: true },
    column_ids: ['input', 'metrics/duration_ns', 'user_metadata/env'],
    export_format: 'jsonl',
    redact: false,
  }),
  'PATCH /v2/projects/{project_id}': () => ({ retention_days: 3650 }),
  'PATCH /v2/projects/{project_id}/log_streams/{log_stream_id}': () => ({ retention_days: null }),
  'POST /v2/projects/{project_id}/log_streams/search': () => ({
    filters: [{ name: 'name', operator: 'contains', value: 'ls', case_sensitive: false }],
    sort: { name: 'name', ascending: true },
    include_counts: true,
  }),
  'PUT /v2/projects/{project_id}/log_streams/{log_stream_id}/trends': () => ({
    name: 'fuzzed',
    description: 'd',
    interval_mins: 15,
    layout_map: { a: [1, 2] },
    relative_time: 'last_3_days',
    filter_tree: filterTree,
    group_by: 'model',
  }),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/widgets': () => ({
    name: 'w',
    type: 'bar_chart',
    metric: 'metrics/duration_ns',
    aggregation: 'P90',
    dataset: [{ series: ['a', 'b'] }],
  }),
  'POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/query': () => ({}),
  'PUT /v2/integrations/example_gateway': () => ({
    endpoint: 'https://gateway.example.com/v1',
    use_case: 'chat',
    token: `tok-${Math.random().toString(36).slice(2)}`,
    multi_modal_config: { max_files: 2, max_file_size_bytes: 1000 },
  }),
  'PUT /v2/projects/{project_id}/runs/{run_id}/signals/configuration': (c) => ({
    run_mode: 'SCHEDULED',
    schedule: { type: 'CRON', cron: '*/5 * * * *', timezone: 'Europe/Paris' },
    start_date: '2024-01-01',
    end_date: '2024-02-01',
    scheduled_runs_enabled: true,
    model: 'gpt-4o',
    integration_id: c.integration_id,
    user_preferences: { focus_on: 'latency', dont_focus_on: '' },
    notification_severities: ['LOW', 'HIGH'],
  }),
  // The OTLP route and its aliases take the same export.
  ...Object.fromEntries(OTEL_PATHS.map((p) => [`POST ${p}`, otlpExport])),
};

/** Meaningful values for properties of these names, so generated bodies reach the handlers. */
function hints(name: string, schema: JsonSchema): fc.Arbitrary<unknown> | undefined {
  const t = schema.type;
  const isString = t === 'string' || (Array.isArray(t) && t.includes('string'));
  if (!isString || schema.enum || schema.const !== undefined) return undefined;
  if (/^(endpoint|url|uri)$/.test(name))
    return fc.constantFrom(
      'https://gateway.example.com/v1',
      'http://127.0.0.1:9/llm',
      'https://x.example/a?b=c',
    );
  if (/^(column_id|metric|group_by|sort_by)$/.test(name)) return fc.constantFrom(...COLUMNS);
  if (name === 'cron') return fc.constantFrom('*/5 * * * *', '0 0 * * 1', '15 3 1 * *');
  if (name === 'timezone') return fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata');
  if (name === 'model') return fc.constantFrom('gpt-4o', 'claude-3-5-sonnet');
  if (name === 'relative_time')
    return fc.constantFrom('last_7_days', 'last_1_hour', 'last_30_minutes', 'last_2_weeks');
  return undefined;
}

/** 10 MiB of zeros, gzipped to about 10 KB: must answer 413 or 4xx, not inflate without bound. */
const GZIP_BOMB = zlib.gzipSync(Buffer.alloc(10 * 1024 * 1024), { level: 9 });

function seedFor(...parts: string[]): number {
  let h = SEED >>> 0;
  for (const ch of parts.join('|')) h = (Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0) % 2 ** 31;
  return h;
}

function sample<T>(arb: fc.Arbitrary<T>, n: number, ...seedParts: string[]): T[] {
  if (n <= 0) return [];
  try {
    return fc.sample(arb, { numRuns: n, seed: seedFor(...seedParts) });
  } catch (err) {
    // A schema the generator cannot satisfy (an impossible filter) is a gap in the generator, not a
    // finding; it is reported so it does not go unnoticed.
    process.stderr.write(`fuzz: generator gave up on ${seedParts.join(' ')}: ${(err as Error).message}\n`);
    return [];
  }
}

/** JSON text of a value whose objects may hold own `__proto__` keys (JSON.stringify keeps them). */
function json(v: unknown): string {
  return JSON.stringify(v) ?? 'null';
}

function excerpt(p: string | Buffer | undefined): string {
  if (p === undefined) return '';
  const t = typeof p === 'string' ? p : `<${p.length} bytes> ${p.subarray(0, 60).toString('hex')}`;
  return t.length > 300 ? `${t.slice(0, 300)}… (${t.length} chars)` : t;
}

/** Property names of an object body schema, in order, with their (dereferenced) schemas. */
function topProps(schema: JsonSchema, r: RefResolver): [string, JsonSchema][] {
  const s = r.deref(schema);
  return Object.entries<JsonSchema>(s.properties ?? {}).map(([k, v]) => [k, r.deref(v)]);
}

function isObjectSchema(schema: JsonSchema, r: RefResolver): boolean {
  const s = r.deref(schema);
  return s.type === 'object' || !!s.properties;
}

for (const store of storesUnderTest()) {
  describe(`fuzz every route [${store}]`, () => {
    let s: TestServer;
    let doc: JsonSchema;
    let ops: Operation[];
    let resolver: RefResolver;
    const pools = new Map<string, Set<string>>();
    const sentinel = { projectId: '', logStreamId: '', experimentId: '' };
    const protoBefore = Object.getOwnPropertyNames(Object.prototype).sort();
    /** The server's error log lines: the cause of a 5xx, attached to its finding. */
    const errorLogs: string[] = [];

    const addPool = (name: string, id: unknown) => {
      if (typeof id !== 'string' || !id) return;
      if (!pools.has(name)) pools.set(name, new Set());
      pools.get(name)!.add(id);
    };

    before(async () => {
      s = await startTestServer(
        store,
        { SPANBASE_BODY_LIMIT_BYTES: String(BODY_LIMIT) },
        { logs: errorLogs, logLevel: 'error' },
      );
      doc = (await s.call('GET', '/openapi.json', undefined, null)).body;
      ops = operations(doc).filter((o) => !ONLY || ONLY.test(o.key));
      resolver = new RefResolver(doc);
    });
    after(() => s?.close());

    test('every route answers 2xx or 4xx with the error shape, never a 5xx or a hang; data survives', async () => {
      const findings: Finding[] = [];
      const perRoute = new Map<string, number>();
      /** Answers that were 2xx, per route: how far generated input gets past validation. */
      const ok2xx = new Map<string, number>();

      // --- the world the fuzzer works in -------------------------------------------------------
      const mk = async (url: string, body: unknown) => {
        const r = await s.call('POST', url, body);
        assert.equal(r.status, 200, `${url}: ${r.text}`);
        return r.body;
      };
      const u = await s.user();
      // PATCH /v2/users/{user_id} may rightly make its target an admin: it gets a user of its own, so
      // that `u` staying a plain user still shows that no other request raised anyone's role.
      const roleTarget = await s.user();
      /** Ids an operation must get whatever else is at hand (in the pools or the playground's ids). */
      const ownIds = (op: Operation): Record<string, string> =>
        op.key === 'PATCH /v2/users/{user_id}' ? { user_id: roleTarget.id } : {};
      const g = await mk('/v2/groups', { name: 'fuzz-group' });
      await mk(`/v2/groups/${g.id}/members`, [{ user_id: u.id }]);
      // The sentinel: one of everything, never handed to a write; the playground: the same, to play with.
      const S = await mk('/v2/projects', { name: 'fuzz-sentinel' });
      const sentinelWorld = await furnish(s, ops, S.id);
      const ctxS = sentinelWorld.ctx;
      sentinel.projectId = S.id;
      sentinel.logStreamId = ctxS.log_stream_id;
      sentinel.experimentId = ctxS.experiment_id;
      const batch = sentinelWorld.batch;
      const F = await mk('/v2/projects', { name: 'fuzz-playground' });
      await mk(`/v2/projects/${F.id}/collaborators`, { user_id: u.id, role: 'viewer' });
      const playWorld = await furnish(s, ops, F.id, { integration: true, userId: u.id, groupId: g.id });
      const ctxF = playWorld.ctx;
      for (const [name, id] of Object.entries(ctxF)) addPool(name, id);
      for (const [name, ids] of Object.entries(playWorld.batch?.ids ?? {}))
        for (const id of ids) addPool(name, id);
      for (let i = 0; i < 6; i++)
        addPool('api_key_id', (await mk('/v2/users/api_keys', { description: `spare ${i}` })).id);
      const spareKey = (await mk('/v2/users/api_keys', { description: 'spare for login' })).api_key;
      const readBefore = batch ? await readBackBatch(s, ops, S.id, sentinel.logStreamId) : null;
      const snapBefore = await dbSnapshot(s, S.id, true);

      /** Real ids for a name; the sentinel's only for operations that merely read. */
      const ALIAS: Record<string, string> = {
        projectid: 'project_id',
        logstreamid: 'log_stream_id',
        experimentid: 'experiment_id',
        sessionid: 'session_id',
      };
      const poolFor = (op: Operation) => (raw: string) => {
        const name = ALIAS[raw] ?? raw;
        const own = ownIds(op)[name];
        if (own) return [own];
        const list = [...(pools.get(name) ?? [])];
        if (isReadOnly(op)) {
          if (ctxS[name]) list.push(ctxS[name]);
          if (name === 'run_id') list.push(sentinel.experimentId);
        }
        return list.length ? list : undefined;
      };

      /** Ids an answer created: `POST /v2/projects` → project_id, `.../log_streams` → log_stream_id and run_id. */
      const harvest = (op: Operation, body: any) => {
        if (isReadOnly(op) || body === null || typeof body !== 'object' || Array.isArray(body)) return;
        const segs = op.path.split('/').filter((x) => x && !x.startsWith('{'));
        const last = segs[segs.length - 1] ?? '';
        const single = last.replace(/ies$/, 'y').replace(/s$/, '');
        const names: Record<string, string[]> = {
          log_stream: ['log_stream_id', 'run_id'],
          experiment: ['experiment_id', 'run_id'],
          trend: ['trends_dashboard_id', 'dashboard_id'],
          example_gateway: ['integration_id'],
          api_key: ['api_key_id'],
        };
        if (typeof body.id === 'string')
          for (const n of names[single] ?? [`${single}_id`]) addPool(n, body.id);
        for (const [k, v] of Object.entries(body)) if (k.endsWith('_id') && k !== 'project_id') addPool(k, v);
      };

      // --- sending ------------------------------------------------------------------------------
      async function send(op: Operation, a: Attempt): Promise<void> {
        perRoute.set(op.key, (perRoute.get(op.key) ?? 0) + 1);
        const headers: Record<string, string> = { ...(a.headers ?? {}), 'service-api-key': s.adminKey };
        if (a.contentType) headers['content-type'] = a.contentType;
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), TIMEOUT_MS);
        });
        const res = await Promise.race([
          s.running.app.inject({ method: a.method as any, url: a.url, headers, payload: a.payload }),
          timeout,
        ]).finally(() => clearTimeout(timer));
        const record = (status: number | 'timeout', problem: string): void => {
          if (DUMP) {
            const payload = Buffer.isBuffer(a.payload) ? { base64: a.payload.toString('base64') } : a.payload;
            fs.appendFileSync(
              DUMP,
              `${JSON.stringify({ store, route: op.key, kind: a.kind, status, problem, method: a.method, url: a.url, headers: a.headers, contentType: a.contentType, payload })}\n`,
            );
          }
          findings.push({
            route: op.key,
            kind: a.kind,
            status,
            problem,
            url: a.url.slice(0, 300),
            payload: excerpt(a.payload),
          });
        };
        if (res === 'timeout') return record('timeout', `no answer within ${TIMEOUT_MS} ms`);
        // The error line of this request (by its request id): requests run CONCURRENCY at a time, and
        // each 5xx also logs a 'request completed' line without the error, so the last line is not it.
        const cause = () => {
          const id = res.headers['x-request-id'];
          for (let i = errorLogs.length - 1; i >= 0; i--) {
            try {
              const entry = JSON.parse(errorLogs[i]);
              if (!entry.err || (id && entry.reqId !== id)) continue;
              errorLogs.splice(i, 1);
              const e = entry.err;
              return ` — ${e?.message ?? ''} ${e?.detail ?? ''} ${(e?.stack ?? '').split('\n').slice(1, 4).join(' ').replace(/\s+/g, ' ')}`;
            } catch {}
          }
          return '';
        };
        const problem =
          a.method === 'HEAD'
            ? res.statusCode >= 500
              ? 'server error'
              : null
            : contractProblem(res.statusCode, res.body, res.headers['content-type'] as string);
        if (problem) return record(res.statusCode, res.statusCode >= 500 ? `${problem}${cause()}` : problem);
        if (a.expect !== undefined && res.statusCode !== a.expect)
          return record(
            res.statusCode,
            `expected ${a.expect}, got ${res.statusCode}: ${res.body.slice(0, 200)}`,
          );
        if (res.statusCode < 300) ok2xx.set(op.key, (ok2xx.get(op.key) ?? 0) + 1);
        if (res.statusCode < 300) {
          try {
            harvest(op, JSON.parse(res.body));
          } catch {}
        }
      }

      async function runAll(op: Operation, attempts: Attempt[]): Promise<void> {
        let next = 0;
        const worker = async () => {
          while (next < attempts.length) await send(op, attempts[next++]);
        };
        await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      }

      // --- inputs per operation -----------------------------------------------------------------
      function attemptsFor(op: Operation): Attempt[] {
        const pool = poolFor(op);
        const opts = { resolver, pool, maxDepth: 3, hints };
        const hostileOpts = { ...opts, hostile: true };
        const out: Attempt[] = [];
        const pathSchema: JsonSchema = {
          type: 'object',
          required: op.pathParams.map((p) => p.name),
          properties: Object.fromEntries(op.pathParams.map((p) => [p.name, p.schema])),
        };
        const querySchema: JsonSchema = {
          type: 'object',
          required: op.queryParams.filter((p) => p.required).map((p) => p.name),
          properties: Object.fromEntries(op.queryParams.map((p) => [p.name, p.schema])),
        };
        const types = Object.keys(op.body?.content ?? {});
        const ct = op.body
          ? (types.find((x) => /json/.test(x)) ?? types[0] ?? 'application/json')
          : undefined;
        const bodySchema = op.body && ct ? op.body.content[ct] : null;
        const isForm = ct === 'application/x-www-form-urlencoded';
        const encode = (v: unknown): string =>
          isForm && v && typeof v === 'object' && !Array.isArray(v)
            ? queryString(v as Record<string, unknown>)
            : json(v);

        const validPaths = sample(validArb(pathSchema, opts), RUNS, op.key, 'paths') as Record<
          string,
          string
        >[];
        const validQueries = op.queryParams.length
          ? (sample(validArb(querySchema, opts), RUNS, op.key, 'query') as Record<string, unknown>[])
          : [];
        // Two of three valid paths name ids that belong together (the playground's, or for reads
        // the sentinel's), so requests get past "not found" into the handlers.
        const coherent = (i: number) => {
          const ctx = { ...(isReadOnly(op) && i % 2 ? ctxS : ctxF), ...ownIds(op) };
          const gen = validPaths[i % Math.max(validPaths.length, 1)] ?? {};
          return Object.fromEntries(op.pathParams.map((p) => [p.name, ctx[p.name] ?? gen[p.name]]));
        };
        const pathAt = (i: number) =>
          i % 3 === 2 ? (validPaths[i % Math.max(validPaths.length, 1)] ?? {}) : coherent(i);
        const queryAt = (i: number) =>
          validQueries.length ? validQueries[i % validQueries.length] : undefined;
        const url = (i: number, query?: Record<string, unknown> | string) =>
          fillPath(op.path, pathAt(i), query ?? queryAt(i));
        const withBody = (
          kind: string,
          i: number,
          payload: string | Buffer | undefined,
          extra: Partial<Attempt> = {},
        ) =>
          out.push({
            kind,
            method: op.method,
            url: url(i),
            contentType: payload === undefined ? undefined : (extra.contentType ?? ct ?? 'application/json'),
            payload,
            ...extra,
          });

        // Known-good bodies for routes with rules a schema cannot state (ingestion, filters, OTLP),
        // sent as they are and with hostile leaves and keys: this is what reaches storage and SQL.
        const example = EXAMPLES[op.key]?.(ctxF, { email: u.email, password: u.password, key: spareKey });
        if (example !== undefined && bodySchema) {
          withBody('example', 0, isForm ? encode(example) : json(example));
          for (let i = 0; i < RUNS * 2; i++) {
            const mutated = mutateLeaves(example, seedFor(op.key, 'mutate', String(i)));
            withBody('example mutated', i, isForm ? encode(mutated) : json(mutated));
          }
        }

        // Generated bodies: valid, with one fault, with hostile strings and keys.
        if (bodySchema) {
          for (const [i, v] of sample(validArb(bodySchema, opts), RUNS, op.key, 'body').entries())
            withBody('valid body', i, encode(v));
          for (const [i, v] of sample(invalidArb(bodySchema, opts), RUNS, op.key, 'invalid').entries())
            withBody('invalid body', i, encode(v));
          for (const [i, v] of sample(validArb(bodySchema, hostileOpts), RUNS, op.key, 'hostile').entries())
            withBody('hostile body', i, encode(v));
          for (const [i, v] of sample(hostileJsonArb(), Math.ceil(RUNS / 2), op.key, 'junk').entries())
            withBody('hostile json', i, json(v));
        } else {
          for (let i = 0; i < RUNS; i++) out.push({ kind: 'valid', method: op.method, url: url(i) });
        }

        // Path parameters: generated faults and hostile text (sent raw and encoded).
        if (op.pathParams.length) {
          const validBody = bodySchema
            ? sample(validArb(bodySchema, opts), 1, op.key, 'pbody')[0]
            : undefined;
          const payload = validBody === undefined ? undefined : encode(validBody);
          const pathFaults: Record<string, unknown>[] = [];
          for (const p of op.pathParams) {
            for (const bad of sample(invalidArb(p.schema, opts), Math.ceil(RUNS / 2), op.key, 'path', p.name))
              pathFaults.push({ ...pathAt(pathFaults.length), [p.name]: bad });
            for (const bad of [
              crypto.randomUUID(),
              '00000000-0000-0000-0000-000000000000',
              crypto.randomUUID().toUpperCase(),
              "' or 1=1 --",
              'a'.repeat(5000),
              '..',
              '👩‍👩‍👧‍👦',
              ...HOSTILE_STRINGS.filter((h) => h && !/[\ud800-\udfff]/.test(h)).slice(0, 12),
            ])
              pathFaults.push({ ...pathAt(0), [p.name]: bad });
          }
          for (const values of pathFaults)
            out.push({
              kind: 'path param',
              method: op.method,
              url: fillPath(op.path, values as Record<string, string>),
              contentType: payload === undefined ? undefined : ct,
              payload,
            });
          for (const rawValue of [
            '%ZZ',
            '%00',
            '%2e%2e',
            '..%2F..%2F',
            '%ED%A0%80',
            '%FF%FE',
            'x%0Ay',
            '%25',
          ]) {
            const values = Object.fromEntries(op.pathParams.map((p) => [p.name, rawValue]));
            out.push({
              kind: 'raw path',
              method: op.method,
              url: fillPath(op.path, values, undefined, true),
              contentType: payload === undefined ? undefined : ct,
              payload,
            });
          }
        }

        // Query strings: generated values and faults per parameter, and hostile extras on every route.
        const qBody = bodySchema
          ? encode(sample(validArb(bodySchema, opts), 1, op.key, 'qbody')[0])
          : undefined;
        const withQuery = (kind: string, q: Record<string, unknown> | string) =>
          out.push({
            kind,
            method: op.method,
            url: url(0, q),
            contentType: qBody === undefined ? undefined : ct,
            payload: qBody,
          });
        for (const p of op.queryParams) {
          for (const bad of sample(invalidArb(p.schema, opts), Math.ceil(RUNS / 2), op.key, 'qfault', p.name))
            withQuery('query fault', { ...(queryAt(0) ?? {}), [p.name]: bad });
          for (const h of sample(
            validArb(p.schema, hostileOpts),
            Math.ceil(RUNS / 2),
            op.key,
            'qhost',
            p.name,
          ))
            withQuery('query hostile', { ...(queryAt(0) ?? {}), [p.name]: h });
          withQuery('query repeated', `${encodeURIComponent(p.name)}=a&${encodeURIComponent(p.name)}=b`);
          withQuery('query huge', `${encodeURIComponent(p.name)}=${'q'.repeat(60_000)}`);
        }
        for (const q of [
          '__proto__[polluted]=yes&constructor[prototype][polluted]=yes',
          '__proto__=x&constructor=y&prototype=z',
          'a=%ZZ&b=%00&c=%ED%A0%80',
          'x=\' or 1=1 --&y=$.a"]',
          'a[]=1&a[]=2&a[b]=c',
          '&&&==&=',
        ])
          withQuery('query hostile', q);

        // Hostile bodies.
        if (op.method !== 'GET' && op.method !== 'HEAD') {
          const jsonCt = isForm ? 'application/json' : (ct ?? 'application/json');
          const raw = (kind: string, payload: string | Buffer, extra: Partial<Attempt> = {}) =>
            withBody(kind, 0, payload, { contentType: jsonCt, ...extra });
          for (const text of [
            '{',
            '{"a":}',
            '[1,2',
            '{"a":1}garbage',
            "{'a':1}",
            'NaN',
            'nul',
            '\ufeff{}',
            '{"a":"\\u00"}',
            '{"a":1e400,"limit":1e400,"starting_token":1e400}',
            '{"limit":-1e400,"starting_token":-0}',
            '"\\ud800"',
            ' ',
            '',
          ])
            raw('invalid json', text);
          raw(
            'invalid utf-8',
            Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]),
          );
          for (const v of [null, true, 0, -1, 'str', [], [{}], [null], {}]) raw('wrong type', json(v));
          raw('deep arrays', nestedArrays(10_000));
          raw('deep objects', nestedObjects(10_000));
          raw('deep objects', nestedObjects(10_000, '__proto__'));
          const props =
            bodySchema && isObjectSchema(bodySchema, resolver) ? topProps(bodySchema, resolver) : [];
          const base = bodySchema
            ? (sample(validArb(bodySchema, { ...opts, maxDepth: 1 }), 1, op.key, 'base')[0] as any)
            : {};
          const baseObj = base && typeof base === 'object' && !Array.isArray(base) ? base : {};
          const withField = (key: string, text: string) => {
            const token = '"__FUZZ_PLACEHOLDER__"';
            const o = { ...baseObj };
            put(o, key, '__FUZZ_PLACEHOLDER__');
            return json(o).replace(token, text);
          };
          for (const [k] of props.slice(0, 8)) {
            raw('deep field', withField(k, nestedArrays(10_000)));
            raw('deep field', withField(k, nestedObjects(5_000)));
          }
          const rec = bodySchema ? findRecursion(bodySchema, resolver) : null;
          if (rec) {
            const leafValue = sample(validArb(rec.leaf, { ...opts, maxDepth: 0 }), 1, op.key, 'leaf')[0];
            for (const depth of [100, 1_000, 10_000]) {
              const text = deepText(rec, json(leafValue), depth);
              raw(
                `deep recursion ${depth}`,
                rec.toR.length && 'prop' in rec.toR[0] ? mergeTop(baseObj, text) : text,
              );
            }
          }
          // Huge strings and arrays, within the limit and over it.
          const room = BODY_LIMIT - json(baseObj).length - 1024;
          for (const [k, p] of props.slice(0, 8)) {
            if (p.type === 'string' || (Array.isArray(p.type) && p.type.includes('string')))
              raw('huge string', withField(k, json('é'.repeat(Math.floor(room / 2)))));
            if (p.type === 'array') {
              raw(
                'huge array',
                withField(k, `[${Array.from({ length: Math.floor(room / 2) }, () => '1').join(',')}]`),
              );
              raw(
                'huge array',
                withField(
                  k,
                  `[${Array.from({ length: Math.floor(room / 40) }, () => '"x\\u0000\\ud800🙂"').join(',')}]`,
                ),
              );
            }
          }
          raw('huge body', json(Array.from({ length: Math.floor(room / 12) }, (_, i) => ({ k: i }))));
          raw('over the limit', json({ ...baseObj, pad: 'x'.repeat(BODY_LIMIT) }), { expect: 413 });
          raw('over the limit', `[${'1,'.repeat(BODY_LIMIT)}1]`, { expect: 413 });
          // Prototype keys, as own keys of the parsed body.
          raw(
            'prototype keys',
            mergeTop(baseObj, '"__proto__":{"polluted":"yes","role":"admin","isAdmin":true}'),
          );
          raw('prototype keys', mergeTop(baseObj, '"constructor":{"prototype":{"polluted":"yes"}}'));
          raw('prototype keys', '{"__proto__":{"polluted":"yes"},"__proto__":[]}');
          for (const [k] of props.slice(0, 6)) {
            raw(
              'prototype keys',
              withField(k, '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}'),
            );
          }
          // Content types.
          const validText = bodySchema
            ? encode(sample(validArb(bodySchema, opts), 1, op.key, 'ct')[0])
            : '{}';
          for (const type of [
            'text/plain',
            'application/xml',
            'application/json; charset=utf-8',
            'application/json; charset=utf-16',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'application/vnd.api+json',
            'APPLICATION/JSON',
          ])
            raw('content type', validText, { contentType: type });
          raw('form pollution', '__proto__[polluted]=yes&constructor[prototype][polluted]=yes&a=%ZZ', {
            contentType: 'application/x-www-form-urlencoded',
          });
          raw('no content type', validText, { contentType: undefined });
          // Content encodings: real gzip, a gzip bomb (10 MiB of zeros), garbage that claims brotli.
          const enc = (kind: string, payload: Buffer, encoding: string, expect?: number) =>
            raw(kind, payload, { headers: { 'content-encoding': encoding }, ...(expect ? { expect } : {}) });
          enc('content encoding', zlib.gzipSync(validText), 'gzip');
          enc('gzip bomb', GZIP_BOMB, 'gzip');
          enc('content encoding', Buffer.from(validText), 'br');
          enc('content encoding', Buffer.from(validText), 'x-unknown');
          // Other media types the operation accepts (OTLP protobuf): random and truncated bytes.
          for (const other of types.filter((x) => x !== ct && !/json|form/.test(x))) {
            for (const bytes of sample(fc.uint8Array({ maxLength: 2048 }), RUNS, op.key, 'bytes', other))
              raw('binary body', Buffer.from(bytes), { contentType: other });
            for (const bytes of [
              Buffer.alloc(0),
              Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
              Buffer.from([0x0a]),
            ])
              raw('binary body', bytes, { contentType: other });
            enc('gzip bomb', GZIP_BOMB, 'gzip');
            raw('gzip bomb', GZIP_BOMB, { contentType: other, headers: { 'content-encoding': 'gzip' } });
          }
        }

        // Header parameters: generated values on every attempt, then faults and hostile values.
        if (op.headerParams.length) {
          const headerSchema: JsonSchema = {
            type: 'object',
            required: op.headerParams.filter((p) => p.required).map((p) => p.name),
            properties: Object.fromEntries(op.headerParams.map((p) => [p.name, p.schema])),
          };
          const asHeaders = (v: unknown): Record<string, string> => {
            const h: Record<string, string> = {};
            for (const [k, x] of Object.entries((v ?? {}) as Record<string, unknown>)) {
              const text = typeof x === 'string' ? x : JSON.stringify(x);
              // Only what HTTP can carry in a header value.
              if (text !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(text)) h[k] = text;
            }
            return h;
          };
          const valid = sample(validArb(headerSchema, opts), RUNS, op.key, 'headers').map(asHeaders);
          out.forEach((a, i) => {
            a.headers = { ...(valid[i % Math.max(valid.length, 1)] ?? {}), ...(a.headers ?? {}) };
          });
          const base = valid[0] ?? {};
          const validBody = bodySchema
            ? encode(sample(validArb(bodySchema, opts), 1, op.key, 'hbody')[0])
            : undefined;
          for (const p of op.headerParams) {
            const bad = [
              ...sample(invalidArb(p.schema, opts), Math.ceil(RUNS / 2), op.key, 'hfault', p.name),
              ...sample(validArb(p.schema, hostileOpts), Math.ceil(RUNS / 2), op.key, 'hhost', p.name),
              crypto.randomUUID(),
              'x'.repeat(8000),
            ];
            for (const v of bad)
              out.push({
                kind: 'header param',
                method: op.method,
                url: url(0),
                contentType: validBody === undefined ? undefined : ct,
                payload: validBody,
                headers: { ...base, ...asHeaders({ [p.name]: v }) },
              });
          }
        }
        return out;
      }

      /** `{...base, <fieldsText>}` as JSON text. */
      function mergeTop(base: Record<string, unknown>, fieldsText: string): string {
        const text = json(base);
        if (fieldsText.startsWith('{')) fieldsText = fieldsText.slice(1, -1);
        return text === '{}' ? `{${fieldsText}}` : `${text.slice(0, -1)},${fieldsText}}`;
      }

      // --- the run ------------------------------------------------------------------------------
      const started = Date.now();
      // Deletions last, so they do not starve the other routes of their fixtures.
      // Among deletions, the deepest paths first (a widget before its dashboard, a share before its integration).
      const depth = (o: Operation) => o.path.split('/').length;
      const ordered = [...ops].sort(
        (a, b) =>
          Number(a.method === 'DELETE') - Number(b.method === 'DELETE') ||
          (a.method === 'DELETE' ? depth(b) - depth(a) : 0),
      );
      const routeMs = new Map<string, number>();
      for (const op of ordered) {
        const t0 = Date.now();
        await runAll(op, attemptsFor(op));
        routeMs.set(op.key, Date.now() - t0);
        if (Date.now() - t0 > 10_000)
          process.stderr.write(`fuzz[${store}]: ${op.key} took ${Date.now() - t0} ms\n`);
      }

      // --- afterwards: the service is alive, nothing leaked into prototypes, the sentinel is intact
      const health = await s.call('GET', '/v2/healthcheck', undefined, null);
      assert.equal(health.status, 200, 'the service still answers');
      assert.equal(({} as any).polluted, undefined, 'Object.prototype was polluted');
      assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), protoBefore);
      const me = await s.call('GET', '/v2/current_user', undefined, u.key);
      assert.equal(me.body.role, 'user', 'a plain user is still a plain user');

      const snapAfter = await dbSnapshot(s, S.id);
      const lost = countLost(snapBefore, snapAfter);
      assert.deepEqual(
        snapAfter,
        snapBefore,
        `the sentinel project changed in the store (${lost} rows lost or altered)`,
      );
      if (batch) {
        const readAfter = await readBackBatch(s, ops, S.id, sentinel.logStreamId);
        assert.deepEqual(readAfter, readBefore, 'the sentinel records read back differently');
      }

      const total = [...perRoute.values()].reduce((a, b) => a + b, 0);
      const fivexx = findings.filter(
        (f) => f.status === 'timeout' || (typeof f.status === 'number' && f.status >= 500),
      ).length;
      const line = `fuzz[${store}]: ${perRoute.size} routes, ${total} inputs, ${fivexx} 5xx or hangs, ${findings.length} contract faults, ${lost} sentinel rows lost (${batch?.records ?? 0} records ingested before), ${((Date.now() - started) / 1000).toFixed(1)} s, seed ${SEED}, runs ${RUNS}`;
      summary.push(line);
      summary.push(
        ...[...perRoute.entries()].map(
          ([k, n]) =>
            `  ${String(n).padStart(5)} inputs ${String(ok2xx.get(k) ?? 0).padStart(4)} 2xx ${String(routeMs.get(k) ?? 0).padStart(6)} ms  ${k}`,
        ),
      );
      const untouched = ops.filter((o) => !perRoute.has(o.key)).map((o) => o.key);
      assert.deepEqual(untouched, [], 'every route was fuzzed');
      if (findings.length) {
        const byRoute = new Map<string, Finding[]>();
        for (const f of findings) byRoute.set(f.route, [...(byRoute.get(f.route) ?? []), f]);
        const report = [...byRoute.entries()]
          .map(
            ([route, fs]) =>
              `${route}: ${fs.length} faults\n` +
              fs
                .slice(0, 5)
                .map(
                  (f) =>
                    `    [${f.kind}] ${f.status} ${f.problem}\n      url: ${f.url}\n      body: ${f.payload}`,
                )
                .join('\n'),
          )
          .join('\n');
        assert.fail(`${line}\n${report}`);
      }
    });
  });
}

/** Faults the fuzzer found in the shared foundation, pinned so they stay fixed. */
for (const store of storesUnderTest()) {
  describe(`fuzz findings stay fixed [${store}]`, () => {
    let s: TestServer;
    let project: string;
    before(async () => {
      s = await startTestServer(store);
      project = (await s.call('POST', '/v2/projects', { name: 'regressions' })).body.id;
    });
    after(() => s?.close());

    test('JSON nested deeper than 512 levels is a 422 json_invalid, not a stack overflow', async () => {
      for (const body of [nestedArrays(10_000), `{"name":${nestedObjects(600)}}`]) {
        const r = await s.call('POST', '/v2/projects', body);
        assert.equal(r.status, 422, r.text);
        assert.equal(r.body.detail[0].type, 'json_invalid');
        assert.equal(r.body.detail[0].loc[0], 'body');
      }
      const ok = await s.call('POST', '/v2/projects', `{"name":"deep-ok","x":${nestedArrays(500)}}`);
      assert.equal(ok.status, 200, 'nesting within the limit is fine (unknown fields are ignored)');
      const quoted = await s.call('POST', '/v2/projects', { name: 'quoted', x: `${'['.repeat(2000)}"\\` });
      assert.equal(quoted.status, 200, 'brackets inside strings do not count');
    });

    test('router faults answer with a JSON detail: bad percent-encoding, very long parameters', async () => {
      const bad = await s.call('GET', '/v2/projects/%ZZ');
      assert.equal(bad.status, 400);
      assert.equal(typeof bad.body.detail, 'string');
      const long = await s.call('GET', `/v2/projects/${'a'.repeat(500)}`);
      assert.equal(long.status, 422, 'a long parameter reaches validation');
      assert.equal(long.body.detail[0].type, 'uuid_parsing');
      const huge = await s.call('GET', `/v2/projects/${'a'.repeat(5000)}`);
      assert.equal(huge.status, 414);
      assert.equal(typeof huge.body.detail, 'string');
    });

    test('a discriminated union rejects values that are not objects', async () => {
      for (const sort of ['x', 5, ['x', 1], true]) {
        const r = await s.call('POST', `/v2/projects/${project}/log_streams/search`, { sort });
        assert.equal(r.status, 422, `${JSON.stringify(sort)}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'sort']);
      }
      const f = await s.call('POST', `/v2/projects/${project}/log_streams/search`, { filters: ['x'] });
      assert.equal(f.status, 422, f.text);
    });

    test('integers beyond 2^53 are a 422, not a store error', async () => {
      const r = await s.call('POST', `/v2/projects/${project}/log_streams/search`, '{"starting_token":1e20}');
      assert.equal(r.status, 422, r.text);
      assert.equal(r.body.detail[0].type, 'less_than_equal');
    });

    test('an empty one_of / not_in list matches nothing / everything', async () => {
      await s.call('POST', `/v2/projects/${project}/log_streams`, { name: 'a' });
      const search = (filters: unknown) =>
        s.call('POST', `/v2/projects/${project}/log_streams/search`, { filters });
      const none = await search([{ name: 'name', operator: 'one_of', value: [] }]);
      assert.equal(none.status, 200, none.text);
      assert.equal(none.body.log_streams.length, 0);
      const all = await search([{ name: 'id', operator: 'not_in', value: [] }]);
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.log_streams.length, 1);
      // The same for datasets and prompt templates (store/text-match.ts).
      await s.call('POST', '/v2/datasets', { name: 'listed', rows: [{ a: 1 }] });
      await s.call('POST', '/v2/templates', { name: 'listed', template: 'hi' });
      for (const [url, key] of [
        ['/v2/datasets/query', 'datasets'],
        ['/v2/templates/query', 'templates'],
      ]) {
        const list = async (filters: unknown) => (await s.call('POST', url, { filters })).body[key].length;
        assert.equal(await list([{ name: 'name', operator: 'one_of', value: [] }]), 0, url);
        assert.equal(await list([{ name: 'name', operator: 'not_in', value: [] }]), 1, url);
        assert.equal(
          await list([{ name: 'name', operator: 'not_in', value: ['\ud800', 'x\u0000'] }]),
          1,
          url,
        );
        assert.equal(await list([{ name: 'name', operator: 'eq', value: 'listed\u0000' }]), 0, url);
        assert.equal(await list([{ name: 'name', operator: 'contains', value: 'ist' }]), 1, url);
      }
      const creator = await s.call('POST', '/v2/templates/query', {
        filters: [{ name: 'creator', value: 'a\u0000' }],
      });
      assert.equal(creator.status, 200, creator.text);
    });

    test('NUL in names is a 422 on both stores; NUL in lookups finds nothing', async () => {
      // PostgreSQL cannot hold U+0000 in text (a 500 there, stored on SQLite): refused on both.
      for (const [url, body, field] of [
        ['/v2/projects', { name: 'a\u0000b' }, 'name'],
        [`/v2/projects/${project}/log_streams`, { name: 'a\u0000b' }, 'name'],
        ['/v2/groups', { name: 'g\u0000' }, 'name'],
        ['/v2/groups', { name: 'g', description: '\u0000' }, 'description'],
        ['/v2/users', { email: 'nul@example.com', first_name: '\u0000' }, 'first_name'],
        ['/v2/users/api_keys', { description: 'k\u0000' }, 'description'],
        ['/v2/scorers', { name: 's', scorer_type: 'llm', description: '\u0000' }, 'description'],
      ] as const) {
        const r = await s.call('POST', url, body);
        assert.equal(r.status, 422, `${url}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['body', field]);
      }
      const azure = await s.call('PUT', '/v2/integrations/azure', {
        token: 't',
        endpoint: 'https://gateway.example.com/v1',
        api_version: '\u0000',
      });
      assert.equal(azure.status, 422, azure.text);
      assert.deepEqual(azure.body.detail[0].loc, ['body', 'api_version']);
      // An alert's name, created or changed (PostgreSQL answered 500 to a PATCH, seed 460860597).
      const ls = (await s.call('POST', `/v2/projects/${project}/log_streams`, { name: 'alerts' })).body.id;
      const alerts = `/v2/projects/${project}/log_streams/${ls}/alerts`;
      const rule = {
        metric: 'duration_ns',
        aggregation: 'Max',
        window_minutes: 5,
        comparison: 'gt',
        threshold: 1,
      };
      const nul = await s.call('POST', alerts, { ...rule, name: '\u0000' });
      assert.equal(nul.status, 422, nul.text);
      assert.deepEqual(nul.body.detail[0].loc, ['body', 'name']);
      const made = await s.call('POST', alerts, { ...rule, name: 'slow' });
      assert.equal(made.status, 200, made.text);
      const patched = await s.call('PATCH', `${alerts}/${made.body.id}`, { name: 'a\u0000' });
      assert.equal(patched.status, 422, patched.text);
      assert.deepEqual(patched.body.detail[0].loc, ['body', 'name']);
      const list = await s.call('GET', '/v2/projects?project_name=%00');
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.body, []);
      const login = await s.running.app.inject({
        method: 'POST',
        url: '/login',
        payload: 'username=a%00b&password=xxxxxxxx',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(login.statusCode, 401, login.body);
      const filtered = await s.call('POST', `/v2/projects/${project}/log_streams/search`, {
        filters: [{ name: 'name', operator: 'eq', value: 'a\u0000' }],
      });
      assert.equal(filtered.status, 200, filtered.text);
      assert.equal(filtered.body.log_streams.length, 0);
    });

    test('creating the same group, user or scorer twice at once answers 200 then 409, never 500', async () => {
      const groups = await Promise.all(
        [1, 2, 3, 4].map(() => s.call('POST', '/v2/groups', { name: 'twin' })),
      );
      assert.deepEqual(groups.map((r) => r.status).sort(), [200, 409, 409, 409]);
      const users = await Promise.all(
        [1, 2, 3, 4].map(() => s.call('POST', '/v2/users', { email: 'twin@example.com' })),
      );
      assert.deepEqual(users.map((r) => r.status).sort(), [200, 409, 409, 409]);
      const scorers = await Promise.all(
        [1, 2, 3, 4].map(() => s.call('POST', '/v2/scorers', { name: 'twin', scorer_type: 'llm' })),
      );
      assert.deepEqual(scorers.map((r) => r.status).sort(), [200, 409, 409, 409]);
    });

    test('experiment tags: any key text, unstorable text a 422, a concurrent delete a 404 (seed 1234)', async () => {
      const base = `/v2/projects/${project}/experiments`;
      const ex = (await s.call('POST', base, { name: 'tagged' })).body;
      // Tag keys are grouped by key in the experiment's answer: prototype names are plain keys.
      for (const key of ['constructor', '__proto__', 'toString']) {
        const r = await s.call('POST', `${base}/${ex.id}/tags`, { key, value: 'v' });
        assert.equal(r.status, 200, r.text);
      }
      const got = await s.call('GET', `${base}/${ex.id}`);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(Object.keys(got.body.tags).sort(), ['__proto__', 'constructor', 'toString']);
      // `tags/..` is the experiment itself: PUT renames (nothing here), as PUT .../{id}/ does.
      const dots = await s.call('PUT', `${base}/${ex.id}/tags/..`, { key: 'k', value: 'call' });
      assert.equal(dots.status, 200, dots.text);
      // NUL and lone surrogates: PostgreSQL's json refuses them, so both stores answer 422.
      const tag = (await s.call('POST', `${base}/${ex.id}/tags`, { key: 'k', value: 'v' })).body;
      for (const body of [
        { key: 'k', value: 'a\u0000b' },
        { key: 'x\ud83dy', value: 'v' },
        { key: 'k', value: 'v', tag_type: '\udfff' },
      ]) {
        for (const url of [`${base}/${ex.id}/tags`, `${base}/${ex.id}/tags/${tag.id}`]) {
          const r = await s.call(url.endsWith('tags') ? 'POST' : 'PUT', url, body);
          assert.equal(r.status, 422, `${url} ${JSON.stringify(body)}: ${r.text}`);
        }
      }
      for (const body of [
        { name: 'n\u0000' },
        { name: 'ok-name', prompt_settings: { model_alias: 'x\ud800' } },
      ]) {
        const r = await s.call('POST', base, body);
        assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
      }
      const renamed = await s.call('PUT', `${base}/${ex.id}`, { name: 'n\u0000' });
      assert.equal(renamed.status, 422, renamed.text);
      const jobs = await s.call('GET', `/v2/projects/${project}/runs/${ex.id}/jobs?status=%00`);
      assert.equal(jobs.status, 422, jobs.text);
      // A tag route racing the experiment's delete: its row may be gone (PostgreSQL's foreign key
      // refused re-creating it): 200 or 404, never 500.
      for (let round = 0; round < 5; round++) {
        const e = (await s.call('POST', base, { name: `race-${round}` })).body;
        const t = (await s.call('POST', `${base}/${e.id}/tags`, { key: 'k', value: 'v' })).body;
        const answers = await Promise.all([
          s.call('DELETE', `${base}/${e.id}`),
          ...[1, 2, 3].map(() => s.call('DELETE', `${base}/${e.id}/tags/${t.id}`)),
          ...[1, 2, 3].map(() => s.call('POST', `${base}/${e.id}/tags`, { key: `k${round}`, value: 'v' })),
          s.call('GET', `${base}/${e.id}/tags`),
        ]);
        for (const r of answers) assert.ok(r.status < 500, `${r.status}: ${r.text}`);
      }
    });
  });
}

function countLost(before: Record<string, unknown[]>, afterSnap: Record<string, unknown[]>): number {
  let lost = 0;
  for (const [table, rows] of Object.entries(before)) {
    const now = new Set((afterSnap[table] ?? []).map((r) => JSON.stringify(r)));
    for (const r of rows) if (!now.has(JSON.stringify(r))) lost++;
  }
  return lost;
}

after(() => {
  if (summary.length) process.stdout.write(`${summary.join('\n')}\n`);
});
