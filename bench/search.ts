/**
 * Search benchmark: 1,000,000 records (100,000 sessions of 3 traces, each trace with an llm and a
 * tool span) in one log stream, a fixed query set on sessions, traces and spans through the HTTP
 * API of an in-process server (loopback, port 18200 for SQLite, 18201 for PostgreSQL), each query
 * beside the same SQL run raw in the same process; p50, p95 and p99. Each API figure is also given
 * above the HTTP floor (a health check's round trip with the same client). The target "at most 1.5×
 * raw" (issue 22, item 8) is judged on the server's time above that floor, (API − floor) / raw at
 * p50, and only for queries whose raw p50 is at least 2 ms; API/raw is printed beside it. Then the
 * same searches while records are being written, counting write errors ("database is locked" must
 * never reach a client) and the slowest write.
 *
 *   npm run bench:search                          # SQLite
 *   npm run bench:search -- --store postgres      # PostgreSQL (SPANBASE_BENCH_DATABASE_URL or the test URL)
 *   npm run bench:search -- --sessions 10000      # smaller data set (records = 10 × sessions)
 *   npm run bench:search -- --reuse               # keep and reuse the generated data between runs
 *   npm run bench:search -- --growth              # 100,000 then 1,100,000 records: each query's growth
 *   npm run bench:search -- --growth --sizes 1000,11000   # other sizes (sessions; the first is the base)
 *   npm run bench:search -- --explain             # each query's plan (raw SQL) under the table
 *   npm run bench:search -- --only 'no filter'    # only the queries whose name contains this
 *
 * Growth (issue 22, item 2): every query's p50 and p95 at each size and the ratio to the first size;
 * a query meets the target when its p95 grows at most 2×. With --reuse the data sets are kept.
 *
 * The data is written straight into the store in the shape ingestion writes (ingestion itself is
 * measured by bench:ingest); the text index is then brought up to date and its rate printed.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { type Running, startServices } from '../src/server.ts';
import { type ParsedSearch, TARGET_TYPES, parseSearchBody } from '../src/services/search.ts';
import type { RecordSearch } from '../src/store/search-query.ts';
import type { PgSearch } from '../src/store/search-postgres.ts';
import type { SqliteSearch } from '../src/store/search-sqlite.ts';
import { pgIndexableLeaves } from '../src/store/search-text-pg.ts';
import { pageJsonStatement } from '../src/store/search-json.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    sessions: { type: 'string', default: '100000' },
    iterations: { type: 'string', default: '200' },
    port: { type: 'string' },
    reuse: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    'write-seconds': { type: 'string', default: '10' },
    growth: { type: 'boolean', default: false },
    sizes: { type: 'string', default: '10000,110000' },
    explain: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});
const SIZES = args.growth ? args.sizes.split(',').map(Number) : [Number(args.sessions)];
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const ITER = Number(args.iterations);
const PORT = Number(args.port ?? (STORE === 'sqlite' ? 18200 : 18201));
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const schemaOf = (sessions: number) => `bench_search_${sessions}`;
const dataDirOf = (sessions: number) => path.join(os.tmpdir(), `spanbase-bench-search-${STORE}-${sessions}`);

// ---------------------------------------------------------------------------------------------
// Data

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const r = rng(7);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const WORDS = (
  'the a of to and in is that for it as with on be by this are or from at an which have not model prompt ' +
  'answer customer order invoice shipping account password reset delivery product price discount subscription ' +
  'cancel upgrade billing error timeout retry latency token context document search query result summary ' +
  'support ticket agent tool function call weather forecast temperature city booking flight hotel reservation ' +
  'payment card balance transfer loan interest rate mortgage insurance claim coverage premium deductible warranty'
).split(' ');
const sentence = (min: number, max: number) => {
  const n = int(min, max);
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(pick(WORDS));
  const s = out.join(' ');
  return s[0].toUpperCase() + s.slice(1);
};
/**
 * Record ids: from the seeded generator while loading (the same data set at every run); random in the
 * writes beside the searches, which a seeded generator's later stretch could repeat (mulberry32 has
 * one cycle of 2^32 draws, and loading 5,000,000 records draws a good part of it).
 */
