/**
 * Metadata equality through the text index's blocks (query/metadata-index.ts, migration 033):
 * searches for a user metadata key equal to a string find what the same filter finds without the
 * index, in the same order and pages, before and after the indexer caught up; the blocks narrow a
 * rare value to its blocks; they follow updates and deletes of records; on SQLite a rare value's
 * blocks drive the search (its plan), as a search of spans (several types) reads the run's records
 * by time; and migration 033 drops the old per-record index and queues records by their metadata.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { SPAN_TYPES } from '../../src/query/columns.ts';
import { parseSearchBody } from '../../src/services/search.ts';
import type { SqliteSearch } from '../../src/store/search-sqlite.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { storeBefore } from '../helpers/older-store.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { BASE_TIME_US as T0, allIds, createSession, ingestTraces, iso } from '../property/support.ts';

const S = 1_000_000;
const LONG = 'x'.repeat(300);
/** Metadata of trace i (and its span): shared, rare, numeric, long and non-ASCII values. */
const meta = (i: number): Record<string, unknown> => ({
  customer: i % 3 === 0 ? 'acme' : `c-${i % 5}`,
  ...(i % 7 === 0 ? { rare: 'yes' } : {}),
  ...(i % 4 === 0 ? { n: 5 } : { n: '5' }),
  ...(i % 6 === 0 ? { long: LONG } : {}),
  ...(i % 2 === 0 ? { ville: 'Zürich Σ' } : {}),
});
const eq = (key: string, value: string) => ({
  filter: { column_id: `user_metadata/${key}`, operator: 'eq', value, type: 'text' },
});

