/**
 * Console benchmark, in headless Chromium (Debian's, through playwright-core) against a real server:
 *
 * 1. Time from navigation to the traces table showing its first page, on a log stream of N records
 *    (default 1,000,000), p50 and p95 over --loads loads (default 20), beside the time of the page's
 *    own search request (Resource Timing) and of the same search sent from Node without a browser.
 * 2. Time to show a 5,000-span trace (and how much of it is the GET of the trace, which grows with
 *    the trace, and how much the page), and to jump its tree to the end, beside the same for a
 *    50-span trace; and the frames while scrolling each through, a viewport per frame.
 * 3. JavaScript and CSS of a first load of the traces page: gzipped bytes (each file fetched with
 *    Accept-Encoding: gzip) and what Chromium transferred (it asks for brotli).
 *
 *   npm run bench:console                               # SQLite, 1,000,000 records
 *   npm run bench:console -- --records 20000 --loads 5  # a quick look
 *   npm run bench:console -- --store postgres
 *
 * The records are ingested over HTTP before any clock starts (bench:ingest measures that).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { bigTrace } from '../test/helpers/console-data.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { ensureConsoleBuilt } from '../web/build.ts';
import { TraceTemplates } from './lib/data.ts';
import { gzippedSize, pct, row } from './lib/report.ts';
import { call, createPgSchema, dropPgSchema, poster, startChildServer } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '1000000' },
    loads: { type: 'string', default: '20' },
    port: { type: 'string' },
    'database-url': { type: 'string' },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const RECORDS = Number(args.records);
const LOADS = Math.max(1, Number(args.loads));
const PORT = Number(args.port ?? (STORE === 'sqlite' ? 18600 : 18601));
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `bench_console_${process.pid}`;

// The functions given to page.evaluate run in the page; these are the page's globals they use.
declare const document: { querySelector(selector: string): any };
declare const requestAnimationFrame: (callback: (time: unknown) => void) => number;
interface ResourceEntry {
  name: string;
  duration: number;
  transferSize: number;
  decodedBodySize: number;
}
/** Traces per ingest request; each template trace is 5 records. */
const BATCH = 200;