let uuid = () => {
  const h = () =>
    Math.floor(r() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  const a = h() + h() + h() + h();
  return `${a.slice(0, 8)}-${a.slice(8, 12)}-4${a.slice(13, 16)}-8${a.slice(17, 20)}-${a.slice(20, 32)}`;
};
const CUSTOMERS = Array.from({ length: 100 }, (_, i) => `customer-${String(i).padStart(3, '0')}`);
/** End users: as many at every size, so that one user's records grow with the data (a rare value). */
const USERS = 20_000;
const TAGS = ['prod', 'beta', 'mobile', 'web', 'vip', 'eu', 'us', 'retry', 'escalated', 'voice'];
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-3-5-sonnet', 'llama-3-70b'];

type Row = Record<string, unknown>;

/** One session with its 3 traces, each with an llm and a tool span: 10 records. */
function sessionRows(projectId: string, runId: string, t0: number): Row[] {
  const rows: Row[] = [];
  const sessionId = uuid();
  const meta = {
    customer: pick(CUSTOMERS),
    plan: r() < 0.3 ? 'pro' : 'free',
    region: pick(['eu', 'us', 'ap']),
    user: `user-${String(int(0, USERS - 1)).padStart(5, '0')}`,
  };
  const tags = TAGS.filter(() => r() < 0.15);
  const base = (type: string, id: string, createdAt: number): Row => ({
    id,
    project_id: projectId,
    run_id: runId,
    type,
    session_id: sessionId,
    trace_id: null,
    parent_id: null,
    name: '',
    created_at: createdAt,
    updated_at: createdAt,
    is_complete: r() < 0.97 ? 1 : 0,
    status_code: null,
    duration_ns: null,
    num_input_tokens: null,
    num_output_tokens: null,
    num_total_tokens: null,
    num_cache_read_input_tokens: null,
    num_cache_creation_input_tokens: null,
    time_to_first_token_ns: null,
    model: null,
    external_id: null,
    error_message: null,
    num_children: 0,
    metrics: null,
    user_metadata: null,
    dataset_metadata: null,
    tags: null,
    body: null,
    input_text: null,
    output_text: null,
  });
  const traces: Row[] = [];
  let t = t0;
  for (let k = 0; k < 3; k++) {
    const traceId = uuid();
    // About 1% of questions mention the refund policy (the benchmark's text search).
    const question = `${sentence(15, 40)}${r() < 0.01 ? ' What is your Refund Policy for this?' : '?'}`;
    const answer = sentence(25, 70);
    const inTok = int(200, 2000);
    const outTok = int(20, 800);
    const dur = int(200, 8000) * 1_000_000;
    const trace = {
      ...base('trace', traceId, t),
      trace_id: traceId,
      name: pick(['chat', 'checkout', 'support', 'search']),
      status_code: r() < 0.98 ? 200 : 500,
      duration_ns: dur,
      num_input_tokens: inTok,
      num_output_tokens: outTok,
      num_total_tokens: inTok + outTok,
      user_metadata: JSON.stringify(meta),
      tags: JSON.stringify(tags),
      input_text: question,
      output_text: answer,
      num_children: 2,
    };
    const llm = {
      ...base('llm', uuid(), t + 1000),
      trace_id: traceId,
      parent_id: traceId,
      name: 'llm',
      model: pick(MODELS),
      status_code: 200,
      duration_ns: dur - 100_000_000,
      num_input_tokens: inTok,
      num_output_tokens: outTok,
      num_total_tokens: inTok + outTok,
      time_to_first_token_ns: int(50, 900) * 1_000_000,
      metrics: JSON.stringify({ cost_usd: Math.round(r() * 10000) / 100000 }),
      user_metadata: JSON.stringify({ customer: meta.customer, prompt: pick(['v1', 'v2', 'v3']) }),
      input_text: `You are a helpful assistant.\n${question}`,
      output_text: answer,
    };
    const tool = {
      ...base('tool', uuid(), t + 2000),
      trace_id: traceId,
      parent_id: traceId,
      name: pick(['lookup_order', 'get_weather', 'search_docs', 'create_ticket']),
      status_code: 200,
      duration_ns: int(5, 500) * 1_000_000,
      input_text: `{"query": "${sentence(3, 8)}"}`,
      output_text: sentence(10, 30),
    };
    traces.push(trace);
    rows.push(trace, llm, tool);
    t += dur / 1000 + int(1, 120) * 1_000_000;
  }
  const sum = (k: string) => traces.reduce((a, x) => a + (x[k] as number), 0);
  rows.unshift({
    ...base('session', sessionId, t0),
    name: `session ${sessionId.slice(0, 8)}`,
    external_id: r() < 0.5 ? `ext-${sessionId.slice(0, 12)}` : null,
    updated_at: traces[2].created_at,
    duration_ns: (traces[2].created_at as number) * 1000 + (traces[2].duration_ns as number) - t0 * 1000,
    num_input_tokens: sum('num_input_tokens'),
    num_output_tokens: sum('num_output_tokens'),
    num_total_tokens: sum('num_total_tokens'),
    user_metadata: JSON.stringify(meta),
    tags: JSON.stringify(tags),
    input_text: traces[0].input_text,
    output_text: traces[2].output_text,
    num_children: 3,
  });
  return rows;
}

const COLUMNS = Object.keys(sessionRows('p', 'r', 0)[0]);

async function load(running: Running, projectId: string, runId: string, sessions: number): Promise<void> {
  const { store } = running.services;
  const t0 = Date.UTC(2025, 0, 1) * 1000;
  const started = performance.now();
  let written = 0;
  if (store.dialect === 'sqlite') {
    const h = store.sqlite!;
    const ins = h.prepare(
      `insert into records (${COLUMNS.join(', ')}) values (${COLUMNS.map((c) => `@${c}`).join(', ')})`,
    );
    const batch = h.transaction((rows: Row[]) => {
      for (const row of rows) ins.run(row);
    });
    for (let s = 0; s < sessions; s += 1000) {
      const rows: Row[] = [];
      for (let k = s; k < Math.min(sessions, s + 1000); k++)
        rows.push(...sessionRows(projectId, runId, t0 + k * 8_000_000));
      batch(rows);
      written += rows.length;
      if (s % 20000 === 0) process.stdout.write(`\r  loading ${written} records`);
    }
  } else {
    const pool = store.pool!;
    for (let s = 0; s < sessions; s += 50) {
      const rows: Row[] = [];
      for (let k = s; k < Math.min(sessions, s + 50); k++)
        rows.push(...sessionRows(projectId, runId, t0 + k * 8_000_000));
      const params: unknown[] = [];
      const tuples = rows.map((row) => `(${COLUMNS.map((c) => `$${params.push(row[c])}`).join(', ')})`);
      await pool.query(`insert into records (${COLUMNS.join(', ')}) values ${tuples.join(', ')}`, params);
      written += rows.length;
      if (s % 5000 === 0) process.stdout.write(`\r  loading ${written} records`);
    }
    await pool.query('analyze records');
  }
  const secs = (performance.now() - started) / 1000;
  console.log(
    `\r  loaded ${written} records in ${secs.toFixed(1)} s (${Math.round(written / secs)} records/s)`,
  );
  const entries = [
    ['metrics/cost_usd', 'llm', 'floating_point'],
    ['user_metadata/customer', 'session', 'text'],
    ['user_metadata/plan', 'session', 'text'],
    ['user_metadata/region', 'session', 'text'],
    ['user_metadata/customer', 'trace', 'text'],
    ['user_metadata/plan', 'trace', 'text'],
    ['user_metadata/region', 'trace', 'text'],
    ['user_metadata/user', 'session', 'text'],
    ['user_metadata/user', 'trace', 'text'],
    ['user_metadata/customer', 'llm', 'text'],
    ['user_metadata/prompt', 'llm', 'text'],
  ];
  await store.db
    .insertInto('column_catalogue')
    .values(
      entries.map(([column_id, record_type, data_type]) => ({
        run_id: runId,
        column_id,
        record_type,
        data_type,
        first_seen: t0,
        last_seen: t0 + sessions * 8_000_000,
      })),
    )
    .execute();
}

// ---------------------------------------------------------------------------------------------
// Queries

const leaf = (column_id: string, operator: string, value: unknown, type: string, extra: Row = {}) => ({
  filter: { column_id, operator, value, type, ...extra },
});
const metaEq = (key: string, value: string) => ({
  filters: [{ column_id: `user_metadata/${key}`, operator: 'eq', value, type: 'text' }],
});
type Target = 'sessions' | 'traces' | 'spans';
interface Query {
  name: string;
  body: Row;
  /** What is searched (default sessions). */
  target?: Target;
  columns?: boolean;
  limitMs: number;
}
// A customer holds 1% of the records; a user about 1 in 20,000 sessions (a rare value at any size).
const ALL_QUERIES: Query[] = [
  { name: 'no filter', body: {}, limitMs: 50 },
  { name: 'user_metadata equality', body: metaEq('customer', 'customer-042'), limitMs: 50 },
  { name: 'user_metadata rare value', body: metaEq('user', 'user-00042'), limitMs: 50 },
  { name: 'traces: no filter', target: 'traces', body: {}, limitMs: 50 },
  {
    name: 'traces: user_metadata equality',
    target: 'traces',
    body: metaEq('customer', 'customer-042'),
    limitMs: 50,
  },
  { name: 'traces: user_metadata rare', target: 'traces', body: metaEq('user', 'user-00042'), limitMs: 50 },
  { name: 'spans: no filter', target: 'spans', body: {}, limitMs: 50 },
  {
    name: 'spans: user_metadata equality',
    target: 'spans',
    body: metaEq('customer', 'customer-042'),
    limitMs: 50,
  },
  {
    name: 'token range',
    body: {
      filters: [
        { column_id: 'metrics/num_input_tokens', operator: 'between', value: [3000, 3300], type: 'number' },
      ],
    },
    limitMs: 50,
  },
  {
    name: 'contains (case-insensitive)',
    body: {
      filters: [
        {
          column_id: 'input',
          operator: 'contains',
          value: 'refund policy',
          type: 'text',
          case_sensitive: false,
        },
      ],
    },
    limitMs: 150,
  },
  {
    name: 'traces: contains',
    target: 'traces',
    body: {
      filters: [
        {
          column_id: 'input',
          operator: 'contains',
          value: 'refund policy',
          type: 'text',
          case_sensitive: false,
        },
      ],
    },
    limitMs: 150,
  },
  // A term no record holds: the index must answer "none" without walking the run.
  {
    name: 'traces: contains (no match)',
    target: 'traces',
    body: {
      filters: [
        { column_id: 'input', operator: 'contains', value: 'quokka', type: 'text', case_sensitive: false },
      ],
    },
    limitMs: 50,
  },
  {
    name: 'tree of six leaves',
    body: {
      filter_tree: {
        and: [
          {
            or: [
              leaf('user_metadata/plan', 'eq', 'pro', 'text'),
              leaf('metrics/num_total_tokens', 'gt', 5000, 'number'),
            ],
          },
          { not: leaf('tags', 'contains', 'beta', 'collection') },
          {
            or: [
              leaf('user_metadata/region', 'one_of', ['eu', 'ap'], 'text'),
              leaf('is_complete', 'eq', false, 'boolean'),
              leaf('metrics/duration_ns', 'lt', 10_000_000_000, 'number'),
            ],
          },
        ],
      },
    },
    limitMs: 50,
  },
  {
    name: 'sort metrics/duration_ns',
    body: { sort: { name: 'metrics/duration_ns', ascending: false } },
    limitMs: 50,
  },
  // On traces: the smallest data set holds fewer than 10,000 sessions, and an empty page is no measure.
  {
    name: 'traces: page at 10,000',
    target: 'traces',
    body: { starting_token: 10_000, limit: 100 },
    limitMs: 150,
  },
  { name: 'available columns', body: {}, columns: true, limitMs: 20 },
];
/** The queries timed: all, or those whose name contains --only (profiling one query). */
const QUERIES = args.only ? ALL_QUERIES.filter((q) => q.name.includes(args.only as string)) : ALL_QUERIES;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99) };
};
const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1)).padStart(7);