for (const store of storesUnderTest()) {
  describe(`metadata index [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    const traceIds: string[] = [];
    const url = (target: string) => `/v2/projects/${projectId}/${target}/search`;
    const ids = (target: string, body: Record<string, unknown>, limit = 4) =>
      allIds(s, url(target), { log_stream_id: logStreamId, ...body }, limit);
    /** The candidate records (SQLite: rowids of the blocks; PostgreSQL: ids) of an equality on traces. */
    const candidates = async (key: string, value: string) => {
      const { services } = s.running;
      const tree = parseSearchBody({ filter_tree: eq(key, value) } as any).tree;
      const repo = services.search.repo as unknown as {
        text: { candidates(db: unknown, tree: unknown, types?: string[]): Promise<Map<unknown, unknown[]>> };
      };
      const found = await repo.text.candidates(services.store.db, tree, ['trace']);
      return [...found.values()][0] ?? null;
    };
    const drain = () => s.running.services.search.indexer.drain();

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      const sessions = [
        await createSession(s, projectId, logStreamId, { user_metadata: meta(0) }),
        await createSession(s, projectId, logStreamId, { user_metadata: meta(1) }),
        await createSession(s, projectId, logStreamId),
      ];
      // Several batches: created_at ties inside a batch (id breaks them), and traces of one session.
      for (let b = 0; b < 6; b++) {
        const batch = [];
        for (let k = 0; k < 5; k++) {
          const i = b * 5 + k;
          const id = randomUUID();
          traceIds.push(id);
          batch.push({
            id,
            name: `t${i}`,
            created_at: iso(T0 + (k === 4 ? b * 5 : i) * S),
            user_metadata: meta(i),
            spans: [{ type: i % 2 ? 'llm' : 'tool', name: `s${i}`, user_metadata: meta(i + 1) }],
          });
        }
        await ingestTraces(s, projectId, logStreamId, batch, { session_id: sessions[b % 3] });
      }
    });
    after(() => s?.close());

    test('equality finds what the unindexed filter finds, in order and page by page', async () => {
      // Once with the index behind (records checked directly), once caught up.
      await sameAnswers();
      await drain();
      await sameAnswers();
    });

    const sameAnswers = async () => {
      const cases: [string, string][] = [
        ['customer', 'acme'],
        ['customer', 'c-1'],
        ['rare', 'yes'],
        ['n', '5'],
        ['long', LONG],
        ['ville', 'Zürich Σ'],
        ['ville', 'zürich σ'],
        ['customer', 'nobody'],
        ['missing', 'acme'],
      ];
      for (const target of ['traces', 'spans', 'sessions']) {
        for (const [key, value] of cases) {
          // The same leaf under a one-child `or` is not required at the top: it takes no index.
          const leaf = eq(key, value);
          const both = { and: [leaf, { not: eq('customer', 'c-2') }] };
          const bodies: [Record<string, unknown>, unknown][] = [
            [{ filter_tree: leaf }, leaf],
            [{ filters: [leaf.filter] }, leaf],
            [{ filter_tree: both }, both],
          ];
          for (const [body, tree] of bodies) {
            // The same tree under a one-child `or`: nothing in it is required at the top, so it
            // takes no index.
            const want = await ids(target, { filter_tree: { or: [tree] } }, 1000);
            assert.deepEqual(await ids(target, body), want, `${target} ${JSON.stringify(body)}`);
          }
        }
      }
      // Sanity: the cases do find records, and values of other types or case do not match.
      assert.equal((await ids('traces', { filter_tree: eq('customer', 'acme') })).length, 10);
      assert.equal((await ids('traces', { filter_tree: eq('n', '5') })).length, 22);
      assert.equal((await ids('traces', { filter_tree: eq('long', LONG) })).length, 5);
      assert.equal((await ids('traces', { filter_tree: eq('ville', 'zürich σ') })).length, 0);
      assert.equal((await ids('spans', { filter_tree: eq('rare', 'yes') })).length, 4);
    };

    test('the blocks narrow an equality to the blocks holding its value', async () => {
      // 300 traces with a value each, in a log stream of their own: several blocks of traces.
      const other = (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'many' })).body.id;
      const req: string[] = [];
      for (let b = 0; b < 3; b++) {
        const batch = Array.from({ length: 100 }, (_, k) => {
          const id = randomUUID();
          req.push(id);
          return {
            id,
            name: 'r',
            created_at: iso(T0 + (b * 100 + k) * S),
            user_metadata: { req: `r-${b * 100 + k}` },
          };
        });
        await ingestTraces(s, projectId, other, batch);
      }
      await drain();
      // Beside the blocks not indexed yet (SQLite indexes a block once full: the last one waits),
      // which every value has, an indexed value has its own block and an absent one none.
      const unindexed = new Set(await candidates('req', 'r-none'));
      const one = (await candidates('req', 'r-150'))?.filter((c) => !unindexed.has(c));
      assert.ok(one, 'an indexed value has candidates');
      const size = store === 'sqlite' ? one.length * 128 : one.length;
      assert.ok(size > 0 && size <= 128, `one block's records, not ${size}`);
      assert.ok(unindexed.size <= (store === 'sqlite' ? 1 : 0), `${unindexed.size} blocks not indexed`);
      assert.deepEqual(
        await allIds(s, url('traces'), { log_stream_id: other, filter_tree: eq('req', 'r-150') }),
        [req[150]],
      );
    });

    test('the blocks follow updates and deletes', async () => {
      const id = traceIds[6];
      // Sent again with other metadata: the record is queued and its block takes the new values.
      await ingestTraces(s, projectId, logStreamId, [
        { id, name: 't6', created_at: iso(T0 + 6 * S), user_metadata: { customer: 'moved', rare: 'yes' } },
      ]);
      // Indexed, its block (not the one left unindexed) holds the new value: found through it.
      await drain();
      assert.deepEqual(await ids('traces', { filter_tree: eq('customer', 'moved') }), [id]);
      assert.ok(!(await ids('traces', { filter_tree: eq('customer', 'acme') })).includes(id));

      const r = await s.call('POST', `/v2/projects/${projectId}/traces/delete`, {
        log_stream_id: logStreamId,
        filters: [{ column_id: 'user_metadata/customer', operator: 'eq', value: 'moved', type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      await drain();
      assert.deepEqual(await ids('traces', { filter_tree: eq('customer', 'moved') }), []);
    });

    test("a rare value's blocks drive the search; spans read the run by time (plans)", async (t) => {
      if (store !== 'sqlite')
        return t.skip('PostgreSQL plans small tables as scans: bench:search shows the large ones');
      const { services } = s.running;
      await drain();
      const parsed = parseSearchBody({ filter_tree: eq('rare', 'yes') } as any);
      const q = {
        projectId,
        runId: logStreamId,
        types: ['trace'],
        tree: parsed.tree,
        sort: parsed.sort,
        offset: 0,
        limit: 101,
      };
      const repo = services.search.repo as SqliteSearch;
      const plan = async (search: typeof q) => {
        const found = await repo.text.candidates(services.store.db, search.tree, search.types);
        const c = repo.rowidQuery(services.store.db, search, found).compile();
        const rows = services.store.sqlite!.prepare(`explain query plan ${c.sql}`).all(...c.parameters);
        return (rows as { detail: string }[]).map((p) => p.detail);
      };
      const byMetadata = await plan(q);
      assert.match(
        byMetadata[0],
        /^SEARCH records USING INTEGER PRIMARY KEY \(rowid=\?\)/,
        byMetadata.join('\n'),
      );
      // Spans (several types) in the native order: the run's records by time, only ties sorted.
      const spans = await plan({ ...q, types: SPAN_TYPES, tree: null });
      assert.deepEqual(spans, [
        'SEARCH records USING INDEX records_run_created (run_id=?)',
        'USE TEMP B-TREE FOR LAST TERM OF ORDER BY',
      ]);
    });
  });

  test(`migration 033 drops the per-record index and queues records by their metadata [${store}]`, async () => {
    const older = await storeBefore(store, '033');
    const storeAt = older.store;
    try {
      const row = (id: string, user_metadata: string) => ({
        id,
        project_id: 'p',
        run_id: 'r',
        type: 'trace',
        created_at: T0,
        updated_at: T0,
        user_metadata,
      });
      await storeAt.db
        .insertInto('records')
        .values([row('a', JSON.stringify({ k: 'v' })), row('b', '{}')] as any)
        .execute();
      await older.up();
      const tables = await sql<{ n: number }>`select count(*) as n from ${sql.raw(
        store === 'sqlite'
          ? "sqlite_master where type = 'table' and name = 'record_metadata'"
          : "pg_tables where tablename = 'record_metadata' and schemaname = current_schema()",
      )}`.execute(storeAt.db);
      assert.equal(Number(tables.rows[0].n), 0);
      const queued = async () =>
        Number(
          (await sql<{ n: number }>`select count(*) as n from records_text_queue`.execute(storeAt.db)).rows[0]
            .n,
        );
      // PostgreSQL queues every record with metadata again; SQLite rebuilds its index at start.
      if (store === 'postgres') assert.equal(await queued(), 1);
      const before = await queued();
      // A record whose metadata changes is queued (its block takes the new values).
      await sql`update records set user_metadata = ${'{"k":"w"}'} where id = 'b'`.execute(storeAt.db);
      assert.equal(await queued(), before + 1);
    } finally {
      await older.close();
    }
  });
}
