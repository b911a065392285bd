/**
 * Trends dashboard and token-usage benchmark: 1,000,000 records (100,000 sessions of 3 traces, each
 * trace with an llm and a tool span) spread over 7 days (--days) in one log stream; a dashboard over those
 * days at 60-minute buckets (--interval-mins) with four widgets (Count, Average, P95, Sum) computed through the HTTP
 * API of an in-process server (loopback, port 18300 for SQLite, 18301 for PostgreSQL), with several
 * group_by and filter settings; then the token-usage route over 10 years of day rollups (and 200
 * other log streams' rollups beside them). p50, p95, p99, and the raw cost of merely counting the
 * records in the range, in the same process, for scale.
 *
 *   npm run bench:dashboards                          # SQLite
 *   npm run bench:dashboards -- --store postgres      # PostgreSQL (SPANBASE_BENCH_DATABASE_URL or the test URL)
 *   npm run bench:dashboards -- --sessions 10000      # smaller data set (records = 10 × sessions)
 *   npm run bench:dashboards -- --reuse               # keep and reuse the generated data between runs
 *   npm run bench:dashboards -- --days 100 --interval-mins 1440   # the records over 100 days, daily buckets
 *
 * The records are written straight into the store in the shape ingestion writes (ingestion itself is
 * measured by bench:ingest).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { type Running, startServices } from '../src/server.ts';
import { RollupsRepo } from '../src/store/rollups.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    sessions: { type: 'string', default: '100000' },
    iterations: { type: 'string', default: '40' },
    port: { type: 'string' },
    reuse: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    /** Days the records are spread over (the dashboard covers them all). */
    days: { type: 'string', default: '7' },
    /** The dashboard's bucket, in minutes. */
    'interval-mins': { type: 'string', default: '60' },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const SESSIONS = Number(args.sessions);
const ITER = Number(args.iterations);
const PORT = Number(args.port ?? (STORE === 'sqlite' ? 18300 : 18301));
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const DAYS = Number(args.days);
const INTERVAL_MINS = Number(args['interval-mins']);
const SUFFIX = DAYS === 7 ? '' : `_${DAYS}d`;
const SCHEMA = `bench_dash_${SESSIONS}${SUFFIX}`;
const DATA_DIR = path.join(os.tmpdir(), `spanbase-bench-dashboards-${STORE}-${SESSIONS}${SUFFIX}`);

/** The days the records cover (--days): from 2025-03-03T00:00:00Z. */
const T0 = Date.UTC(2025, 2, 3) / 1000;
const SPAN = DAYS * 86_400;
const DAY_US = 86_400_000_000;

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
const r = rng(11);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const WORDS = (
  'the a of to and in is that for it as with on be by this are or from at an which have not model prompt ' +
  'answer customer order invoice shipping account password reset delivery product price discount subscription ' +
  'cancel upgrade billing error timeout retry latency token context document search query result summary ' +
  'support ticket agent tool function call weather forecast temperature city booking flight hotel reservation'
).split(' ');
const sentence = (min: number, max: number) => {
  const n = int(min, max);
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(pick(WORDS));
  return out.join(' ');
};
const CUSTOMERS = Array.from({ length: 100 }, (_, i) => `customer-${String(i).padStart(3, '0')}`);
const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-3-5-sonnet', 'llama-3-70b'];

type Row = Record<string, unknown>;

/** One session with its 3 traces, each with an llm and a tool span: 10 records, from t0 (µs). */
function sessionRows(projectId: string, runId: string, t0: number): Row[] {
  const rows: Row[] = [];
  const sessionId = randomUUID();
  const meta = JSON.stringify({ customer: pick(CUSTOMERS), region: pick(['eu', 'us', 'ap']) });
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
  let t = t0;
  let totalIn = 0;
  let totalOut = 0;
  for (let k = 0; k < 3; k++) {
    const traceId = randomUUID();
    const question = `${sentence(15, 40)}?`;
    const answer = sentence(25, 70);
    const inTok = int(200, 2000);
    const outTok = int(20, 800);
    totalIn += inTok;
    totalOut += outTok;
    const dur = int(200, 8000) * 1_000_000;
    rows.push(
      {
        ...base('trace', traceId, t),
        trace_id: traceId,
        name: pick(['chat', 'checkout', 'support', 'search']),
        status_code: r() < 0.98 ? 200 : 500,
        duration_ns: dur,
        num_input_tokens: inTok,
        num_output_tokens: outTok,
        num_total_tokens: inTok + outTok,
        user_metadata: meta,
        input_text: question,
        output_text: answer,
        num_children: 2,
      },
      {
        ...base('llm', randomUUID(), t + 1000),
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
        input_text: `You are a helpful assistant.\n${question}`,
        output_text: answer,
      },
      {
        ...base('tool', randomUUID(), t + 2000),
        trace_id: traceId,
        parent_id: traceId,
        name: pick(['lookup_order', 'get_weather', 'search_docs', 'create_ticket']),
        status_code: 200,
        duration_ns: int(5, 500) * 1_000_000,
        input_text: `{"query": "${sentence(3, 8)}"}`,
        output_text: sentence(10, 30),
      },
    );
    t += 1_000_000 * int(1, 30);
  }
  rows.unshift({
    ...base('session', sessionId, t0),
    name: `session ${sessionId.slice(0, 8)}`,
    num_input_tokens: totalIn,
    num_output_tokens: totalOut,
    num_total_tokens: totalIn + totalOut,
    user_metadata: meta,
    num_children: 3,
  });
  return rows;
}

