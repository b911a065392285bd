/**
 * Model-call benchmark: `npm run bench:model-calls -- [--store sqlite|postgres] [--calls N]
 * [--batch N] [--delay MS] [--concurrency N]`.
 *
 * 1. The module's own time per call: --calls (default 2,000) calls through services.modelCalls.call
 *    to the fake OpenAI-compatible provider answering at once, interleaved one for one with the same
 *    request made bare (node:http, keep-alive, JSON parsed). Prints both p50/p95 and the module's
 *    time above the bare call (target: at most 1 ms at p50). The module's time includes everything
 *    it does: the integration's settings and token, the limiter, the SDK, the guarded fetch, pricing
 *    and the spend record written to the store.
 * 2. --batch (default 1,000) calls at once to a fake provider answering in --delay ms (default 200)
 *    with a concurrency limit of --concurrency (default 8): wall time against the limit's ideal
 *    (ceil(batch / concurrency) × delay; target within 10%), and every call answered once: the
 *    provider saw each prompt exactly once, each call got its own reply, each has one spend record.
 * PostgreSQL: SPANBASE_BENCH_DATABASE_URL or SPANBASE_TEST_DATABASE_URL (a schema is created and dropped).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { type Running, startServices } from '../src/server.ts';
import { startFakeProvider } from '../test/helpers/fake-provider.ts';
import { pct } from './lib/report.ts';
import { createPgSchema, dropPgSchema } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    calls: { type: 'string', default: '2000' },
    batch: { type: 'string', default: '1000' },
    delay: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '8' },
  },
});
const kind = args.store as 'sqlite' | 'postgres';
const pgUrl = process.env.SPANBASE_BENCH_DATABASE_URL ?? process.env.SPANBASE_TEST_DATABASE_URL;
if (kind === 'postgres' && !pgUrl) throw new Error('set SPANBASE_BENCH_DATABASE_URL for --store postgres');
const schema = `bench_mc_${process.pid}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-bench-mc-'));

async function start(concurrency: string): Promise<Running> {
  const config = loadConfig({
    SPANBASE_DATA_DIR: dataDir,
    SPANBASE_LOG_LEVEL: 'silent',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    SPANBASE_SCRYPT_COST: '1024',
    SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
    SPANBASE_MODEL_CONCURRENCY: concurrency,
    ...(kind === 'postgres' ? { SPANBASE_DATABASE_URL: pgUrl, SPANBASE_PG_SCHEMA: schema } : {}),
  });
  return startServices(config, { logger: false });
}

async function gateway(
  running: Running,
  endpoint: string,
): Promise<{ integrationId: string; projectId: string }> {
  const key = running.bootstrap!.apiKey;
  const inject = async (method: 'PUT' | 'POST', url: string, body: unknown) => {
    const r = await running.app.inject({
      method,
      url,
      headers: { 'service-api-key': key },
      payload: body as object,
    });
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  const integration = await inject('PUT', '/v2/integrations/example_gateway', {
    endpoint,
    use_case: 'bench',
    token: 'sk-bench-0123456789abcdef',
  });
  const project = await inject('POST', '/v2/projects', { name: `bench-${Date.now()}` });
  return { integrationId: integration.id, projectId: project.id };
}

const agent = new http.Agent({ keepAlive: true });
/** The same chat request without the module: one keep-alive POST, its JSON parsed. */
function bare(url: URL, body: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-0123456789abcdef' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const fmt = (n: number) => `${n.toFixed(3)} ms`;

async function overhead() {
  const fake = await startFakeProvider();
  const running = await start('8');
  try {
    const { integrationId, projectId } = await gateway(running, fake.url);
    const messages = [
      { role: 'system' as const, content: 'You are a judge.' },
      { role: 'user' as const, content: 'Is this answer correct? yes' },
    ];
    const chatUrl = new URL(`${fake.url}/chat/completions`);
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages });
    const one = () =>
      running.services.modelCalls.call({
        integrationId,
        model: 'gpt-4o-mini',
        messages,
        purpose: 'scorer',
        projectId,
      });
    for (let i = 0; i < 200; i++) {
      await one();
      await bare(chatUrl, body);
    }
    const n = Number(args.calls);
    const mod: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < n; i++) {
      let t = performance.now();
      await one();
      mod.push(performance.now() - t);
      t = performance.now();
      await bare(chatUrl, body);
      raw.push(performance.now() - t);
    }
    const above = (p: number) => pct(mod, p) - pct(raw, p);
    console.log(
      `1. module time per call over a bare HTTP call (${n} calls each, ${kind}, provider answering at once)`,
    );
    console.log(`   module: p50 ${fmt(pct(mod, 50))}  p95 ${fmt(pct(mod, 95))}`);
    console.log(`   bare:   p50 ${fmt(pct(raw, 50))}  p95 ${fmt(pct(raw, 95))}`);
    console.log(
      `   module's own time: p50 ${fmt(above(50))}  p95 ${fmt(above(95))}  (target p50 <= 1 ms: ${above(50) <= 1 ? 'met' : 'NOT met'})`,
    );
  } finally {
    await running.close();
    await fake.close();
  }
}

async function throughput() {
  const delay = Number(args.delay);
  const batch = Number(args.batch);
  const concurrency = Number(args.concurrency);
  const fake = await startFakeProvider({ delayMs: delay });
  const running = await start(String(concurrency));
  try {
    const { integrationId, projectId } = await gateway(running, fake.url);
    const before = fake.requests.length;
    const t = performance.now();
    const outs = await Promise.all(
      Array.from({ length: batch }, (_, i) =>
        running.services.modelCalls.call({
          integrationId,
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: `call ${i}` }],
          purpose: 'experiment',
          projectId,
        }),
      ),
    );
    const wall = performance.now() - t;
    const ideal = Math.ceil(batch / concurrency) * delay;
    const prompts = fake.requests.slice(before).map((r) => r.body.messages.at(-1).content);
    const wrong = outs.filter((o, i) => o.choices[0].text !== `call ${i}`).length;
    const recorded = Number(
      (
        await sql<{
          n: number;
        }>`select count(*) as n from model_calls where project_id = ${projectId}`.execute(
          running.services.store.db,
        )
      ).rows[0].n,
    );
    console.log(
      `2. ${batch} calls at once, provider answering in ${delay} ms, concurrency limit ${concurrency} (${kind})`,
    );
    console.log(
      `   wall ${(wall / 1000).toFixed(2)} s, ideal ${(ideal / 1000).toFixed(2)} s: ${((wall / ideal - 1) * 100).toFixed(1)}% over (target within 10%: ${wall <= ideal * 1.1 ? 'met' : 'NOT met'})`,
    );
    console.log(
      `   provider requests ${prompts.length}, distinct prompts ${new Set(prompts).size}, replies not their own ${wrong}, spend records ${recorded}, most in flight at the provider ${fake.maxInFlight}`,
    );
    const ok =
      prompts.length === batch && new Set(prompts).size === batch && wrong === 0 && recorded === batch;
    console.log(`   no call lost or doubled: ${ok ? 'yes' : 'NO'}`);
    if (!ok) process.exitCode = 1;
  } finally {
    await running.close();
    await fake.close();
  }
}

if (kind === 'postgres') await createPgSchema(pgUrl!, schema);
try {
  await overhead();
  if (kind === 'postgres') {
    await dropPgSchema(pgUrl!, schema);
    await createPgSchema(pgUrl!, schema);
  } else {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.mkdirSync(dataDir);
  }
  await throughput();
} finally {
  agent.destroy();
  if (kind === 'postgres') await dropPgSchema(pgUrl!, schema);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
