/**
 * Ingest benchmark: `npm run bench:ingest -- [--store sqlite|postgres] [--records N] [--batch N]
 * [--concurrency N] [--port N] [--profile default|metadata] [--rounds N]`.
 *
 * --profile metadata: records of about 2.6 KB, each with 20 user_metadata keys, 10 of few values and
 * 10 of many (user, request, conversation and device ids…, new for every request or record: see
 * bench/lib/data.ts), sent by 4 clients in requests of about 50 records (the defaults of --batch and
 * --concurrency under this profile). After the phases it also times a dashboard grouped by a
 * few-valued and by a many-valued key (--dashboard-iterations, 0 to skip) and says whether rollups or
 * a scan answered it.
 *
 * 1. Starts a real server (child process) on the chosen store and posts generated data over HTTP:
 *    each job posts about --batch records in one POST /traces: sessions of 1–5 traces (created in the
 *    batch with the `sessions` extension, or with --session-requests each by its own POST /sessions
 *    first, as the hosted API's clients do) and their traces. Several jobs run at once (--concurrency).
 * 2. Raw baseline, in the same run: the same rows (same seed) written straight through the store layer
 *    (multi-row inserts in one transaction per batch; no HTTP, no validation, no derived data) into a
 *    fresh store; on PostgreSQL over --concurrency connections at once, as the HTTP phase's clients.
 * Prints records/s of both, their ratio, p50/p95 per request, disk against the JSON received, and the
 * server's peak RSS. With --rounds N both phases run N times in turn and the median ratio is printed
 * last (this machine's speed drifts by a fifth within minutes, and a ratio of two phases run once
 * each moves with it).
 * PostgreSQL: SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL (a schema is created and dropped).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { Planner } from '../src/domain/ingest-plan.ts';
import { parseTracesRequest } from '../src/domain/ingest.ts';
import type { RecordRow } from '../src/domain/records.ts';
import { openStore } from '../src/store/db.ts';
import { ingestStore } from '../src/store/ingest.ts';
import { migrate } from '../src/store/migrate.ts';
import { sql } from 'kysely';
import { DataGen, type DataProfile, RECORDS_PER_TRACE, TraceTemplates } from './lib/data.ts';
import {
  call,
  createPgSchema,
  dirFiles,
  dropPgSchema,
  pgRelationBytes,
  poster,
  restingFiles,
  restingPgRelations,
  pgServerCpuMs,
  startChildServer,
  textBacklog,
} from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '200000' },
    /** Defaults: 1,000 records a request (default profile), 50 (metadata profile). */
    batch: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    profile: { type: 'string', default: 'default' },
    /** Times of each dashboard query after the HTTP phase (default 20 with --profile metadata, else 0). */
    'dashboard-iterations': { type: 'string' },
    port: { type: 'string', default: '18100' },
    'skip-raw': { type: 'boolean', default: false },
    /** Keep the HTTP phase's data directory (SQLite) and print its path, to look into the store. */
    keep: { type: 'boolean', default: false },
    'skip-http': { type: 'boolean', default: false },
    /**
     * Create each session with its own POST /sessions (what the hosted API's clients do) instead of
     * in the batch (`sessions` in POST /traces, a Spanbase extension).
     */
    'session-requests': { type: 'boolean', default: false },
    /** Diagnosis: indexes to drop (comma-separated) before either phase, e.g. the text indexes. */
    'drop-index': { type: 'string', default: '' },
    /** Diagnosis: triggers to drop (comma-separated), e.g. record_metadata_insert (the metadata index). */
    'drop-trigger': { type: 'string', default: '' },
    /**
     * Ingestion with the dashboard rollups against without (SPANBASE_ROLLUPS=off), same run: the
     * HTTP phase this many times each way, alternating (without first), then the ratio of the rates.
     */
    'rollups-compare': { type: 'string', default: '0' },
    /**
     * The HTTP phase and the raw baseline this many times, in turn, then the median of the rounds'
     * ratios: the machine's speed drifts between two phases run once each.
     */
    rounds: { type: 'string', default: '1' },
  },
});
const store = args.store as 'sqlite' | 'postgres';
const profile = args.profile as DataProfile;
if (profile !== 'default' && profile !== 'metadata') {
  console.error('--profile is default or metadata');
  process.exit(2);
}
const total = Number(args.records);
const batch = Number(args.batch ?? (profile === 'metadata' ? 50 : 1000));
const dashboardIterations = Number(args['dashboard-iterations'] ?? (profile === 'metadata' ? 20 : 0));
const concurrency = Number(args.concurrency);
const port = Number(args.port);
const pgUrl = process.env.SPANBASE_BENCH_DATABASE_URL ?? process.env.SPANBASE_TEST_DATABASE_URL;
if (store === 'postgres' && !pgUrl) {
  console.error('PostgreSQL needs SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL');
  process.exit(2);
}
/** PostgreSQL's CPU is counted only when its server runs on this machine. */
const LOCAL_DB = !!pgUrl && ['localhost', '127.0.0.1', '::1', '[::1]'].includes(new URL(pgUrl).hostname);
const SEED = 7;

