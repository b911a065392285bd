/**
 * Real server processes under ingestion:
 * - SIGTERM (each store): the server drains and exits 0; after a restart every batch answered 200 is
 *   there.
 * - SQLite backup: `spanbase backup` while writers keep posting makes a copy that passes an integrity
 *   check and holds every batch acknowledged before it began; `spanbase restore` refuses while the
 *   server runs and, without --force, over an existing store, and puts the copy back.
 * - Moving to PostgreSQL: `spanbase export` from the SQLite store and `spanbase import` into a
 *   PostgreSQL one carry every trace over, with its spans.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { integrityProblem } from '../../src/cli/backup.ts';
import { type ChildServer, startChildServer } from '../helpers/child-server.ts';
import { storesUnderTest } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Runs the `spanbase` command with the server's environment (plus `env`); its exit code and stderr. */
function cli(
  server: ChildServer,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli.ts'), ...args], {
      cwd: ROOT,
      env: { ...server.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    p.stderr.on('data', (d) => {
      stderr += d;
    });
    p.stdout.on('data', (d) => {
      stdout += d;
    });
    p.on('exit', (code) => resolve({ code: code ?? -1, stderr, stdout }));
  });
}

interface Writers {
  acked: Set<string>;
  stop(): Promise<void>;
}

/** Writers posting batches of traces until stopped; the ids of every trace answered 200. */
function write(server: ChildServer, project: string, ls: string, writers = 3): Writers {
  const acked = new Set<string>();
  let running = true;
  const loops = Array.from({ length: writers }, async () => {
    while (running) {
      const traces = Array.from({ length: 20 }, () => ({
        id: crypto.randomUUID(),
        name: 'w',
        input: `in ${crypto.randomBytes(200).toString('base64')}`,
        output: 'out',
        spans: [{ type: 'llm', input: 'q', output: 'a', metrics: { num_input_tokens: 3 } }],
      }));
      try {
        const r = await server.call('POST', `/v2/projects/${project}/traces`, { log_stream_id: ls, traces });
        if (r.status === 200) for (const t of traces) acked.add(t.id);
      } catch {
        // The server is going away: an unanswered batch may or may not be there.
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  });
  return {
    acked,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

async function setup(server: ChildServer) {
  const p = await server.call('POST', '/v2/projects', { name: `p-${crypto.randomUUID()}` });
  assert.equal(p.status, 200, p.text);
  const ls = await server.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'ls' });
  assert.equal(ls.status, 200, ls.text);
  return { project: p.body.id as string, ls: ls.body.id as string };
}

async function traceIds(server: ChildServer, project: string, ls: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (let start = 0; ; start += 1000) {
    const r = await server.call('POST', `/v2/projects/${project}/traces/search`, {
      log_stream_id: ls,
      pagination: { starting_token: start, limit: 1000 },
    });
    assert.equal(r.status, 200, r.text);
    for (const x of r.body.records) out.add(x.id);
    if (r.body.next_starting_token === null) return out;
  }
}

const until = async (cond: () => boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  assert.ok(cond(), 'timed out');
};

for (const store of storesUnderTest()) {
  describe(`server process (${store})`, () => {
    test('SIGTERM during ingestion: exits 0, and every acknowledged batch is there', async () => {
      const server = await startChildServer(store);
      try {
        const { project, ls } = await setup(server);
        const w = write(server, project, ls, 4);
        await until(() => w.acked.size >= 200);
        await server.kill('SIGTERM');
        assert.equal(server.proc().exitCode, 0, 'a graceful exit');
        await w.stop();
        if (store === 'sqlite') assert.ok(!fs.existsSync(path.join(server.dataDir, 'spanbase.pid')));
        await server.restart();
        const found = await traceIds(server, project, ls);
        const lost = [...w.acked].filter((id) => !found.has(id));
        assert.deepEqual(lost, [], `${lost.length} of ${w.acked.size} acknowledged traces lost`);
      } finally {
        await server.close();
      }
    });

    if (store !== 'sqlite') return;

    test('backup during ingestion, restore, and the move to PostgreSQL by export and import', async () => {
      const server = await startChildServer(store);
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-backup-'));
      try {
        const { project, ls } = await setup(server);
        const w = write(server, project, ls);
        await until(() => w.acked.size >= 200);
        const before = new Set(w.acked);
        const file = path.join(tmp, 'copy.db');
        const b = await cli(server, ['backup', file]);
        assert.equal(b.code, 0, b.stderr);
        const during = w.acked.size;
        await until(() => w.acked.size > during + 60);
        await w.stop();
        assert.equal(integrityProblem(file), null);

        const running = await cli(server, ['restore', file, '--force']);
        assert.notEqual(running.code, 0);
        assert.match(running.stderr, /runs on/);
        await server.kill('SIGTERM');
        const existing = await cli(server, ['restore', file]);
        assert.notEqual(existing.code, 0);
        assert.match(existing.stderr, /--force/);
        const r = await cli(server, ['restore', file, '--force']);
        assert.equal(r.code, 0, r.stderr);
        await server.restart();
        const found = await traceIds(server, project, ls);
        const lost = [...before].filter((id) => !found.has(id));
        assert.deepEqual(lost, [], `${lost.length} traces acknowledged before the backup are missing`);
        assert.ok(found.size < w.acked.size, 'the copy is of its moment: later batches are not in it');
        const text = [...before][0];
        const hit = await server.call('POST', `/v2/projects/${project}/traces/count`, {
          log_stream_id: ls,
          filters: [{ column_id: 'id', operator: 'eq', value: text }],
        });
        assert.equal(hit.body.total_count, 1);

        // SQLite → PostgreSQL: export the log stream, import it into a PostgreSQL store.
        const url = process.env.SPANBASE_TEST_DATABASE_URL;
        if (!url) return;
        const exported = path.join(tmp, 'ls.jsonl');
        const e = await cli(server, [
          'export',
          '--project',
          project,
          '--log-stream',
          ls,
          '--root-type',
          'session',
          '--output',
          exported,
        ]);
        assert.equal(e.code, 0, e.stderr);
        const schema = `m_${process.pid}_${Date.now().toString(36)}`;
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          await c.query(`create schema ${schema}`);
          const i = await cli(server, ['import', exported, '--project', 'moved', '--log-stream', 'ls'], {
            SPANBASE_DATABASE_URL: url,
            SPANBASE_PG_SCHEMA: schema,
          });
          assert.equal(i.code, 0, i.stderr);
          const { rows } = await c.query(
            `select type, count(*)::int as n from ${schema}.records where type in ('trace', 'llm') group by type order by type`,
          );
          assert.deepEqual(rows, [
            { type: 'llm', n: found.size },
            { type: 'trace', n: found.size },
          ]);
          const ids = await c.query(`select id from ${schema}.records where type = 'trace'`);
          assert.deepEqual(new Set(ids.rows.map((x) => x.id)), found);
        } finally {
          await c.query(`drop schema if exists ${schema} cascade`);
          await c.end();
        }
      } finally {
        await server.close();
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    });
  });
}
