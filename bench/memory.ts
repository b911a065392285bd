/**
 * Memory in every phase (issue 37, item 2; target: peak RSS at most 600 MB in each, and no growth
 * over a soak of all of them at once). A real server (child process, loopback) is grown to --records
 * over HTTP, then each phase runs on its own for up to --seconds with the server's peak RSS of that
 * phase (VmHWM, reset before each through /proc/PID/clear_refs):
 *
 * 1. ingesting (the growth itself, four clients flat out);
 * 2. searching (sessions, traces and spans, with and without filters, four clients);
 * 3. a 4-widget dashboard over every record grouped by a metadata key, answered by the rollups;
 * 4. the same dashboard answered by a scan (a filter the rollups cannot take);
 * 5. exporting every trace of the log stream as JSON lines (read and dropped by the client);
 * 6. a rule scorer recomputed over every record;
 * 7. the experiment queue: a prompt template run over a 2,000-row dataset against the fake provider
 *    (200 ms a call);
 * 8. the scorer queue: an LLM judge's backlog (the traces of one customer) against the fake provider;
 * 9. all of them at once for --soak seconds (ingestion paced at --soak-rate records/s), RSS and its
 *    private part (RssAnon, where a leak shows) sampled every 10 s, with the private part's trend
 *    over the second half, and the RSS by kind of mapping (`memoryMap`) every minute.
 *
 *   npm run bench:memory                                        # SQLite, 1,000,000 records, 10-minute soak
 *   npm run bench:memory -- --store postgres
 *   npm run bench:memory -- --records 100000 --seconds 20 --soak 60
 *   npm run bench:memory -- --data-dir DIR --records 0          # SQLite: over an existing store (kept)
 *   npm run bench:memory -- --data-dir DIR --records 0 --phases scan,export --soak 0   # some phases only
 *   npm run bench:memory -- --data-dir DIR --records 0 --phases "" --soak 600           # the soak only
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { startFakeProvider } from '../test/helpers/fake-provider.ts';
import { DataGen, RECORDS_PER_TRACE, TraceTemplates } from './lib/data.ts';
import { slope } from './lib/report.ts';
import {
  type ChildServer,
  call,
  createPgSchema,
  dropPgSchema,
  poster,
  startChildServer,
  textBacklog,
} from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '60' },
    soak: { type: 'string', default: '600' },
    'soak-rate': { type: 'string', default: '2000' },
    port: { type: 'string', default: '18800' },
    'data-dir': { type: 'string' },
    /** The phases to run, of PHASES (all by default; the soak runs when --soak is over 0). */
    phases: { type: 'string' },
    'database-url': { type: 'string' },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const RECORDS = Number(args.records);
const PHASE_MS = Number(args.seconds) * 1000;
const SOAK_MS = Number(args.soak) * 1000;
const SOAK_RATE = Number(args['soak-rate']);
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `bench_memory_${process.pid}`;
const LIMIT_MB = 600;
const PHASES = ['search', 'rollup', 'scan', 'export', 'rule', 'experiment', 'judge'] as const;
const chosen = new Set(args.phases?.split(',').filter(Boolean) ?? PHASES);
for (const p of chosen)
  if (!(PHASES as readonly string[]).includes(p))
    throw new Error(`--phases: no phase ${p} (${PHASES.join(', ')})`);
const runs = (p: (typeof PHASES)[number]) => chosen.has(p);
/** Marks this run's session external ids. */
const RUN_TAG = Date.now().toString(36);
/** Traces per ingest request. */
const BATCH_TRACES = 200;

