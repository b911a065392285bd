/**
 * Lifecycle benchmark: `npm run bench:lifecycle -- [--store sqlite|postgres] [--records N] [--port N]`.
 *
 * On one real server (child process), with generated data (bench/lib/data.ts: 5 records per trace):
 * 1. loads N records into log stream A, N/4 into B and N/4 into D (setup; its rate is printed, not
 *    judged);
 * 2. export: POST /export_records of A's traces (JSON lines, each trace with its spans), read to the
 *    end: records/s and the server's memory during it (resident set above its level before), against
 *    a raw read of the same rows straight from the store in this process;
 * 3. ingestion alone: N/5 records into log stream C, records/s;
 * 4. delete alone: POST /traces/delete of all of B: records deleted/s and the server's memory, against
 *    a raw delete of D's records through the store layer (batches of 200 traces by trace id, nothing
 *    derived);
 * 5. delete beside ingestion: all of A deleted while ingestion goes on into C: ingestion's rate
 *    meanwhile beside its rate alone, and the delete's rate.
 * PostgreSQL: SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL (a schema is created and dropped).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { DataGen, RECORDS_PER_TRACE, TraceTemplates } from './lib/data.ts';
import { call, createPgSchema, dropPgSchema, poster, startChildServer } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '1000000' },
    port: { type: 'string', default: '' },
    concurrency: { type: 'string', default: '4' },
    batch: { type: 'string', default: '1000' },
  },
});
const store = args.store as 'sqlite' | 'postgres';
const total = Number(args.records);
const concurrency = Number(args.concurrency);
const batch = Number(args.batch);
const port = Number(args.port || (store === 'postgres' ? 18501 : 18500));
const pgUrl = process.env.SPANBASE_BENCH_DATABASE_URL ?? process.env.SPANBASE_TEST_DATABASE_URL;
if (store === 'postgres' && !pgUrl) {
  console.error('PostgreSQL needs SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL');
  process.exit(2);
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);

/** Resident set size of a process now, bytes. */
function rss(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The highest RSS seen while `work` runs, above the RSS at its start. */
async function memoryDuring<T>(
  pid: number | undefined,
  work: () => Promise<T>,
): Promise<{ out: T; rise: number; peak: number }> {
  const base = rss(pid);
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, rss(pid));
  }, 100);
  try {
    const out = await work();
    peak = Math.max(peak, rss(pid));
    return { out, rise: peak - base, peak };
  } finally {
    clearInterval(timer);
  }
}

const schema = `bench_${process.pid}_lifecycle`;
if (store === 'postgres') await createPgSchema(pgUrl as string, schema);
const server = await startChildServer({ port, store, databaseUrl: pgUrl, pgSchema: schema });
const pid = server.proc.pid;
console.log(`lifecycle benchmark: store=${store} records=${total} (${os.cpus().length} cores)`);

