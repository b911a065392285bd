import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

type Person = Awaited<ReturnType<TestServer['user']>>;

for (const store of storesUnderTest()) {
  describe(`project collaborators and system roles [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    async function ok(method: string, url: string, body?: unknown, key?: string) {
      const r = await s.call(method, url, body, key);
      assert.equal(r.status, 200, `${method} ${url}: ${r.text}`);
      return r.body;
    }

    async function projectOf(owner: Person) {
      return (await ok('POST', '/v2/projects', { name: `p-${crypto.randomUUID()}` }, owner.key)).id as string;
    }

    async function group(...members: Person[]) {
      const g = await ok('POST', '/v2/groups', { name: `g-${crypto.randomUUID()}` });
      if (members.length)
        await ok(
          'POST',
          `/v2/groups/${g.id}/members`,
          members.map((m) => ({ user_id: m.id })),
        );
      return g.id as string;
    }

    test("GET .../current_user_role answers the caller's strongest role; admins are owners", async () => {
      const owner = await s.user();
      const member = await s.user();
      const stranger = await s.user();
      const p = await projectOf(owner);
      const roleOf = async (key?: string) =>
        (await ok('GET', `/v2/projects/${p}/current_user_role`, undefined, key)).role;
      assert.deepEqual(await ok('GET', `/v2/projects/${p}/current_user_role`, undefined, owner.key), {
        project_id: p,
        role: 'owner',
      });
      assert.equal(await roleOf(), 'owner', 'the admin');
      await ok('POST', `/v2/projects/${p}/collaborators`, { user_id: member.id, role: 'viewer' }, owner.key);
      assert.equal(await roleOf(member.key), 'viewer');
      // A group's stronger role wins over the user's own share, and the weaker never lowers it.
      const g = await group(member);
      await ok('POST', `/v2/projects/${p}/collaborators`, { group_id: g, role: 'editor' }, owner.key);
      assert.equal(await roleOf(member.key), 'editor');
      await ok('PATCH', `/v2/projects/${p}/groups/${g}`, { role: 'annotator' }, owner.key);
      assert.equal(await roleOf(member.key), 'annotator');
      // A project the caller cannot see is not found, as every project route answers.
      const hidden = await s.call('GET', `/v2/projects/${p}/current_user_role`, undefined, stranger.key);
      assert.equal(hidden.status, 404, hidden.text);
      const missing = await s.call('GET', `/v2/projects/${crypto.randomUUID()}/current_user_role`);
      assert.equal(missing.status, 404, missing.text);
    });

    test('users and groups list with their roles; PATCH changes a role, DELETE removes the share', async () => {
      const owner = await s.user();
      const ann = await s.user();
      const p = await projectOf(owner);
      const g = await group(ann);
      await ok('POST', `/v2/projects/${p}/collaborators`, { user_id: ann.id, role: 'viewer' }, owner.key);
      await ok('POST', `/v2/projects/${p}/collaborators`, { group_id: g, role: 'annotator' }, owner.key);

      const users = await ok('GET', `/v2/projects/${p}/users`, undefined, ann.key);
      assert.deepEqual(
        users.map((u: any) => [u.email, u.role]),
        [
          [owner.email, 'owner'],
          [ann.email, 'viewer'],
        ],
      );
      // A viewer sees who else is there but may not change it.
      assert.deepEqual(users[0].permissions, [
        { action: 'update', allowed: false },
        { action: 'delete', allowed: false },
      ]);
      const groups = await ok('GET', `/v2/projects/${p}/groups`, undefined, owner.key);
      assert.deepEqual(
        groups.map((x: any) => [x.group_id, x.role, x.permissions[0].allowed]),
        [[g, 'annotator', true]],
      );

      const changed = await ok('PATCH', `/v2/projects/${p}/users/${ann.id}`, { role: 'editor' }, owner.key);
      assert.equal(changed.role, 'editor');
      assert.equal(changed.user_id, ann.id);
      // The new role takes effect at once: the editor creates a log stream.
      await ok('POST', `/v2/projects/${p}/log_streams`, { name: 'by-editor' }, ann.key);
      assert.equal(
        (await ok('PATCH', `/v2/projects/${p}/groups/${g}`, { role: 'viewer' }, owner.key)).role,
        'viewer',
      );

      await ok('DELETE', `/v2/projects/${p}/users/${ann.id}`, undefined, owner.key);
      // Still in through the group, as a viewer now.
      const asViewer = await s.call('POST', `/v2/projects/${p}/log_streams`, { name: 'x' }, ann.key);
      assert.equal(asViewer.status, 403, asViewer.text);
      await ok('DELETE', `/v2/projects/${p}/groups/${g}`, undefined, owner.key);
      assert.equal((await s.call('GET', `/v2/projects/${p}`, undefined, ann.key)).status, 404);
      assert.deepEqual(await ok('GET', `/v2/projects/${p}/groups`, undefined, owner.key), []);
    });

    test('the last owner is neither demoted nor removed (422 at its loc); another owner makes it possible', async () => {
      const owner = await s.user();
      const other = await s.user();
      const p = await projectOf(owner);
      const demote = await s.call(
        'PATCH',
        `/v2/projects/${p}/users/${owner.id}`,
        { role: 'editor' },
        owner.key,
      );
      assert.equal(demote.status, 422, demote.text);
      assert.deepEqual(demote.body.detail[0].loc, ['body', 'role']);
      assert.match(demote.body.detail[0].msg, /at least one owner/);
      const remove = await s.call('DELETE', `/v2/projects/${p}/users/${owner.id}`, undefined, owner.key);
      assert.equal(remove.status, 422, remove.text);
      assert.deepEqual(remove.body.detail[0].loc, ['path', 'user_id']);
      assert.equal((await ok('GET', `/v2/projects/${p}/users`, undefined, owner.key))[0].role, 'owner');

      // A group of owners with a member counts; then the user may step down.
      const g = await group(other);
      await ok('POST', `/v2/projects/${p}/collaborators`, { group_id: g, role: 'owner' }, owner.key);
      await ok('PATCH', `/v2/projects/${p}/users/${owner.id}`, { role: 'viewer' }, owner.key);
      const last = await s.call('DELETE', `/v2/projects/${p}/groups/${g}`, undefined, other.key);
      assert.equal(last.status, 422, last.text);
      assert.deepEqual(last.body.detail[0].loc, ['path', 'group_id']);
    });

    test('bad input: a role outside the four, a user not shared with, a non-owner', async () => {
      const owner = await s.user();
      const ed = await s.user();
      const stranger = await s.user();
      const p = await projectOf(owner);
      await ok('POST', `/v2/projects/${p}/collaborators`, { user_id: ed.id, role: 'editor' }, owner.key);
      const bad = await s.call('PATCH', `/v2/projects/${p}/users/${ed.id}`, { role: 'boss' }, owner.key);
      assert.equal(bad.status, 422, bad.text);
      assert.deepEqual(bad.body.detail[0].loc, ['body', 'role']);
      const missing = await s.call(
        'PATCH',
        `/v2/projects/${p}/users/${stranger.id}`,
        { role: 'viewer' },
        owner.key,
      );
      assert.equal(missing.status, 404, missing.text);
      assert.equal(
        (await s.call('DELETE', `/v2/projects/${p}/groups/${crypto.randomUUID()}`, undefined, owner.key))
          .status,
        404,
      );
      const byEditor = await s.call('DELETE', `/v2/projects/${p}/users/${owner.id}`, undefined, ed.key);
      assert.equal(byEditor.status, 403, byEditor.text);
      assert.equal((await s.call('GET', `/v2/projects/${p}/users`, undefined, stranger.key)).status, 404);
    });

    test('PATCH /v2/users/{id} sets a system role (admins); the last admin stays one', async () => {
      const u = await s.user();
      const made = await ok('PATCH', `/v2/users/${u.id}`, { role: 'admin' });
      assert.equal(made.role, 'admin');
      // At once an admin: they list users.
      await ok('GET', '/v2/users', undefined, u.key);
      await ok('PATCH', `/v2/users/${u.id}`, { role: 'user' }, u.key);
      assert.equal((await s.call('GET', '/v2/users', undefined, u.key)).status, 403);
      const byUser = await s.call('PATCH', `/v2/users/${s.adminId}`, { role: 'user' }, u.key);
      assert.equal(byUser.status, 403, byUser.text);
      const bad = await s.call('PATCH', `/v2/users/${u.id}`, { role: 'owner' });
      assert.equal(bad.status, 422, bad.text);
      assert.deepEqual(bad.body.detail[0].loc, ['body', 'role']);
      assert.equal((await s.call('PATCH', `/v2/users/${crypto.randomUUID()}`, { role: 'user' })).status, 404);

      // Demote every other admin, then the last one cannot demote itself.
      for (const other of await ok('GET', '/v2/users'))
        if (other.role === 'admin' && other.id !== s.adminId)
          await ok('PATCH', `/v2/users/${other.id}`, { role: 'user' });
      const self = await s.call('PATCH', `/v2/users/${s.adminId}`, { role: 'user' });
      assert.equal(self.status, 422, self.text);
      assert.deepEqual(self.body.detail[0].loc, ['body', 'role']);
      assert.equal((await ok('GET', '/v2/current_user')).role, 'admin');
    });
  });
}
