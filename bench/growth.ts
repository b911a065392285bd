/**
 * Growth curve (issue 22, item 7): one store grown in stages (default 1M, 5M and 10M records),
 * measured over HTTP at each size against a real server (child process):
 *
 * - ingest rate of the stage's records over HTTP, and the searchable rate (until the text index has
 *   caught up: GET /metrics backlog 0);
 * - p50/p95 of a set of searches on sessions, traces and spans, and of a trends dashboard of 4
 *   widgets grouped by a metadata key over every record, answered from the rollups and by a scan;
 * - bytes on disk per record at rest (SQLite: every file, WALs included, after the server truncates
 *   them; PostgreSQL: the schema's tables, indexes and TOAST) and the server's peak RSS in each
 *   phase (ingesting, searching, each dashboard).
 *
 * Prints a Markdown table and writes an SVG plot of the searches' p95 and the rates against size.
 *
 *   npm run bench:growth                                        # SQLite: 1M, 5M, 10M
 *   npm run bench:growth -- --store postgres --sizes 1000000,5000000
 *   npm run bench:growth -- --sizes 100000,300000 --iterations 20 --svg /tmp/growth.svg
 *   npm run bench:growth -- --replot docs/growth-sqlite.json      # table and plot from saved figures
 *   npm run bench:growth -- --sizes 1000000 --keep               # keep the store to look into it
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DataGen, RECORDS_PER_TRACE, TraceTemplates } from './lib/data.ts';
import { pct } from './lib/report.ts';
import {
  call,
  createPgSchema,
  dropPgSchema,
  pgSchemaBytes,
  poster,
  restingFiles,
  startChildServer,
  textBacklog,
  unbuiltRollupDays,
} from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    sizes: { type: 'string', default: '1000000,5000000,10000000' },
    iterations: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '4' },
    port: { type: 'string', default: '18700' },
    svg: { type: 'string' },
    /** Draw the table and plot again from a run's saved figures (the .json beside its plot). */
    replot: { type: 'string' },
    /** Keep the store at the end (SQLite data directory, PostgreSQL schema) and print where it is. */
    keep: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const SIZES = args.sizes.split(',').map(Number);
const ITER = Number(args.iterations);
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const SVG = args.svg ?? path.join(import.meta.dirname, '..', 'docs', `growth-${STORE}.svg`);
const SCHEMA = `bench_growth_${process.pid}`;
/** Traces per ingest request. */
const BATCH_TRACES = 200;

type Server = Awaited<ReturnType<typeof startChildServer>>;

interface Stage {
  records: number;
  ingestRate: number;
  searchableRate: number;
  queries: { name: string; p50: number; p95: number }[];
  bytesPerRecord: number;
  jsonBytesPerRecord: number;
  /** The server's peak RSS in each phase of the stage (ingest, searches, each dashboard), MB. */
  peaksMb: Record<string, number>;
}