async function ingest(server: { url: string; key: string }, projectId: string, logStreamId: string) {
  const templates = new TraceTemplates(256, 7);
  const traces = Math.ceil(RECORDS / 5);
  const bodies: Buffer[] = [];
  for (let done = 0; done < traces; done += BATCH) {
    const n = Math.min(BATCH, traces - done);
    const list = Array.from({ length: n }, () => templates.fill(null));
    bodies.push(Buffer.from(`{"log_stream_id":"${logStreamId}","traces":[${list.join(',')}]}`));
  }
  const post = poster(server, 2);
  const started = performance.now();
  let sent = 0;
  const worker = async () => {
    for (let body = bodies.pop(); body; body = bodies.pop()) {
      const r = await post(`/v2/projects/${projectId}/traces`, body);
      if (r.status !== 200) throw new Error(`ingest: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      sent += r.body.records_count;
      if (sent % 100_000 < BATCH * 5) process.stdout.write(`  … ${sent} records\n`);
    }
  };
  await Promise.all([worker(), worker()]);
  console.log(`  loaded ${sent} records in ${((performance.now() - started) / 1000).toFixed(1)} s (untimed)`);
}

/**
 * Milliseconds since the navigation started, taken in the first frame where `selector` is in the page
 * (read in that frame: asking for the time in a second call would add a round trip to the browser).
 */
async function shownAt(page: Page, selector: string): Promise<number> {
  const at = await page.waitForFunction(
    (sel) => (document.querySelector(sel) !== null ? performance.now() : 0),
    selector,
    { polling: 'raf' },
  );
  return (await at.jsonValue()) as number;
}

async function main() {
  await ensureConsoleBuilt();
  if (STORE === 'postgres') await createPgSchema(DB_URL, SCHEMA);
  const server = await startChildServer({ port: PORT, store: STORE, databaseUrl: DB_URL, pgSchema: SCHEMA });
  const browser = await launchChromium();
  try {
    console.log(`console bench [${STORE}], ${RECORDS} records, ${LOADS} loads`);
    const p = await call(server, 'POST', '/v2/projects', { name: `console-bench-${Date.now()}` });
    const ls = await call(server, 'POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'bench' });
    const projectId = p.body.id as string;
    const logStreamId = ls.body.id as string;
    await ingest(server, projectId, logStreamId);
    const small = bigTrace(50);
    const large = bigTrace(5000);
    for (const t of [small, large]) {
      const r = await call(server, 'POST', `/v2/projects/${projectId}/traces`, {
        log_stream_id: logStreamId,
        traces: [t],
      });
      if (r.status !== 200) throw new Error(`trace: ${JSON.stringify(r.body).slice(0, 300)}`);
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const login = await context.request.post(`${server.url}/v2/console/login`, {
      data: { api_key: server.key },
    });
    if (!login.ok()) throw new Error(`console login: ${login.status()}`);
    const base = `${server.url}/projects/${projectId}/log_streams/${logStreamId}`;

    // --- 3. first load: JS and CSS (a fresh context has an empty cache) ------------------------------
    const first = await context.newPage();
    await first.goto(`${base}/traces`);
    await shownAt(first, 'table.records tbody tr');
    const assets = (await first.evaluate(() =>
      (performance.getEntriesByType('resource') as unknown as ResourceEntry[])
        .filter((e) => /\.(js|css)(\?|$)/.test(e.name))
        .map((e) => ({ url: e.name, transferred: e.transferSize, decoded: e.decodedBodySize })),
    )) as { url: string; transferred: number; decoded: number }[];
    await first.close();
    let gzipped = 0;
    for (const a of assets) gzipped += await gzippedSize(a.url);
    const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

    // --- 1. traces page, first page of a log stream of N records ------------------------------------
    // Warm: the browser cache holds the assets (as for anyone who opened the console before).
    const page = await context.newPage();
    const totals: number[] = [];
    const inPage: number[] = [];
    const overhead: number[] = [];
    for (let i = 0; i < LOADS + 2; i++) {
      await page.goto(`${base}/traces`);
      const total = await shownAt(page, 'table.records tbody tr');
      const search = await page.evaluate(
        () =>
          (performance.getEntriesByType('resource') as unknown as ResourceEntry[]).find((e) =>
            e.name.endsWith('/traces/search'),
          )?.duration ?? Number.NaN,
      );
      if (i < 2) continue; // warm-up loads
      totals.push(total);
      inPage.push(search);
      overhead.push(total - search);
    }
    const direct: number[] = [];
    const body = JSON.stringify({ log_stream_id: logStreamId, pagination: { starting_token: 0, limit: 50 } });
    for (let i = 0; i < LOADS + 2; i++) {
      const t0 = performance.now();
      const r = await fetch(`${server.url}/v2/projects/${projectId}/traces/search`, {
        method: 'POST',
        headers: { 'service-api-key': server.key, 'content-type': 'application/json' },
        body,
      });
      await r.arrayBuffer();
      if (i >= 2) direct.push(performance.now() - t0);
    }

    // --- 2. a 5,000-span trace beside a 50-span one ---------------------------------------------------
    const traceFigures = async (id: string) => {
      const open: number[] = [];
      const request: number[] = [];
      const end: number[] = [];
      const frame: number[] = [];
      const slow: number[] = [];
      for (let i = 0; i < Math.max(5, Math.ceil(LOADS / 4)) + 1; i++) {
        await page.goto(`${base}/traces/${id}`);
        const shown = await shownAt(page, '[role="treeitem"]');
        const fetched = await page.evaluate(
          (traceId) =>
            (performance.getEntriesByType('resource') as unknown as ResourceEntry[]).find((e) =>
              e.name.endsWith(`/traces/${traceId}`),
            )?.duration ?? Number.NaN,
          id,
        );
        // Jump to the end and wait for the last row to be drawn.
        const jumped = await page.evaluate(async () => {
          const tree = document.querySelector('[role="tree"]');
          const total = Number(/\((\d+) shown\)/.exec(tree.getAttribute('aria-label') ?? '')?.[1]);
          const t0 = performance.now();
          tree.scrollTop = tree.scrollHeight;
          while (!tree.querySelector(`[data-index="${total - 1}"]`)) await new Promise(requestAnimationFrame);
          return performance.now() - t0;
        });
        // Then scroll it through from the top, a viewport per frame: the longest frame is what a user would feel.
        const longest = await page.evaluate(async () => {
          const tree = document.querySelector('[role="tree"]');
          tree.scrollTop = 0;
          await new Promise(requestAnimationFrame);
          const frames: number[] = [];
          let prev = performance.now();
          while (tree.scrollTop + tree.clientHeight < tree.scrollHeight - 1) {
            tree.scrollTop += tree.clientHeight;
            await new Promise(requestAnimationFrame);
            const now = performance.now();
            frames.push(now - prev);
            prev = now;
          }
          return { worst: Math.max(...frames), slow: frames.filter((f) => f > 50).length / frames.length };
        });
        if (i === 0) continue; // warm-up
        open.push(shown);
        request.push(fetched);
        end.push(jumped);
        frame.push(longest.worst);
        slow.push(longest.slow * 100);
      }
      return { open, request, own: open.map((o, i) => o - request[i]), end, frame, slow };
    };
    const fifty = await traceFigures(small.id);
    const fiveK = await traceFigures(large.id);

    console.log(`\n1. Traces page, first page of ${RECORDS} records (${LOADS} loads, warm cache)`);
    row('navigation → table shows its first page', totals);
    row("the page's search request (Resource Timing)", inPage);
    row('the same search from Node (no browser)', direct);
    row('page time beyond its search request', overhead);
    console.log(`   target: the page adds at most 300 ms p95 on top of its API calls`);

    const ratio = (a: number[], b: number[]) => (pct(a, 50) / pct(b, 50)).toFixed(2);
    console.log(`\n2. Trace view: 5,000 spans beside 50 spans (p50 over ${fiveK.open.length} opens)`);
    row('50 spans: navigation → tree shown', fifty.open);
    row('5,000 spans: navigation → tree shown', fiveK.open);
    row('50 spans: GET the trace (Resource Timing)', fifty.request);
    row('5,000 spans: GET the trace (Resource Timing)', fiveK.request);
    row('50 spans: open, beyond the GET', fifty.own);
    row('5,000 spans: open, beyond the GET', fiveK.own);
    row('50 spans: jump to the end → last row drawn', fifty.end);
    row('5,000 spans: jump to the end → last row drawn', fiveK.end);
    row('50 spans: longest frame scrolling through', fifty.frame);
    row('5,000 spans: longest frame scrolling through', fiveK.frame);
    console.log(
      `  frames over 50 ms while scrolling: 50 spans ${pct(fifty.slow, 50).toFixed(1)}%, 5,000 spans ${pct(fiveK.slow, 50).toFixed(1)}% (p50 of runs)`,
    );
    console.log(
      `   ratio 5,000 / 50 (p50): open ${ratio(fiveK.open, fifty.open)}×, open beyond the GET ${ratio(fiveK.own, fifty.own)}×, jump to end ${ratio(fiveK.end, fifty.end)}×  (target ≤ 3×)`,
    );

    console.log('\n3. First load of the traces page: JavaScript and CSS');
    for (const a of assets)
      console.log(`  ${a.url.replace(server.url, '').padEnd(48)} ${kb(a.decoded).padStart(10)} decoded`);
    console.log(
      `  gzipped (Accept-Encoding: gzip)              ${kb(gzipped).padStart(10)}   (target ≤ 350 KB)`,
    );
    console.log(
      `  transferred to Chromium (brotli)             ${kb(assets.reduce((n, a) => n + a.transferred, 0)).padStart(10)}  (with headers)`,
    );
    await context.close();
  } finally {
    await browser.close();
    await server.stop();
    if (STORE === 'postgres') await dropPgSchema(DB_URL, SCHEMA);
    fs.rmSync(server.dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
