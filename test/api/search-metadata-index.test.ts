/**
 * The metadata index (migration 014, query/metadata-index.ts): searches for a user metadata key equal
 * to a string find what the same filter finds without the index, in the same order and pages; the
 * index follows updates and deletes of records and indexes records stored before it existed; and on
 * SQLite the search reads the index in order instead of walking the run (its plan), as a search of
 * spans (several types) reads the run's records by time.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { SPAN_TYPES } from '../../src/query/columns.ts';
import { metadataProbe } from '../../src/query/metadata-index.ts';
import type { SortSpec } from '../../src/query/sorts.ts';
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
    const indexRows = async (id: string) =>
      (
        await s.running.services.store.db
          .selectFrom('record_metadata')
          .select(['key', 'value', 'grp'])
          .where('id', '=', id)
          .orderBy('key')
          .execute()
      ).map((r) => `${r.grp} ${r.key}=${r.value}`);

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
    });

    test('the index holds the string values of each record, and follows updates and deletes', async () => {
      const id = traceIds[6];
      // Strings only, and none longer than the index takes (`long`).
      assert.deepEqual(await indexRows(id), ['trace customer=acme', 'trace n=5', 'trace ville=Zürich Σ']);
      // Sent again with other metadata: the stored metadata is replaced, and so are its entries.
      await ingestTraces(s, projectId, logStreamId, [
        { id, name: 't6', created_at: iso(T0 + 6 * S), user_metadata: { customer: 'moved', rare: 'yes' } },
      ]);
      assert.deepEqual(await indexRows(id), ['trace customer=moved', 'trace rare=yes']);
      assert.deepEqual(await ids('traces', { filter_tree: eq('customer', 'moved') }), [id]);
      assert.ok(!(await ids('traces', { filter_tree: eq('customer', 'acme') })).includes(id));

      const r = await s.call('POST', `/v2/projects/${projectId}/traces/delete`, {
        log_stream_id: logStreamId,
        filters: [{ column_id: 'user_metadata/customer', operator: 'eq', value: 'moved', type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(await indexRows(id), []);
      assert.deepEqual(await ids('traces', { filter_tree: eq('customer', 'moved') }), []);
    });

    test('searches read an index in the native order: metadata equality, spans (plans)', async (t) => {
      if (store !== 'sqlite')
        return t.skip('PostgreSQL plans small tables as scans: bench:search shows the large ones');
      const { services } = s.running;
      const parsed = parseSearchBody({ filter_tree: eq('customer', 'acme') } as any);
      const q = {
        projectId,
        runId: logStreamId,
        types: ['trace'],
        tree: parsed.tree,
        sort: parsed.sort,
        offset: 0,
        limit: 101,
      };
      assert.deepEqual(metadataProbe(q), { group: 'trace', key: 'customer', value: 'acme' });
      const plan = (search: typeof q) => {
        const c = (services.search.repo as SqliteSearch).rowidQuery(services.store.db, search).compile();
        const rows = services.store.sqlite!.prepare(`explain query plan ${c.sql}`).all(...c.parameters);
        return (rows as { detail: string }[]).map((p) => p.detail);
      };
      const byMetadata = plan(q);
      assert.match(
        byMetadata[0],
        /^SEARCH rm USING PRIMARY KEY \(run_id=\? AND grp=\? AND key=\? AND value=\?\)/,
      );
      assert.ok(!byMetadata.some((d) => /TEMP B-TREE/.test(d)), byMetadata.join('\n'));
      // Spans (several types) in the native order: the run's records by time, only ties sorted.
      const spans = plan({ ...q, types: SPAN_TYPES, tree: null });
      assert.deepEqual(spans, [
        'SEARCH records USING INDEX records_run_created (run_id=?)',
        'USE TEMP B-TREE FOR LAST TERM OF ORDER BY',
      ]);
      // A sort, or the leaf under `or`, takes no probe.
      assert.equal(metadataProbe({ ...q, sort: {} as SortSpec }), null);
      assert.equal(metadataProbe({ ...q, tree: { op: 'or', children: [parsed.tree!] } }), null);
    });
  });

  test(`records stored before the index are indexed by its migration [${store}]`, async () => {
    // The store at migration 013, with records; then migrated to the latest.
    const older = await storeBefore(store, '014');
    const storeAt = older.store;
    try {
      const row = (id: string, type: string, user_metadata: string | null) => ({
        id,
        project_id: 'p',
        run_id: 'r',
        type,
        created_at: T0,
        updated_at: T0,
        user_metadata,
      });
      await storeAt.db
        .insertInto('records')
        .values([
          row('a', 'trace', JSON.stringify({ k: 'v', n: 1, long: LONG })),
          row('b', 'llm', JSON.stringify({ k: 'w' })),
          row('c', 'session', null),
        ] as any)
        .execute();
      await older.up();
      const { rows } = await sql<{ e: string }>`select grp || ' ' || id || ' ' || key || '=' || value as e
        from record_metadata order by id`.execute(storeAt.db);
      assert.deepEqual(
        rows.map((r) => r.e),
        ['trace a k=v', 'span b k=w'],
      );
    } finally {
      await older.close();
    }
  });
}
