/**
 * Sustained load: a real Spanbase server (child process, loopback) under concurrent ingestion and
 * searches for a bounded time. Prints requests, errors (must be 0), latency percentiles per kind,
 * the server's RSS over time and the trend of its private part (RssAnon, where a leak shows; the
 * rest is mostly the program's code and libraries), and whether every acknowledged record is
 * counted.
 *
 *   npm run bench:load                         # SQLite, 60 s
 *   npm run bench:load -- --store postgres     # PostgreSQL (SPANBASE_TEST_DATABASE_URL or --database-url)
 *   npm run bench:load -- --seconds 20 --ingesters 4 --searchers 4 --batch 20
 *   npm run bench:load -- --compare --seconds 30   # searches alone, ingestion alone, then both (issue 22, item 6)
 *   npm run bench:load -- --seconds 600            # a 10-minute soak: the private memory's trend
 *   npm run bench:load -- --data-dir DIR           # SQLite: over an existing store (written to; kept),
 *                                                  # e.g. bench:search's data set: memory at the store's size
 *
 * --compare runs three phases of --seconds each on the same server: the ingesters alone (flat out:
 * no pause between requests), the searchers alone over the data written, then both; it prints the searches' p95
 * under ingestion against alone (target at most 2×) and the ingestion rate beside searches against
 * alone (target at least 0.5×).
 * The workload follows the routes the server's /openapi.json lists: ingestion and record searches
 * when they exist, log stream searches and project reads always.
 */
import { parseArgs } from 'node:util';
import { type ChildServer, startChildServer } from '../test/helpers/child-server.ts';
import { operations } from '../test/helpers/openapi.ts';
import { slope } from './lib/report.ts';
import { npmStartLaunch } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    seconds: { type: 'string', default: '60' },
    port: { type: 'string' },
    ingesters: { type: 'string', default: '4' },
    searchers: { type: 'string', default: '4' },
    batch: { type: 'string', default: '20' },
    'sample-every': { type: 'string', default: '5' },
    cooldown: { type: 'string', default: '0' },
    compare: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    'data-dir': { type: 'string' },
  },
});

const store = args.store === 'postgres' ? 'postgres' : 'sqlite';
if (args['data-dir'] && store === 'postgres') throw new Error('--data-dir serves an existing SQLite store');
const SECONDS = Math.max(1, Number(args.seconds));
const INGESTERS = Math.max(0, Number(args.ingesters));
const SEARCHERS = Math.max(0, Number(args.searchers));
const BATCH = Math.max(1, Number(args.batch));
const SAMPLE_EVERY = Math.max(1, Number(args['sample-every']));
/** Seconds of RSS sampling after the load stops: does memory come back down (caches, backlogs)? */
const COOLDOWN = Math.max(0, Number(args.cooldown));
const PORT = Number(args.port ?? (store === 'sqlite' ? 18400 : 18401));
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';

// ---------------------------------------------------------------------------------------------

/** mulberry32: small, fast, seeded. */
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

const WORDS =
  'the model answer customer order refund invoice shipping account password reset delivery product price discount subscription cancel upgrade billing error timeout retry latency token context document search query result summary policy support ticket agent tool weather booking flight hotel payment'.split(
    ' ',
  );

