/**
 * Datasets benchmark, against a server in a child process over loopback HTTP:
 *
 * 1. Upload of a 100,000-row JSONL file of about 50 MB (multipart, streamed from disk as the
 *    official client's form would send it): rows per second, and the server's peak RSS above its
 *    idle RSS (target: flat in the file's size, at most 100 MB above idle).
 * 2. A 100-row page of version 1 of a dataset edited 1,000 times (updates, appends, prepends and
 *    deletes through PATCH content) against the same page of the latest version: p50 and p95 of each
 *    and their ratio (target: version 1 within 2x of the latest).
 *
 *   npm run bench:datasets                        # SQLite
 *   npm run bench:datasets -- --store postgres    # PostgreSQL (SPANBASE_BENCH_DATABASE_URL or the test URL)
 *   npm run bench:datasets -- --rows 20000        # a smaller file
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pct } from './lib/report.ts';
import { createPgSchema, dropPgSchema, startChildServer } from './lib/server.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    rows: { type: 'string', default: '100000' },
    edits: { type: 'string', default: '1000' },
    iterations: { type: 'string', default: '200' },
    port: { type: 'string' },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const ROWS = Number(args.rows);
const EDITS = Number(args.edits);
const ITER = Number(args.iterations);
const PORT = Number(args.port ?? (STORE === 'sqlite' ? 18700 : 18701));
const DB_URL =
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `bench_datasets_${process.pid}`;
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;

function statusBytes(pid: number | undefined, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** A JSONL file of `n` rows of about 500 bytes each (input, output, metadata). */
function writeFile(file: string, n: number): number {
  const fd = fs.openSync(file, 'w');
  const filler = 'lorem ipsum dolor sit amet '.repeat(12);
  let lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(
      JSON.stringify({
        input: `Question ${i}: ${filler}`,
        output: `Answer ${i}: ${filler.slice(0, 120)}`,
        metadata: { source: `doc-${i % 97}`, difficulty: String(i % 5) },
      }),
    );
    if (lines.length === 1000) {
      fs.writeSync(fd, `${lines.join('\n')}\n`);
      lines = [];
    }
  }
  if (lines.length) fs.writeSync(fd, `${lines.join('\n')}\n`);
  fs.closeSync(fd);
  return fs.statSync(file).size;
}

if (STORE === 'postgres') await createPgSchema(DB_URL, SCHEMA);
const server = await startChildServer({ port: PORT, store: STORE, databaseUrl: DB_URL, pgSchema: SCHEMA });
const auth = { 'service-api-key': server.key };
const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return { body: JSON.parse(text), etag: res.headers.get('etag') ?? '' };
};

try {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-bench-datasets-'));
  const file = path.join(dir, 'bench.jsonl');
  const size = writeFile(file, ROWS);
  await call('GET', '/v2/datasets');
  const idle = statusBytes(server.proc.pid, 'VmRSS');
  const peakBefore = statusBytes(server.proc.pid, 'VmHWM');

  console.log(`datasets bench [${STORE}]: upload of ${ROWS} rows, ${mb(size)} of JSONL`);
  const form = new FormData();
  form.append('name', 'bench upload');
  form.append('file', await fs.openAsBlob(file), 'bench upload');
  const started = performance.now();
  const res = await fetch(`${server.url}/v2/datasets?format=jsonl`, {
    method: 'POST',
    headers: auth,
    body: form,
  });
  const seconds = (performance.now() - started) / 1000;
  const uploaded = (await res.json()) as { num_rows?: number };
  if (!res.ok || uploaded.num_rows !== ROWS) throw new Error(`upload failed: ${JSON.stringify(uploaded)}`);
  const peak = statusBytes(server.proc.pid, 'VmHWM');
  console.log(
    `  ${(ROWS / seconds).toFixed(0)} rows/s (${seconds.toFixed(1)} s, ${(size / 1024 / 1024 / seconds).toFixed(1)} MB/s)`,
  );
  console.log(
    `  server RSS: idle ${mb(idle)}, peak ${mb(peak)} -> ${mb(peak - idle)} above idle` +
      (peakBefore > idle ? ` (peak before the upload ${mb(peakBefore)})` : ''),
  );
  fs.rmSync(dir, { recursive: true, force: true });

  console.log(
    `\nversions: a 1,000-row dataset edited ${EDITS} times, 100-row pages of version 1 vs the latest`,
  );
  const rows = Array.from({ length: 1000 }, (_, i) => ({ input: `row ${i}`, output: `out ${i}` }));
  const ds = (await call('POST', '/v2/datasets', { name: 'bench versions', rows })).body;
  let ids: string[] = [];
  for (let token: number | null = 0; token !== null; ) {
    const page: { rows: { row_id: string }[]; next_starting_token: number | null } = (
      await call('GET', `/v2/datasets/${ds.id}/content?starting_token=${token}&limit=1000`)
    ).body;
    ids.push(...page.rows.map((r) => r.row_id));
    token = page.next_starting_token;
  }
  let etag = (await call('GET', `/v2/datasets/${ds.id}/content?limit=1`)).etag;
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const editStarted = performance.now();
  for (let i = 0; i < EDITS; i++) {
    // Mostly updates of rows near the top (the page read below), some appends, prepends and deletes.
    const k = i % 10;
    const edit =
      k < 6
        ? {
            edit_type: 'update_row',
            row_id: ids[rand(Math.min(200, ids.length))],
            values: { output: `edit ${i}` },
          }
        : k < 8
          ? { edit_type: 'append_row', values: { input: `appended ${i}` } }
          : k < 9
            ? { edit_type: 'prepend_row', values: { input: `prepended ${i}` } }
            : { edit_type: 'delete_row', row_id: ids[rand(ids.length)] };
    const r = await call('PATCH', `/v2/datasets/${ds.id}/content`, { edits: [edit] }, { 'if-match': etag });
    etag = r.etag;
    if (edit.edit_type === 'delete_row') ids = ids.filter((id) => id !== edit.row_id);
  }
  const editSeconds = (performance.now() - editStarted) / 1000;
  console.log(
    `  ${EDITS} edits in ${editSeconds.toFixed(1)} s (${(EDITS / editSeconds).toFixed(0)} edits/s, each a version)`,
  );
  const time = async (url: string) => {
    const t = performance.now();
    await call('GET', url);
    return performance.now() - t;
  };
  const v1: number[] = [];
  const latest: number[] = [];
  for (let i = 0; i < 20; i++) {
    await time(`/v2/datasets/${ds.id}/versions/1/content?limit=100`);
    await time(`/v2/datasets/${ds.id}/content?limit=100`);
  }
  for (let i = 0; i < ITER; i++) {
    v1.push(await time(`/v2/datasets/${ds.id}/versions/1/content?limit=100`));
    latest.push(await time(`/v2/datasets/${ds.id}/content?limit=100`));
  }
  const f = (n: number) => `${n.toFixed(2)} ms`;
  console.log(`  version 1:      p50 ${f(pct(v1, 50))}  p95 ${f(pct(v1, 95))}`);
  console.log(`  latest (${EDITS + 1}): p50 ${f(pct(latest, 50))}  p95 ${f(pct(latest, 95))}`);
  console.log(
    `  version 1 / latest: p50 ${(pct(v1, 50) / pct(latest, 50)).toFixed(2)}x, p95 ${(pct(v1, 95) / pct(latest, 95)).toFixed(2)}x (target within 2x)`,
  );
} finally {
  await server.stop();
  if (STORE === 'postgres') await dropPgSchema(DB_URL, SCHEMA);
}
