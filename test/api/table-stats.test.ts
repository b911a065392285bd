/**
 * PostgreSQL planner statistics and dead rows (services/table-stats.ts): the job analyzes the tables
 * that changed by a large share since their last analyze, vacuums those with many dead rows, and
 * leaves the others. Runs when SPANBASE_TEST_DATABASE_URL is set.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { leasesOf } from '../../src/store/leases.ts';
import { PgTableStats } from '../../src/store/table-stats.ts';
import { TableStatsService } from '../../src/services/table-stats.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { ingestTraces } from '../property/support.ts';

/** PostgreSQL publishes a backend's table counters within a second or so: poll. */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

if (storesUnderTest().includes('postgres')) {
  describe('planner statistics [postgres]', () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer('postgres');
    });
    after(() => s.close());

    test('the job analyzes the tables that changed by a large share, and only those', async () => {
      assert.ok(s.running.services.tableStats, 'the job exists on PostgreSQL');
      const db = s.running.services.store.db;
      const repo = new PgTableStats(db);
      const lastAnalyze = async (table: string) =>
        (
          await sql<{ at: Date | null; changed: string; vacuumed: Date | null; dead: string }>`
            select greatest(last_analyze, last_autoanalyze) as at, n_mod_since_analyze as changed,
              greatest(last_vacuum, last_autovacuum) as vacuumed, n_dead_tup as dead
            from pg_stat_user_tables where schemaname = current_schema() and relname = ${table}`.execute(db)
        ).rows[0];
      const names = async (minRows: number, share: number) =>
        (await repo.stale(minRows, share)).map((t) => t.table);
      // Autovacuum, on a loaded machine, could get to these tables first and clear what the job is to find.
      for (const table of ['records', 'records_text_queue'])
        await sql`alter table ${sql.table(table)} set (autovacuum_enabled = false)`.execute(db);
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await ingestTraces(
        s,
        projectId,
        logStreamId,
        Array.from({ length: 40 }, (_, i) => ({ name: `t${i}`, input: `question ${i}`, output: 'answer' })),
      );
      // 40 traces: 40 changed rows of records (and more), none of dashboards; the text indexer
      // empties its queue, which leaves dead rows there.
      await s.running.services.search.indexer.drain();
      const queued = await eventually(
        () => repo.stale(40, 0),
        (tables) =>
          tables.some((t) => t.table === 'records') &&
          tables.some((t) => t.table === 'records_text_queue' && t.vacuum),
      );
      assert.ok(
        queued.some((t) => t.table === 'records_text_queue' && t.vacuum),
        'the emptied queue is to be vacuumed',
      );
      const before = await lastAnalyze('dashboards');
      const job = new TableStatsService(repo, leasesOf(db), 60_000, { minRows: 40, share: 0.5 });
      assert.equal(await job.job.runOnce(), 'done');
      const records = await eventually(
        () => lastAnalyze('records'),
        (r) => r.at !== null && Number(r.changed) === 0,
      );
      assert.ok(records.at, 'records analyzed');
      assert.equal(Number(records.changed), 0);
      assert.deepEqual(await lastAnalyze('dashboards'), before, 'an unchanged table is left alone');
      const queue = await eventually(
        () => lastAnalyze('records_text_queue'),
        (r) => r.vacuumed !== null,
      );
      assert.ok(queue.vacuumed, 'the queue vacuumed');
      assert.ok(!(await names(40, 0.5)).includes('records'), 'nothing left to analyze in records');
      await job.job.stop();
    });
  });
}