/** Times two ways of running a query, alternating them so that both see the same machine load. */
async function timePair(
  n: number,
  f: () => Promise<unknown>,
  g: () => Promise<unknown>,
): Promise<[number[], number[]]> {
  // Warm-up: at least 50 rounds and a second, so that the main thread, the reader thread and
  // SQLite's caches are past their start (5 rounds left the first query's figures mostly cold).
  const warmUntil = performance.now() + 1000;
  for (let i = 0; i < 50 || performance.now() < warmUntil; i++) {
    await f();
    await g();
  }
  const a: number[] = [];
  const b: number[] = [];
  const deadline = performance.now() + 60_000;
  for (let i = 0; i < n && performance.now() < deadline; i++) {
    let t = performance.now();
    await f();
    a.push(performance.now() - t);
    t = performance.now();
    await g();
    b.push(performance.now() - t);
  }
  return [a, b];
}

/** What the search service asks its store for a query's body. */
function recordSearch(
  projectId: string,
  runId: string,
  query: Query,
): { parsed: ParsedSearch; q: RecordSearch } {
  const parsed = parseSearchBody(query.body as any);
  const q: RecordSearch = {
    projectId,
    runId,
    types: TARGET_TYPES[query.target ?? 'sessions'],
    tree: parsed.tree,
    sort: parsed.sort,
    offset: parsed.startingToken,
    limit: parsed.limit + 1,
  };
  return { parsed, q };
}

