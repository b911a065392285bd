/**
 * PostgreSQL text index (migration 008, store/search-text-pg.ts): ingestion only queues records; the
 * background indexer fills `records_text` shortly after; `contains` answers stay exact meanwhile. Runs
 * when SPANBASE_TEST_DATABASE_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { validateFilterList } from '../../src/query/filters.ts';
import { openStore } from '../../src/store/db.ts';
import { PgTextIndexer, indexQueuedPg } from '../../src/store/search-text-pg.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { ingestTraces } from '../property/support.ts';

if (storesUnderTest().includes('postgres')) {
  describe('text index [postgres]', () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer('postgres');
      // This test decides when indexing happens.
      await s.running.services.search.indexer.stop();
    });
    after(() => s.close());

    const db = () => s.running.services.store.db;
    const indexed = async (ids: string[]) =>
      (
        await sql<{ id: string; input: string | null; output: string | null }>`
          select id, input, output from records_text where id = any(${ids}::text[]) order by id`.execute(db())
      ).rows;
    const search = async (
      projectId: string,
      logStreamId: string,
      value: string,
      column = 'input',
      cs = false,
    ) => {
      const r = await s.call('POST', `/v2/projects/${projectId}/traces/search`, {
        log_stream_id: logStreamId,
        filters: [{ column_id: column, operator: 'contains', value, case_sensitive: cs, type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      return r.body.records.map((x: any) => x.name).sort();
    };

    test('ingestion queues; searches find queued records; the indexer indexes them; changes queue again', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      await ingestTraces(s, projectId, logStreamId, [
        { id: ids[0], name: 't0', input: 'The Quick Brown Fox', output: 'Jumps' },
        { id: ids[1], name: 't1', input: 'quick silver', output: null },
        { id: ids[2], name: 't2', input: 'slow brown dog', output: 'sleeps' },
      ]);
      const { indexer } = s.running.services.search;
      assert.ok((await indexer.pending()) >= 3, 'the write queued its records instead of indexing them');
      assert.deepEqual(await indexed(ids), [], 'nothing indexed inside the write');
      const probe = async () => [
        await search(projectId, logStreamId, 'QUICK'),
        await search(projectId, logStreamId, 'Quick', 'input', true),
        await search(projectId, logStreamId, 'brown'),
        await search(projectId, logStreamId, 'sleeps', 'output'),
        await search(projectId, logStreamId, 'nowhere'),
      ];
      const expected = [['t0', 't1'], ['t0'], ['t0', 't2'], ['t2'], []];
      assert.deepEqual(await probe(), expected, 'before indexing');
      // The records a search checks for a term: the index's hits and every queued record.
      const candidates = async (value: string) => {
        const tree = validateFilterList(
          [{ column_id: 'input', operator: 'contains', value, case_sensitive: false, type: 'text' }],
          ['body'],
        );
        const found = await s.running.services.search.repo.text.candidates(db(), tree);
        return [...found.values()].flat().sort();
      };
      const queued = await candidates('BROWN');
      assert.ok(
        ids.every((id) => queued.includes(id)),
        'queued: all of them',
      );
      await indexer.drain();
      assert.equal(await indexer.pending(), 0);
      assert.deepEqual(
        await indexed(ids),
        [
          { id: ids[0], input: 'the quick brown fox', output: 'jumps' },
          { id: ids[1], input: 'quick silver', output: null },
          { id: ids[2], input: 'slow brown dog', output: 'sleeps' },
        ].sort((a, b) => (a.id < b.id ? -1 : 1)),
      );
      assert.deepEqual(await probe(), expected, 'after indexing');
      const hits = await candidates('BROWN');
      assert.deepEqual(
        ids.map((id) => hits.includes(id)),
        [true, false, true],
        'indexed: the hits only',
      );
      // A changed text is queued again; searches see the new text at once, not the indexed one.
      const patch = await s.call('PATCH', `/v2/projects/${projectId}/traces/${ids[0]}`, {
        log_stream_id: logStreamId,
        input: 'no longer fast',
      });
      assert.equal(patch.status, 200, patch.text);
      // (The trace, and its session too when the session took its input from this trace.)
      assert.ok((await indexer.pending()) >= 1, 'the change is queued');
      assert.deepEqual(await search(projectId, logStreamId, 'quick'), ['t1']);
      assert.deepEqual(await search(projectId, logStreamId, 'longer'), ['t0']);
      await indexer.drain();
      assert.deepEqual(await search(projectId, logStreamId, 'quick'), ['t1']);
      assert.deepEqual(await search(projectId, logStreamId, 'longer'), ['t0']);
      assert.equal((await indexed([ids[0]]))[0].input, 'no longer fast');
      // Deleting the project deletes its records' index rows.
      const del = await s.call('DELETE', `/v2/projects/${projectId}`);
      assert.equal(del.status, 200, del.text);
      assert.deepEqual(await indexed(ids), []);
    });

    test('the background indexer catches up on its own', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await ingestTraces(s, projectId, logStreamId, [{ name: 'bg', input: 'background job' }]);
      const { indexer } = s.running.services.search;
      indexer.start();
      try {
        for (let i = 0; i < 200 && (await indexer.pending()) > 0; i++)
          await new Promise((r) => setTimeout(r, 25));
        assert.equal(await indexer.pending(), 0);
      } finally {
        await indexer.stop();
      }
      assert.deepEqual(await search(projectId, logStreamId, 'backgr'), ['bg']);
    });

    test('several processes index one queue while texts change: the index ends as the records are', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const ids = Array.from({ length: 300 }, () => randomUUID());
      await ingestTraces(
        s,
        projectId,
        logStreamId,
        ids.map((id, i) => ({ id, name: `n${i}`, input: `first ${i}` })),
      );
      // Two more "processes" (pools) on the same schema, indexing in small batches while the texts
      // change twice more.
      const others = [openStore(s.config), openStore(s.config)];
      try {
        const indexers = others.map((o) => new PgTextIndexer(o.db));
        let writing = true;
        const work = others.map(async (o) => {
          while (writing)
            if ((await indexQueuedPg(o.db, 7)) === 0) await new Promise((r) => setTimeout(r, 2));
        });
        for (const round of ['second', 'third']) {
          for (let i = 0; i < ids.length; i += 50) {
            const r = await s.call('PATCH', `/v2/projects/${projectId}/traces/${ids[i]}`, {
              log_stream_id: logStreamId,
              input: `${round} ${i}`,
            });
            assert.equal(r.status, 200, r.text);
            await ingestTraces(
              s,
              projectId,
              logStreamId,
              ids
                .slice(i + 1, i + 50)
                .map((id, j) => ({ id, name: `n${i + 1 + j}`, input: `${round} ${i + 1 + j}` })),
            );
          }
        }
        writing = false;
        await Promise.all(work);
        await Promise.all(indexers.map((x) => x.drain()));
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from records r left join records_text t on t.id = r.id
          where r.run_id = ${logStreamId} and r.input_text is not null
            and t.input is distinct from lower(r.input_text)`.execute(db());
        assert.equal(rows[0].n, 0, 'every record is indexed with its current text');
        assert.deepEqual(await search(projectId, logStreamId, 'third 299'), ['n299']);
        assert.deepEqual(await search(projectId, logStreamId, 'second'), []);
      } finally {
        await Promise.all(others.map((o) => o.close()));
      }
    });
  });
}
