/**
 * A job-queue worker as its own process, for test/api/job-queue.test.ts: opens the store named by
 * JOB_DB (a SQLite file, or a PostgreSQL URL with JOB_SCHEMA), runs jobs of kind `test.work` with the
 * real queue (services/job-queue.ts) until killed, each writing a row to `job_test_runs` after
 * sleeping the payload's `ms` (from JOB_STALL_FROM on, never). Prints `ready` once its queue has started.
 */
import { sql } from 'kysely';
import { JobQueue } from '../../src/services/job-queue.ts';
import { openPostgres, openSqlite } from '../../src/store/db.ts';
import { JobsRepo } from '../../src/store/jobs.ts';

const url = process.env.JOB_DB as string;
const store = url.startsWith('postgres')
  ? openPostgres(url, process.env.JOB_SCHEMA ?? null)
  : openSqlite(url);
const name = process.env.JOB_WORKER ?? String(process.pid);
const queue = new JobQueue(new JobsRepo(store.db, store.dialect), {
  concurrency: Number(process.env.JOB_CONCURRENCY ?? 4),
  leaseMs: Number(process.env.JOB_LEASE_MS ?? 30_000),
  pollMs: 20,
  retryBaseMs: 5,
});
queue.handle('test.work', async (job) => {
  const { ms } = job.payload as { ms: number };
  await new Promise((r) => setTimeout(r, ms));
  // JOB_STALL_FROM=n: jobs k<n> and later never finish here (a worker to kill while it holds jobs).
  if (Number(job.key.slice(1)) >= Number(process.env.JOB_STALL_FROM ?? Number.POSITIVE_INFINITY))
    await new Promise(() => {});
  await sql`insert into job_test_runs (job_key, worker) values (${job.key}, ${name})`.execute(store.db);
  return { status: 'done' };
});
queue.start();
process.stdout.write('ready\n');
setInterval(() => {}, 1 << 30);