/** The page query of a search body, run without the service, HTTP or reader threads. */
function rawRunner(running: Running, projectId: string, runId: string, query: Query): () => Promise<unknown> {
  const { store, search } = running.services;
  const { parsed, q } = recordSearch(projectId, runId, query);
  if (store.dialect === 'postgres') {
    const repo = search.repo as PgSearch;
    if (!pgIndexableLeaves(q.tree).length) {
      const compiled = repo.searchStatement(store.db, q).compile();
      return () => store.pool!.query(compiled.sql, compiled.parameters as unknown[]);
    }
    // As the search reads them: the text candidates, then the page, in one snapshot.
    return () =>
      store.db
        .transaction()
        .setIsolationLevel('repeatable read')
        .setAccessMode('read only')
        .execute(async (trx) => {
          const candidates = await repo.text.candidates(trx, q.tree, q.types);
          const compiled = repo.searchStatement(trx, q, candidates).compile();
          return trx.executeQuery(compiled);
        });
  }
  const h = store.sqlite!;
  // The statement that reads the page's records renders them as JSON (store/search-json.ts): the raw
  // run is that same statement, over the page's rowids (the page without the extra row that tells
  // whether another follows, as the search reads it).
  const rows = h.prepare(pageJsonStatement(parsed.includeCounts));
  // The same statements the search runs, in one read transaction: text candidates, the page's rowids,
  // then its records (each statement prepared once, as the search's are).
  const prepared = new Map<string, ReturnType<typeof h.prepare<unknown[]>>>();
  return async () => {
    const repo = search.repo as SqliteSearch;
    const candidates = await repo.text.candidates(store.db, q.tree, q.types);
    const compiled = repo.rowidQuery(store.db, q, candidates).compile();
    let page = prepared.get(compiled.sql);
    if (!page) {
      page = h.prepare<unknown[]>(compiled.sql).pluck();
      prepared.set(compiled.sql, page);
    }
    return h.transaction(() => {
      const rowids = page.all(...(compiled.parameters as unknown[])) as number[];
      return rows.all(JSON.stringify(rowids.slice(0, parsed.limit)));
    })();
  };
}

