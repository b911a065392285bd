/**
 * Every benchmark, one after another (they must not share the 2 cores): ingest, search, dashboards
 * and token usage, cost (ingestion with and without it, recompute), annotation queues, sustained
 * load, deletes and exports (lifecycle), the web console in Chromium (record pages, then dashboards),
 * model calls (the module's own time per call, 1,000 calls under a concurrency limit).
 * dataset uploads and version reads, scorers (ingestion with scorers, scores/s, backfill);
 * dataset uploads and version reads, experiments (a 1,000-row template run; a 20,000-row comparison),
 * the server's peak memory in each phase of its work and over a soak of all at once.
 * Arguments pass through to each, so give only the ones all of them take
 * (`npm run bench -- --store postgres`); each bench:NAME script takes its own options.
 * Each prints its own figures and its raw baseline; this only sequences them and reports failures.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const BENCHES = [
  'ingest',
  'search',
  'dashboards',
  'cost',
  'annotations',
  'load',
  'lifecycle',
  'console',
  'console-dashboards',
  'model-calls',
  'datasets',
  'signals',
  'scorers',
  'experiments',
  'memory',
] as const;
const passThrough = process.argv.slice(2);
const failed: string[] = [];

for (const name of BENCHES) {
  console.log(`\n=== bench:${name} ${passThrough.join(' ')}`.trimEnd());
  const started = Date.now();
  const res = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(import.meta.dirname, `${name}.ts`), ...passThrough],
    { stdio: 'inherit' },
  );
  console.log(
    `=== bench:${name} ended (exit ${res.status}) after ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  if (res.status !== 0) failed.push(name);
}

if (failed.length) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(1);
}