try {
  const p = await call(server, 'POST', '/v2/projects', { name: `bench-${Date.now()}` });
  const project = p.body.id as string;
  const stream = async (name: string) =>
    (await call(server, 'POST', `/v2/projects/${project}/log_streams`, { name })).body.id as string;
  const [A, B, C, D] = [await stream('a'), await stream('b'), await stream('c'), await stream('d')];
  const gen = new DataGen(11);
  const templates = new TraceTemplates(256, 11);
  const post = poster(server, concurrency);

  /** Posts about `records` records into a log stream (sessions of 1–5 traces) until done or `stop()`. */
  async function ingest(ls: string, records: number, stop: () => boolean = () => false) {
    let sent = 0;
    const worker = async () => {
      while (sent < records && !stop()) {
        const sessions: { id: string; name: string }[] = [];
        const traces: string[] = [];
        let n = 0;
        while (n < batch) {
          const s = gen.session();
          const id = crypto.randomUUID();
          sessions.push({ id, name: s.name });
          for (let t = 0; t < s.traces; t++) traces.push(templates.fill(id));
          n += 1 + s.traces * RECORDS_PER_TRACE;
        }
        sent += n;
        const body = Buffer.from(
          `{"log_stream_id":"${ls}","sessions":${JSON.stringify(sessions)},"traces":[${traces.join(',')}]}`,
        );
        const r = await post(`/v2/projects/${project}/traces`, body);
        if (r.status !== 200) throw new Error(`ingest: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { records: sent, ms: performance.now() - t0 };
  }

  const loadA = await ingest(A, total);
  const loadB = await ingest(B, Math.ceil(total / 4));
  const loadD = await ingest(D, Math.ceil(total / 4));
  const loaded = loadA.records + loadB.records + loadD.records;
  console.log(`setup: ${loaded} records loaded at ${rate(loaded, loadA.ms + loadB.ms + loadD.ms)}/s`);
  const count = async (ls: string) =>
    (await call(server, 'GET', `/v2/projects/${project}/log_streams/${ls}`)).body as {
      num_traces: number;
      num_spans: number;
    };
  const runA = await count(A);
  const recordsA = runA.num_traces + runA.num_spans;

  // --- export ---------------------------------------------------------------------------------
  const exp = await memoryDuring(pid, async () => {
    const t0 = performance.now();
    const res = await fetch(`${server.url}/v2/projects/${project}/export_records`, {
      method: 'POST',
      headers: { 'service-api-key': server.key, 'content-type': 'application/json' },
      body: JSON.stringify({ log_stream_id: A, root_type: 'trace', redact: false }),
    });
    if (res.status !== 200 || !res.body) throw new Error(`export: ${res.status} ${await res.text()}`);
    let bytes = 0;
    let lines = 0;
    let first = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      if (!first) first = performance.now() - t0;
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    return { bytes, lines, first, ms: performance.now() - t0 };
  });
  if (exp.out.lines !== runA.num_traces)
    throw new Error(`export: ${exp.out.lines} lines, ${runA.num_traces} traces`);
  const rawRead = await rawExport(A);
  console.log(
    `export: ${recordsA} records (${exp.out.lines} traces, ${mb(exp.out.bytes)}) in ${(exp.out.ms / 1000).toFixed(1)} s = ${rate(recordsA, exp.out.ms)} records/s, first bytes after ${exp.out.first.toFixed(0)} ms; server RSS +${mb(exp.rise)} (peak ${mb(exp.peak)})`,
  );
  console.log(
    `  raw read of the same rows: ${rate(rawRead.rows, rawRead.ms)} records/s; ratio export / raw = ${(rate(recordsA, exp.out.ms) / rate(rawRead.rows, rawRead.ms)).toFixed(2)}`,
  );

  // --- delete alone ----------------------------------------------------------------------------
  const runB = await count(B);
  const recordsB = runB.num_traces + runB.num_spans;
  // node:http, which waits as long as the delete takes (fetch gives up on an answer after 300 s).
  const postLong = poster(server, 1);
  const deleteAll = async (ls: string) => {
    const t0 = performance.now();
    const r = await postLong(
      `/v2/projects/${project}/traces/delete`,
      Buffer.from(JSON.stringify({ log_stream_id: ls })),
    );
    if (r.status !== 200) throw new Error(`delete: ${r.status} ${JSON.stringify(r.body)}`);
    if ((await count(ls)).num_traces !== 0) throw new Error('the delete left traces');
    return { ms: performance.now() - t0, message: r.body.message as string };
  };
  const delAlone = await memoryDuring(pid, () => deleteAll(B));
  const rawDel = await rawDelete(D);
  console.log(
    `delete: ${recordsB} records in ${(delAlone.out.ms / 1000).toFixed(1)} s = ${rate(recordsB, delAlone.out.ms)} records/s (${delAlone.out.message}); server RSS +${mb(delAlone.rise)} (peak ${mb(delAlone.peak)})`,
  );
  console.log(
    `  raw delete (store layer, nothing derived): ${rate(rawDel.rows, rawDel.ms)} records/s; ratio delete / raw = ${(rate(recordsB, delAlone.out.ms) / rate(rawDel.rows, rawDel.ms)).toFixed(2)}`,
  );

  // --- ingestion alone, then beside a large delete -------------------------------------------------
  const alone = await ingest(C, Math.ceil(total / 5));
  let deleting = true;
  const beside = ingest(C, Number.MAX_SAFE_INTEGER, () => !deleting);
  const del = await deleteAll(A).finally(() => {
    deleting = false;
  });
  const during = await beside;
  console.log(
    `ingestion beside a delete of ${recordsA} records: ${rate(during.records, during.ms)} records/s, alone ${rate(alone.records, alone.ms)} (ratio ${(rate(during.records, during.ms) / rate(alone.records, alone.ms)).toFixed(2)}); the delete meanwhile ${rate(recordsA, del.ms)} records/s`,
  );
} finally {
  await server.stop();
  if (store === 'postgres') await dropPgSchema(pgUrl as string, schema);
  fs.rmSync(server.dataDir, { recursive: true, force: true });
}

/** Every row of a run read straight from the store, newest first (the export's order). */
async function rawExport(runId: string): Promise<{ rows: number; ms: number }> {
  const text = 'select * from records where run_id = $1 order by created_at desc, id desc';
  const t0 = performance.now();
  let rows = 0;
  if (store === 'sqlite') {
    const db = new SQLite(path.join(server.dataDir, 'spanbase.db'), { readonly: true });
    for (const _ of db.prepare(text.replace('$1', '?')).iterate(runId)) rows++;
    db.close();
  } else {
    const c = new pg.Client({ connectionString: pgUrl, options: `-c search_path=${schema}` });
    await c.connect();
    await c.query('begin');
    await c.query({ text: `declare raw cursor for ${text}`, values: [runId] });
    for (;;) {
      const r = await c.query('fetch 1000 from raw');
      rows += r.rowCount ?? 0;
      if (!r.rowCount) break;
    }
    await c.query('commit');
    await c.end();
  }
  return { rows, ms: performance.now() - t0 };
}

/** A run's records deleted straight through the store: batches of 200 traces by trace id, then its sessions. */
async function rawDelete(runId: string): Promise<{ rows: number; ms: number }> {
  let rows = 0;
  let ms = 0;
  if (store === 'sqlite') {
    const db = new SQLite(path.join(server.dataDir, 'spanbase.db'));
    db.pragma('busy_timeout = 5000');
    const ids = db
      .prepare("select id from records where run_id = ? and type = 'trace'")
      .pluck()
      .all(runId) as string[];
    const del = db.prepare('delete from records where trace_id in (select value from json_each(?))');
    for (let i = 0; i < ids.length; i += 200) {
      const t0 = performance.now();
      rows += db.transaction(() => del.run(JSON.stringify(ids.slice(i, i + 200))).changes)();
      ms += performance.now() - t0;
    }
    const t0 = performance.now();
    rows += db.prepare("delete from records where run_id = ? and type = 'session'").run(runId).changes;
    ms += performance.now() - t0;
    db.close();
  } else {
    const c = new pg.Client({ connectionString: pgUrl, options: `-c search_path=${schema}` });
    await c.connect();
    const { rows: ids } = await c.query("select id from records where run_id = $1 and type = 'trace'", [
      runId,
    ]);
    for (let i = 0; i < ids.length; i += 200) {
      const t0 = performance.now();
      const r = await c.query('delete from records where trace_id = any($1::text[])', [
        ids.slice(i, i + 200).map((x) => x.id),
      ]);
      rows += r.rowCount ?? 0;
      ms += performance.now() - t0;
    }
    const t0 = performance.now();
    rows +=
      (await c.query("delete from records where run_id = $1 and type = 'session'", [runId])).rowCount ?? 0;
    ms += performance.now() - t0;
    await c.end();
  }
  return { rows, ms };
}