/** The plan of a query's page statement: SQLite's query plan of the rowid query, PostgreSQL's EXPLAIN. */
async function planOf(running: Running, projectId: string, runId: string, query: Query): Promise<string[]> {
  const { store, search } = running.services;
  const { q } = recordSearch(projectId, runId, query);
  if (store.dialect === 'postgres') {
    const compiled = search.repo.pageQuery(store.db, q).compile();
    const { rows } = await store.pool!.query(`explain ${compiled.sql}`, compiled.parameters as unknown[]);
    return rows.map((row) => row['QUERY PLAN'] as string);
  }
  const repo = search.repo as SqliteSearch;
  const candidates = await repo.text.candidates(store.db, q.tree, q.types);
  const compiled = repo.rowidQuery(store.db, q, candidates).compile();
  const plan = store.sqlite!.prepare(`explain query plan ${compiled.sql}`).all(...compiled.parameters);
  return (plan as { detail: string }[]).map((row) => row.detail);
}

/** The SQL behind available columns, raw. */
function rawColumns(running: Running, runId: string): () => Promise<unknown> {
  const { store } = running.services;
  const catalogue =
    'select distinct column_id, record_type, data_type from column_catalogue where run_id = $1 order by column_id';
  const present = 'select 1 from records where type = $1 and run_id = $2 limit 1';
  if (store.dialect === 'postgres') {
    return async () => {
      await store.pool!.query(catalogue, [runId]);
      await store.pool!.query(present, ['session', runId]);
    };
  }
  const a = store.sqlite!.prepare(catalogue.replace('$1', '?'));
  const b = store.sqlite!.prepare(present.replace('$1', '?').replace('$2', '?'));
  return async () => {
    a.all(runId);
    b.get('session', runId);
  };
}