function text(r: () => number, words: number): string {
  return Array.from({ length: words }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
}

/** A batch of `n` traces of 5 records each (trace, workflow, llm, tool, retriever). */
function batch(r: () => number, logStreamId: string, n: number) {
  const now = Date.now();
  const traces = Array.from({ length: n }, (_, i) => {
    const created = new Date(now - Math.floor(r() * 3 * 86400_000)).toISOString();
    const inTok = 50 + Math.floor(r() * 500);
    const outTok = 10 + Math.floor(r() * 200);
    return {
      name: `trace-${i}`,
      created_at: created,
      input: text(r, 40 + Math.floor(r() * 80)),
      output: text(r, 20 + Math.floor(r() * 60)),
      user_metadata: { customer: `cust-${Math.floor(r() * 200)}`, region: ['eu', 'us', 'ap'][i % 3] },
      tags: [['prod', 'beta'][i % 2]],
      spans: [
        {
          type: 'workflow',
          name: 'pipeline',
          created_at: created,
          input: 'start',
          output: 'done',
          spans: [
            {
              type: 'llm',
              name: 'chat',
              created_at: created,
              model: ['gpt-4o', 'claude-3-5-sonnet'][i % 2],
              input: [{ role: 'user', content: text(r, 30) }],
              output: { role: 'assistant', content: text(r, 30) },
              metrics: {
                duration_ns: Math.floor(r() * 2e9),
                num_input_tokens: inTok,
                num_output_tokens: outTok,
                num_total_tokens: inTok + outTok,
              },
            },
            { type: 'tool', name: 'lookup', created_at: created, input: '{"id": 1}', output: text(r, 10) },
          ],
        },
        {
          type: 'retriever',
          name: 'docs',
          created_at: created,
          input: text(r, 5),
          output: [{ content: text(r, 20), metadata: { source: 'kb' } }],
        },
      ],
    };
  });
  return { log_stream_id: logStreamId, traces, is_complete: true };
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// ---------------------------------------------------------------------------------------------

interface Kind {
  latencies: number[];
  errors: number;
  locked: number;
}

async function main() {
  process.stdout.write(
    `bench:load — ${store}, ${SECONDS} s, ${INGESTERS} ingesters × ${BATCH} traces, ${SEARCHERS} searchers, port ${PORT}\n`,
  );
  const server: ChildServer = await startChildServer(store, {
    port: PORT,
    databaseUrl: DB_URL,
    env: { SPANBASE_LOG_LEVEL: 'warn' },
    dataDir: args['data-dir'],
    // As people run it: the built server with npm start's flags (heap limit, glibc arenas).
    launch: npmStartLaunch(),
  });
  const kinds = new Map<string, Kind>();
  const firstErrors: string[] = [];
  const kindOf = (name: string) => {
    if (!kinds.has(name)) kinds.set(name, { latencies: [], errors: 0, locked: 0 });
    return kinds.get(name)!;
  };
  const timed = async (name: string, method: string, url: string, body?: unknown) => {
    const k = kindOf(name);
    const t0 = performance.now();
    let status = 0;
    let textBody = '';
    try {
      const r = await server.call(method, url, body);
      status = r.status;
      textBody = r.text;
    } catch (err) {
      textBody = String(err);
    }
    k.latencies.push(performance.now() - t0);
    if (status < 200 || status >= 300) {
      k.errors++;
      if (/locked|busy/i.test(textBody)) k.locked++;
      if (firstErrors.length < 10) firstErrors.push(`${name} ${status}: ${textBody.slice(0, 200)}`);
      return null;
    }
    return textBody ? JSON.parse(textBody) : null;
  };

  try {
    const ops = operations((await server.call('GET', '/openapi.json', undefined, null)).body);
    const has = (key: string) => ops.some((o) => o.key === key);
    const project = (await server.call('POST', '/v2/projects', { name: 'load' })).body;
    const streams: string[] = [];
    for (let i = 0; i < Math.max(2, INGESTERS); i++)
      streams.push(
        (await server.call('POST', `/v2/projects/${project.id}/log_streams`, { name: `ls-${i}` })).body.id,
      );
    const canIngest = has('POST /v2/projects/{project_id}/traces');
    const acked = new Map<string, { traces: number; records: number }>(
      streams.map((s) => [s, { traces: 0, records: 0 }]),
    );

    // Searches: whatever the server offers, each with a filter that makes it work.
    const searches: {
      name: string;
      method: string;
      url: (i: number) => string;
      body: (i: number) => unknown;
    }[] = [
      {
        name: 'log_streams/search',
        method: 'POST',
        url: () => `/v2/projects/${project.id}/log_streams/search`,
        body: () => ({ include_counts: true, sort: { name: 'created_at', ascending: false } }),
      },
      { name: 'GET project', method: 'GET', url: () => `/v2/projects/${project.id}`, body: () => undefined },
    ];
    for (const kind of ['sessions', 'traces', 'spans']) {
      if (!has(`POST /v2/projects/{project_id}/${kind}/search`)) continue;
      searches.push({
        name: `${kind}/search`,
        method: 'POST',
        url: () => `/v2/projects/${project.id}/${kind}/search`,
        body: (i) => ({
          log_stream_id: streams[i % streams.length],
          filters:
            i % 3 === 0
              ? [{ type: 'text', column_id: 'input', operator: 'contains', value: WORDS[i % WORDS.length] }]
              : i % 3 === 1
                ? [{ type: 'text', column_id: 'user_metadata/region', operator: 'eq', value: 'eu' }]
                : [],
          sort: { name: 'created_at', ascending: i % 2 === 0 },
          pagination: { starting_token: 0, limit: 50 },
        }),
      });
    }
    if (has('POST /v2/projects/{project_id}/traces/available_columns')) {
      searches.push({
        name: 'traces/available_columns',
        method: 'POST',
        url: () => `/v2/projects/${project.id}/traces/available_columns`,
        body: (i) => ({ log_stream_id: streams[i % streams.length] }),
      });
    }
    if (has('POST /v2/projects/{project_id}/log_streams/{log_stream_id}/logstream_insights/token_usage')) {
      searches.push({
        name: 'token_usage',
        method: 'POST',
        url: (i) =>
          `/v2/projects/${project.id}/log_streams/${streams[i % streams.length]}/logstream_insights/token_usage`,
        body: () => ({}),
      });
    }
    process.stdout.write(
      `routes: ${ops.length} in /openapi.json; ingestion ${canIngest ? 'yes' : 'not served yet'}; searches: ${searches.map((s) => s.name).join(', ')}\n`,
    );

    const started = Date.now();
    let deadline = started + SECONDS * 1000;
    const rssSeries: { t: number; mb: number; anon: number }[] = [];
    const sample = () =>
      rssSeries.push({
        t: (Date.now() - started) / 1000,
        mb: server.rss() / 2 ** 20,
        anon: server.anonRss() / 2 ** 20,
      });
    sample();
    const sampler = setInterval(sample, SAMPLE_EVERY * 1000);

    const ingester = async (w: number) => {
      const r = rng(1000 + w);
      const stream = streams[w % streams.length];
      while (Date.now() < deadline) {
        const res = await timed(
          'ingest',
          'POST',
          `/v2/projects/${project.id}/traces`,
          batch(r, stream, BATCH),
        );
        if (res) {
          const a = acked.get(stream)!;
          a.traces += res.traces_count ?? BATCH;
          a.records += res.records_count ?? BATCH * 5;
        }
      }
    };
    const searcher = async (w: number) => {
      let i = w;
      while (Date.now() < deadline) {
        const s = searches[i % searches.length];
        await timed(s.name, s.method, s.url(i), s.body(i));
        i++;
      }
    };
    /** Runs `ingesters` and `searchers` for --seconds; answers search p95 and records/s acknowledged. */
    const phase = async (ingesters: number, searchers: number) => {
      const before = new Map([...kinds].map(([k, v]) => [k, v.latencies.length]));
      const acked0 = [...acked.values()].reduce((a, b) => a + b.records, 0);
      const t0 = Date.now();
      deadline = t0 + SECONDS * 1000;
      await Promise.all([
        ...(canIngest ? Array.from({ length: ingesters }, (_, w) => ingester(w)) : []),
        ...Array.from({ length: searchers }, (_, w) => searcher(w)),
      ]);
      const secs = (Date.now() - t0) / 1000;
      const searchTimes = [...kinds]
        .filter(([k]) => k !== 'ingest')
        .flatMap(([k, v]) => v.latencies.slice(before.get(k) ?? 0))
        .sort((a, b) => a - b);
      const records = [...acked.values()].reduce((a, b) => a + b.records, 0) - acked0;
      return { p95: percentile(searchTimes, 95), p50: percentile(searchTimes, 50), rate: records / secs };
    };
    if (args.compare) {
      // Ingestion first: the searches alone then run over the data they run over beside it.
      const ingestAlone = await phase(INGESTERS, 0);
      const alone = await phase(0, SEARCHERS);
      const both = await phase(INGESTERS, SEARCHERS);
      const p95x = both.p95 / alone.p95;
      const ratex = both.rate / ingestAlone.rate;
      process.stdout.write(
        `search under ingestion: searches p50/p95 alone ${alone.p50.toFixed(1)}/${alone.p95.toFixed(1)} ms, ` +
          `beside ingestion ${both.p50.toFixed(1)}/${both.p95.toFixed(1)} ms: p95 ${p95x.toFixed(2)}× (target ≤ 2: ${p95x <= 2 ? 'met' : 'MISSED'})\n` +
          `ingestion alone ${ingestAlone.rate.toFixed(0)} records/s, beside searches ${both.rate.toFixed(0)} records/s: ` +
          `${ratex.toFixed(2)}× (target ≥ 0.5: ${ratex >= 0.5 ? 'met' : 'MISSED'})\n`,
      );
    } else await phase(INGESTERS, SEARCHERS);
    clearInterval(sampler);
    sample();
    const elapsed = (Date.now() - started) / 1000;

    // Nothing acknowledged may be missing: per-stream counts after the run.
    let countCheck = 'not checked (no ingestion route)';
    if (canIngest) {
      await new Promise((r) => setTimeout(r, 1000));
      const page = await server.call('POST', `/v2/projects/${project.id}/log_streams/search`, {
        include_counts: true,
        limit: 1000,
      });
      const byId = new Map<string, any>(page.body.log_streams.map((l: any) => [l.id, l]));
      let ackedTraces = 0;
      let countedTraces = 0;
      const short: string[] = [];
      for (const [id, a] of acked) {
        ackedTraces += a.traces;
        const n = byId.get(id)?.num_traces ?? 0;
        countedTraces += n;
        if (n < a.traces) short.push(`${id}: ${n} of ${a.traces}`);
      }
      countCheck = short.length
        ? `MISSING: ${short.join('; ')}`
        : `ok (${countedTraces} traces counted, ${ackedTraces} acknowledged)`;
    }

    // --- report ---------------------------------------------------------------------------------
    let total = 0;
    let errors = 0;
    let locked = 0;
    const lines: string[] = [];
    for (const [name, k] of kinds) {
      const sorted = [...k.latencies].sort((a, b) => a - b);
      total += sorted.length;
      errors += k.errors;
      locked += k.locked;
      lines.push(
        `  ${name.padEnd(26)} ${String(sorted.length).padStart(7)} req ${(sorted.length / elapsed).toFixed(1).padStart(8)}/s  ` +
          `p50 ${percentile(sorted, 50).toFixed(1).padStart(7)}  p90 ${percentile(sorted, 90).toFixed(1).padStart(7)}  ` +
          `p99 ${percentile(sorted, 99).toFixed(1).padStart(7)}  max ${(sorted[sorted.length - 1] ?? 0).toFixed(1).padStart(8)} ms  errors ${k.errors}`,
      );
    }
    const ingested = [...acked.values()].reduce((a, b) => a + b.records, 0);
    process.stdout.write(
      `\nrequests: ${total} in ${elapsed.toFixed(1)} s (${(total / elapsed).toFixed(1)}/s), errors: ${errors}`,
    );
    process.stdout.write(store === 'sqlite' ? `, "database is locked" seen by clients: ${locked}\n` : '\n');
    process.stdout.write(
      `records acknowledged: ${ingested} (${(ingested / elapsed).toFixed(0)}/s); counts after the run: ${countCheck}\n`,
    );
    process.stdout.write(`latency per kind (ms):\n${lines.join('\n')}\n`);
    if (firstErrors.length) process.stdout.write(`first errors:\n  ${firstErrors.join('\n  ')}\n`);

    // RSS: the series, and the trend after the first third (warm-up: caches and pools fill). The trend
    // is that of the private part (RssAnon), where a leak shows: the rest is mostly the program's
    // code and libraries.
    process.stdout.write(
      `RSS (MB) every ${SAMPLE_EVERY} s: ${rssSeries.map((p) => p.mb.toFixed(0)).join(' ')}\n` +
        `  of which private (RssAnon): ${rssSeries.map((p) => p.anon.toFixed(0)).join(' ')}\n`,
    );
    if (COOLDOWN > 0) {
      const idle: string[] = [];
      for (let waited = 0; waited < COOLDOWN; waited += SAMPLE_EVERY) {
        await new Promise((r) => setTimeout(r, SAMPLE_EVERY * 1000));
        idle.push(`${(server.rss() / 2 ** 20).toFixed(0)}/${(server.anonRss() / 2 ** 20).toFixed(0)}`);
      }
      process.stdout.write(
        `RSS/private (MB) idle after the load, every ${SAMPLE_EVERY} s: ${idle.join(' ')}\n`,
      );
    }
    const half = rssSeries.filter((p) => p.t >= elapsed / 3);
    const perMin =
      slope(
        half.map((p) => p.t),
        half.map((p) => p.anon),
      ) * 60;
    const mean = half.reduce((a, p) => a + p.anon, 0) / Math.max(half.length, 1);
    const rssMean = half.reduce((a, p) => a + p.mb, 0) / Math.max(half.length, 1);
    const growthOverRun = perMin * (elapsed / 60);
    const verdict =
      half.length < 5
        ? 'too few samples for a trend (run longer, or lower --sample-every)'
        : Math.abs(growthOverRun) < Math.max(16, mean * 0.05)
          ? 'flat (no upward trend)'
          : perMin > 0
            ? 'RISING — possible leak'
            : 'falling';
    process.stdout.write(
      `private memory trend after warm-up: ${perMin >= 0 ? '+' : ''}${perMin.toFixed(2)} MB/min (mean ${mean.toFixed(0)} MB, peak ${Math.max(...rssSeries.map((p) => p.anon)).toFixed(0)} MB): ${verdict}\n` +
        `RSS mean ${rssMean.toFixed(0)} MB, peak ${Math.max(...rssSeries.map((p) => p.mb)).toFixed(0)} MB\n`,
    );
    const failed = errors > 0 || locked > 0 || countCheck.startsWith('MISSING');
    process.stdout.write(failed ? 'RESULT: FAIL\n' : 'RESULT: ok\n');
    process.exitCode = failed ? 1 : 0;
  } finally {
    await server.close();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:load failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
