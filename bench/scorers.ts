/**
 * Scorers benchmark: `npm run bench:scorers -- [--store sqlite|postgres] [--batches N] [--backfill N]`.
 *
 * Against an in-process server (HTTP through inject) and the fake provider answering after 200 ms:
 * 1. Ingestion with two rule scorers and one LLM judge (3 judges) enabled against ingestion with none,
 *    same run: the same batches of traces (one llm span each) go to two log streams of one project in
 *    turn, while the judges' tasks are worked off in the background. Prints records/s of both and the
 *    ratio (target ≥ 0.9), by total time and by median batch. One client sending one batch at a time
 *    waits for the group commit's 10 ms on every batch, which hides part of the difference; so the
 *    same is measured again (4.) with --clients sending at once, the rate the process can take.
 * 2. Scores per second with the default job concurrency, and the time from a record's ingestion to
 *    its score at p50 and p95 under that load (the judged log stream's records).
 * 4. The comparison of 1. with --clients (default 4) clients sending a batch each at once, rounds
 *    of the two log streams in turn (fresh streams, the judge's queue still busy from 1.).
 * 3. Backfill: --backfill records (default 100,000; traces of 5 records) ingested untimed, then a rule
 *    scorer is enabled and recomputed over all of them (POST /recompute_metrics). Prints records/s.
 * PostgreSQL: SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL. SPANBASE_ROLLUPS=off in the
 * environment measures the same without the dashboard rollups.
 */
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';
import { startFakeProvider } from '../test/helpers/fake-provider.ts';
import { startTestServer } from '../test/helpers/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    batches: { type: 'string', default: '60' },
    'batch-traces': { type: 'string', default: '50' },
    backfill: { type: 'string', default: '100000' },
    clients: { type: 'string', default: '4' },
  },
});
const kind = args.store as 'sqlite' | 'postgres';
const batches = Number(args.batches);
const perBatch = Number(args['batch-traces']);
const backfillRecords = Number(args.backfill);
const clients = Number(args.clients);
const pgUrl = process.env.SPANBASE_BENCH_DATABASE_URL ?? process.env.SPANBASE_TEST_DATABASE_URL;
/** Untimed batch pairs first (caches, prepared statements, the job runner starting). */
const WARMUP = 4;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const fake = await startFakeProvider({ delayMs: 200 });
fake.reply = () => '{"explanation": "fine", "rating": true}';
const s = await startTestServer(
  kind,
  {
    SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
    SPANBASE_JOB_POLL_MS: '50',
    SPANBASE_ROLLUPS: process.env.SPANBASE_ROLLUPS ?? 'on',
  },
  kind === 'postgres' ? { databaseUrl: pgUrl } : {},
);
const ok = async (method: string, url: string, body?: unknown) => {
  const r = await s.call(method, url, body);
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${r.text}`);
  return r.body;
};

try {
  await ok('PUT', '/v2/integrations/example_gateway', { endpoint: fake.url, use_case: 'chat', token: 't' });
  const P = (await ok('POST', '/v2/projects', { name: 'bench-scorers' })).id as string;
  const proj = (p: string) => `/v2/projects/${P}${p}`;
  const stream = async (name: string) => (await ok('POST', proj('/log_streams'), { name })).id as string;
  const rule = async (name: string, version: object) => {
    const sc = await ok('POST', '/v2/scorers', { name, scorer_type: 'rule' });
    await ok('POST', `/v2/scorers/${sc.id}/version/rule`, version);
    return sc.id as string;
  };
  const contains = await rule('bench_contains', {
    rule: 'contains',
    field: 'output',
    params: { value: 'Paris' },
  });
  const length = await rule('bench_length', { rule: 'length', field: 'output', params: { max: 200 } });
  const judge = await ok('POST', '/v2/scorers', { name: 'bench_judge', scorer_type: 'llm' });
  await ok('POST', `/v2/scorers/${judge.id}/version/llm`, {
    model_name: 'fake-model',
    num_judges: 3,
    chain_poll_template: { template: 'Q: {{input}}\nA: {{output}}\nIs the answer right?' },
  });

  /** A log stream with none, and one with two rule scorers and the judge. */
  const pair = async (tag: string) => {
    const plain = await stream(`none${tag}`);
    const scored = await stream(`scored${tag}`);
    await ok('POST', proj(`/runs/${scored}/scorer-settings`), {
      scorers: [
        { id: contains, scorer_type: 'rule' },
        { id: length, scorer_type: 'rule' },
        { id: judge.id, scorer_type: 'llm' },
      ],
    });
    return { plain, scored };
  };

  /** A batch of `n` traces with one llm span each (2 records per trace). */
  const batch = (ls: string, n: number, tag: string) => ({
    log_stream_id: ls,
    traces: Array.from({ length: n }, (_, i) => ({
      id: crypto.randomUUID(),
      name: 'chat',
      input: `Capital of France? ${tag} ${i}`,
      output: 'Paris',
      spans: [
        {
          id: crypto.randomUUID(),
          type: 'llm',
          name: 'model',
          input: `Capital of France? ${tag} ${i}`,
          output: 'Paris',
        },
      ],
    })),
  });

  const db = s.running.services.store.db;
  const scoredCount = async (runId: string) => {
    const r = await db
      .selectFrom('score_results')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('run_id', '=', runId)
      .where('status', '=', 'success')
      .executeTakeFirst();
    return Number(r?.n);
  };
  /**
   * Waits for the judge's first score on a run: its first call loads the provider SDKs (a few
   * hundred ms of module compilation, once per process), which the timed rounds should not count.
   */
  const firstScore = async (runId: string) => {
    const t0 = Date.now();
    while ((await scoredCount(runId)) === 0) {
      if (Date.now() - t0 > 60_000) throw new Error('no score within a minute of the warm-up');
      await new Promise((res) => setTimeout(res, 50));
    }
  };

  /**
   * Ingestion with scorers against without: rounds of `n` clients sending a batch each at once, to
   * one stream then the other; which goes first swaps every round (the second found warmer caches),
   * after an untimed warm-up that lasts until the judge's first score. Answers the judged stream and
   * its llm spans' send times.
   */
  const compare = async (n: number) => {
    const streams = await pair(`-${n}`);
    const sentAt = new Map<string, number>();
    const times: Record<'plain' | 'scored', number[]> = { plain: [], scored: [] };
    for (let b = -WARMUP; b < batches; b++) {
      if (b === 0) await firstScore(streams.scored);
      const order = b % 2 ? (['scored', 'plain'] as const) : (['plain', 'scored'] as const);
      for (const which of order) {
        const bodies = Array.from({ length: n }, (_, c) =>
          batch(streams[which], perBatch, `${which[0]}${b}.${c}`),
        );
        if (which === 'scored' && b >= 0)
          for (const body of bodies) for (const tr of body.traces) sentAt.set(tr.spans[0].id, Date.now());
        const t = performance.now();
        await Promise.all(bodies.map((body) => ok('POST', proj('/traces'), body)));
        if (b >= 0) times[which].push(performance.now() - t);
      }
    }
    const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    const records = batches * n * perBatch * 2;
    const rPlain = rate(records, sum(times.plain));
    const rScored = rate(records, sum(times.scored));
    const [mPlain, mScored] = [median(times.plain), median(times.scored)];
    console.log(`${n} client(s), ${records} records a side:`);
    console.log(`  ingestion without scorers: ${rPlain} records/s`);
    console.log(`  ingestion with 2 rule scorers + 1 LLM judge: ${rScored} records/s`);
    console.log(
      `  ratio: ${(rScored / rPlain).toFixed(2)}× by total time, ${(mPlain / mScored).toFixed(2)}× by median round (${mPlain.toFixed(1)} ms without, ${mScored.toFixed(1)} ms with; target ≥ 0.9)`,
    );
    return { sentAt, scored: streams.scored };
  };

  // 1. One client, one batch at a time.
  const { sentAt, scored } = await compare(1);

  // 2. Scores per second and ingestion-to-score latency (spans and traces of the judged stream).
  const tasks = sentAt.size;
  const t0 = Date.now();
  for (;;) {
    const n = await scoredCount(scored);
    if (n >= tasks) break;
    if (Date.now() - t0 > 600_000) throw new Error(`only ${n} of ${tasks} scored after 10 minutes`);
    await new Promise((res) => setTimeout(res, 100));
  }
  const results = await db
    .selectFrom('score_results')
    .select(['record_id', 'updated_at'])
    .where('run_id', '=', scored)
    .execute();
  const done = results.map((r) => Number(r.updated_at) / 1000);
  const first = Math.min(...[...sentAt.values()]);
  const last = Math.max(...done);
  console.log(
    `scores: ${tasks} (llm spans, 3 judges each, provider 200 ms, concurrency ${s.config.jobConcurrency}): ${((tasks / (last - first)) * 1000).toFixed(1)} scores/s`,
  );
  const lat = results
    .filter((r) => sentAt.has(r.record_id))
    .map((r) => Number(r.updated_at) / 1000 - (sentAt.get(r.record_id) as number))
    .sort((x, y) => x - y);
  console.log(
    `ingestion to score (llm spans): p50 ${Math.round(pct(lat, 50))} ms, p95 ${Math.round(pct(lat, 95))} ms`,
  );

  // 4. The same comparison with clients sending at once (the judge's queue still busy).
  await compare(clients);

  // 3. Backfill of a rule scorer over existing records.
  const back = await stream('backfill');
  const traces = Math.ceil(backfillRecords / 5);
  for (let i = 0; i < traces; i += 500) {
    const n = Math.min(500, traces - i);
    await ok('POST', proj('/traces'), {
      log_stream_id: back,
      traces: Array.from({ length: n }, (_, k) => ({
        id: crypto.randomUUID(),
        name: 'chat',
        input: `question ${i + k}`,
        output: (i + k) % 3 ? 'Paris' : 'Lyon',
        spans: Array.from({ length: 4 }, (_, j) => ({
          id: crypto.randomUUID(),
          type: 'llm',
          name: `step ${j}`,
          input: 'q',
          output: j % 2 ? 'Paris' : 'Rome',
        })),
      })),
    });
  }
  await ok('POST', proj(`/runs/${back}/scorer-settings`), {
    scorers: [{ id: contains, scorer_type: 'rule', scoreable_node_types: ['llm', 'trace'] }],
  });
  const tb = performance.now();
  const out = await ok('POST', proj('/recompute_metrics'), {
    log_stream_id: back,
    scorer_ids: [contains],
    max_records: backfillRecords + 1000,
  });
  const msBack = performance.now() - tb;
  console.log(
    `backfill with a rule scorer: ${out.records_scored} records in ${(msBack / 1000).toFixed(1)} s: ${rate(out.records_scored, msBack)} records/s (${out.records_changed} changed)`,
  );
} finally {
  await s.close();
  await fake.close();
}