const MB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server's RSS and its private part now, in MB (Linux). */
function rssNow(server: ChildServer): { rss: number; anon: number } {
  const status = fs.readFileSync(`/proc/${server.proc.pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024 };
}

/**
 * The server's resident memory by kind of mapping, in MB (Linux smaps): glibc's main arena (`[heap]`),
 * its other arenas (maps of at most 64 MiB on a 64 MiB boundary), anonymous maps on a 256 KiB boundary
 * in multiples of it (V8's heap pages, mostly), other anonymous maps (the allocator's blocks of 128 KiB
 * and more, thread stacks) and named maps (files, mostly code). Tells which part grows when the RSS does.
 */
function memoryMap(server: ChildServer): Record<string, number> {
  const kinds: Record<string, number> = {};
  let kind = '';
  for (const line of fs.readFileSync(`/proc/${server.proc.pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const start = Number.parseInt(m[1]!, 16);
      const size = Number.parseInt(m[2]!, 16) - start;
      const name = m[3]!.trim();
      kind =
        name === '[heap]'
          ? 'main arena'
          : name
            ? 'files'
            : start % 2 ** 26 === 0 && size <= 2 ** 26
              ? 'other arenas'
              : start % 2 ** 18 === 0 && size % 2 ** 18 === 0
                ? 'V8 pages'
                : 'other maps';
      continue;
    }
    if (line.startsWith('Rss:')) kinds[kind] = (kinds[kind] ?? 0) + Number(line.split(/\s+/)[1]) / 1024;
  }
  return kinds;
}