interface Job {
  sessions: { body: { name: string; external_id: string }; traces: number }[];
  records: number;
}

/** Jobs of about `batch` records: whole sessions (the session record plus 5 records per trace). */
function* jobs(gen: DataGen): Generator<Job> {
  let left = total;
  while (left > 0) {
    const job: Job = { sessions: [], records: 0 };
    while (job.records < batch && left - job.records > 0) {
      const s = gen.session();
      job.sessions.push({ body: { name: s.name, external_id: s.external_id }, traces: s.traces });
      job.records += 1 + s.traces * RECORDS_PER_TRACE;
    }
    left -= job.records;
    yield job;
  }
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);

const dropIndexes = (args['drop-index'] as string).split(',').filter(Boolean);
const dropTriggers = (args['drop-trigger'] as string).split(',').filter(Boolean);

/**
 * Migrates a store and drops the indexes and triggers named by --drop-index and --drop-trigger (the
 * server then finds it migrated).
 */
async function prepareStore(config: ReturnType<typeof loadConfig>) {
  const s = openStore(config);
  await migrate(s);
  for (const name of dropIndexes) {
    if (!/^\w+$/.test(name)) throw new Error(`bad index name ${name}`);
    await sql.raw(`drop index if exists ${name}`).execute(s.db);
  }
  for (const name of dropTriggers) {
    if (!/^\w+$/.test(name)) throw new Error(`bad trigger name ${name}`);
    await sql.raw(`drop trigger if exists ${name}${store === 'postgres' ? ' on records' : ''}`).execute(s.db);
  }
  return s;
}

