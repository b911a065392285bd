/**
 * Annotation-queue benchmark: a queue of 100,000 traces (2 templates, 3 members; about half of the
 * records fully annotated, the rest in part), and queue searches with fully_annotated (alone, under
 * `not`, for one member, with an annotation filter and sort) through the HTTP API of an in-process
 * server (port 18600 for SQLite, 18601 for PostgreSQL), each beside the same page query run raw in
 * the same process; p50, p95 and p99.
 *
 *   npm run bench:annotations                          # SQLite
 *   npm run bench:annotations -- --store postgres      # PostgreSQL (SPANBASE_BENCH_DATABASE_URL or the test URL)
 *   npm run bench:annotations -- --records 10000       # a smaller queue
 *
 * The records, queue entries, annotations and their aggregates are written straight into the store
 * in the shape the API writes them (writing them is not what is measured here).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { aggregate, checkValue } from '../src/domain/annotations.ts';
import { loadConfig } from '../src/config.ts';
import { startServices } from '../src/server.ts';
import type { QueueScope } from '../src/services/search.ts';
import type { RecordSearch } from '../src/store/search-query.ts';
import type { PgSearch } from '../src/store/search-postgres.ts';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '100000' },
    iterations: { type: 'string', default: '100' },
    port: { type: 'string' },
    'database-url': { type: 'string' },
  },
});
const STORE = args.store === 'postgres' ? 'postgres' : 'sqlite';
const RECORDS = Number(args.records);
const ITER = Number(args.iterations);
const PORT = Number(args.port ?? (STORE === 'sqlite' ? 18600 : 18601));
const DB_URL =
  args['database-url'] ??
  process.env.SPANBASE_BENCH_DATABASE_URL ??
  process.env.SPANBASE_TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = `bench_annotations_${RECORDS}`;
const DATA_DIR = path.join(os.tmpdir(), `spanbase-bench-annotations-${STORE}-${RECORDS}`);

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
const r = rng(11);
const uuid = () => crypto.randomUUID();

type Row = Record<string, unknown>;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99) };
};
const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1)).padStart(7);

async function main() {
  fs.rmSync(DATA_DIR, { recursive: true, force: true });
  fs.mkdirSync(DATA_DIR, { recursive: true });
  if (STORE === 'postgres') {
    const c = new pg.Client({ connectionString: DB_URL });
    await c.connect();
    await c.query(`drop schema if exists ${SCHEMA} cascade`);
    await c.query(`create schema ${SCHEMA}`);
    await c.end();
  }
  const config = loadConfig({
    SPANBASE_DATA_DIR: DATA_DIR,
    SPANBASE_LOG_LEVEL: 'warn',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    SPANBASE_SCRYPT_COST: '1024',
    SPANBASE_PORT: String(PORT),
    ...(STORE === 'postgres' ? { SPANBASE_DATABASE_URL: DB_URL, SPANBASE_PG_SCHEMA: SCHEMA } : {}),
  });
  const running = await startServices(config, { logger: false });
  await running.app.listen({ port: PORT, host: '127.0.0.1' });
  const { store } = running.services;
  const key = fs.readFileSync(path.join(DATA_DIR, 'initial-admin-key'), 'utf8').trim();
  const base = `http://127.0.0.1:${PORT}`;
  const call = async (method: string, url: string, body?: unknown): Promise<any> => {
    const res = await fetch(base + url, {
      method,
      headers: { 'service-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status !== 200) throw new Error(`${method} ${url} → ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  // The timed client: one kept-alive connection; the body is read whole, parsed after the timing.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (url: string, body: unknown): Promise<Buffer> => {
    const text = JSON.stringify(body);
    return new Promise<Buffer>((resolve, reject) => {
      const req = http.request(
        base + url,
        {
          method: 'POST',
          agent,
          headers: {
            'service-api-key': key,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(text),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const out = Buffer.concat(chunks);
            if (res.statusCode !== 200) reject(new Error(`POST ${url} → ${res.statusCode} ${out}`));
            else resolve(out);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(text);
    });
  };

  console.log(`annotation-queue benchmark [${STORE}], a queue of ${RECORDS} traces, port ${PORT}`);
  const projectId = (await call('POST', '/v2/projects', { name: 'bench-annotations' })).id as string;
  const runId = (await call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'prod' })).id as string;
  const users = [(await call('GET', '/v2/current_user')).id as string];
  for (let i = 1; i < 3; i++) {
    const u = await call('POST', '/v2/users', {
      email: `annotator${i}@example.com`,
      password: 'bench-password-1',
    });
    await call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: u.id, role: 'annotator' });
    users.push(u.id);
  }
  const thumbs = await call('POST', `/v2/projects/${projectId}/annotation_templates`, {
    name: 'helpful',
    type: 'thumbs',
  });
  const stars = await call('POST', `/v2/projects/${projectId}/annotation_templates`, {
    name: 'quality',
    type: 'stars',
  });
  const templates = [thumbs, stars].map((t) => ({ id: t.id as string, type: t.type, config: {} }));
  const queue = await call('POST', `/v2/projects/${projectId}/annotation_queues`, {
    name: 'review',
    template_ids: templates.map((t) => t.id),
    user_ids: users,
  });

  // ---- data, straight into the store
  const started = performance.now();
  const t0 = Date.UTC(2025, 0, 1) * 1000;
  let annotationCount = 0;
  const insert = async (table: string, rows: Row[]) => {
    if (!rows.length) return;
    const columns = Object.keys(rows[0]);
    if (store.dialect === 'sqlite') {
      const h = store.sqlite!;
      const ins = h.prepare(
        `insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`,
      );
      h.transaction(() => {
        for (const row of rows) ins.run(row);
      })();
      return;
    }
    for (let i = 0; i < rows.length; i += 500) {
      const part = rows.slice(i, i + 500);
      const params: unknown[] = [];
      const tuples = part.map((row) => `(${columns.map((c) => `$${params.push(row[c])}`).join(', ')})`);
      await store.pool!.query(
        `insert into ${table} (${columns.join(', ')}) values ${tuples.join(', ')}`,
        params,
      );
    }
  };
  for (let at = 0; at < RECORDS; at += 2000) {
    const records: Row[] = [];
    const queued: Row[] = [];
    const annotations: Row[] = [];
    const aggregates: Row[] = [];
    for (let i = at; i < Math.min(RECORDS, at + 2000); i++) {
      const id = uuid();
      const created = t0 + i * 1_000_000;
      records.push({
        id,
        project_id: projectId,
        run_id: runId,
        type: 'trace',
        name: `trace ${i}`,
        created_at: created,
        updated_at: created,
        is_complete: 1,
        num_children: 0,
        duration_ns: Math.floor(r() * 5e9),
        input_text: `question ${i}`,
        output_text: `answer ${i}`,
      });
      queued.push({
        queue_id: queue.id,
        record_id: id,
        project_id: projectId,
        record_created_at: created,
        added_at: created,
      });
      // Half the records fully annotated; the others by some members on some templates.
      const full = r() < 0.5;
      for (const t of templates) {
        const values = [];
        for (const u of users) {
          if (!full && r() < 0.5) continue;
          const value = t.type === 'thumbs' ? r() < 0.7 : 1 + Math.floor(r() * 5);
          const stored = checkValue(t as any, value, [], [])!;
          values.push(stored);
          annotations.push({
            id: uuid(),
            project_id: projectId,
            record_id: id,
            template_id: t.id,
            source: 'reviewer',
            author: u,
            user_id: u,
            external_user_id: null,
            value: JSON.stringify(value),
            num_value: stored.num,
            text_value: null,
            items: null,
            explanation: null,
            created_at: created,
            updated_at: created,
          });
        }
        if (!values.length) continue;
        const a = aggregate(t.type, values);
        aggregates.push({
          record_id: id,
          template_id: t.id,
          source: 'reviewer',
          project_id: projectId,
          n: a.n,
          sum: a.sum,
          min: a.min,
          max: a.max,
          mean: a.sum === null ? null : a.sum / a.n,
          counts: null,
          updated_at: created,
        });
      }
    }
    await insert('records', records);
    await insert('annotation_queue_records', queued);
    await insert('annotations', annotations);
    await insert('annotation_aggregates', aggregates);
    annotationCount += annotations.length;
    process.stdout.write(`\r  loading ${Math.min(RECORDS, at + 2000)} records`);
  }
  if (store.dialect === 'postgres') await store.pool!.query('analyze');
  else store.sqlite!.exec('analyze');
  console.log(
    `\r  loaded ${RECORDS} records, ${annotationCount} annotations in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );

  // ---- queries
  const fully = (extra: Row = {}) => ({ filter: { type: 'fully_annotated', ...extra } });
  const QUERIES: { name: string; body: Row }[] = [
    { name: 'queue, no filter', body: {} },
    { name: 'fully_annotated', body: { filter_tree: fully() } },
    { name: 'not fully_annotated', body: { filter_tree: { not: fully() } } },
    { name: 'fully_annotated by one member', body: { filter_tree: fully({ user_ids: [users[2]] }) } },
    {
      name: 'fully_annotated, thumbs down',
      body: {
        filter_tree: {
          and: [fully(), { filter: { column_id: `annotation/${thumbs.id}`, operator: 'eq', value: false } }],
        },
      },
    },
    {
      name: 'fully_annotated, sort by stars',
      body: { filter_tree: fully(), sort: { name: `annotation/${stars.id}`, ascending: true } },
    },
    { name: 'fully_annotated, page at 10,000', body: { filter_tree: fully(), starting_token: 10_000 } },
  ];
  const { search } = running.services;
  const scope: QueueScope = { id: queue.id, templateIds: templates.map((t) => t.id), memberIds: users };
  const columns = await running.services.annotations.columns(projectId);
  const rawOf = async (body: Row): Promise<() => Promise<unknown>> => {
    // The page query the search runs (records of the queue, filters, sort, page), without the
    // service, HTTP, threads or rendering.
    const { parseSearchBody } = await import('../src/services/search.ts');
    const parsed = parseSearchBody(body as any, {
      annotations: columns,
      queue: { templateIds: scope.templateIds, memberIds: scope.memberIds },
    });
    const q: RecordSearch = {
      projectId,
      runId: null,
      queueId: queue.id,
      types: ['trace', 'agent', 'workflow', 'llm', 'tool', 'retriever', 'control', 'http', 'session'],
      tree: parsed.tree,
      sort: parsed.sort,
      offset: parsed.startingToken,
      limit: parsed.limit + 1,
    };
    if (store.dialect === 'postgres') {
      const compiled = (search.repo as PgSearch).searchStatement(store.db, q).compile();
      return () => store.pool!.query(compiled.sql, compiled.parameters as unknown[]);
    }
    const compiled = search.repo.pageQuery(store.db, q).compile();
    const stmt = store.sqlite!.prepare(compiled.sql);
    return async () => stmt.all(...(compiled.parameters as unknown[]));
  };
  console.log(
    `\n  ${'query'.padEnd(32)} ${'API p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} │ ${'raw p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} │ API/raw p50 │ rows`,
  );
  const url = `/v2/projects/${projectId}/annotation_queues/${queue.id}/records/search`;
  for (const q of QUERIES) {
    const api = () => post(url, q.body);
    const raw = await rawOf(q.body);
    const warmUntil = performance.now() + 1000;
    for (let i = 0; i < 10 || performance.now() < warmUntil; i++) {
      await api();
      await raw();
    }
    const a: number[] = [];
    const b: number[] = [];
    const deadline = performance.now() + 60_000;
    for (let i = 0; i < ITER && performance.now() < deadline; i++) {
      let t = performance.now();
      await api();
      a.push(performance.now() - t);
      t = performance.now();
      await raw();
      b.push(performance.now() - t);
    }
    const rows = JSON.parse((await api()).toString()).records.length;
    const sa = stats(a);
    const sb = stats(b);
    console.log(
      `  ${q.name.padEnd(32)} ${fmt(sa.p50)} ${fmt(sa.p95)} ${fmt(sa.p99)} │ ${fmt(sb.p50)} ${fmt(sb.p95)} ${fmt(sb.p99)} │ ${(sa.p50 / sb.p50).toFixed(2).padStart(11)} │ ${String(rows).padStart(4)}`,
    );
  }
  console.log('  (milliseconds; raw: the page query alone, in this process)');
  agent.destroy();
  await running.close();
  if (STORE === 'postgres') {
    const c = new pg.Client({ connectionString: DB_URL });
    await c.connect();
    await c.query(`drop schema if exists ${SCHEMA} cascade`);
    await c.end();
  }
  fs.rmSync(DATA_DIR, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