const COLUMNS = Object.keys(sessionRows('p', 'r', 0)[0]);

async function insertRows(running: Running, table: string, columns: string[], rows: Row[]): Promise<void> {
  const { store } = running.services;
  if (store.dialect === 'sqlite') {
    const h = store.sqlite!;
    const ins = h.prepare(
      `insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`,
    );
    h.transaction((list: Row[]) => {
      for (const row of list) ins.run(row);
    })(rows);
    return;
  }
  for (let i = 0; i < rows.length; i += 500) {
    const params: unknown[] = [];
    const tuples = rows
      .slice(i, i + 500)
      .map((row) => `(${columns.map((c) => `$${params.push(row[c])}`).join(', ')})`);
    await store.pool!.query(
      `insert into ${table} (${columns.join(', ')}) values ${tuples.join(', ')}`,
      params,
    );
  }
}

async function load(running: Running, projectId: string, runId: string, others: string[]): Promise<void> {
  const started = performance.now();
  let written = 0;
  const step = (SPAN * 1e6) / SESSIONS;
  for (let s = 0; s < SESSIONS; s += 1000) {
    const rows: Row[] = [];
    for (let k = s; k < Math.min(SESSIONS, s + 1000); k++)
      rows.push(...sessionRows(projectId, runId, Math.floor(T0 * 1e6 + k * step)));
    await insertRows(running, 'records', COLUMNS, rows);
    written += rows.length;
    if (s % 20000 === 0) process.stdout.write(`\r  loading ${written} records`);
  }
  const secs = (performance.now() - started) / 1000;
  console.log(
    `\r  loaded ${written} records in ${secs.toFixed(1)} s (${Math.round(written / secs)} records/s)`,
  );

  // Token usage: 10 years of days for the bench log stream, one year for each of the others.
  const usage = (logStreamId: string, days: number): Row[] =>
    Array.from({ length: days }, (_, i) => {
      const day = Date.UTC(2016, 0, 1) * 1000 + i * DAY_US;
      return {
        id: randomUUID(),
        project_id: projectId,
        log_stream_id: logStreamId,
        day,
        input_tokens: int(0, 1e7),
        output_tokens: int(0, 1e6),
        cache_read_input_tokens: int(0, 1e5),
        cache_creation_input_tokens: int(0, 1e4),
        created_at: day,
        updated_at: day + int(0, DAY_US - 1),
      };
    });
  const uCols = Object.keys(usage(runId, 1)[0]);
  await insertRows(running, 'token_usage', uCols, usage(runId, 3653));
  for (const o of others) await insertRows(running, 'token_usage', uCols, usage(o, 365));
  console.log(`  token usage: 3653 days for the log stream, 365 days for each of ${others.length} others`);
  if (running.services.store.dialect === 'postgres') await running.services.store.pool!.query('analyze');
  else running.services.store.sqlite!.exec('analyze');
  // The records went in around ingestion: their dashboard rollups are built from them, as for a log
  // stream whose records came before rollups (timed: what a first dashboard starts in the background).
  const t = performance.now();
  await new RollupsRepo(running.services.store).rebuild(runId, 24);
  console.log(`  rollups rebuilt from the records in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

// ---------------------------------------------------------------------------------------------
// Timing

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99) };
};
const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1)).padStart(7);

async function time(n: number, f: () => Promise<unknown>, budgetMs = 60_000): Promise<number[]> {
  for (let i = 0; i < Math.min(3, n); i++) await f();
  const out: number[] = [];
  const deadline = performance.now() + budgetMs;
  for (let i = 0; i < n && performance.now() < deadline; i++) {
    const t = performance.now();
    await f();
    out.push(performance.now() - t);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

const WIDGETS = [
  { name: 'Requests', type: 'line_chart', metric: 'id', aggregation: 'Count' },
  { name: 'Mean latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'Average' },
  { name: 'p95 latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'P95' },
  { name: 'Tokens', type: 'bar_chart', metric: 'num_total_tokens', aggregation: 'Sum' },
];

/** A filter every record passes: the same dashboard answered by a scan (the rollups take no filters). */
const EVERYTHING = { filter: { column_id: 'created_at', operator: 'gte', value: '1970-01-01T00:00:00Z' } };

const SETTINGS: { name: string; body: Row; limitMs?: number }[] = [
  {
    name: 'group_by user_metadata/customer',
    body: { group_by: 'user_metadata/customer', filter_tree: null },
    limitMs: 300,
  },
  {
    name: 'the same, by scan',
    body: { group_by: 'user_metadata/customer', filter_tree: EVERYTHING },
  },
  { name: 'group_by name (target)', body: { group_by: 'name', filter_tree: null }, limitMs: 300 },
  { name: 'no group_by', body: { group_by: null, filter_tree: null } },
  { name: 'group_by user_metadata/region', body: { group_by: 'user_metadata/region', filter_tree: null } },
  {
    name: 'group_by model, type = llm',
    body: { group_by: 'model', filter_tree: { filter: { column_id: 'type', operator: 'eq', value: 'llm' } } },
  },
];

const TOKEN_QUERIES: { name: string; body: Row | undefined }[] = [
  { name: 'no body (newest 100 days)', body: undefined },
  {
    name: 'created_at ≥, ascending',
    body: {
      filters: [{ name: 'created_at', operator: 'gte', value: '2020-01-01T00:00:00Z' }],
      sort: { name: 'created_at', ascending: true },
    },
  },
  {
    name: 'updated_at < and created_at >',
    body: {
      filters: [
        { name: 'updated_at', operator: 'lt', value: '2024-01-01T00:00:00Z' },
        { name: 'created_at', operator: 'gt', value: '2023-01-01T00:00:00Z' },
      ],
      limit: 1000,
    },
  },
  { name: 'page at 3,000', body: { starting_token: 3000, limit: 100 } },
];

async function main() {
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
  const running = await startServices(config, { logger: false });
  await running.app.listen({ port: PORT, host: '127.0.0.1' });
  const key = fs.readFileSync(path.join(DATA_DIR, 'initial-admin-key'), 'utf8').trim();
  const origin = `http://127.0.0.1:${PORT}`;
  const send = (method: string, url: string, body?: unknown) =>
    fetch(origin + url, {
      method,
      headers: {
        'service-api-key': key,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const call = async (method: string, url: string, body?: unknown) => {
    // A kept-alive connection the server closed while the data loaded fails once: send again.
    const res = await send(method, url, body).catch(() => send(method, url, body));
    const json = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`${method} ${url} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  console.log(
    `dashboards benchmark [${STORE}], ${SESSIONS * 10} records (${SESSIONS} sessions) over ${DAYS} days, port ${PORT}`,
  );
  let projectId: string;
  let runId: string;
  if (fresh) {
    projectId = (await call('POST', '/v2/projects', { name: 'bench-dashboards' })).id;
    runId = (await call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'prod' })).id;
    const others: string[] = [];
    for (let i = 0; i < 200; i++)
      others.push((await call('POST', `/v2/projects/${projectId}/log_streams`, { name: `ls-${i}` })).id);
    await load(running, projectId, runId, others);
    fs.writeFileSync(path.join(DATA_DIR, 'bench-ready.json'), JSON.stringify({ projectId, runId }));
  } else {
    ({ projectId, runId } = JSON.parse(fs.readFileSync(path.join(DATA_DIR, 'bench-ready.json'), 'utf8')));
    console.log('  reusing the data set in', DATA_DIR);
  }
  // The days' rollup rows, which the fold job builds once a day has been quiet for a minute.
  const tDays = performance.now();
  let days = 0;
  for (;;) {
    const n = await running.services.rollups.buildDays({ quietUs: 0 });
    if (!n) break;
    days += n;
  }
  if (days)
    console.log(`  ${days} days' rollup rows built in ${((performance.now() - tDays) / 1000).toFixed(1)} s`);
  // The text indexer works through the new rows in the background; let it finish first so that it
  // does not share the CPU with the timings.
  const { indexer } = running.services.search;
  if (indexer.enabled && (await indexer.pending()) > 0) {
    await indexer.stop();
    const t = performance.now();
    await indexer.drain();
    console.log(`  (text index brought up to date in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
  }

  const base = `/v2/projects/${projectId}/log_streams/${runId}/trends`;
  const dash = await call('PUT', base, {
    name: 'bench',
    start_time: T0,
    end_time: T0 + SPAN,
    interval_mins: INTERVAL_MINS,
  });
  if (dash.widgets.length === 0) for (const w of WIDGETS) await call('POST', `${base}/${dash.id}/widgets`, w);

  // The floor: counting the records of the range, raw, in this process.
  const { store } = running.services;
  const countSql =
    'select count(*) as n from records where run_id = $1 and created_at >= $2 and created_at < $3';
  const countArgs = [runId, T0 * 1e6, (T0 + SPAN) * 1e6];
  const raw =
    store.dialect === 'postgres'
      ? () => store.pool!.query(countSql, countArgs)
      : (() => {
          const st = store.sqlite!.prepare(countSql.replace(/\$\d/g, '?'));
          return async () => st.get(...countArgs);
        })();
  const floor = stats(await time(ITER, raw));

  console.log(
    `\n  ${`dashboard query, 4 widgets, ${Math.ceil((DAYS * 1440) / INTERVAL_MINS)} buckets`.padEnd(42)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} │ groups │ p95 / count(*) p95 │ by     │ target`,
  );
  const results: Row[] = [{ countRange: floor }];
  const fallbacks = new Map<string, string>();
  const answers = new Map<string, any>();
  for (const s of SETTINGS) {
    await call('PUT', `${base}?trends_dashboard_id=${dash.id}`, s.body);
    let groups = 0;
    let checksum = 0;
    let by = '';
    const xs = await time(ITER, async () => {
      const out = await call('POST', `${base}/${dash.id}/query`);
      groups = out.groups.length;
      checksum = out.widgets[0].series.reduce((a: number, x: any) => a + x.total, 0);
      by = out.answered_by;
      if (out.fallback_reason && !fallbacks.has(s.name)) fallbacks.set(s.name, out.fallback_reason);
      answers.set(s.name, out);
    });
    const a = stats(xs);
    const limit = s.limitMs && STORE === 'sqlite' ? s.limitMs : null;
    const verdict = limit === null ? '' : `p95 ≤ ${limit} ms ${a.p95 <= limit ? 'ok' : 'MISSED'}`;
    console.log(
      `  ${s.name.padEnd(42)} ${fmt(a.p50)} ${fmt(a.p95)} ${fmt(a.p99)} │ ${String(groups).padStart(6)} │ ${(a.p95 / floor.p95).toFixed(1).padStart(18)} │ ${by.padEnd(6)} │ ${verdict}`,
    );
    results.push({ setting: s.name, ...a, groups, records: checksum, limitMs: limit, answeredBy: by });
  }
  for (const [name, reason] of fallbacks) console.log(`  scanned "${name}": ${reason}`);
  // The rollup's answer against the scan's: Count, Average and Sum equal, P95 within 1%.
  const byRollup = answers.get(SETTINGS[0].name);
  const byScan = answers.get(SETTINGS[1].name);
  let worst = 0;
  let unequal = 0;
  for (const [wi, w] of byRollup.widgets.entries()) {
    for (const [gi, x] of w.series.entries()) {
      const y = byScan.widgets[wi].series[gi];
      const pairs: [number | null, number | null][] = x.values.map((v: number | null, k: number) => [
        v,
        y.values[k],
      ]);
      pairs.push([x.total, y.total]);
      for (const [v, e] of pairs) {
        if (v === null || e === null) {
          if (v !== e) unequal++;
          continue;
        }
        const rel = Math.abs(v - e) / Math.max(1e-12, Math.abs(e));
        if (w.aggregation === 'P95') worst = Math.max(worst, rel);
        else if (rel > 1e-9) unequal++;
      }
    }
  }
  console.log(
    `  rollup vs scan (grouped by customer): ${unequal} values differ beyond 1e-9 (Count, Average, Sum); P95 worst relative error ${(worst * 100).toFixed(3)}%`,
  );
  console.log(
    `  ${'(raw count(*) of the range)'.padEnd(42)} ${fmt(floor.p50)} ${fmt(floor.p95)} ${fmt(floor.p99)}`,
  );

  console.log(
    `\n  ${'token usage'.padEnd(42)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} │ rows │ target`,
  );
  const url = `/v2/projects/${projectId}/log_streams/${runId}/logstream_insights/token_usage`;
  for (const q of TOKEN_QUERIES) {
    let rows = 0;
    const a = stats(
      await time(ITER * 10, async () => {
        rows = (await call('POST', url, q.body)).token_usages.length;
      }),
    );
    console.log(
      `  ${q.name.padEnd(42)} ${fmt(a.p50)} ${fmt(a.p95)} ${fmt(a.p99)} │ ${String(rows).padStart(4)} │ p95 ≤ 10 ms ${a.p95 <= 10 ? 'ok' : 'MISSED'}`,
    );
    results.push({ tokenUsage: q.name, ...a, rows });
  }

  fs.writeFileSync(path.join(DATA_DIR, 'bench-results.json'), JSON.stringify(results, null, 2));
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
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