async function httpPhase(env: Record<string, string> = {}) {
  const schema = `bench_${process.pid}_http`;
  if (store === 'postgres') await createPgSchema(pgUrl as string, schema);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-bench-ingest-'));
  if (dropIndexes.length || dropTriggers.length) {
    const prepared = await prepareStore(
      loadConfig({
        SPANBASE_DATA_DIR: dataDir,
        ...(store === 'postgres' ? { SPANBASE_DATABASE_URL: pgUrl, SPANBASE_PG_SCHEMA: schema } : {}),
      }),
    );
    await prepared.close();
  }
  const server = await startChildServer({ port, store, databaseUrl: pgUrl, pgSchema: schema, dataDir, env });
  try {
    const p = await call(server, 'POST', '/v2/projects', { name: `bench-${Date.now()}` });
    const ls = await call(server, 'POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'bench' });
    const projectId = p.body.id as string;
    const logStreamId = ls.body.id as string;
    const gen = new DataGen(SEED, profile);
    const templates = new TraceTemplates(256, SEED, profile);
    const from = templates.now;
    const batchSessions = !args['session-requests'];
    /** One POST /traces body; with --session-requests, its sessions are created first (timed). */
    const build = async (job: Job): Promise<Buffer> => {
      const created = batchSessions
        ? job.sessions.map(() => ({ status: 200, body: { id: crypto.randomUUID() } }))
        : await Promise.all(
            job.sessions.map((s) =>
              call(server, 'POST', `/v2/projects/${projectId}/sessions`, {
                log_stream_id: logStreamId,
                ...s.body,
              }),
            ),
          );
      if (!batchSessions) requests += created.length;
      const traces: string[] = [];
      job.sessions.forEach((s, i) => {
        if (created[i].status !== 200) throw new Error(`session: ${JSON.stringify(created[i].body)}`);
        for (let t = 0; t < s.traces; t++) traces.push(templates.fill(created[i].body.id));
      });
      const sessions = batchSessions
        ? `"sessions":${JSON.stringify(job.sessions.map((x, i) => ({ id: created[i].body.id, ...x.body })))},`
        : '';
      return Buffer.from(
        `{"log_stream_id":"${logStreamId}","is_complete":true,${sessions}"traces":[${traces.join(',')}]}`,
      );
    };
    // The bodies are built before the clock starts, as the raw phase builds its rows untimed: on this
    // machine the generator would otherwise take CPU from the server it measures (about 11 µs per
    // record). Only --session-requests, whose bodies need the ids the server gives, builds them as it goes.
    const it = jobs(gen);
    const prebuilt: { body: Buffer; records: number }[] = [];
    if (batchSessions) for (const job of it) prebuilt.push({ body: await build(job), records: job.records });
    prebuilt.reverse();
    const next = async (): Promise<{ body: Buffer; records: number } | null> => {
      if (batchSessions) return prebuilt.pop() ?? null;
      const job = it.next();
      return job.done ? null : { body: await build(job.value), records: job.value.records };
    };
    let records = 0;
    let requests = 0;
    let bytes = 0;
    const latencies: number[] = [];
    const sampler = setInterval(() => server.peakRss(), 200);
    const cpu0 = server.cpuMs();
    const db0 = dbCpuMs();
    const client0 = process.cpuUsage();
    const started = performance.now();
    let last = started;
    const post = poster(server, concurrency);
    const worker = async () => {
      for (;;) {
        const job = await next();
        if (!job) return;
        bytes += job.body.length;
        const t0 = performance.now();
        const r = await post(`/v2/projects/${projectId}/traces`, job.body);
        latencies.push(performance.now() - t0);
        requests++;
        if (r.status !== 200) throw new Error(`traces: ${r.status} ${JSON.stringify(r.body).slice(0, 500)}`);
        records += job.records;
        const now = performance.now();
        if (now - last > 5000) {
          last = now;
          process.stdout.write(
            `  … ${records} records, ${rate(records, now - started)}/s, server RSS peak ${mb(server.peakRss())}\n`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const ms = performance.now() - started;
    const burstCpu = server.cpuMs() - cpu0;
    // Searchable: the text index has caught up with every record (its backlog is 0), which is what a
    // user of `contains` waits for; the time after the last answer is the background work.
    while ((await textBacklog(server)) > 0) await new Promise((r) => setTimeout(r, 100));
    const searchableMs = performance.now() - started;
    const serverCpu = server.cpuMs() - cpu0;
    const dbCpu = dbCpuMs() - db0;
    const c = process.cpuUsage(client0);
    const clientCpu = (c.user + c.system) / 1000;
    clearInterval(sampler);
    const peak = server.peakRss();
    // Disk: at the end of the burst (the write-ahead logs at their largest), and at rest, once the
    // server has truncated its WALs after 10 s without writes, or (PostgreSQL) vacuumed its text
    // queue (waited for up to 30 s).
    const sizes = async () =>
      store === 'sqlite' ? dirFiles(dataDir) : await pgRelationBytes(pgUrl as string, schema);
    const total = (f: Record<string, number>) => Object.values(f).reduce((a, b) => a + b, 0);
    const busyDisk = total(await sizes());
    const files =
      store === 'sqlite' ? await restingFiles(dataDir) : await restingPgRelations(pgUrl as string, schema);
    const disk = total(files);
    const check = await call(server, 'GET', `/v2/projects/${projectId}/log_streams/${logStreamId}`);
    const stored = Number(check.body.num_traces) * RECORDS_PER_TRACE;
    const sessions = records - stored;
    const dashboards = dashboardIterations
      ? await dashboardTimes(server, projectId, logStreamId, from, templates.now)
      : [];
    latencies.sort((a, b) => a - b);
    const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    return {
      p50: pct(0.5),
      p95: pct(0.95),
      dashboards,
      records,
      ms,
      searchableMs,
      peak,
      requests,
      bytes,
      stored,
      sessions,
      burstCpu,
      serverCpu,
      dbCpu,
      clientCpu,
      disk,
      busyDisk,
      files,
    };
  } finally {
    await server.stop();
    // On PostgreSQL the data directory still holds the admin and secret keys.
    if (store === 'postgres' && !args.keep) await dropPgSchema(pgUrl as string, schema);
    if (args.keep)
      console.log(`kept: ${server.dataDir}${store === 'postgres' ? ` and schema ${schema}` : ''}`);
    else fs.rmSync(server.dataDir, { recursive: true, force: true });
  }
}

/** The widgets of bench:dashboards: Count, Average, P95, Sum. */
const WIDGETS = [
  { name: 'Requests', type: 'line_chart', metric: 'id', aggregation: 'Count' },
  { name: 'Mean latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'Average' },
  { name: 'p95 latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'P95' },
  { name: 'Tokens', type: 'bar_chart', metric: 'num_total_tokens', aggregation: 'Sum' },
];

/**
 * A dashboard over the records' hours grouped by a few-valued metadata key and by a many-valued one
 * (past the rollups' value cap): p50 and p95 of its query, and what answered it (rollup or scan).
 */
async function dashboardTimes(
  server: { url: string; key: string },
  projectId: string,
  logStreamId: string,
  fromMs: number,
  toMs: number,
) {
  const base = `/v2/projects/${projectId}/log_streams/${logStreamId}/trends`;
  const hour = 3_600_000;
  const dash = await call(server, 'PUT', base, {
    name: 'bench',
    start_time: Math.floor(fromMs / hour) * 3600,
    end_time: Math.ceil((toMs + 1) / hour) * 3600,
    interval_mins: 60,
  });
  if (dash.status !== 200) throw new Error(`dashboard: ${JSON.stringify(dash.body)}`);
  const id = dash.body.id as string;
  for (const w of WIDGETS) await call(server, 'POST', `${base}/${id}/widgets`, w);
  const out: {
    groupBy: string;
    p50: number;
    p95: number;
    by: string;
    reason: string | null;
    groups: number;
  }[] = [];
  for (const groupBy of ['user_metadata/plan', 'user_metadata/user_id']) {
    await call(server, 'PUT', `${base}?trends_dashboard_id=${id}`, { group_by: groupBy, filter_tree: null });
    const xs: number[] = [];
    let last: any = null;
    for (let i = 0; i < dashboardIterations; i++) {
      const t = performance.now();
      const r = await call(server, 'POST', `${base}/${id}/query`);
      xs.push(performance.now() - t);
      if (r.status !== 200) throw new Error(`dashboard query: ${JSON.stringify(r.body).slice(0, 300)}`);
      last = r.body;
    }
    xs.sort((a, b) => a - b);
    out.push({
      groupBy,
      p50: xs[Math.floor(xs.length / 2)],
      p95: xs[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))],
      by: last.answered_by,
      reason: last.fallback_reason,
      groups: last.groups.length,
    });
  }
  return out;
}

async function rawPhase() {
  const schema = `bench_${process.pid}_raw`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-raw-'));
  if (store === 'postgres') await createPgSchema(pgUrl as string, schema);
  const config = loadConfig({
    SPANBASE_DATA_DIR: dir,
    ...(store === 'postgres' ? { SPANBASE_DATABASE_URL: pgUrl, SPANBASE_PG_SCHEMA: schema } : {}),
  });
  const s = await prepareStore(config);
  try {
    const projectId = crypto.randomUUID();
    const runId = crypto.randomUUID();
    const now = Date.now() * 1000;
    await s.db
      .insertInto('projects')
      .values({
        id: projectId,
        name: 'raw',
        type: 'gen_ai',
        created_by: 'bench',
        created_at: now,
        updated_at: now,
      })
      .execute();
    await s.db
      .insertInto('runs')
      .values({
        id: runId,
        project_id: projectId,
        kind: 'log_stream',
        name: 'raw',
        created_by: 'bench',
        created_at: now,
        updated_at: now,
        num_traces: 0,
        num_spans: 0,
        has_user_created_sessions: 0,
      })
      .execute();
    const ingest = ingestStore(s);
    const gen = new DataGen(SEED, profile);
    let records = 0;
    let ms = 0;
    let cpu = 0;
    let dbCpu = 0;
    // PostgreSQL: the batches go in over as many connections as the HTTP phase had clients
    // (--concurrency), each its own transaction, as a plain loader would. SQLite has one writer:
    // one batch at a time.
    const width = store === 'postgres' ? concurrency : 1;
    const round: RecordRow[][] = [];
    const flush = async () => {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const db0 = dbCpuMs();
      let next = 0;
      await Promise.all(
        Array.from({ length: width }, async () => {
          while (next < round.length) await ingest.insertRaw(round[next++]);
        }),
      );
      const c = process.cpuUsage(c0);
      cpu += (c.user + c.system) / 1000;
      dbCpu += dbCpuMs() - db0;
      ms += performance.now() - t0;
      for (const rows of round) records += rows.length;
      round.length = 0;
    };
    for (const job of jobs(gen)) {
      // Building the rows is not timed: the baseline is the store write alone.
      const rows: RecordRow[] = [];
      const planner = new Planner({ projectId, runId, now, existing: new Map() });
      const traces: any[] = [];
      for (const sess of job.sessions) {
        const sid = planner.newSession({
          name: sess.body.name,
          externalId: sess.body.external_id,
          createdAt: now,
        });
        for (let t = 0; t < sess.traces; t++) traces.push(gen.trace(sid));
      }
      rows.push(...planner.finish().inserts);
      const req = parseTracesRequest({ log_stream_id: runId, traces }, {}, now);
      for (const r of req.records) {
        const trace = req.records[r.traceIndex];
        rows.push({ ...r.row, project_id: projectId, run_id: runId, session_id: trace.sessionId });
      }
      round.push(rows);
      if (round.length >= width * 8) await flush();
    }
    await flush();
    await ingest.close();
    return { records, ms, cpu, dbCpu };
  } finally {
    await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
    if (store === 'postgres') await dropPgSchema(pgUrl as string, schema);
  }
}

/**
 * PostgreSQL's CPU time so far (ms) when the bench's database runs on this machine, else 0: with the
 * server's and the loader's own, it says where a record's CPU goes on a machine whose cores all phases
 * share.
 */
function dbCpuMs(): number {
  return store === 'postgres' && LOCAL_DB ? pgServerCpuMs() : 0;
}

console.log(
  `ingest benchmark: store=${store} profile=${profile} records=${total} batch≈${batch} concurrency=${concurrency} (${os.cpus().length} cores, load ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')})`,
);
const compareRounds = Number(args['rollups-compare']);
if (compareRounds > 0) {
  const rates: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (let i = 0; i < compareRounds; i++) {
    for (const mode of ['off', 'on'] as const) {
      const h = await httpPhase({ SPANBASE_ROLLUPS: mode });
      rates[mode].push(rate(h.records, h.ms));
      console.log(
        `rollups ${mode.padEnd(3)}: ${h.records} records in ${(h.ms / 1000).toFixed(1)} s = ${rate(h.records, h.ms)} records/s` +
          ` · searchable ${rate(h.records, h.searchableMs)} records/s · server CPU ${((h.burstCpu * 1000) / h.records).toFixed(1)} µs/record · peak RSS ${mb(h.peak)} · disk ${mb(h.disk)}`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const on = median(rates.on);
  const off = median(rates.off);
  console.log(
    `rollups: with ${on} records/s, without ${off} records/s (medians of ${compareRounds}) = ${(on / off).toFixed(2)}× (target ≥ 0.9)` +
      ` · rounds: with ${rates.on.join(', ')} · without ${rates.off.join(', ')}`,
  );
  process.exit(0);
}
/** One round: the HTTP phase, then the raw baseline; the rates each measured (null when skipped). */
async function round(): Promise<{ searchable: number | null; raw: number | null }> {
  let http: Awaited<ReturnType<typeof httpPhase>> | null = null;
  if (!args['skip-http']) {
    http = await httpPhase();
    console.log(
      `HTTP:  ${http.records} records (${http.sessions} sessions) in ${(http.ms / 1000).toFixed(1)} s = ${rate(http.records, http.ms)} records/s` +
        ` · ${http.requests} requests · ${mb(http.bytes)} of JSON (${Math.round(http.bytes / http.records)} B/record) · server peak RSS ${mb(http.peak)}`,
    );
    console.log(`per request: p50 ${http.p50.toFixed(0)} ms · p95 ${http.p95.toFixed(0)} ms`);
    const after = http.searchableMs - http.ms;
    console.log(
      `searchable: ${(http.searchableMs / 1000).toFixed(1)} s = ${rate(http.records, http.searchableMs)} records/s` +
        ` · background after the burst ${(after / 1000).toFixed(1)} s = ${(after / http.ms).toFixed(2)}× the burst (target ≤ 0.25)` +
        ` · searchable / burst rate ${(http.ms / http.searchableMs).toFixed(2)} (target ≥ 0.8)`,
    );
    console.log(
      `disk at rest: ${mb(http.disk)} for ${mb(http.bytes)} of JSON received = ${(http.disk / http.bytes).toFixed(2)}× (target ≤ 1.5)` +
        ` · ${Math.round(http.disk / http.records)} B/record · right after the burst ${mb(http.busyDisk)} (${(http.busyDisk / http.bytes).toFixed(2)}×)`,
    );
    const big = Object.entries(http.files).filter(([, b]) => b > 1024 * 1024);
    console.log(`       ${big.map(([f, b]) => `${f} ${mb(b)}`).join(' · ')}`);
    console.log(
      `       server CPU ${((http.burstCpu * 1000) / http.records).toFixed(1)} µs/record in the burst, ` +
        `${((http.serverCpu * 1000) / http.records).toFixed(1)} until searchable, ` +
        `bench client CPU ${((http.clientCpu * 1000) / http.records).toFixed(1)} µs/record` +
        (store === 'postgres' && LOCAL_DB
          ? `, PostgreSQL CPU ${((http.dbCpu * 1000) / http.records).toFixed(1)} µs/record until searchable`
          : ''),
    );
    for (const d of http.dashboards)
      console.log(
        `dashboard (4 widgets, hourly) grouped by ${d.groupBy}: p50 ${d.p50.toFixed(0)} ms · p95 ${d.p95.toFixed(0)} ms · ${d.groups} groups · by ${d.by}${d.reason ? ` (${d.reason})` : ''}`,
      );
  }
  let rawRate: number | null = null;
  if (!args['skip-raw']) {
    const raw = await rawPhase();
    rawRate = rate(raw.records, raw.ms);
    console.log(
      `raw:   ${raw.records} records in ${(raw.ms / 1000).toFixed(1)} s = ${rate(raw.records, raw.ms)} records/s (store layer only, ${store === 'postgres' ? `${concurrency} connections` : 'one writer'})` +
        ` · loader CPU ${((raw.cpu * 1000) / raw.records).toFixed(1)} µs/row` +
        (store === 'postgres' && LOCAL_DB
          ? ` · PostgreSQL CPU ${((raw.dbCpu * 1000) / raw.records).toFixed(1)} µs/row`
          : ''),
    );
    if (http) {
      console.log(
        `ratio: HTTP / raw = ${(rate(http.records, http.ms) / rate(raw.records, raw.ms)).toFixed(2)}` +
          ` · searchable / raw = ${(rate(http.records, http.searchableMs) / rate(raw.records, raw.ms)).toFixed(2)}`,
      );
      console.log(
        `summary [${store}, ${profile}]: searchable ${rate(http.records, http.searchableMs)} records/s · raw ${rate(raw.records, raw.ms)} rows/s` +
          ` · ratio ${(rate(http.records, http.searchableMs) / rate(raw.records, raw.ms)).toFixed(2)} · p95 ${http.p95.toFixed(0)} ms/request` +
          ` · disk ${(http.disk / http.bytes).toFixed(2)}× JSON · peak RSS ${mb(http.peak)} · load ${os
            .loadavg()
            .map((x) => x.toFixed(2))
            .join(' ')}`,
      );
    }
  }
  return {
    searchable: http ? rate(http.records, http.searchableMs) : null,
    raw: rawRate,
  };
}

const rounds = Number(args.rounds);
const ratios: number[] = [];
for (let i = 0; i < rounds; i++) {
  if (rounds > 1) console.log(`round ${i + 1} of ${rounds}`);
  const r = await round();
  if (r.searchable !== null && r.raw !== null) ratios.push(r.searchable / r.raw);
}
if (ratios.length > 1) {
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `ratio over ${ratios.length} rounds (searchable / raw, each round's phases in turn): median ${sorted[Math.floor((sorted.length - 1) / 2)].toFixed(2)}` +
      ` · rounds ${ratios.map((x) => x.toFixed(2)).join(', ')}`,
  );
}
