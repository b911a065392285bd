import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { type JobAnswer, JobQueue } from '../../src/services/job-queue.ts';
import { type Store, openPostgres, openSqlite } from '../../src/store/db.ts';
import { type Job, JobsRepo } from '../../src/store/jobs.ts';
import { migrate } from '../../src/store/migrate.ts';
import { type StoreKind, storesUnderTest } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
let n = 0;
/** PostgreSQL schemas made here, dropped when the file's tests end. */
const schemas: string[] = [];
after(async () => {
  if (!schemas.length) return;
  const client = new pg.Client({ connectionString: process.env.SPANBASE_TEST_DATABASE_URL });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA ${schema} CASCADE`);
  await client.end();
});

/** A fresh migrated store plus what a worker process needs to open it. */
async function freshStore(kind: StoreKind): Promise<{ store: Store; env: Record<string, string> }> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-jobs-'));
    const file = path.join(dir, 'spanbase.db');
    const store = openSqlite(file);
    await migrate(store);
    return { store, env: { JOB_DB: file } };
  }
  const url = process.env.SPANBASE_TEST_DATABASE_URL as string;
  const schema = `jobs_${process.pid}_${Date.now().toString(36)}_${n++}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  schemas.push(schema);
  await client.end();
  const store = openPostgres(url, schema);
  await migrate(store);
  return { store, env: { JOB_DB: url, JOB_SCHEMA: schema } };
}

function worker(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/job-worker.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout?.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, limitMs = 60_000) {
  const end = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const work = (count: number, ms: number, project = (i: number) => `p${i % 3}`) =>
  Array.from({ length: count }, (_, i) => ({
    kind: 'test.work',
    key: `k${i}`,
    projectId: project(i),
    runId: null,
    payload: { ms },
    maxAttempts: 3,
  }));

for (const kind of storesUnderTest()) {
  describe(`job queue [${kind}]`, () => {
    const stores: Store[] = [];
    const children: ChildProcess[] = [];
    after(async () => {
      for (const c of children) c.kill('SIGKILL');
      for (const s of stores) await s.close();
    });

    async function setup() {
      const s = await freshStore(kind);
      stores.push(s.store);
      await sql`create table job_test_runs (job_key text not null, worker text not null)`.execute(s.store.db);
      return { ...s, repo: new JobsRepo(s.store.db, s.store.dialect) };
    }

    test('enqueueing is idempotent by kind and key; reset re-runs a finished job', async () => {
      const { repo } = await setup();
      assert.equal(await repo.enqueue(work(5, 0)), 5);
      assert.equal(await repo.enqueue(work(5, 0)), 0);
      const [job] = await repo.claim('me', ['test.work'], 1, 1000);
      assert.equal(job.attempts, 1);
      assert.equal(await repo.settle('me', job.id, { status: 'done', reason: null }), true);
      assert.equal((await repo.byKey('test.work', job.key))?.status, 'done');
      assert.equal(await repo.enqueue(work(5, 0), { reset: true }), 5);
      const again = await repo.byKey('test.work', job.key);
      assert.equal(again?.status, 'pending');
      assert.equal(again?.attempts, 0);
    });

    test('a claim is fair across projects and leased; another owner cannot settle it', async () => {
      const { repo } = await setup();
      // 30 jobs of project a, 2 of b: a claim of 4 takes b's too.
      await repo.enqueue(work(30, 0, () => 'a'));
      await repo.enqueue(work(2, 0, () => 'b').map((j) => ({ ...j, key: `b${j.key}` })));
      const claimed = await repo.claim('me', ['test.work'], 4, 60_000);
      assert.equal(claimed.length, 4);
      assert.equal(claimed.filter((j) => j.projectId === 'b').length, 2);
      assert.equal(await repo.settle('other', claimed[0].id, { status: 'done', reason: null }), false);
      // Leased jobs are not claimed again while their lease holds.
      const rest = await repo.claim('other', ['test.work'], 100, 60_000);
      assert.equal(rest.length, 28);
      assert.equal(new Set([...claimed, ...rest].map((j) => j.id)).size, 32);
    });

    test('a claim takes up to its limit while any queue has due jobs, beyond an equal share', async () => {
      const { repo } = await setup();
      // One job of a, five of b: a share of 2 each would take 3; the claim takes 4, so fewer than the
      // limit always means nothing more is due (what whenIdle kinds wait for).
      await repo.enqueue(work(1, 0, () => 'a'));
      await repo.enqueue(work(5, 0, () => 'b').map((j) => ({ ...j, key: `b${j.key}` })));
      const claimed = await repo.claim('me', ['test.work'], 4, 60_000);
      assert.equal(claimed.length, 4);
      assert.equal(claimed.filter((j) => j.projectId === 'a').length, 1);
      assert.equal((await repo.claim('me', ['test.work'], 4, 60_000)).length, 2);
    });

    test("a claim is fair across kinds: one kind's backlog does not hold back another's job", async () => {
      const { repo } = await setup();
      await repo.enqueue(work(30, 0, () => 'a'));
      await repo.enqueue([{ ...work(1, 0, () => 'a')[0], kind: 'test.other', key: 'late' }]);
      const claimed = await repo.claim('me', ['test.work', 'test.other'], 2, 60_000);
      assert.deepEqual(claimed.map((j) => j.kind).sort(), ['test.other', 'test.work']);
    });

    test('retries back off until attempts run out, then the job fails with the last reason', async () => {
      const { store } = await setup();
      const repo = new JobsRepo(store.db, store.dialect);
      const settled: [Job, JobAnswer][] = [];
      const q = new JobQueue(
        repo,
        { concurrency: 2, leaseMs: 5000, pollMs: 10, retryBaseMs: 1 },
        { settled: (j, a) => settled.push([j, a]) },
      );
      let calls = 0;
      q.handle('test.work', async (job) => {
        calls++;
        if (job.key === 'k0') throw new Error('provider said 500');
        return job.attempts < 2 ? { status: 'retry', reason: 'rate limited' } : { status: 'done' };
      });
      q.start();
      await q.enqueue(work(2, 0));
      await waitFor(async () => (await repo.open(['test.work'])) === 0, 'the jobs to finish');
      await q.stop();
      const k0 = await repo.byKey('test.work', 'k0');
      assert.equal(k0?.status, 'failed');
      assert.equal(k0?.attempts, 3);
      assert.match(k0?.reason ?? '', /provider said 500 \(attempt 3 of 3\)/);
      const k1 = await repo.byKey('test.work', 'k1');
      assert.equal(k1?.status, 'done');
      assert.equal(k1?.attempts, 2);
      assert.equal(calls, 5);
      assert.ok(settled.some(([, a]) => a.status === 'retry' && /retry 1 of 2: rate limited/.test(a.reason)));
    });

    test('a wait gives the attempt back', async () => {
      const { repo } = await setup();
      const q = new JobQueue(repo, { concurrency: 1, leaseMs: 5000, pollMs: 10, retryBaseMs: 1 });
      let waits = 0;
      q.handle('test.work', async () =>
        waits++ < 3 ? { status: 'wait', reason: 'paused', delayMs: 1 } : { status: 'done' },
      );
      q.start();
      await q.enqueue(work(1, 0));
      await waitFor(async () => (await repo.open(['test.work'])) === 0, 'the job to finish');
      await q.stop();
      const job = await repo.byKey('test.work', 'k0');
      assert.equal(job?.status, 'done');
      assert.equal(job?.attempts, 1);
    });

    test('finished jobs of a kind registered with pruneAfterMs are deleted after it; the rest stay', async () => {
      const { repo, store } = await setup();
      const q = new JobQueue(repo, { concurrency: 4, leaseMs: 5000, pollMs: 10, retryBaseMs: 1 });
      q.handle(
        'test.work',
        async (job) => (job.key === 'k1' ? { status: 'failed', reason: 'no' } : { status: 'done' }),
        { pruneAfterMs: 60_000 },
      );
      q.handle('test.other', async () => ({ status: 'done' }));
      q.start();
      await q.enqueue(work(3, 0));
      await q.enqueue([{ ...work(1, 0)[0], kind: 'test.other', key: 'kept' }]);
      await waitFor(async () => (await repo.open(['test.work', 'test.other'])) === 0, 'the jobs to finish');
      // Finished just now: not yet.
      assert.equal(await q.prune(), 0);
      // As if a minute had passed.
      await store.db
        .updateTable('jobs')
        .set({ finished_at: 1 })
        .where('finished_at', 'is not', null)
        .execute();
      await repo.enqueue([{ ...work(1, 0)[0], key: 'late', notBefore: Date.now() + 60_000 }]);
      // In batches of 2: the three finished ones go, the pending one and the other kind's stay.
      assert.equal(await q.prune(2), 3);
      await q.stop();
      for (const key of ['k0', 'k1', 'k2']) assert.equal(await repo.byKey('test.work', key), null);
      assert.equal((await repo.byKey('test.work', 'late'))?.status, 'pending');
      assert.equal((await repo.byKey('test.other', 'kept'))?.status, 'done');
    });

    test('a kind registered whenIdle runs only while no other job is due, one at a time', async () => {
      const { repo } = await setup();
      const q = new JobQueue(repo, { concurrency: 4, leaseMs: 5000, pollMs: 10, retryBaseMs: 1 });
      const log: string[] = [];
      let idleAtOnce = 0;
      let idleNow = 0;
      q.handle('test.work', async (job) => {
        log.push(job.key);
        await new Promise((r) => setTimeout(r, 5));
        return { status: 'done' };
      });
      // Each batch adds three jobs of test.work when it runs (as a batch of score tasks does).
      q.handle(
        'test.batch',
        async (job) => {
          idleAtOnce = Math.max(idleAtOnce, ++idleNow);
          log.push(job.key);
          await q.enqueue(work(3, 0).map((j) => ({ ...j, key: `${job.key}.${j.key}` })));
          idleNow--;
          return { status: 'done' };
        },
        { whenIdle: true },
      );
      await repo.enqueue(
        ['b1', 'b2', 'b3'].map((key) => ({
          kind: 'test.batch',
          key,
          projectId: 'p',
          runId: null,
          payload: {},
          maxAttempts: 3,
        })),
      );
      await repo.enqueue(work(6, 0).map((j) => ({ ...j, key: `w${j.key}` })));
      q.start();
      await waitFor(async () => (await repo.open(['test.work', 'test.batch'])) === 0, 'the queue to drain');
      await q.stop();
      assert.equal(idleAtOnce, 1);
      // The six jobs due at the start ran before any batch; each batch's jobs before the next batch.
      assert.equal(log.length, 6 + 3 * 4, log.join(' '));
      assert.ok(
        log.slice(0, 6).every((k) => k.startsWith('wk')),
        log.join(' '),
      );
      const rest = log.slice(6);
      for (let i = 0; i < 3; i++) {
        const batch = rest[i * 4];
        assert.match(batch, /^b\d$/, log.join(' '));
        assert.deepEqual(
          rest.slice(i * 4 + 1, i * 4 + 4).sort(),
          ['k0', 'k1', 'k2'].map((k) => `${batch}.${k}`),
        );
      }
    });

    test('two processes on one store run every job exactly once', async () => {
      const { repo, store, env } = await setup();
      // Both processes are up before the work arrives, and each holds at most 4 jobs at a time.
      const a = await worker({ ...env, JOB_WORKER: 'a' });
      const b = await worker({ ...env, JOB_WORKER: 'b' });
      children.push(a, b);
      await repo.enqueue(work(300, 5));
      await waitFor(async () => (await repo.open(['test.work'])) === 0, 'the queue to drain');
      a.kill('SIGKILL');
      b.kill('SIGKILL');
      const runs = await sql<{
        job_key: string;
        worker: string;
      }>`select job_key, worker from job_test_runs`.execute(store.db);
      assert.equal(runs.rows.length, 300);
      assert.equal(new Set(runs.rows.map((r) => r.job_key)).size, 300);
      // Both processes took part.
      assert.equal(new Set(runs.rows.map((r) => r.worker)).size, 2);
    });

    test('a worker killed in the middle loses no job: its leases lapse and another takes them', async () => {
      const { repo, store, env } = await setup();
      await repo.enqueue(work(60, 20));
      // The first worker finishes k0..k9; later jobs it holds until it is killed.
      const first = await worker({ ...env, JOB_WORKER: 'first', JOB_LEASE_MS: '400', JOB_STALL_FROM: '10' });
      children.push(first);
      // Its four slots end up held by jobs that never finish.
      await waitFor(
        async () =>
          Number(
            (
              await sql<{ n: number }>`select count(*) as n from jobs where status = 'running'`.execute(
                store.db,
              )
            ).rows[0].n,
          ) === 4,
        'the worker to hold four stalled jobs',
      );
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      const stranded = await sql<{
        n: number;
      }>`select count(*) as n from jobs where status = 'running'`.execute(store.db);
      assert.ok(Number(stranded.rows[0].n) > 0, 'the killed worker held jobs');
      const second = await worker({ ...env, JOB_WORKER: 'second', JOB_LEASE_MS: '400' });
      children.push(second);
      await waitFor(async () => (await repo.open(['test.work'])) === 0, 'the queue to drain');
      second.kill('SIGKILL');
      const done = await sql<{ n: number }>`select count(*) as n from jobs where status = 'done'`.execute(
        store.db,
      );
      assert.equal(Number(done.rows[0].n), 60);
      const runs = await sql<{ job_key: string }>`select distinct job_key from job_test_runs`.execute(
        store.db,
      );
      assert.equal(runs.rows.length, 60);
    });
  });
}
