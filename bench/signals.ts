/**
 * Signals and alerts benchmark (issue 35's figures), on a log stream of 1,000,000 records over the
 * last 24 hours (200,000 traces with 4 spans each; 1% of tool spans fail, latency and cost with a
 * long tail; 1% of traces score low on a `correctness` scorer), written straight into the store in the shape ingestion writes:
 *
 * - the selection step of a Signals run (window figures, the errors, low scores and outliers first, the sample's
 *   texts, the prompt within its context budget): its time, and its peak RSS above the idle process
 *   (measured in a fresh child process that opens the store, so generation does not count); the
 *   tokens the prompt would send (characters / 4);
 * - 100 alert rules (different metrics, aggregations, filters and windows from 5 to 60 minutes)
 *   evaluated as the minute's pass does: the pass's time.
 *
 *   npm run bench:signals                         # SQLite
 *   npm run bench:signals -- --store postgres     # PostgreSQL (SPANBASE_BENCH_DATABASE_URL or the test URL)
 *   npm run bench:signals -- --records 100000     # smaller
 *   npm run bench:signals -- --keep / --reuse    # keep the generated store / run on a kept one
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { ManualClock } from '../src/domain/clock.ts';
import { fitSample, modelFreeFindings, signalsPrompt } from '../src/domain/signal-runs.ts';
import { startServices } from '../src/server.ts';
import { DEFAULT_SIGNAL_RUN_OPTIONS } from '../src/services/signal-runs.ts';
import { ScorersRepo } from '../src/store/scorers.ts';
import { SignalRunsRepo } from '../src/store/signal-runs.ts';
import { rng } from './lib/data.ts';
import { createPgSchema, dropPgSchema } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '1000000' },
    child: { type: 'string' },
    'database-url': { type: 'string' },
    // Keep the generated store afterwards (to look at its plans); --reuse runs on a kept one.
    keep: { type: 'boolean', default: false },
    reuse: { type: 'boolean', default: false },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const RECORDS = Number(args.records);
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `bench_signals_${RECORDS}`;
const DATA_DIR = path.join(os.tmpdir(), `spanbase-bench-signals-${STORE}-${RECORDS}`);
const END_MS = Date.UTC(2026, 0, 2);
const DAY_MS = 86_400_000;

const config = () =>
  loadConfig({
    SPANBASE_DATA_DIR: DATA_DIR,
    SPANBASE_LOG_LEVEL: 'silent',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    SPANBASE_SCRYPT_COST: '1024',
    ...(STORE === 'postgres' ? { SPANBASE_DATABASE_URL: DB_URL, SPANBASE_PG_SCHEMA: SCHEMA } : {}),
  });

type Row = Record<string, unknown>;
const r = rng(35);
const WORDS =
  'refund order invoice shipping password reset delivery price billing error timeout tool search summary'.split(
    ' ',
  );
const text = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');

/** One trace and its 4 spans (llm, tool, retriever, llm) at `t` µs. */
function traceRows(projectId: string, runId: string, t: number): Row[] {
  const traceId = randomUUID();
  // A long tail: most traces 0.2-2 s, one in 500 ten times slower.
  const dur = Math.floor((200 + r() * 1800) * (r() < 0.002 ? 10 : 1) * 1e6);
  const cost = Math.round(r() * 2000 * (r() < 0.002 ? 20 : 1)) / 1e6;
  const toolFails = r() < 0.01;
  // A rule scorer's score on each trace: mostly high, one in 100 low.
  const correctness = r() < 0.01 ? Math.round(r() * 40) / 100 : 0.6 + Math.round(r() * 40) / 100;
  const rec = (type: string, id: string, name: string, extra: Row): Row => ({
    id,
    project_id: projectId,
    run_id: runId,
    type,
    session_id: null,
    trace_id: traceId,
    parent_id: type === 'trace' ? null : traceId,
    name,
    created_at: t,
    updated_at: t,
    is_complete: 1,
    status_code: 200,
    duration_ns: Math.floor(dur / 4),
    metrics: null,
    input_text: text(20),
    output_text: text(40),
    num_children: 0,
    ...extra,
  });
  return [
    rec('trace', traceId, 'chat', {
      duration_ns: dur,
      metrics: JSON.stringify({ cost, correctness }),
      num_children: 4,
    }),
    rec('llm', randomUUID(), 'llm', { model: 'gpt-4o' }),
    rec(
      'tool',
      randomUUID(),
      'lookup_order',
      toolFails ? { status_code: 500, output_text: 'upstream timeout' } : {},
    ),
    rec('retriever', randomUUID(), 'search_docs', {}),
    rec('llm', randomUUID(), 'llm', { model: 'gpt-4o' }),
  ];
}

