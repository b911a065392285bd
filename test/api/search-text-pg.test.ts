/**
 * PostgreSQL text index by blocks (migrations 008 and 015, store/search-text-pg.ts): ingestion only
 * queues records; the background indexer puts them in blocks shortly after; `contains` answers stay
 * exact meanwhile. Runs when SPANBASE_TEST_DATABASE_URL is set.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { validateFilterList } from '../../src/query/filters.ts';
import { openStore } from '../../src/store/db.ts';
import { type TextGroup, termGrams } from '../../src/domain/text-grams.ts';
import { PgTextIndexer, gramCode, indexQueuedPg, queuedIds } from '../../src/store/search-text-pg.ts';
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
    /** The indexed records among `ids`, each with its block's grams. */
    const indexed = async (ids: string[]) =>
      (
        await sql<{ id: string; block: string; grams: number[] }>`
          select m.id, m.block, b.grams from text_block_records m join text_blocks b on b.block = m.block
          where m.id = any(${ids}::text[]) order by m.id`.execute(db())
      ).rows;
    /** Whether a block's grams hold every trigram of `term` in `column` (for records of `group`). */
    const holds = (
      grams: number[],
      term: string,
      column: 'input' | 'output' = 'input',
      group: TextGroup = 'trace',
    ) => termGrams(term)!.every((g) => grams.includes(gramCode(group, column, g)));
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
      // The records a search of traces checks for a term: the index's hits and every queued record
      // (not the session, whose input is that of one of its traces).
      const candidates = async (value: string) => {
        const tree = validateFilterList(
          [{ column_id: 'input', operator: 'contains', value, case_sensitive: false, type: 'text' }],
          ['body'],
        );
        const found = await s.running.services.search.repo.text.candidates(db(), tree, ['trace']);
        return [...found.values()].flat().sort();
      };
      const queued = await candidates('BROWN');
      assert.ok(
        ids.every((id) => queued.includes(id)),
        'queued: all of them',
      );
      await indexer.drain();
      assert.equal(await indexer.pending(), 0);
      const rows = await indexed(ids);
      assert.deepEqual(
        rows.map((r) => r.id),
        [...ids].sort(),
      );
      assert.equal(new Set(rows.map((r) => r.block)).size, 1, 'one block for the batch');
      const { grams } = rows[0];
      assert.ok(holds(grams, 'quick brown fox') && holds(grams, 'SILVER') && holds(grams, 'slow brown dog'));
      assert.ok(holds(grams, 'jumps', 'output') && holds(grams, 'sleeps', 'output'));
      assert.ok(!holds(grams, 'jumps') && !holds(grams, 'quick', 'output'), 'columns are apart');
      assert.ok(!holds(grams, 'quick', 'input', 'span'), 'groups are apart');
      assert.equal(new Set(grams).size, grams.length, 'each trigram once');
      assert.deepEqual(await probe(), expected, 'after indexing');
      // Indexed: the records of the blocks holding the term's trigrams (here one block holds all three).
      assert.deepEqual(await candidates('BROWN'), [...ids].sort(), 'indexed: the block of the hits');
      assert.deepEqual(await candidates('nowhere at all'), [], 'indexed: no block holds it');
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
      const moved = (await indexed([ids[0]]))[0];
      assert.notEqual(moved.block, rows[0].block, 'a changed record moves to a new block');
      assert.ok(holds(moved.grams, 'no longer fast'));
      // The old block keeps the old text's grams: its records stay candidates (the exact check
      // decides), the moved one is not.
      assert.deepEqual(await candidates('brown fox'), [ids[1], ids[2]].sort());
      // Deleting the project deletes its records' memberships and their blocks.
      const blocks = [...new Set([...rows, moved].map((r) => r.block))];
      const del = await s.call('DELETE', `/v2/projects/${projectId}`);
      assert.equal(del.status, 200, del.text);
      assert.deepEqual(await indexed(ids), []);
      const { rows: left } =
        await sql`select block from text_blocks where block = any(${blocks}::bigint[])`.execute(db());
      assert.deepEqual(left, [], 'blocks left without records go');
    });

    test('a term in few blocks keeps its candidates past the cap; in more blocks, past the cap it has none', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const ids = Array.from({ length: 130 }, () => randomUUID());
      await ingestTraces(
        s,
        projectId,
        logStreamId,
        ids.map((id, i) => ({ id, name: `z${i}`, input: `zanzibar ${i}` })),
      );
      const { indexer } = s.running.services.search;
      await indexer.drain();
      const blocks = new Set((await indexed(ids)).map((r) => r.block)).size;
      assert.ok(blocks >= 2, `130 records take two blocks of 128 or more (${blocks})`);
      const tree = validateFilterList(
        [
          {
            column_id: 'input',
            operator: 'contains',
            value: 'Zanzibar',
            case_sensitive: false,
            type: 'text',
          },
        ],
        ['body'],
      );
      const text = s.running.services.search.repo.text as { cap: number };
      const cap = text.cap;
      const candidatesAt = async (at: number) => {
        text.cap = at;
        try {
          return [...(await s.running.services.search.repo.text.candidates(db(), tree, ['trace'])).values()];
        } finally {
          text.cap = cap;
        }
      };
      // Few blocks (at most cap / 32): every record of them, though more than the cap.
      const [few] = await candidatesAt(32 * blocks);
      assert.ok(few && ids.every((id) => few.includes(id)), 'candidates: the blocks whole');
      assert.ok(few.length > 32 * blocks, 'more records than the cap');
      // One block more than that: past the cap, the search walks the run instead.
      assert.deepEqual(await candidatesAt(32 * blocks - 1), [], 'no candidates');
      // Either way the answer is exact.
      const r = await s.call('POST', `/v2/projects/${projectId}/traces/search`, {
        log_stream_id: logStreamId,
        filters: [{ column_id: 'input', operator: 'contains', value: 'zanzibar 12', type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.records.map((x: any) => x.name).sort(), [
        'z12',
        'z120',
        'z121',
        'z122',
        'z123',
        'z124',
        'z125',
        'z126',
        'z127',
        'z128',
        'z129',
      ]);
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
      // Repair: the index is emptied and every record queued again; searches stay exact.
      await indexer.rebuild();
      const { rows: left } = await sql`select 1 from text_block_records limit 1`.execute(db());
      assert.deepEqual(left, []);
      assert.ok((await indexer.pending()) >= 1);
      assert.deepEqual(await search(projectId, logStreamId, 'backgr'), ['bg']);
      await indexer.drain();
      assert.deepEqual(await search(projectId, logStreamId, 'backgr'), ['bg']);
      const { rows: back } = await sql`select 1 from text_block_records limit 1`.execute(db());
      assert.equal(back.length, 1);
    });

    test('once drained, the indexer vacuums the queue: the emptied table gives its pages back, once no snapshot holds them', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await ingestTraces(
        s,
        projectId,
        logStreamId,
        Array.from({ length: 400 }, (_, i) => ({ id: randomUUID(), name: `v${i}`, input: `vacuum ${i}` })),
      );
      const pages = async () =>
        Number(
          (
            await sql<{
              n: string;
            }>`select pg_relation_size('records_text_queue') / current_setting('block_size')::int as n`.execute(
              db(),
            )
          ).rows[0].n,
        );
      const until = async (done: () => Promise<boolean>) => {
        const deadline = Date.now() + 10_000;
        while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      };
      assert.ok((await pages()) > 0, 'the queue holds the records');
      // Another process's snapshot, taken before the indexer drains the queue, still sees its rows.
      const other = openStore(s.config);
      const indexer = new PgTextIndexer(db(), 10, 0);
      try {
        await other.db
          .transaction()
          .setIsolationLevel('repeatable read')
          .execute(async (trx) => {
            await sql`select count(*) from records_text_queue`.execute(trx);
            indexer.start();
            await until(async () => (await indexer.pending()) === 0);
            await new Promise((r) => setTimeout(r, 300));
            assert.ok((await pages()) > 0, 'rows an open snapshot sees are kept');
          });
        await until(async () => (await pages()) === 0);
        assert.equal(await indexer.pending(), 0);
        assert.equal(await pages(), 0, 'the drained queue was vacuumed down to no pages');
      } finally {
        await indexer.stop();
        await other.close();
      }
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
        const { rows } = await sql<{ id: string; input_text: string; grams: number[] | null }>`
          select r.id, r.input_text, b.grams from records r
          left join text_block_records m on m.id = r.id left join text_blocks b on b.block = m.block
          where r.id = any(${ids}::text[])`.execute(db());
        assert.equal(rows.length, ids.length);
        const stale = rows.filter((r) => !r.grams || !holds(r.grams, r.input_text));
        assert.deepEqual(stale, [], 'every record is in a block holding its current text');
        const { rows: empty } = await sql`select block from text_blocks b
          where not exists (select 1 from text_block_records m where m.block = b.block)`.execute(db());
        assert.deepEqual(empty, [], 'no block is left without records');
        assert.deepEqual(await search(projectId, logStreamId, 'third 299'), ['n299']);
        assert.deepEqual(await search(projectId, logStreamId, 'second'), []);
      } finally {
        await Promise.all(others.map((o) => o.close()));
      }
    });

    test('searches read queued entries through the key: a drained queue the vacuum could not truncate costs them nothing', async () => {
      await s.running.services.search.indexer.drain();
      // A backlog indexed and vacuumed while searches held the table's lock: no rows, many pages.
      await sql`insert into records_text_queue (id) select 'gone-' || i from generate_series(1, 20000) i`.execute(
        db(),
      );
      await sql`delete from records_text_queue`.execute(db());
      // The vacuum removes the deleted rows (and their index entries) only once no transaction that
      // began before the delete is open: another test file's, on this database, may be. So it runs
      // again until the rows are gone, for up to 10 s.
      let buffers = Number.POSITIVE_INFINITY;
      let pages = 0;
      for (let tries = 0; buffers >= 10 && tries < 40; tries++) {
        if (tries) await new Promise((r) => setTimeout(r, 250));
        await sql`vacuum (truncate false) records_text_queue`.execute(db());
        const { rows: size } = await sql<{ pages: number }>`
          select (pg_relation_size('records_text_queue') / current_setting('block_size')::int)::int as pages`.execute(
          db(),
        );
        pages = size[0].pages;
        const { rows } = await sql<{
          'QUERY PLAN': any;
        }>`explain (analyze, buffers, format json) ${queuedIds(2001)}`.execute(db());
        const plan = rows[0]['QUERY PLAN'][0].Plan;
        buffers = plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
      }
      assert.ok(pages >= 80, `the queue kept its pages (${pages})`);
      assert.ok(buffers < 10, `read ${buffers} pages of a queue with ${pages}`);
      // And the candidates still take every queued record.
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await ingestTraces(s, projectId, logStreamId, [{ name: 'late', input: 'queued after the drain' }]);
      assert.deepEqual(await search(projectId, logStreamId, 'after the dr'), ['late']);
    });

    test("a batch's blocks go into their GIN index in bulk: no pending list is left for searches to read", async () => {
      const { rows } = await sql<{ options: string[] | null }>`
        select c.reloptions as options from pg_class c
        where c.oid = to_regclass('text_blocks_grams')`.execute(db());
      assert.deepEqual(rows[0]?.options, ['fastupdate=on', 'gin_pending_list_limit=32768']);
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const id = randomUUID();
      await ingestTraces(s, projectId, logStreamId, [
        { id, name: 'bulk', input: 'pending list merged', output: 'ok' },
      ]);
      const { indexer } = s.running.services.search;
      await indexer.drain();
      assert.equal((await indexed([id])).length, 1, 'indexed');
      // The list is under its limit, so only the indexer's merge empties it: nothing is left to merge.
      const { rows: merged } = await sql<{ pages: number }>`
        select gin_clean_pending_list('text_blocks_grams'::regclass)::int as pages`.execute(db());
      assert.equal(merged[0].pages, 0);
      assert.deepEqual(await search(projectId, logStreamId, 'MERGED'), ['bulk']);
    });
  });
}