/** Peak RSS since the last reset (VmHWM) in MB; reset sets it to the RSS of the moment. */
function peakMb(server: ChildServer): number {
  const status = fs.readFileSync(`/proc/${server.proc.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

class Bench {
  readonly post: ReturnType<typeof poster>;
  private readonly gen = new DataGen(11);
  private readonly templates = new TraceTemplates(256, 11);
  projectId = '';
  streamId = '';
  dashboard = '';

  constructor(readonly server: ChildServer) {
    this.post = poster(server, 8);
  }

  api = async (method: string, route: string, body?: unknown) => {
    const r = await call(this.server, method, route, body);
    if (r.status !== 200)
      throw new Error(`${method} ${route}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return r.body;
  };
  proj = (p: string) => `/v2/projects/${this.projectId}${p}`;

  /** One POST /traces body of about BATCH_TRACES traces in new sessions, and its record count. */
  body(): { body: Buffer; records: number } {
    const sessions: { id: string; name: string; external_id: string }[] = [];
    const traces: string[] = [];
    let records = 0;
    while (traces.length < BATCH_TRACES) {
      const s = this.gen.session();
      const id = crypto.randomUUID();
      // Tagged by run: a run over a kept store (--data-dir) makes the same sessions as the run that grew it.
      sessions.push({ id, name: s.name, external_id: `${s.external_id}.${RUN_TAG}` });
      for (let t = 0; t < s.traces; t++) traces.push(this.templates.fill(id));
      records += 1 + s.traces * RECORDS_PER_TRACE;
    }
    return {
      body: Buffer.from(
        `{"log_stream_id":"${this.streamId}","is_complete":true,"sessions":${JSON.stringify(sessions)},"traces":[${traces.join(',')}]}`,
      ),
      records,
    };
  }

  async ingest(b: { body: Buffer; records: number }) {
    const r = await this.post(this.proj('/traces'), b.body);
    if (r.status !== 200) throw new Error(`traces: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return b.records;
  }

  /** Grows the log stream by `records` with four clients flat out, then waits until it is searchable. */
  async grow(records: number) {
    let written = 0;
    let last = performance.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (written < records) {
          const b = this.body();
          written += b.records;
          await this.ingest(b);
          if (performance.now() - last > 30_000) {
            last = performance.now();
            console.log(`    … ${written} records`);
          }
        }
      }),
    );
    while ((await textBacklog(this.server)) > 0) await sleep(500);
    return written;
  }

  searches(): { kind: string; body: object }[] {
    const text = (value: string) => ({
      filters: [{ column_id: 'input', operator: 'contains', value, type: 'text', case_sensitive: false }],
    });
    const eq = (key: string, value: string) => ({
      filters: [{ column_id: `user_metadata/${key}`, operator: 'eq', value, type: 'text' }],
    });
    return [
      { kind: 'sessions', body: {} },
      { kind: 'traces', body: {} },
      { kind: 'traces', body: eq('customer', 'cust-7') },
      { kind: 'spans', body: eq('prompt_version', 'v3') },
      { kind: 'traces', body: text('refund policy') },
      { kind: 'traces', body: text('quokka') },
      {
        kind: 'traces',
        body: {
          filters: [
            {
              column_id: 'metrics/num_input_tokens',
              operator: 'between',
              value: [1000, 1100],
              type: 'number',
            },
          ],
        },
      },
      { kind: 'sessions', body: { sort: { name: 'metrics/duration_ns', ascending: false } } },
    ];
  }

  async search(i: number) {
    const s = this.searches()[i % 8];
    await this.api('POST', this.proj(`/${s.kind}/search`), {
      log_stream_id: this.streamId,
      limit: 50,
      ...s.body,
    });
  }

  /** The 4-widget dashboard over every record, grouped by a metadata key; `scan` adds a filter. */
  async dashboardSetup() {
    const base = this.proj(`/log_streams/${this.streamId}/trends`);
    const dash = await this.api('PUT', base, {
      name: 'memory',
      start_time: Date.UTC(2024, 0, 1) / 1000,
      end_time: Date.UTC(2030, 0, 1) / 1000,
      interval_mins: 1440,
    });
    if (dash.widgets.length === 0)
      for (const w of [
        { name: 'Requests', type: 'line_chart', metric: 'id', aggregation: 'Count' },
        { name: 'Mean latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'Average' },
        { name: 'p95 latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'P95' },
        { name: 'Tokens', type: 'bar_chart', metric: 'num_total_tokens', aggregation: 'Sum' },
      ])
        await this.api('POST', `${base}/${dash.id}/widgets`, w);
    this.dashboard = dash.id;
  }

  async drawDashboard(scan: boolean): Promise<string> {
    const base = this.proj(`/log_streams/${this.streamId}/trends`);
    const filter = { filter: { column_id: 'created_at', operator: 'gte', value: '1970-01-01T00:00:00Z' } };
    // The settings are the dashboard's, so each draw says which it wants (the soak draws both).
    await this.api('PUT', `${base}?trends_dashboard_id=${this.dashboard}`, {
      group_by: 'user_metadata/customer',
      filter_tree: scan ? filter : null,
    });
    return (await this.api('POST', `${base}/${this.dashboard}/query`)).answered_by;
  }

  /** Exports every trace as JSON lines, read and dropped; stops at the deadline. Answers bytes read. */
  async export(deadline: number): Promise<number> {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), Math.max(1, deadline - Date.now()));
    let bytes = 0;
    try {
      const r = await fetch(`${this.server.url}${this.proj('/export_records')}`, {
        method: 'POST',
        headers: { 'service-api-key': this.server.key, 'content-type': 'application/json' },
        body: JSON.stringify({ log_stream_id: this.streamId, root_type: 'trace', export_format: 'jsonl' }),
        signal: ctl.signal,
      });
      if (r.status !== 200) throw new Error(`export: ${r.status} ${await r.text()}`);
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
    } catch (err) {
      if (!ctl.signal.aborted) throw err;
    } finally {
      clearTimeout(timer);
    }
    return bytes;
  }
}

/** Runs `work` (looped by `clients` until the deadline) and answers the phase's peak RSS. */
async function phase(b: Bench, name: string, clients: number, work: (i: number) => Promise<unknown>) {
  b.server.resetPeak();
  const deadline = Date.now() + PHASE_MS;
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < deadline) await work(n++);
    }),
  );
  const peak = peakMb(b.server);
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `  ${name.padEnd(44)} peak RSS ${peak.toFixed(0).padStart(5)} MB  (${n} in ${secs.toFixed(0)} s)`,
  );
  return { name, peak };
}

const fake = await startFakeProvider({ delayMs: 200 });
fake.reply = () => '{"explanation": "fine", "rating": true}';
if (STORE === 'postgres') await createPgSchema(DB_URL, SCHEMA);
const server = await startChildServer({
  port: Number(args.port),
  store: STORE,
  databaseUrl: DB_URL,
  pgSchema: SCHEMA,
  dataDir: args['data-dir'],
  env: { SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1' },
});
const b = new Bench(server);
const results: { name: string; peak: number }[] = [];
try {
  const projects = (await b.api('GET', '/v2/projects/all')) as { id: string; name: string }[];
  const existing = projects.find((p) => p.name === 'bench-memory');
  b.projectId = existing?.id ?? (await b.api('POST', '/v2/projects', { name: 'bench-memory' })).id;
  const streams = (await b.api('GET', b.proj('/log_streams'))) as { id: string; name: string }[];
  b.streamId =
    streams.find((s) => s.name === 'memory')?.id ??
    (await b.api('POST', b.proj('/log_streams'), { name: 'memory' })).id;
  console.log(
    `memory benchmark: store=${STORE}, +${RECORDS} records, ${PHASE_MS / 1000} s a phase, soak ${SOAK_MS / 1000} s`,
  );
  console.log(`  idle: RSS ${rssNow(server).rss.toFixed(0)} MB`);

  // 1. Ingesting.
  server.resetPeak();
  const t0 = performance.now();
  const grown = await b.grow(RECORDS);
  const growPeak = peakMb(server);
  console.log(
    `  ${'ingesting (4 clients), until searchable'.padEnd(44)} peak RSS ${growPeak.toFixed(0).padStart(5)} MB  (${grown} records in ${((performance.now() - t0) / 1000).toFixed(0)} s)`,
  );
  results.push({ name: 'ingesting', peak: growPeak });

  // 2.–4. Searching, dashboards.
  if (runs('search')) results.push(await phase(b, 'searching (4 clients)', 4, (i) => b.search(i)));
  await b.dashboardSetup();
  const by = { rollup: '', scan: '' };
  if (runs('rollup'))
    results.push(
      await phase(b, 'dashboard by rollup (2 clients)', 2, async () => {
        by.rollup = await b.drawDashboard(false);
      }),
    );
  if (runs('scan'))
    results.push(
      await phase(b, 'dashboard by scan (1 client)', 1, async () => {
        by.scan = await b.drawDashboard(true);
      }),
    );
  console.log(`    (answered by: ${by.rollup} / ${by.scan})`);

  // 5. Exporting.
  let exported = 0;
  if (runs('export')) {
    results.push(
      await phase(b, 'exporting every trace (1 client)', 1, async () => {
        exported += await b.export(Date.now() + PHASE_MS);
      }),
    );
    console.log(`    (${(exported / MB).toFixed(0)} MB exported)`);
  }

  // 6. A rule backfill over every record (the LLM judge is made here, and queued in 8).
  const integration = await b.api('PUT', '/v2/integrations/example_gateway', {
    endpoint: fake.url,
    use_case: 'chat',
    token: 'sk-bench-0123456789abcdef',
  });
  const rule = await b.api('POST', '/v2/scorers', { name: `mem_rule_${Date.now()}`, scorer_type: 'rule' });
  await b.api('POST', `/v2/scorers/${rule.id}/version/rule`, {
    rule: 'contains',
    field: 'output',
    params: { value: 'refund' },
  });
  const judge = await b.api('POST', '/v2/scorers', { name: `mem_judge_${Date.now()}`, scorer_type: 'llm' });
  await b.api('POST', `/v2/scorers/${judge.id}/version/llm`, {
    model_name: 'fake-model',
    num_judges: 3,
    chain_poll_template: { template: 'Q: {{input}}\nA: {{output}}\nIs the answer right?' },
  });
  await b.api('POST', b.proj(`/runs/${b.streamId}/scorer-settings`), {
    integration_id: integration.id,
    scorers: [
      { id: rule.id, scorer_type: 'rule', scoreable_node_types: ['trace', 'llm'] },
      { id: judge.id, scorer_type: 'llm', scoreable_node_types: ['trace'] },
    ],
  });
  if (runs('rule')) {
    server.resetPeak();
    const tr = performance.now();
    // Through node:http, which has no time limit: over millions of records this one request runs for
    // minutes (fetch gives up waiting for the answer's headers after 300 s).
    const answer = await b.post(
      b.proj('/recompute_metrics'),
      Buffer.from(
        JSON.stringify({ log_stream_id: b.streamId, scorer_ids: [rule.id], max_records: 10_000_000 }),
      ),
    );
    if (answer.status !== 200) throw new Error(`recompute: ${answer.status} ${JSON.stringify(answer.body)}`);
    const backfill = answer.body;
    const rulePeak = peakMb(server);
    console.log(
      `  ${'scorer queue: rule over every record'.padEnd(44)} peak RSS ${rulePeak.toFixed(0).padStart(5)} MB  (${backfill.records_scored} records in ${((performance.now() - tr) / 1000).toFixed(0)} s)`,
    );
    results.push({ name: 'rule backfill', peak: rulePeak });
  }
  // 7. The experiment queue.
  const ds = await b.api('POST', '/v2/datasets', {
    name: `memory-${Date.now()}`,
    rows: Array.from({ length: 2000 }, (_, i) => ({
      input: JSON.stringify({ q: `question ${i} ${'lorem ipsum '.repeat(40)}` }),
      output: `answer ${i}`,
    })),
  });
  const tpl = await b.api('POST', b.proj('/templates'), {
    name: `memory-${Date.now()}`,
    template: [{ role: 'user', content: 'Q: {{q}}' }],
  });
  const experiment = async () => {
    const e = await b.api('POST', b.proj('/experiments'), {
      name: `memory-${crypto.randomUUID()}`,
      dataset: { dataset_id: ds.id },
    });
    return b.api('POST', '/v2/jobs', {
      job_name: 'playground_run',
      project_id: b.projectId,
      run_id: e.id,
      prompt_template_version_id: tpl.selected_version_id,
      dataset_id: ds.id,
      prompt_settings: { model_alias: 'fake-model' },
      integration_id: integration.id,
      concurrency: 8,
    });
  };
  if (runs('experiment')) {
    const job = await experiment();
    let progress = '';
    results.push(
      await phase(b, 'experiment queue: 2,000 rows, concurrency 8', 1, async () => {
        const j = await b.api('GET', `/v2/jobs/${job.job_id}`);
        progress = `${j.steps_completed}/${j.steps_total} ${j.status}`;
        await sleep(1000);
      }),
    );
    console.log(`    (experiment: ${progress})`);
  }

  // 8. The judge's backlog, after the experiment: its tasks would hold the queue's slots ahead of the
  // experiment's job.
  const judged = { log_stream_id: b.streamId, scorer_ids: [judge.id], max_records: 100_000 };
  const customers = { filter: { column_id: 'user_metadata/customer', operator: 'eq', value: 'cust-3' } };
  if (runs('judge')) {
    const queued = await b.api('POST', b.proj('/recompute_metrics'), { ...judged, filter_tree: customers });
    results.push(
      await phase(b, `scorer queue: LLM judge, ${queued.records_scored ?? '?'} records queued`, 1, () =>
        sleep(1000),
      ),
    );
  }

  // 9. All at once.
  if (SOAK_MS > 0) {
    console.log(
      `  soak: everything at once for ${SOAK_MS / 1000} s (ingestion paced at ${SOAK_RATE} records/s)`,
    );
    server.resetPeak();
    const deadline = Date.now() + SOAK_MS;
    const samples: { t: number; rss: number; anon: number; map: Record<string, number> }[] = [];
    const s0 = Date.now();
    const sampler = setInterval(
      () => samples.push({ t: (Date.now() - s0) / 1000, ...rssNow(server), map: memoryMap(server) }),
      10_000,
    );
    // The server's longest event-loop stall of each 10 s (prom-client resets it at every read): a
    // stall of a minute would end requests waiting for their headers (Node's headersTimeout, 408).
    const stalls: number[] = [];
    const stallSampler = setInterval(
      () =>
        void fetch(`${server.url}/metrics`)
          .then((r) => r.text())
          .then((text) => {
            const m = /^spanbase_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
            if (m) stalls.push(Number(m[1]));
          })
          .catch(() => {}),
      10_000,
    );
    /** Each kind of work's count and slowest call, printed after the soak. */
    const calls = new Map<string, { n: number; slowest: number }>();
    const loop = async (name: string, work: () => Promise<unknown>, pauseMs: () => number = () => 0) => {
      const c = calls.get(name) ?? { n: 0, slowest: 0 };
      calls.set(name, c);
      while (Date.now() < deadline) {
        const t = performance.now();
        await work();
        c.n++;
        c.slowest = Math.max(c.slowest, performance.now() - t);
        await sleep(pauseMs());
      }
    };
    let ingested = 0;
    let draws = 0;
    await Promise.all([
      loop(
        'ingest',
        async () => {
          ingested += await b.ingest(b.body());
        },
        () => Math.max(0, (ingested / SOAK_RATE) * 1000 - (Date.now() - s0)),
      ),
      loop('search', () => b.search(draws)),
      loop('search', () => b.search(draws + 3)),
      loop('dashboard', () => b.drawDashboard(draws++ % 2 === 1)),
      loop('export', () => b.export(Math.min(deadline, Date.now() + 60_000))),
      loop(
        'judge backlog',
        () => b.api('POST', b.proj('/recompute_metrics'), { ...judged, filter_tree: customers }),
        () => 30_000,
      ),
      loop('experiment', async () => {
        const j = await experiment();
        for (;;) {
          const s = await b.api('GET', `/v2/jobs/${j.job_id}`);
          if (s.status !== 'pending' && s.status !== 'processing') break;
          if (Date.now() > deadline) break;
          await sleep(1000);
        }
        fake.requests.length = 0;
      }),
    ]);
    clearInterval(sampler);
    clearInterval(stallSampler);
    const peak = peakMb(server);
    const half = samples.filter((s) => s.t >= SOAK_MS / 2000);
    const trend =
      half.length >= 3
        ? slope(
            half.map((s) => s.t / 60),
            half.map((s) => s.anon),
          )
        : Number.NaN;
    console.log(`    RSS every 10 s (MB): ${samples.map((s) => s.rss.toFixed(0)).join(' ')}`);
    console.log(`    of which private:    ${samples.map((s) => s.anon.toFixed(0)).join(' ')}`);
    for (const kind of Object.keys(samples.at(-1)?.map ?? {}).sort())
      console.log(
        `    ${kind.padEnd(17)} (MB): ${samples
          .filter((_, i) => i % 6 === 0 || i === samples.length - 1)
          .map((s) => (s.map[kind] ?? 0).toFixed(0))
          .join(' ')}`,
      );
    console.log(
      `    longest event-loop stall every 10 s (ms): ${stalls.map((s) => (s * 1000).toFixed(0)).join(' ')}`,
    );
    console.log(
      `    calls (count, slowest): ${[...calls].map(([k, c]) => `${k} ${c.n}, ${(c.slowest / 1000).toFixed(1)} s`).join('; ')}`,
    );
    console.log(
      `    ${ingested} records ingested; private memory's trend over the second half: ${Number.isNaN(trend) ? 'too few samples' : `${trend.toFixed(1)} MB/min`}`,
    );
    console.log(`  ${'soak: everything at once'.padEnd(44)} peak RSS ${peak.toFixed(0).padStart(5)} MB`);
    results.push({ name: 'soak', peak });
  }
  const worst = results.reduce((a, r) => (r.peak > a.peak ? r : a), { name: 'idle', peak: 0 });
  console.log(
    `highest phase peak: ${worst.peak.toFixed(0)} MB (${worst.name}); target ≤ ${LIMIT_MB} MB in every phase: ${results.every((r) => r.peak <= LIMIT_MB) ? 'met' : 'not met'}`,
  );
} finally {
  await server.stop();
  await fake.close();
  if (STORE === 'postgres') await dropPgSchema(DB_URL, SCHEMA);
  if (!args['data-dir']) fs.rmSync(server.dataDir, { recursive: true, force: true });
}