/** Grows the log stream by about `records` records over HTTP; answers records written and time. */
async function grow(server: Server, projectId: string, logStreamId: string, records: number, gen: DataGen) {
  const templates = new TraceTemplates(256, records);
  const post = poster(server, Number(args.concurrency));
  let written = 0;
  let bytes = 0;
  const next = () => {
    if (written >= records) return null;
    const sessions: { id: string; name: string; external_id: string }[] = [];
    const traces: string[] = [];
    let n = 0;
    while (traces.length < BATCH_TRACES && written + n < records) {
      const s = gen.session();
      const id = crypto.randomUUID();
      sessions.push({ id, name: s.name, external_id: s.external_id });
      for (let t = 0; t < s.traces; t++) traces.push(templates.fill(id));
      n += 1 + s.traces * RECORDS_PER_TRACE;
    }
    written += n;
    const body = Buffer.from(
      `{"log_stream_id":"${logStreamId}","is_complete":true,"sessions":${JSON.stringify(sessions)},"traces":[${traces.join(',')}]}`,
    );
    bytes += body.length;
    return body;
  };
  const started = performance.now();
  let lastReport = started;
  await Promise.all(
    Array.from({ length: Number(args.concurrency) }, async () => {
      for (let body = next(); body; body = next()) {
        const r = await post(`/v2/projects/${projectId}/traces`, body);
        if (r.status !== 200) throw new Error(`traces: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        if (performance.now() - lastReport > 30_000) {
          lastReport = performance.now();
          process.stdout.write(`  … ${written} records, server RSS peak ${mb(server.peakRss())}\n`);
        }
      }
    }),
  );
  const burstMs = performance.now() - started;
  while ((await textBacklog(server)) > 0) await new Promise((r) => setTimeout(r, 200));
  return { written, bytes, burstMs, searchableMs: performance.now() - started };
}

const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;

/** Bytes of the store at rest: SQLite files once the server has truncated its WALs (up to 30 s). */
async function storeBytes(server: Server): Promise<number> {
  if (STORE === 'postgres') return pgSchemaBytes(DB_URL, SCHEMA);
  return Object.entries(await restingFiles(server.dataDir))
    .filter(([f]) => /\.db(-wal|-shm)?$/.test(f))
    .reduce((a, [, b]) => a + b, 0);
}

/** The searches and the dashboard query, each timed ITER times after a warm-up. */
async function measure(
  server: Server,
  projectId: string,
  logStreamId: string,
  dashboardId: string,
  peaks: Record<string, number>,
) {
  const scope = { log_stream_id: logStreamId, limit: 50 };
  // Values that exist in the data: read from a record rather than assumed.
  const sample = await call(server, 'POST', `/v2/projects/${projectId}/traces/search`, {
    ...scope,
    limit: 1,
  });
  const customer = sample.body.records[0]?.user_metadata?.customer ?? 'cust-1';
  const text = (value: string) => ({
    filters: [{ column_id: 'input', operator: 'contains', value, type: 'text', case_sensitive: false }],
  });
  const eq = (key: string, value: string) => ({
    filters: [{ column_id: `user_metadata/${key}`, operator: 'eq', value, type: 'text' }],
  });
  const searches: { name: string; kind: string; body: object }[] = [
    { name: 'sessions: no filter', kind: 'sessions', body: {} },
    { name: 'traces: no filter', kind: 'traces', body: {} },
    { name: 'traces: user_metadata equality', kind: 'traces', body: eq('customer', customer) },
    { name: 'traces: user_metadata absent value', kind: 'traces', body: eq('customer', 'nobody') },
    { name: 'spans: no filter', kind: 'spans', body: {} },
    { name: 'spans: user_metadata equality', kind: 'spans', body: eq('prompt_version', 'v3') },
    {
      name: 'traces: token range',
      kind: 'traces',
      body: {
        filters: [
          { column_id: 'metrics/num_input_tokens', operator: 'between', value: [1000, 1100], type: 'number' },
        ],
      },
    },
    { name: 'traces: input contains', kind: 'traces', body: text('refund policy') },
    { name: 'traces: input contains (no match)', kind: 'traces', body: text('quokka') },
    {
      name: 'sessions: sort by duration',
      kind: 'sessions',
      body: { sort: { name: 'metrics/duration_ns', ascending: false } },
    },
  ];
  const out: Stage['queries'] = [];
  const time = async (name: string, run: () => Promise<{ status: number; body: any }>) => {
    for (let i = 0; i < 5; i++) await run();
    const xs: number[] = [];
    for (let i = 0; i < ITER; i++) {
      const t = performance.now();
      const r = await run();
      xs.push(performance.now() - t);
      if (r.status !== 200) throw new Error(`${name}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    }
    out.push({ name, p50: pct(xs, 50), p95: pct(xs, 95) });
  };
  for (const s of searches)
    await time(s.name, () =>
      call(server, 'POST', `/v2/projects/${projectId}/${s.kind}/search`, { ...scope, ...s.body }),
    );
  peaks.searches = server.peakRss() / 2 ** 20;
  // The fold job builds the days' rollup rows once a day has been left a minute: the dashboard is
  // timed as it is once they are (at most 3 minutes' wait).
  const waitFrom = performance.now();
  while ((await unbuiltRollupDays(server)) > 0 && performance.now() - waitFrom < 180_000)
    await new Promise((r) => setTimeout(r, 1000));
  console.log(`  rollup days built (waited ${((performance.now() - waitFrom) / 1000).toFixed(0)} s)`);
  const trends = `/v2/projects/${projectId}/log_streams/${logStreamId}/trends`;
  for (const [name, filterTree, by] of DASHBOARD_RUNS) {
    const set = await call(server, 'PUT', `${trends}?trends_dashboard_id=${dashboardId}`, {
      group_by: DASHBOARD_GROUP_BY,
      filter_tree: filterTree,
    });
    if (set.status !== 200) throw new Error(`dashboard settings: ${set.status} ${JSON.stringify(set.body)}`);
    server.resetPeak();
    await time(name, async () => {
      const r = await call(server, 'POST', `${trends}/${dashboardId}/query`);
      // Each row says how it was answered: a rollup row answered by a scan would be a wrong figure.
      if (r.status === 200 && r.body.answered_by !== by)
        throw new Error(`${name}: answered by ${r.body.answered_by} (${r.body.fallback_reason})`);
      return r;
    });
    peaks[`dashboard by ${by}`] = server.peakRss() / 2 ** 20;
  }
  return out;
}

/** The dashboard's group: a metadata key of the traces (a handful of customers). */
const DASHBOARD_GROUP_BY = 'user_metadata/customer';
/** A filter every record passes: the rollups take no filters, so the same dashboard is then scanned. */
const EVERYTHING = { filter: { column_id: 'created_at', operator: 'gte', value: '1970-01-01T00:00:00Z' } };
/** The dashboard timed twice: from the rollups, and by a scan of every record (row name, filter, answer). */
const DASHBOARD_RUNS: [string, object | null, 'rollup' | 'scan'][] = [
  ['dashboard: 4 widgets, group_by customer, by rollup', null, 'rollup'],
  ['dashboard: the same, by scan', EVERYTHING, 'scan'],
];
/** The dashboard's widgets: Count, Average, P95 and Sum (those of bench:dashboards). */
const WIDGETS = [
  { name: 'Requests', type: 'line_chart', metric: 'id', aggregation: 'Count' },
  { name: 'Mean latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'Average' },
  { name: 'p95 latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'P95' },
  { name: 'Tokens', type: 'bar_chart', metric: 'num_total_tokens', aggregation: 'Sum' },
];

function table(stages: Stage[]): string {
  const head = stages.map((s) => `${(s.records / 1e6).toFixed(s.records < 1e6 ? 2 : 0)}M records`);
  const lines = [
    `| ${STORE} | ${head.join(' | ')} |`,
    `|---|${head.map(() => '---|').join('')}`,
    `| ingest (HTTP), records/s | ${stages.map((s) => Math.round(s.ingestRate).toLocaleString('en')).join(' | ')} |`,
    `| searchable, records/s | ${stages.map((s) => Math.round(s.searchableRate).toLocaleString('en')).join(' | ')} |`,
  ];
  for (const [i, q] of stages[0].queries.entries())
    lines.push(
      `| ${q.name}, p50 / p95 ms | ${stages.map((s) => `${s.queries[i].p50.toFixed(1)} / ${s.queries[i].p95.toFixed(1)}`).join(' | ')} |`,
    );
  lines.push(
    `| disk per record (JSON received per record) | ${stages.map((s) => `${Math.round(s.bytesPerRecord)} B (${Math.round(s.jsonBytesPerRecord)} B)`).join(' | ')} |`,
  );
  for (const phase of Object.keys(stages[0].peaksMb))
    lines.push(
      `| server's peak RSS, ${phase} | ${stages.map((s) => `${Math.round(s.peaksMb[phase])} MB`).join(' | ')} |`,
    );
  return lines.join('\n');
}

/** Two panels: each query's p95 against size, and the ingest and searchable rates against size. */
function svg(stages: Stage[]): string {
  const W = 460;
  const H = 300;
  const pad = { l: 60, r: 40, t: 30, b: 40 };
  const colors = [
    '#17becf',
    '#8c564b',
    '#4e79a7',
    '#f28e2b',
    '#e15759',
    '#76b7b2',
    '#59a14f',
    '#edc948',
    '#b07aa1',
    '#ff9da7',
    '#9c755f',
    '#bab0ac',
    '#7f7f7f',
    '#bcbd22',
    '#000',
    '#d62728',
  ];
  const xs = stages.map((s) => s.records);
  const xMax = Math.max(...xs);
  const panel = (
    ox: number,
    title: string,
    unit: string,
    series: { name: string; ys: number[]; dashed?: boolean }[],
    log: boolean,
    firstColor: number,
  ) => {
    const yMax = log
      ? 10 ** Math.ceil(Math.log10(Math.max(10, ...series.flatMap((s) => s.ys))))
      : Math.max(1, ...series.flatMap((s) => s.ys)) * 1.1;
    const yMin = log
      ? 10 ** Math.floor(Math.log10(Math.max(0.1, Math.min(...series.flatMap((s) => s.ys)))))
      : 0;
    const frac = (y: number) =>
      log
        ? (Math.log10(Math.max(y, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))
        : y / yMax;
    const xAt = (x: number) => ox + pad.l + (x / xMax) * (W - pad.l - pad.r);
    const yAt = (y: number) => pad.t + (1 - frac(y)) * (H - pad.t - pad.b);
    const parts = [
      `<text x="${ox + W / 2}" y="18" text-anchor="middle" font-weight="bold">${title}</text>`,
      `<line x1="${xAt(0)}" y1="${yAt(0)}" x2="${xAt(xMax)}" y2="${yAt(0)}" stroke="#333"/>`,
      `<line x1="${xAt(0)}" y1="${yAt(0)}" x2="${xAt(0)}" y2="${yAt(yMax)}" stroke="#333"/>`,
      `<text x="${ox + 14}" y="${pad.t - 8}">${unit}</text>`,
    ];
    const ticks = log
      ? Array.from({ length: Math.round(Math.log10(yMax / yMin)) + 1 }, (_, k) => yMin * 10 ** k)
      : Array.from({ length: 5 }, (_, k) => (yMax / 4) * k);
    for (const y of ticks) {
      parts.push(
        `<text x="${xAt(0) - 4}" y="${yAt(y) + 4}" text-anchor="end">${y >= 100 ? Math.round(y) : y >= 1 ? y.toFixed(0) : y.toFixed(1)}</text>`,
      );
    }
    for (const x of xs)
      parts.push(
        `<text x="${xAt(x)}" y="${H - pad.b + 16}" text-anchor="middle">${(x / 1e6).toFixed(1)}M</text>`,
      );
    series.forEach((s, i) => {
      const c = colors[(firstColor + i) % colors.length];
      parts.push(
        `<polyline fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${s.ys.map((y, j) => `${xAt(xs[j]).toFixed(1)},${yAt(y).toFixed(1)}`).join(' ')}"/>`,
        ...s.ys.map(
          (y, j) => `<circle cx="${xAt(xs[j]).toFixed(1)}" cy="${yAt(y).toFixed(1)}" r="3" fill="${c}"/>`,
        ),
      );
    });
    return {
      parts,
      legend: series.map((s, i) => ({ name: s.name, color: colors[(firstColor + i) % colors.length] })),
    };
  };
  const left = panel(
    0,
    `p95 by size (${STORE}, log scale)`,
    'ms',
    stages[0].queries.map((q, i) => ({ name: q.name, ys: stages.map((s) => s.queries[i].p95) })),
    true,
    0,
  );
  const right = panel(
    W,
    `rates by size (${STORE})`,
    'records/s',
    [
      { name: 'ingest (HTTP)', ys: stages.map((s) => s.ingestRate) },
      // Dashed: it often lies on the ingest rate's line.
      { name: 'searchable', ys: stages.map((s) => s.searchableRate), dashed: true },
    ],
    false,
    stages[0].queries.length,
  );
  const legend = [...left.legend, ...right.legend].map(
    (l, i) =>
      `<rect x="${10 + (i % 3) * 300}" y="${H + 10 + Math.floor(i / 3) * 18}" width="10" height="10" fill="${l.color}"/>` +
      `<text x="${24 + (i % 3) * 300}" y="${H + 19 + Math.floor(i / 3) * 18}">${l.name}</text>`,
  );
  const height = H + 20 + Math.ceil(legend.length / 3) * 18;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
${[...left.parts, ...right.parts, ...legend].join('\n')}
</svg>
`;
}

/** The table and the plot, and the figures beside the plot (to draw them again with --replot). */
function report(stages: Stage[]): void {
  console.log(table(stages));
  fs.writeFileSync(SVG, svg(stages));
  fs.writeFileSync(SVG.replace(/\.svg$/, '.json'), `${JSON.stringify(stages, null, 2)}\n`);
  console.log(`\nplot: ${SVG}`);
}

async function main() {
  if (args.replot) {
    report(JSON.parse(fs.readFileSync(args.replot, 'utf8')) as Stage[]);
    return;
  }
  if (STORE === 'postgres') await createPgSchema(DB_URL, SCHEMA);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-growth-'));
  const server = await startChildServer({
    port: Number(args.port),
    store: STORE,
    databaseUrl: DB_URL,
    pgSchema: SCHEMA,
    dataDir,
  });
  const stages: Stage[] = [];
  try {
    const p = await call(server, 'POST', '/v2/projects', { name: 'growth' });
    const ls = await call(server, 'POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'prod' });
    const projectId = p.body.id as string;
    const logStreamId = ls.body.id as string;
    const dash = await call(server, 'PUT', `/v2/projects/${projectId}/log_streams/${logStreamId}/trends`, {
      name: 'growth',
      // Each stage's TraceTemplates clock starts on 2024-05-01 and moves 1 to 7 s per trace: the store
      // spans 8.7 days at 1M, 34.7 at 5M and 43.4 at 10M.
      start_time: Date.UTC(2024, 4, 1) / 1000,
      end_time: Date.UTC(2024, 4, 1) / 1000 + 200 * 86_400,
      interval_mins: 1440,
    });
    if (dash.status !== 200) throw new Error(`dashboard: ${dash.status} ${JSON.stringify(dash.body)}`);
    for (const w of WIDGETS) {
      const r = await call(
        server,
        'POST',
        `/v2/projects/${projectId}/log_streams/${logStreamId}/trends/${dash.body.id}/widgets`,
        w,
      );
      if (r.status !== 200) throw new Error(`widget: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const gen = new DataGen(11);
    let total = 0;
    let jsonBytes = 0;
    for (const size of SIZES) {
      console.log(`growing to ${size.toLocaleString('en')} records (${STORE})`);
      // Each phase's own peak (not the process's so far): the memory target holds in every phase.
      server.resetPeak();
      const g = await grow(server, projectId, logStreamId, size - total, gen);
      total += g.written;
      jsonBytes += g.bytes;
      const peaksMb: Record<string, number> = { ingesting: server.peakRss() / 2 ** 20 };
      server.resetPeak();
      const queries = await measure(server, projectId, logStreamId, dash.body.id, peaksMb);
      console.log(
        `  peak RSS by phase: ${Object.entries(peaksMb)
          .map(([k, v]) => `${k} ${v.toFixed(0)} MB`)
          .join(' · ')}`,
      );
      const disk = await storeBytes(server);
      const stage: Stage = {
        records: total,
        ingestRate: (g.written / g.burstMs) * 1000,
        searchableRate: (g.written / g.searchableMs) * 1000,
        queries,
        bytesPerRecord: disk / total,
        jsonBytesPerRecord: jsonBytes / total,
        peaksMb,
      };
      stages.push(stage);
      console.log(table(stages));
    }
  } finally {
    await server.stop();
    if (args.keep) console.log(`kept: ${STORE === 'postgres' ? `schema ${SCHEMA}` : dataDir}`);
    else {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (STORE === 'postgres') await dropPgSchema(DB_URL, SCHEMA);
    }
  }
  if (stages.length) report(stages);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
