import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`projects [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    test('create answers the project resource', async () => {
      const r = await s.call('POST', '/v2/projects', {
        name: 'alpha',
        created_by: 'ignored',
        type: 'gen_ai',
        create_example_templates: false,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.name, 'alpha');
      assert.equal(r.body.created_by, s.adminId);
      assert.match(r.body.id, /^[0-9a-f-]{36}$/);
      assert.match(r.body.created_at, /Z$/);
    });

    test('a taken name is 409', async () => {
      await s.call('POST', '/v2/projects', { name: 'dup' });
      const r = await s.call('POST', '/v2/projects', { name: 'dup' });
      assert.equal(r.status, 409);
      assert.equal(typeof r.body.detail, 'string');
    });

    test('bad bodies are 422 with loc', async () => {
      let r = await s.call('POST', '/v2/projects', {});
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'name']);
      assert.equal(r.body.detail[0].type, 'missing');
      r = await s.call('POST', '/v2/projects', { name: '' });
      assert.equal(r.body.detail[0].type, 'string_too_short');
      r = await s.call('POST', '/v2/projects', { name: 'x', type: 'nope' });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'type']);
      r = await s.call('POST', '/v2/projects', '{"name": ');
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'json_invalid');
      assert.equal(r.body.detail[0].loc[0], 'body');
      assert.equal(typeof r.body.detail[0].loc[1], 'number');
      r = await s.call('GET', '/v2/projects/not-a-uuid');
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'project_id']);
      assert.equal(r.body.detail[0].type, 'uuid_parsing');
    });

    test('no credentials is 401 with WWW-Authenticate; a wrong key is 401', async () => {
      let r = await s.call('GET', '/v2/projects', undefined, null);
      assert.equal(r.status, 401);
      assert.ok(r.headers['www-authenticate']);
      r = await s.call('POST', '/v2/projects', { name: 5 }, null);
      assert.equal(r.status, 401, 'credentials are checked before the body');
      r = await s.call('GET', '/v2/projects', undefined, 'sb_wrong');
      assert.equal(r.status, 401);
    });

    test('list, filter by name and type, get, and access rules', async () => {
      const u = await s.user();
      const other = await s.user();
      const mine = await s.call('POST', '/v2/projects', { name: 'mine', type: 'llm_monitor' }, u.key);
      assert.equal(mine.status, 200);
      const list = await s.call('GET', '/v2/projects', undefined, u.key);
      assert.deepEqual(
        list.body.map((p: any) => p.name),
        ['mine'],
      );
      const byName = await s.call('GET', '/v2/projects?project_name=mine&type=llm_monitor', undefined, u.key);
      assert.equal(byName.body.length, 1);
      const wrongType = await s.call('GET', '/v2/projects?project_name=mine&type=gen_ai', undefined, u.key);
      assert.equal(wrongType.body.length, 0);
      // Another user cannot see it at all; an admin can.
      assert.equal((await s.call('GET', `/v2/projects/${mine.body.id}`, undefined, other.key)).status, 404);
      assert.equal((await s.call('GET', '/v2/projects', undefined, other.key)).body.length, 0);
      assert.equal((await s.call('GET', `/v2/projects/${mine.body.id}`)).status, 200);
      // Shared as viewer: visible, but not deletable.
      const share = await s.call(
        'POST',
        `/v2/projects/${mine.body.id}/collaborators`,
        { user_id: other.id, role: 'viewer' },
        u.key,
      );
      assert.equal(share.status, 200, share.text);
      assert.equal((await s.call('GET', `/v2/projects/${mine.body.id}`, undefined, other.key)).status, 200);
      assert.equal(
        (await s.call('DELETE', `/v2/projects/${mine.body.id}`, undefined, other.key)).status,
        403,
      );
      assert.equal((await s.call('DELETE', `/v2/projects/${mine.body.id}`, undefined, u.key)).status, 200);
      assert.equal((await s.call('GET', `/v2/projects/${mine.body.id}`, undefined, u.key)).status, 404);
    });

    test('access granted a moment ago is taken away at once (credential and access caches)', async () => {
      const u = await s.user();
      const other = await s.user();
      const p = await s.call('POST', '/v2/projects', { name: 'cached-access' }, u.key);
      const ls = await s.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'prod' }, u.key);
      const search = () =>
        s.call('POST', `/v2/projects/${p.body.id}/sessions/search`, { log_stream_id: ls.body.id }, other.key);
      const create = (name: string) =>
        s.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name }, other.key);
      const g = await s.call('POST', '/v2/groups', { name: 'cached-access-team' });
      await s.call('POST', `/v2/groups/${g.body.id}/members`, [{ user_id: other.id }]);
      const share = (role: string) =>
        s.call('POST', `/v2/projects/${p.body.id}/collaborators`, { group_id: g.body.id, role }, u.key);
      assert.equal((await share('editor')).status, 200);
      assert.equal((await search()).status, 200);
      assert.equal((await create('a')).status, 200);
      // Downgraded: the next request sees it.
      assert.equal((await share('viewer')).status, 200);
      assert.equal((await create('b')).status, 403);
      assert.equal((await search()).status, 200);
      // Out of the group: gone at once.
      assert.equal((await s.call('DELETE', `/v2/groups/${g.body.id}/members/${other.id}`)).status, 200);
      assert.equal((await search()).status, 404);
      // Back in, then the project is deleted.
      await s.call('POST', `/v2/groups/${g.body.id}/members`, [{ user_id: other.id }]);
      assert.equal((await search()).status, 200);
      assert.equal((await s.call('DELETE', `/v2/projects/${p.body.id}`, undefined, u.key)).status, 200);
      assert.equal((await search()).status, 404);
      // A key revoked behind the server's back (another process on the same database) stops working
      // within ACCESS_CACHE_MS (1 s).
      const key = await s.call('POST', '/v2/users/api_keys', { description: 'elsewhere' }, other.key);
      assert.equal((await s.call('GET', '/v2/current_user', undefined, key.body.api_key)).status, 200);
      await s.running.services.store.db
        .updateTable('api_keys')
        .set({ revoked_at: 1 })
        .where('id', '=', key.body.id)
        .execute();
      await new Promise((resolve) => setTimeout(resolve, 1100));
      assert.equal((await s.call('GET', '/v2/current_user', undefined, key.body.api_key)).status, 401);
    });

    test('deletes of one project at once answer 200 or 404, never a 5xx', async () => {
      for (let round = 0; round < 3; round++) {
        const { projectId, logStreamId } = await projectWithLogStream(s);
        const traces = Array.from({ length: 40 }, (_, i) => ({
          name: `t${i}`,
          input: 'in',
          spans: [{ type: 'llm', name: 'call', input: 'a', output: 'b' }],
        }));
        const ingest = await s.call('POST', `/v2/projects/${projectId}/traces`, {
          log_stream_id: logStreamId,
          traces,
        });
        assert.equal(ingest.status, 200, ingest.text);
        const answers = await Promise.all(
          Array.from({ length: 4 }, () => s.call('DELETE', `/v2/projects/${projectId}`)),
        );
        for (const a of answers) assert.ok([200, 404].includes(a.status), `${a.status} ${a.text}`);
        assert.ok(answers.some((a) => a.status === 200));
        assert.equal((await s.call('GET', `/v2/projects/${projectId}`)).status, 404);
      }
    });
  });
}