// ---------------------------------------------------------------------------------------------

interface QueryResult {
  query: string;
  api: ReturnType<typeof stats>;
  raw: ReturnType<typeof stats>;
  rows: number;
  limitMs: number;
  ok: boolean;
}

/** The benchmark on one data set of `sessions` sessions: each query's figures. */
async function runSize(sessions: number): Promise<QueryResult[]> {
  const DATA_DIR = dataDirOf(sessions);
  const SCHEMA = schemaOf(sessions);
  const fresh = !args.reuse || !fs.existsSync(path.join(DATA_DIR, 'bench-ready.json'));
  if (fresh) fs.rmSync(DATA_DIR, { recursive: true, force: true });
  fs.mkdirSync(DATA_DIR, { recursive: true });
  if (STORE === 'postgres') {
    const c = new pg.Client({ connectionString: DB_URL });
    await c.connect();
    if (fresh) await c.query(`drop schema if exists ${SCHEMA} cascade`);
    await c.query(`create schema if not exists ${SCHEMA}`);
    await c.end();
  }
  const config = loadConfig({
    SPANBASE_DATA_DIR: DATA_DIR,
    SPANBASE_LOG_LEVEL: 'warn',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    SPANBASE_SCRYPT_COST: '1024',
    SPANBASE_PORT: String(PORT),
    ...(STORE === 'postgres' ? { SPANBASE_DATABASE_URL: DB_URL, SPANBASE_PG_SCHEMA: SCHEMA } : {}),
  });
  const starting = performance.now();
  const running = await startServices(config, { logger: false });
  await running.app.listen({ port: PORT, host: '127.0.0.1' });
  // A reused data set of an older schema is migrated here (a new index is built over it).
  console.log(
    `  server started in ${((performance.now() - starting) / 1000).toFixed(1)} s (migrations included)`,
  );
  const key = fs.readFileSync(path.join(DATA_DIR, 'initial-admin-key'), 'utf8').trim();
  const base = `http://127.0.0.1:${PORT}`;
  const call = async (method: string, url: string, body?: unknown, retried = false): Promise<any> => {
    const res = await fetch(base + url, {
      method,
      headers: { 'service-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).catch((err) => {
      // A kept-alive connection the server closed while idle (after loading): once more.
      if (retried) throw err;
      return null;
    });
    if (res === null) return call(method, url, body, true);
    const json = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`${method} ${url} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  // The timed client: one kept-alive connection that sends the request and reads the whole body,
  // nothing more (no fetch machinery, no JSON parse: those are the client's costs, not the API's).
  // The body is parsed after the timing.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (method: string, url: string, body?: unknown, retried = false): Promise<Buffer> => {
    const text = body === undefined ? '' : JSON.stringify(body);
    return new Promise<Buffer>((resolve, reject) => {
      const req = http.request(
        base + url,
        {
          method,
          agent,
          headers: {
            'service-api-key': key,
            ...(body === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const out = Buffer.concat(chunks);
            if (res.statusCode !== 200) reject(new Error(`${method} ${url} → ${res.statusCode} ${out}`));
            else resolve(out);
          });
          res.on('error', reject);
        },
      );
      // A kept-alive connection the server closed while idle: once more.
      req.on('error', (err) => (retried ? reject(err) : resolve(send(method, url, body, true))));
      req.end(text);
    });
  };
  const post = (url: string, body: unknown) => send('POST', url, body);

  console.log(`search benchmark [${STORE}], ${sessions * 10} records (${sessions} sessions), port ${PORT}`);
  let projectId: string;
  let runId: string;
  if (fresh) {
    projectId = (await call('POST', '/v2/projects', { name: 'bench-search' })).id;
    runId = (await call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'prod' })).id;
    await load(running, projectId, runId, sessions);
    const { indexer } = running.services.search;
    if (indexer.enabled) {
      await indexer.stop();
      const pending = await indexer.pending();
      const t = performance.now();
      await indexer.drain();
      const secs = (performance.now() - t) / 1000;
      console.log(
        `  text index: ${pending} records in ${secs.toFixed(1)} s (${Math.round(pending / secs)} records/s)`,
      );
      indexer.start();
    }
    fs.writeFileSync(path.join(DATA_DIR, 'bench-ready.json'), JSON.stringify({ projectId, runId }));
  } else {
    ({ projectId, runId } = JSON.parse(fs.readFileSync(path.join(DATA_DIR, 'bench-ready.json'), 'utf8')));
    console.log('  reusing the data set in', DATA_DIR);
  }

  const scope = { log_stream_id: runId };
  const searchUrl = (q: Query) =>
    `/v2/projects/${projectId}/${q.target ?? 'sessions'}/${q.columns ? 'available_columns' : 'search'}`;
  const runners = QUERIES.map((q) => ({
    api: () => post(searchUrl(q), { ...scope, ...q.body }),
    raw: q.columns ? rawColumns(running, runId) : rawRunner(running, projectId, runId, q),
  }));
  // Warm-up of the whole set for 5 s before any timing: whichever query was timed first came out
  // slowest, API and raw alike (no filter: 2.0× raw when timed first, 1.5× when timed last; its raw
  // p50 1.13 against 0.82 ms). The cause was not pinned down; it wears off with sustained load.
  const warmAll = performance.now() + 5000;
  while (performance.now() < warmAll) {
    for (const r of runners) {
      await r.api();
      await r.raw();
    }
  }

  // The floor under every API figure: a round trip to a route that reads nothing (the health check),
  // with the same client. What an API figure has above it is the search's own cost.
  const floor: number[] = [];
  for (let i = 0; i < 200; i++) await send('GET', '/v2/healthcheck');
  for (let i = 0; i < ITER; i++) {
    const t = performance.now();
    await send('GET', '/v2/healthcheck');
    floor.push(performance.now() - t);
  }
  const f = stats(floor);
  console.log(
    `\n  HTTP floor (GET /v2/healthcheck, same client): p50 ${f.p50.toFixed(2)} p95 ${f.p95.toFixed(2)} p99 ${f.p99.toFixed(2)} ms`,
  );
  console.log(
    `\n  ${'query'.padEnd(32)} ${'API p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} │ ${'raw p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} │ ${'API−floor'.padStart(9)} │ API/raw │ (API−floor)/raw p50 (≤ 1.5 when raw ≥ 2 ms) │ rows │ p95 target`,
  );
  const results: QueryResult[] = [];
  const plans: string[] = [];
  for (const [i, q] of QUERIES.entries()) {
    let last: Buffer = Buffer.alloc(0);
    const [api, raw] = await timePair(
      ITER,
      async () => {
        last = await runners[i].api();
      },
      runners[i].raw,
    );
    const out = JSON.parse(last.toString('utf8'));
    const rows = q.columns ? out.columns.length : out.num_rows;
    const a = stats(api);
    const b = stats(raw);
    const limit = STORE === 'postgres' ? 2 * q.limitMs : q.limitMs;
    const ok = a.p95 <= limit;
    // Item 8 of issue 22: the server's time above the HTTP floor, and the ratio judged only where
    // the raw query takes 2 ms or more (below that, the floor and waking the reader dominate).
    const above = a.p50 - f.p50;
    const ratio = above / b.p50;
    const judged = b.p50 >= 2 ? (ratio <= 1.5 ? 'met' : 'MISSED') : 'n/a (raw < 2 ms)';
    console.log(
      `  ${q.name.padEnd(32)} ${fmt(a.p50)} ${fmt(a.p95)} ${fmt(a.p99)} │ ${fmt(b.p50)} ${fmt(b.p95)} ${fmt(b.p99)} │ ${fmt(above).padStart(9)} │ ${(a.p50 / b.p50).toFixed(2).padStart(7)} │ ${ratio.toFixed(2).padStart(5)} ${judged.padEnd(37)} │ ${String(rows).padStart(4)} │ ≤ ${limit} ms ${ok ? 'met' : 'MISSED'}`,
    );
    results.push({ query: q.name, api: a, raw: b, rows, limitMs: limit, ok });
    if (args.explain && !q.columns)
      plans.push(`  ${q.name}:`, ...(await planOf(running, projectId, runId, q)).map((l) => `      ${l}`));
  }
  if (plans.length) console.log(`\n  plans (raw page statement):\n${plans.join('\n')}`);
  const saved: object[] = [...results, { query: 'HTTP floor', api: f }];

  // Searches while records are written: writes must never fail and should not wait long.
  const seconds = Number(args['write-seconds']);
  if (seconds > 0) {
    const { store } = running.services;
    let writes = 0;
    let writeErrors = 0;
    let locked = 0;
    let firstError = '';
    let slowest = 0;
    let searches = 0;
    const stopAt = performance.now() + seconds * 1000;
    uuid = randomUUID; // new ids
    const t0 = Date.UTC(2026, 0, 1) * 1000;
    let k = 0;
    const writer = async () => {
      while (performance.now() < stopAt) {
        const rows = sessionRows(projectId, runId, t0 + k++ * 1000);
        const t = performance.now();
        try {
          await store.db.transaction().execute(async (trx) => {
            await trx
              .insertInto('records')
              .values(rows as any)
              .execute();
          });
          writes += rows.length;
        } catch (err) {
          writeErrors++;
          firstError ||= String((err as Error).message);
          if (/locked|busy/i.test(String((err as Error).message))) locked++;
        }
        slowest = Math.max(slowest, performance.now() - t);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    };
    const searcher = async () => {
      while (performance.now() < stopAt) {
        for (const q of QUERIES.filter((x) => !x.columns)) {
          await call('POST', searchUrl(q), { ...scope, ...q.body });
          searches++;
        }
      }
    };
    await Promise.all([writer(), searcher(), searcher()]);
    console.log(
      `\n  during ${seconds} s of writes: ${writes} records written, ${writeErrors} write errors (${locked} "locked"), slowest write ${slowest.toFixed(1)} ms; ${searches} searches` +
        (firstError ? `\n  first write error: ${firstError.slice(0, 300)}` : ''),
    );
    saved.push({ writes, writeErrors, locked, slowestWriteMs: slowest, searches });
  }
  fs.writeFileSync(path.join(DATA_DIR, 'bench-results.json'), JSON.stringify(saved, null, 2));
  await running.close();
  if (!args.reuse) {
    fs.rmSync(DATA_DIR, { recursive: true, force: true });
    if (STORE === 'postgres') {
      const c = new pg.Client({ connectionString: DB_URL });
      await c.connect();
      await c.query(`drop schema if exists ${SCHEMA} cascade`);
      await c.end();
    }
  }
  return results;
}

/**
 * Each size in turn, then (with more than one) every query's growth from the first: p50 and p95
 * at each size and their ratios; the target is a p95 at most 2× the first size's.
 */
async function main() {
  const bySize: QueryResult[][] = [];
  for (const sessions of SIZES) bySize.push(await runSize(sessions));
  if (bySize.length < 2) return;
  const sizes = SIZES.map((n) => `${(n * 10).toLocaleString('en')} rec`);
  console.log(`\ngrowth [${STORE}] from ${sizes[0]} (API p50 / p95 in ms; ratios to the first size)`);
  console.log(
    `  ${'query'.padEnd(32)} ${sizes.map((x) => x.padStart(17)).join(' ')} │ p50 ×  p95 × │ p95 ≤ 2×`,
  );
  for (const [i, base] of bySize[0].entries()) {
    const cells = bySize.map((rs) => `${fmt(rs[i].api.p50)} / ${fmt(rs[i].api.p95)}`.padStart(17));
    const last = bySize[bySize.length - 1][i];
    const g50 = last.api.p50 / base.api.p50;
    const g95 = last.api.p95 / base.api.p95;
    console.log(
      `  ${base.query.padEnd(32)} ${cells.join(' ')} │ ${g50.toFixed(2).padStart(5)} ${g95.toFixed(2).padStart(5)} │ ${g95 <= 2 ? 'met' : 'MISSED'}`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
