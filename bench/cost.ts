/**
 * Cost benchmark: `npm run bench:cost -- [--store sqlite|postgres] [--records N] [--ingest-records N]
 * [--batch N]`.
 *
 * 1. Ingestion with cost beside ingestion without, in the same run: the same generated batches (same
 *    seed; the llm spans name catalogue models and one without a price) go through the ingest flow and
 *    the store (validation, planning, derived data, one transaction per batch) into two fresh stores,
 *    batch by batch in turn, one with the project's pricer and one without. No HTTP: the pricing share
 *    of the work is shown at its largest. Prints records/s of both and their ratio (target ≥ 0.95).
 * 2. Recompute throughput: --records records (default 1,000,000; 5 per trace, one of them an llm span)
 *    are ingested untimed, then a project price for every model is set and the run's costs are
 *    recomputed as POST /recompute-metrics does (pages of RECOMPUTE_BATCH llm spans, one transaction
 *    each, traces, sessions and days moved). Prints records and llm spans per second.
 * PostgreSQL: SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL (schemas are created and dropped).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { parseTracesRequest } from '../src/domain/ingest.ts';
import { Pricer } from '../src/domain/prices/pricer.ts';
import { RECOMPUTE_BATCH } from '../src/services/ingest.ts';
import { type Store, openStore } from '../src/store/db.ts';
import { recomputeFlow, tracesFlow } from '../src/store/ingest-flow.ts';
import { type IngestStore, ingestStore } from '../src/store/ingest.ts';
import { migrate } from '../src/store/migrate.ts';
import { DataGen, RECORDS_PER_TRACE } from './lib/data.ts';
import { createPgSchema, dropPgSchema } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '1000000' },
    'ingest-records': { type: 'string', default: '200000' },
    batch: { type: 'string', default: '1000' },
  },
});
const kind = args.store as 'sqlite' | 'postgres';
const recomputeRecords = Number(args.records);
const ingestRecords = Number(args['ingest-records']);
const batch = Number(args.batch);
const pgUrl = process.env.SPANBASE_BENCH_DATABASE_URL ?? process.env.SPANBASE_TEST_DATABASE_URL;
if (kind === 'postgres' && !pgUrl) {
  console.error('PostgreSQL needs SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL');
  process.exit(2);
}
const SEED = 11;
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);

interface Target {
  store: Store;
  ingest: IngestStore;
  projectId: string;
  runId: string;
  cleanup(): Promise<void>;
}

let opened = 0;
/** A fresh migrated store with one project and one log stream. */
async function target(): Promise<Target> {
  const schema = `bench_${process.pid}_cost_${opened++}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-bench-cost-'));
  if (kind === 'postgres') await createPgSchema(pgUrl as string, schema);
  const store = openStore(
    loadConfig({
      SPANBASE_DATA_DIR: dir,
      ...(kind === 'postgres' ? { SPANBASE_DATABASE_URL: pgUrl, SPANBASE_PG_SCHEMA: schema } : {}),
    }),
  );
  await migrate(store);
  const projectId = crypto.randomUUID();
  const runId = crypto.randomUUID();
  const now = Date.now() * 1000;
  await store.db
    .insertInto('projects')
    .values({
      id: projectId,
      name: 'cost',
      type: 'gen_ai',
      created_by: 'bench',
      created_at: now,
      updated_at: now,
    })
    .execute();
  await store.db
    .insertInto('runs')
    .values({
      id: runId,
      project_id: projectId,
      kind: 'log_stream',
      name: 'cost',
      created_by: 'bench',
      created_at: now,
      updated_at: now,
      num_traces: 0,
      num_spans: 0,
      has_user_created_sessions: 0,
    })
    .execute();
  const ingest = ingestStore(store);
  return {
    store,
    ingest,
    projectId,
    runId,
    async cleanup() {
      await ingest.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
      if (kind === 'postgres') await dropPgSchema(pgUrl as string, schema);
    },
  };
}

/** Request bodies of about `batch` records each (sessions created in the batch), `total` records in all. */
function* bodies(total: number): Generator<{ body: unknown; records: number }> {
  const gen = new DataGen(SEED);
  let left = total;
  while (left > 0) {
    const sessions: { id: string; name: string; external_id: string }[] = [];
    const traces: unknown[] = [];
    let records = 0;
    while (records < batch && left - records > 0) {
      const s = gen.session();
      const id = crypto.randomUUID();
      sessions.push({ id, name: s.name, external_id: s.external_id });
      for (let t = 0; t < s.traces; t++) traces.push(gen.trace(id));
      records += 1 + s.traces * RECORDS_PER_TRACE;
    }
    left -= records;
    yield { body: { log_stream_id: '', sessions, traces }, records };
  }
}

/** Writes one body through the ingest flow (what POST /traces does after its access checks). */
async function write(t: Target, body: any, pricer: Pricer | undefined): Promise<void> {
  const now = Date.now() * 1000;
  const req = parseTracesRequest({ ...body, log_stream_id: t.runId }, {}, now);
  await t.ingest.run(() => tracesFlow(req, { projectId: t.projectId, runId: t.runId, now, pricer }), 1);
}

async function ingestPhase() {
  const withCost = await target();
  const without = await target();
  const pricer = new Pricer();
  try {
    const time = { with: 0, without: 0 };
    let records = 0;
    let i = 0;
    for (const job of bodies(ingestRecords)) {
      // The same batch into each store, in turn (which goes first alternates).
      const order = i++ % 2 ? (['with', 'without'] as const) : (['without', 'with'] as const);
      for (const side of order) {
        const t0 = performance.now();
        await write(
          side === 'with' ? withCost : without,
          structuredClone(job.body),
          side === 'with' ? pricer : undefined,
        );
        time[side] += performance.now() - t0;
      }
      records += job.records;
    }
    const priced = await withCost.store.db
      .selectFrom('run_models')
      .select('model')
      .where('run_id', '=', withCost.runId)
      .execute();
    return { records, ...time, models: priced.map((m) => m.model) };
  } finally {
    await withCost.cleanup();
    await without.cleanup();
  }
}

async function recomputePhase() {
  const t = await target();
  try {
    const fill0 = performance.now();
    let records = 0;
    const pricer = new Pricer();
    for (const job of bodies(recomputeRecords)) {
      await write(t, job.body, pricer);
      records += job.records;
    }
    const fillMs = performance.now() - fill0;
    // Today's prices: one project price for every model, so every llm span's cost changes.
    const today = new Pricer([
      {
        id: 'bench',
        model_pattern: '.*',
        input_price_per_million: 0.5,
        output_price_per_million: 1.5,
        cache_read_input_price_per_million: null,
        cache_creation_input_price_per_million: null,
        input_includes_cached_tokens: null,
        start_date: null,
        created_at: 0,
      },
    ]);
    const t0 = performance.now();
    let after = { createdAt: Number.MIN_SAFE_INTEGER, id: '' };
    let scanned = 0;
    let changed = 0;
    for (;;) {
      const ctx = { projectId: t.projectId, runId: t.runId, now: Date.now() * 1000, pricer: today };
      const { result } = await t.ingest.run(() => recomputeFlow(ctx, after, RECOMPUTE_BATCH), 1);
      scanned += result.scanned;
      changed += result.changed;
      if (!result.next) break;
      after = result.next;
    }
    return { records, fillMs, ms: performance.now() - t0, scanned, changed };
  } finally {
    await t.cleanup();
  }
}

console.log(
  `cost benchmark: store=${kind} ingest-records=${ingestRecords} records=${recomputeRecords} batch≈${batch} (${os.cpus().length} cores)`,
);
const ing = await ingestPhase();
const withRate = rate(ing.records, ing.with);
const withoutRate = rate(ing.records, ing.without);
console.log(
  `ingest with cost:    ${ing.records} records in ${(ing.with / 1000).toFixed(1)} s = ${withRate} records/s (models: ${ing.models.join(', ')})`,
);
console.log(
  `ingest without cost: ${ing.records} records in ${(ing.without / 1000).toFixed(1)} s = ${withoutRate} records/s`,
);
console.log(`ratio: with / without = ${(withRate / withoutRate).toFixed(3)} (target ≥ 0.95)`);
const rec = await recomputePhase();
console.log(
  `recompute: ${rec.records} records (${rec.scanned} llm spans, ${rec.changed} changed) in ${(rec.ms / 1000).toFixed(1)} s = ` +
    `${rate(rec.records, rec.ms)} records/s, ${rate(rec.scanned, rec.ms)} llm spans/s` +
    ` (the store was filled in ${(rec.fillMs / 1000).toFixed(1)} s, untimed)`,
);
