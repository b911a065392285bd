import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`log streams and experiments [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    const ids: Record<string, string> = {};
    const search = (body: unknown, key?: string) =>
      s.call('POST', `/v2/projects/${projectId}/log_streams/search`, body, key);
    const names = (r: { body: any }) => r.body.log_streams.map((l: any) => l.name);

    before(async () => {
      s = await startTestServer(store);
      projectId = (await s.call('POST', '/v2/projects', { name: 'runs' })).body.id;
      for (const name of ['alpha', 'Beta', 'gamma', 'delta_1', 'delta%2']) {
        const r = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name });
        assert.equal(r.status, 200, r.text);
        ids[name] = r.body.id;
        await new Promise((res) => setTimeout(res, 2)); // distinct created_at
      }
    });
    after(() => s.close());

    test('create answers the log stream shape; a taken name is 409', async () => {
      const r = await s.call('GET', `/v2/projects/${projectId}/log_streams/${ids.alpha}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.project_id, projectId);
      assert.equal(r.body.created_by_user.email, 'admin@localhost');
      assert.equal(r.body.has_user_created_sessions, false);
      assert.equal(
        (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'alpha' })).status,
        409,
      );
      const list = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      assert.equal(list.body.length, 5);
    });

    test('experiments are runs of their own kind', async () => {
      const e = await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: 'alpha' });
      assert.equal(e.status, 200, 'an experiment may share a log stream name');
      const list = await s.call('GET', `/v2/projects/${projectId}/experiments`);
      assert.deepEqual(
        list.body.map((x: any) => x.name),
        ['alpha'],
      );
      assert.equal((await s.call('GET', `/v2/projects/${projectId}/experiments/${ids.alpha}`)).status, 404);
      assert.equal(names(await search({})).length, 5, 'log stream search does not list experiments');
    });

    test('default sort is created_at descending with the page envelope', async () => {
      const r = await search({});
      assert.equal(r.status, 200);
      assert.deepEqual(names(r), ['delta%2', 'delta_1', 'gamma', 'Beta', 'alpha']);
      assert.equal(r.body.starting_token, 0);
      assert.equal(r.body.limit, 100);
      assert.equal(r.body.paginated, false);
      assert.equal(r.body.next_starting_token, null);
      assert.equal(r.body.log_streams[0].num_traces, 0);
    });

    test('the three sorts, both directions', async () => {
      assert.deepEqual(
        names(await search({ sort: { name: 'name', ascending: true, sort_type: 'column' } })),
        ['Beta', 'alpha', 'delta%2', 'delta_1', 'gamma'],
      );
      assert.deepEqual(names(await search({ sort: { name: 'created_at' } })), [
        'alpha',
        'Beta',
        'gamma',
        'delta_1',
        'delta%2',
      ]);
      assert.deepEqual(names(await search({ sort: { name: 'updated_at', ascending: false } }))[0], 'delta%2');
    });

    test('pages', async () => {
      const p1 = await search({ limit: 2, sort: { name: 'created_at' } });
      assert.deepEqual(names(p1), ['alpha', 'Beta']);
      assert.equal(p1.body.paginated, true);
      assert.equal(p1.body.next_starting_token, 2);
      const p3 = await search({ limit: 2, starting_token: 4, sort: { name: 'created_at' } });
      assert.deepEqual(names(p3), ['delta%2']);
      assert.equal(p3.body.next_starting_token, null);
      const exact = await search({ limit: 5 });
      assert.equal(exact.body.next_starting_token, null, 'an exactly full last page has no next page');
    });

    test('name filters: every operator, case folding, literal wildcards', async () => {
      const f = (filter: object) =>
        search({ filters: [{ name: 'name', ...filter }], sort: { name: 'name' } });
      assert.deepEqual(names(await f({ operator: 'eq', value: 'alpha' })), ['alpha']);
      assert.deepEqual(names(await f({ operator: 'eq', value: 'beta' })), []);
      assert.deepEqual(names(await f({ operator: 'eq', value: 'beta', case_sensitive: false })), ['Beta']);
      assert.equal(names(await f({ operator: 'ne', value: 'alpha' })).length, 4);
      assert.deepEqual(names(await f({ operator: 'contains', value: 'ta_' })), ['delta_1']);
      assert.deepEqual(names(await f({ operator: 'contains', value: '%' })), ['delta%2']);
      assert.deepEqual(names(await f({ operator: 'contains', value: 'BET', case_sensitive: false })), [
        'Beta',
      ]);
      assert.deepEqual(names(await f({ operator: 'one_of', value: ['alpha', 'gamma', 'zzz'] })), [
        'alpha',
        'gamma',
      ]);
      assert.equal(names(await f({ operator: 'not_in', value: ['alpha', 'gamma'] })).length, 3);
    });

    test('id, created_by, created_at and updated_at filters', async () => {
      assert.deepEqual(names(await search({ filters: [{ name: 'id', value: ids.gamma }] })), ['gamma']);
      assert.deepEqual(
        names(
          await search({ filters: [{ name: 'id', operator: 'one_of', value: [ids.gamma, ids.alpha] }] }),
        ).sort(),
        ['alpha', 'gamma'],
      );
      assert.equal(
        names(await search({ filters: [{ name: 'id', operator: 'ne', value: ids.gamma }] })).length,
        4,
      );
      assert.equal(names(await search({ filters: [{ name: 'created_by', value: s.adminId }] })).length, 5);
      assert.equal(
        names(await search({ filters: [{ name: 'created_by', operator: 'not_in', value: [s.adminId] }] }))
          .length,
        0,
      );
      const gamma = await s.call('GET', `/v2/projects/${projectId}/log_streams/${ids.gamma}`);
      const at = gamma.body.created_at;
      const cmp = async (operator: string, name = 'created_at') =>
        names(await search({ filters: [{ name, operator, value: at }], sort: { name: 'created_at' } }));
      assert.deepEqual(await cmp('eq'), ['gamma']);
      assert.deepEqual(await cmp('gt'), ['delta_1', 'delta%2']);
      assert.deepEqual(await cmp('gte'), ['gamma', 'delta_1', 'delta%2']);
      assert.deepEqual(await cmp('lt'), ['alpha', 'Beta']);
      assert.deepEqual(await cmp('lte'), ['alpha', 'Beta', 'gamma']);
      assert.equal((await cmp('ne')).length, 4);
      assert.deepEqual(await cmp('lte', 'updated_at'), ['alpha', 'Beta', 'gamma']);
      // Filters combine with AND.
      const both = await search({
        filters: [
          { name: 'created_at', operator: 'gte', value: at },
          { name: 'name', operator: 'contains', value: 'delta' },
          { name: 'name', operator: 'ne', value: 'delta_1' },
        ],
      });
      assert.deepEqual(names(both), ['delta%2']);
    });

    test('every answer carries the same counts: create, list, get, and search with or without include_counts', async () => {
      // A project of its own: the other tests count this one's log streams.
      const pid = (await s.call('POST', '/v2/projects', { name: 'runs-counted' })).body.id;
      const created = await s.call('POST', `/v2/projects/${pid}/log_streams`, { name: 'counted' });
      assert.equal(created.body.num_traces, 0);
      assert.equal(created.body.num_spans, 0);
      const batch = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: created.body.id,
        traces: [
          {
            name: 't1',
            spans: [
              { type: 'llm', input: 'q' },
              { type: 'tool', input: 'x' },
            ],
          },
          { name: 't2', spans: [] },
        ],
      });
      assert.equal(batch.status, 200, batch.text);
      const counts = (l: any) => [l.num_traces, l.num_spans];
      const filter = { filters: [{ name: 'name', operator: 'eq', value: 'counted' }] };
      const answers = [
        (await s.call('GET', `/v2/projects/${pid}/log_streams/${created.body.id}`)).body,
        (await s.call('GET', `/v2/projects/${pid}/log_streams`)).body[0],
        ...(await Promise.all(
          [{}, { include_counts: true }, { include_counts: false }].map(
            async (extra) =>
              (
                await s.call('POST', `/v2/projects/${pid}/log_streams/search`, { ...filter, ...extra })
              ).body.log_streams[0],
          ),
        )),
      ];
      for (const a of answers) assert.deepEqual(counts(a), [2, 2]);
    });

    test('bad searches are 422 with loc', async () => {
      const cases: [unknown, (string | number)[]][] = [
        [{ limit: 0 }, ['body', 'limit']],
        [{ limit: 1001 }, ['body', 'limit']],
        [{ starting_token: -1 }, ['body', 'starting_token']],
        [{ filters: [{ name: 'bogus', value: 'x' }] }, ['body', 'filters', 0]],
        [{ filters: [{ name: 'name', operator: 'gt', value: 'x' }] }, ['body', 'filters', 0, 'operator']],
        [
          { filters: [{ name: 'created_at', operator: 'eq', value: 'yesterday' }] },
          ['body', 'filters', 0, 'value'],
        ],
        [
          { filters: [{ name: 'name', operator: 'one_of', value: 'alpha' }] },
          ['body', 'filters', 0, 'value'],
        ],
        [{ sort: { name: 'size' } }, ['body', 'sort']],
        [{ include_counts: 'yes' }, ['body', 'include_counts']],
      ];
      for (const [body, loc] of cases) {
        const r = await search(body);
        assert.equal(r.status, 422, JSON.stringify(body));
        assert.ok(
          r.body.detail.some((d: any) => JSON.stringify(d.loc.slice(0, loc.length)) === JSON.stringify(loc)),
          `${JSON.stringify(body)} → ${JSON.stringify(r.body.detail)}`,
        );
      }
    });

    test('access: 401 without credentials, 404 for another user, 403 to create as viewer', async () => {
      assert.equal((await search({}, null as unknown as string)).status, 401);
      const u = await s.user();
      assert.equal((await search({}, u.key)).status, 404);
      assert.equal(
        (await s.call('GET', `/v2/projects/${projectId}/log_streams`, undefined, u.key)).status,
        404,
      );
      assert.equal(
        (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'x' }, u.key)).status,
        404,
      );
      await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: u.id, role: 'viewer' });
      assert.equal((await search({}, u.key)).status, 200);
      assert.equal(
        (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'x' }, u.key)).status,
        403,
      );
      const other = crypto.randomUUID();
      assert.equal((await s.call('POST', `/v2/projects/${other}/log_streams/search`, {})).status, 404);
    });
  });
}