async function generate() {
  fs.rmSync(DATA_DIR, { recursive: true, force: true });
  if (STORE === 'postgres') {
    await dropPgSchema(DB_URL, SCHEMA).catch(() => {});
    await createPgSchema(DB_URL, SCHEMA);
  }
  const running = await startServices(config(), { logger: false });
  const { store } = running.services;
  const admin = running.bootstrap!.apiKey;
  const call = async (url: string, body: unknown) =>
    JSON.parse(
      (
        await running.app.inject({
          method: 'POST',
          url,
          headers: { 'service-api-key': admin, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        })
      ).body,
    );
  const project = await call('/v2/projects', { name: 'bench-signals' });
  const ls = await call(`/v2/projects/${project.id}/log_streams`, { name: 'bench' });
  // The run scores its traces with `correctness` (scores are the records' metrics/<scorer name>).
  await new ScorersRepo(store.db, store.dialect).saveSettings(
    {
      run_id: ls.id,
      project_id: project.id,
      scorers: [{ name: 'correctness' }],
      segment_filters: [],
      integration_id: null,
      updated_at: END_MS * 1000,
    },
    null,
  );
  const traces = Math.floor(RECORDS / 5);
  const started = performance.now();
  const columns = Object.keys(traceRows('p', 'r', 0)[0]);
  for (let i = 0; i < traces; i += 2000) {
    const rows: Row[] = [];
    for (let k = i; k < Math.min(traces, i + 2000); k++)
      rows.push(
        ...traceRows(project.id, ls.id, Math.floor((END_MS - DAY_MS + (k * DAY_MS) / traces) * 1000)),
      );
    if (store.dialect === 'sqlite') {
      const ins = store.sqlite!.prepare(
        `insert into records (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`,
      );
      store.sqlite!.transaction((list: Row[]) => {
        for (const row of list) ins.run(row);
      })(rows);
    } else {
      for (let j = 0; j < rows.length; j += 1000) {
        const params: unknown[] = [];
        const tuples = rows
          .slice(j, j + 1000)
          .map((row) => `(${columns.map((c) => `$${params.push(row[c])}`).join(', ')})`);
        await store.pool!.query(
          `insert into records (${columns.join(', ')}) values ${tuples.join(', ')}`,
          params,
        );
      }
    }
  }
  if (store.dialect === 'postgres') await store.pool!.query('vacuum analyze records');
  else store.sqlite!.exec('analyze');
  console.log(`  wrote ${traces * 5} records in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await running.close();
  return { projectId: project.id as string, runId: ls.id as string };
}

/** The project and log stream of a store kept by an earlier --keep run. */
async function kept() {
  const running = await startServices(config(), { logger: false });
  const ls = await running.services.store.db
    .selectFrom('runs')
    .select(['id', 'project_id'])
    .where('name', '=', 'bench')
    .executeTakeFirstOrThrow();
  await running.close();
  return { projectId: ls.project_id, runId: ls.id };
}

/** In a fresh process: the selection step's time and peak RSS above idle. */
async function selectionChild(runId: string) {
  const running = await startServices(config(), { logger: false });
  const { store } = running.services;
  const repo = new SignalRunsRepo(store.db, store.dialect);
  global.gc?.();
  const idle = process.memoryUsage().rss;
  let peak = idle;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 2);
  const w = { runId, startUs: (END_MS - DAY_MS) * 1000, endUs: END_MS * 1000 };
  const t0 = performance.now();
  const steps: Record<string, number> = {};
  const lap = (name: string, from: number) => {
    steps[name] = Math.round(performance.now() - from);
    return performance.now();
  };
  let t = performance.now();
  const figures = await repo.figures(w);
  t = lap('figures', t);
  const selected = await repo.select(w, DEFAULT_SIGNAL_RUN_OPTIONS.selectLimit, {
    names: await repo.scoreNames(runId),
    below: DEFAULT_SIGNAL_RUN_OPTIONS.lowScoreBelow,
  });
  t = lap('select', t);
  const texts = await repo.texts(selected.map((s) => s.id));
  lap('texts', t);
  const sample = fitSample(
    selected.map((record) => ({ record, ...(texts.get(record.id) ?? { input: '', output: '' }) })),
    DEFAULT_SIGNAL_RUN_OPTIONS.budgetTokens,
  );
  const findings = modelFreeFindings(figures, selected);
  const prompt = signalsPrompt({ sample, focusOn: '', dontFocusOn: '', open: [], findings });
  const ms = performance.now() - t0;
  clearInterval(timer);
  const maxRss = process.resourceUsage().maxRSS * 1024;
  peak = Math.max(peak, maxRss);
  const chars = prompt.reduce((n, m) => n + m.content.length, 0);
  console.log(
    JSON.stringify({
      ms,
      steps,
      idleMb: idle / 2 ** 20,
      aboveIdleMb: (peak - idle) / 2 ** 20,
      recordsRead: figures.records,
      selected: selected.length,
      sampled: sample.length,
      findings: findings.map((f) => `${f.severity} ${f.title} (${f.count})`),
      tokensSent: Math.ceil(chars / 4),
    }),
  );
  await running.close();
}

async function alerts(projectId: string, runId: string) {
  const clock = new ManualClock(END_MS);
  const running = await startServices(config(), { logger: false, clock });
  const { alerts: service } = running.services;
  await service.job.stop();
  // A kept store (--reuse) holds an earlier run's rules.
  await running.services.store.db.deleteFrom('alert_events').execute();
  await running.services.store.db.deleteFrom('alert_rules').execute();
  const admin = await running.services.store.db
    .selectFrom('users')
    .select(['id', 'role'])
    .executeTakeFirstOrThrow();
  const caller = { id: admin.id, role: admin.role } as any;
  const metrics: [string, string][] = [
    ['duration_ns', 'P95'],
    ['duration_ns', 'Average'],
    ['duration_ns', 'Max'],
    ['status_code', 'Count'],
    ['metrics/cost', 'Sum'],
  ];
  for (let i = 0; i < 100; i++) {
    const [metric, aggregation] = metrics[i % metrics.length];
    await service.create(caller, projectId, runId, {
      name: `rule ${i}`,
      metric,
      aggregation: aggregation as any,
      filter_tree:
        i % 2
          ? {
              filter: {
                column_id: 'type',
                operator: 'eq',
                value: i % 4 === 1 ? 'trace' : 'tool',
                type: 'text',
              },
            }
          : null,
      window_minutes: [5, 15, 30, 60][i % 4],
      comparison: 'gt',
      threshold: 1e12,
    });
  }
  const times: number[] = [];
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    const n = await service.evaluateAll();
    times.push(performance.now() - t0);
    clock.advance(60_000);
    if (n !== 100) throw new Error(`evaluated ${n} rules`);
  }
  await running.close();
  return times;
}

if (args.child) {
  await selectionChild(args.child);
} else {
  console.log(`bench:signals [${STORE}] ${RECORDS.toLocaleString('en-US')} records over 24 h`);
  const { projectId, runId } = args.reuse ? await kept() : await generate();
  const child = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--expose-gc',
      import.meta.filename,
      '--store',
      STORE,
      '--records',
      String(RECORDS),
      '--child',
      runId,
    ],
    { encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(child.stderr);
  const sel = JSON.parse(child.stdout.trim().split('\n').at(-1)!);
  console.log(
    `  selection step: ${sel.ms.toFixed(0)} ms (target <= 2000), peak RSS ${sel.aboveIdleMb.toFixed(1)} MB above idle ${sel.idleMb.toFixed(0)} MB (target <= 100)`,
  );
  console.log(
    `    steps (ms): ${JSON.stringify(sel.steps)}; window ${sel.recordsRead} records, ${sel.selected} selected, ${sel.sampled} sampled, ~${sel.tokensSent} tokens sent`,
  );
  console.log(`    model-free findings: ${sel.findings.join('; ')}`);
  const times = await alerts(projectId, runId);
  console.log(
    `  100 alert rules, one minute's pass: ${times.map((t) => `${(t / 1000).toFixed(2)} s`).join(', ')} (target <= 5 s)`,
  );
  if (!args.keep) {
    if (STORE === 'postgres') await dropPgSchema(DB_URL, SCHEMA);
    fs.rmSync(DATA_DIR, { recursive: true, force: true });
  }
}
