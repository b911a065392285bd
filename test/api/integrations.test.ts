import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const GW = '/v2/integrations/example_gateway';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const token = () => `sk-test-${crypto.randomBytes(18).toString('base64url')}`;
const body = (t = token(), extra: Record<string, unknown> = {}) => ({
  endpoint: 'https://gateway.example.com/v1',
  use_case: 'chat',
  token: t,
  ...extra,
});
const perms = (r: any) => Object.fromEntries(r.permissions.map((p: any) => [p.action, p.allowed]));

type Person = Awaited<ReturnType<TestServer['user']>>;

for (const store of storesUnderTest()) {
  describe(`integrations [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    async function gateway(who: Person, t = token()) {
      const r = await s.call('PUT', GW, body(t), who.key);
      assert.equal(r.status, 200, r.text);
      return r.body;
    }

    async function group(...members: Person[]) {
      const g = await s.call('POST', '/v2/groups', { name: `g-${crypto.randomUUID()}` });
      assert.equal(g.status, 200, g.text);
      if (members.length) {
        const m = await s.call(
          'POST',
          `/v2/groups/${g.body.id}/members`,
          members.map((u) => ({ user_id: u.id })),
        );
        assert.equal(m.status, 200, m.text);
      }
      return g.body.id as string;
    }

    const shareUser = (id: string, who: Person, role: string, key: string) =>
      s.call('POST', `/v2/integrations/${id}/users`, [{ user_id: who.id, role }], key);

    test('PUT creates the caller’s integration: the record of decisions.md, no token', async () => {
      const u = await s.user();
      const r = await s.call(
        'PUT',
        GW,
        body(token(), { multi_modal_config: { max_files: 3, max_file_size_bytes: 1024 } }),
        u.key,
      );
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(Object.keys(r.body).sort(), [
        'created_at',
        'created_by',
        'id',
        'is_disabled',
        'is_selected',
        'name',
        'permissions',
        'provider',
        'updated_at',
      ]);
      assert.match(r.body.id, UUID);
      assert.equal(r.body.name, 'example_gateway');
      assert.equal(r.body.provider, 'example_gateway');
      assert.equal(r.body.created_by, u.id);
      assert.match(r.body.created_at, /Z$/);
      assert.equal(r.body.is_selected, true);
      assert.equal(r.body.is_disabled, false);
      assert.deepEqual(perms(r.body), { read: true, update: true, delete: true, share: true });
    });

    test('a second PUT updates the same integration (one per user) and its token', async () => {
      const u = await s.user();
      const first = await gateway(u, 'sk-first-token-value');
      const r = await s.call('PUT', GW, body('sk-second-token-value', { use_case: 'agents' }), u.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.id, first.id);
      assert.equal(r.body.created_at, first.created_at);
      assert.ok(r.body.updated_at >= first.updated_at);
      const list = await s.call('GET', '/v2/integrations', undefined, u.key);
      assert.deepEqual(
        list.body.map((i: any) => i.id),
        [first.id],
      );
      assert.equal(await s.running.services.integrations.tokenFor(first.id), 'sk-second-token-value');
      // Another user's PUT makes their own.
      const other = await gateway(await s.user());
      assert.notEqual(other.id, first.id);
    });

    test('validation: required fields, URL, token, multi_modal_config', async () => {
      const u = await s.user();
      const put = (b: unknown) => s.call('PUT', GW, b, u.key);
      let r = await put({});
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail.map((d: any) => [d.loc.join('.'), d.type]).sort(), [
        ['body.endpoint', 'missing'],
        ['body.token', 'missing'],
        ['body.use_case', 'missing'],
      ]);
      r = await s.call('PUT', GW, undefined, u.key);
      assert.equal(r.status, 422);

      const endpointFault = async (endpoint: unknown, type: string) => {
        const res = await put({ ...body(), endpoint });
        assert.equal(res.status, 422, `${JSON.stringify(endpoint)}: ${res.text}`);
        assert.deepEqual(res.body.detail[0].loc, ['body', 'endpoint']);
        assert.equal(res.body.detail[0].type, type, JSON.stringify(endpoint));
      };
      await endpointFault('ftp://files.example.com/x', 'url_scheme');
      await endpointFault('javascript:alert(1)', 'url_scheme');
      await endpointFault('not a url', 'url_parsing');
      await endpointFault('/relative/path', 'url_parsing');
      await endpointFault('gateway.example.com', 'url_parsing');
      await endpointFault('https://', 'url_parsing');
      await endpointFault(' https://gateway.example.com', 'url_parsing');
      await endpointFault('https://gateway.example.com/\u0000', 'value_error');
      await endpointFault('', 'string_too_short');
      await endpointFault(5, 'string_type');
      const base = 'https://gateway.example.com/';
      await endpointFault(base + 'a'.repeat(2084 - base.length), 'string_too_long');
      r = await put({ ...body(), endpoint: base + 'a'.repeat(2083 - base.length) });
      assert.equal(r.status, 200, 'a URL of exactly 2083 characters is accepted');
      r = await put({ ...body(), endpoint: 'http://127.0.0.1:8080/v1?x=1' });
      assert.equal(r.status, 200, r.text);

      for (const [t, type] of [
        ['', 'string_too_short'],
        ['   ', 'value_error'],
        [12345, 'string_type'],
        [null, 'string_type'],
        [{ nested: 'sk-in-object' }, 'string_type'],
        ['x'.repeat(16385), 'string_too_long'],
      ] as const) {
        r = await put({ ...body(), token: t });
        assert.equal(r.status, 422, JSON.stringify(t).slice(0, 40));
        const item = r.body.detail.find((d: any) => d.loc[1] === 'token');
        assert.equal(item.type, type);
        assert.ok(!('input' in item), 'the token is never echoed in a 422 item');
      }

      // Text PostgreSQL cannot store as given (NUL, lone surrogates) is a 422 on both stores, not a 500.
      for (const [field, value] of [
        ['use_case', 'chat\u0000'],
        ['use_case', 'chat\ud800'],
        ['endpoint', 'https://gateway.example.com/\udfff'],
        ['token', 'sk-\ud800'],
        ['token', 'sk-\u0000'],
      ] as const) {
        r = await put({ ...body(), [field]: value });
        assert.equal(r.status, 422, `${field}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['body', field]);
        assert.equal(r.body.detail[0].type, 'value_error');
        assert.equal('input' in r.body.detail[0], field !== 'token');
      }

      r = await put({ ...body(), use_case: '' });
      assert.deepEqual(r.body.detail[0].loc, ['body', 'use_case']);
      r = await put({ ...body(), use_case: 7 });
      assert.equal(r.body.detail[0].type, 'string_type');

      for (const [cfg, loc, type] of [
        [{ max_files: 0 }, 'max_files', 'greater_than_equal'],
        [{ max_file_size_bytes: 0 }, 'max_file_size_bytes', 'greater_than_equal'],
        [{ max_files: -1, max_file_size_bytes: 1 }, 'max_files', 'greater_than_equal'],
        [{ max_files: 1.5 }, 'max_files', 'int_type'],
        [{ max_files: '2' }, 'max_files', 'int_type'],
      ] as const) {
        r = await put({ ...body(), multi_modal_config: cfg });
        assert.equal(r.status, 422, JSON.stringify(cfg));
        assert.deepEqual(r.body.detail[0].loc, ['body', 'multi_modal_config', loc]);
        assert.equal(r.body.detail[0].type, type);
      }
      r = await put({ ...body(), multi_modal_config: 'big' });
      assert.equal(r.status, 422);
      r = await put({ ...body(), multi_modal_config: { max_files: 1, max_file_size_bytes: 1 } });
      assert.equal(r.status, 200, r.text);
      r = await put({ ...body(), multi_modal_config: null, unknown_field: 'ignored' });
      assert.equal(r.status, 200, r.text);
    });

    test('the token is stored sealed (AES-256-GCM), never in clear', async () => {
      const u = await s.user();
      const t = `sk-at-rest-${crypto.randomBytes(16).toString('hex')}`;
      const i = await gateway(u, t);
      const db = s.running.services.store.db;
      const row = await db
        .selectFrom('integrations')
        .select(['token_ciphertext', 'key_id', 'config'])
        .where('id', '=', i.id)
        .executeTakeFirstOrThrow();
      assert.match(row.token_ciphertext, /^v1\.[A-Za-z0-9_-]+$/);
      for (const form of [t, Buffer.from(t).toString('base64'), Buffer.from(t).toString('hex')]) {
        assert.ok(!row.token_ciphertext.includes(form));
        assert.ok(!JSON.stringify(row.config).includes(form));
      }
      // Nothing in any table holds it.
      const tables = ['integrations', 'integration_collaborators', 'signals_configurations', 'users'];
      for (const table of tables) {
        const rows = await sql<any>`select * from ${sql.table(table)}`.execute(db);
        assert.ok(!JSON.stringify(rows.rows).includes(t), table);
      }
      if (store === 'sqlite') {
        // Nor any byte of the database files (main file and write-ahead log).
        const dir = s.config.dataDir;
        for (const f of fs.readdirSync(dir).filter((n) => n.startsWith('spanbase.db'))) {
          assert.ok(!fs.readFileSync(path.join(dir, f)).includes(Buffer.from(t)), f);
        }
      }
      assert.equal(await s.running.services.integrations.tokenFor(i.id), t);
      // A sealed token copied onto another integration does not open there.
      const other = await gateway(await s.user());
      await db
        .updateTable('integrations')
        .set({ token_ciphertext: row.token_ciphertext })
        .where('id', '=', other.id)
        .execute();
      await assert.rejects(s.running.services.integrations.tokenFor(other.id));
    });

    test('GET one and the list: owned or shared only; invisible is 404', async () => {
      const a = await s.user();
      const b = await s.user();
      const i = await gateway(a);
      let r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, a.key);
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, i);
      r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, b.key);
      assert.equal(r.status, 404);
      assert.equal(typeof r.body.detail, 'string');
      assert.deepEqual((await s.call('GET', '/v2/integrations', undefined, b.key)).body, []);
      r = await s.call('GET', `/v2/integrations/${crypto.randomUUID()}`, undefined, a.key);
      assert.equal(r.status, 404);
      r = await s.call('GET', '/v2/integrations/not-a-uuid', undefined, a.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'integration_id']);
      r = await s.call('GET', '/v2/integrations', undefined, null);
      assert.equal(r.status, 401);
      r = await s.call('PUT', GW, body(), null);
      assert.equal(r.status, 401);
    });

    test('admins act as owners by id but list only their own', async () => {
      const a = await s.user();
      const i = await gateway(a);
      const r = await s.call('GET', `/v2/integrations/${i.id}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.is_selected, false);
      assert.deepEqual(perms(r.body), { read: true, update: true, delete: true, share: true });
      const list = await s.call('GET', '/v2/integrations');
      assert.ok(!list.body.some((x: any) => x.id === i.id));
    });

    test('DELETE: owner only (403 for viewer and editor), 404 when invisible', async () => {
      const a = await s.user();
      const viewer = await s.user();
      const editor = await s.user();
      const stranger = await s.user();
      const i = await gateway(a);
      assert.equal((await shareUser(i.id, viewer, 'viewer', a.key)).status, 200);
      assert.equal((await shareUser(i.id, editor, 'editor', a.key)).status, 200);
      for (const who of [viewer, editor]) {
        const r = await s.call('DELETE', `/v2/integrations/${i.id}`, undefined, who.key);
        assert.equal(r.status, 403);
      }
      let r = await s.call('DELETE', `/v2/integrations/${i.id}`, undefined, stranger.key);
      assert.equal(r.status, 404);
      r = await s.call('DELETE', `/v2/integrations/${i.id}`, undefined, a.key);
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, a.key)).status, 404);
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, viewer.key)).status, 404);
      assert.equal((await s.call('DELETE', `/v2/integrations/${i.id}`, undefined, a.key)).status, 404);
      // The owner's next PUT creates a new one.
      const again = await gateway(a);
      assert.notEqual(again.id, i.id);
    });

    test('sharing with users: records, roles, permissions, and who may change them', async () => {
      const a = await s.user();
      const b = await s.user();
      const c = await s.user();
      const i = await gateway(a);
      // The creator is the first owner.
      let r = await s.call('GET', `/v2/integrations/${i.id}/users`, undefined, a.key);
      assert.equal(r.status, 200);
      assert.deepEqual(
        r.body.map((x: any) => [x.user_id, x.role]),
        [[a.id, 'owner']],
      );

      r = await shareUser(i.id, b, 'viewer', a.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.length, 1);
      const rec = r.body[0];
      assert.deepEqual(Object.keys(rec).sort(), [
        'created_at',
        'email',
        'first_name',
        'id',
        'last_name',
        'permissions',
        'role',
        'user_id',
      ]);
      assert.match(rec.id, UUID);
      assert.equal(rec.user_id, b.id);
      assert.equal(rec.email, b.email);
      assert.equal(rec.role, 'viewer');
      assert.deepEqual(perms(rec), { update: true, delete: true });

      // The viewer sees it, with a viewer's permissions, and may not change sharing.
      r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, b.key);
      assert.equal(r.status, 200);
      assert.deepEqual(perms(r.body), { read: true, update: false, delete: false, share: false });
      assert.equal(r.body.is_selected, false);
      assert.deepEqual(
        (await s.call('GET', '/v2/integrations', undefined, b.key)).body.map((x: any) => x.id),
        [i.id],
      );
      r = await s.call('GET', `/v2/integrations/${i.id}/users`, undefined, b.key);
      assert.equal(r.status, 200);
      assert.deepEqual(perms(r.body[0]), { update: false, delete: false });
      assert.equal((await shareUser(i.id, c, 'viewer', b.key)).status, 403);
      r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, { role: 'owner' }, b.key);
      assert.equal(r.status, 403);
      r = await s.call('DELETE', `/v2/integrations/${i.id}/users/${a.id}`, undefined, b.key);
      assert.equal(r.status, 403);

      // PATCH answers the collaborator record with the new role.
      r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, { role: 'editor' }, a.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.role, 'editor');
      assert.equal(r.body.id, rec.id);
      assert.equal(r.body.user_id, b.id);
      // An editor still may not share.
      assert.equal((await shareUser(i.id, c, 'viewer', b.key)).status, 403);
      r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, b.key);
      assert.deepEqual(perms(r.body), { read: true, update: true, delete: false, share: false });

      // Someone who cannot see it gets 404 for every sharing route.
      for (const [m, url, b2] of [
        ['GET', `/v2/integrations/${i.id}/users`, undefined],
        ['GET', `/v2/integrations/${i.id}/groups`, undefined],
        ['POST', `/v2/integrations/${i.id}/users`, [{ user_id: c.id, role: 'owner' }]],
        ['PATCH', `/v2/integrations/${i.id}/users/${c.id}`, { role: 'owner' }],
        ['DELETE', `/v2/integrations/${i.id}/users/${b.id}`, undefined],
      ] as const) {
        r = await s.call(m, url, b2, c.key);
        assert.equal(r.status, 404, `${m} ${url}`);
      }

      // Sharing again with the same user sets the role (no duplicate).
      r = await shareUser(i.id, b, 'annotator', a.key);
      assert.equal(r.status, 200);
      r = await s.call('GET', `/v2/integrations/${i.id}/users`, undefined, a.key);
      assert.deepEqual(
        r.body.map((x: any) => [x.user_id, x.role]),
        [
          [a.id, 'owner'],
          [b.id, 'annotator'],
        ],
      );

      // Remove a collaborator: they lose access.
      r = await s.call('DELETE', `/v2/integrations/${i.id}/users/${b.id}`, undefined, a.key);
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, b.key)).status, 404);
      r = await s.call('DELETE', `/v2/integrations/${i.id}/users/${b.id}`, undefined, a.key);
      assert.equal(r.status, 404);
    });

    test('unknown collaborators are 404, bad roles and bodies 422', async () => {
      const a = await s.user();
      const b = await s.user();
      const i = await gateway(a);
      const nobody = crypto.randomUUID();
      let r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, { role: 'viewer' }, a.key);
      assert.equal(r.status, 404, 'a user the integration is not shared with');
      r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${nobody}`, { role: 'viewer' }, a.key);
      assert.equal(r.status, 404);
      r = await s.call('PATCH', `/v2/integrations/${i.id}/groups/${nobody}`, { role: 'viewer' }, a.key);
      assert.equal(r.status, 404);
      r = await s.call('DELETE', `/v2/integrations/${i.id}/groups/${nobody}`, undefined, a.key);
      assert.equal(r.status, 404);
      r = await s.call(
        'POST',
        `/v2/integrations/${i.id}/users`,
        [{ user_id: nobody, role: 'viewer' }],
        a.key,
      );
      assert.equal(r.status, 404);
      r = await s.call(
        'POST',
        `/v2/integrations/${i.id}/groups`,
        [{ group_id: nobody, role: 'viewer' }],
        a.key,
      );
      assert.equal(r.status, 404);
      r = await s.call('PATCH', `/v2/integrations/${nobody}/users/${a.id}`, { role: 'viewer' }, a.key);
      assert.equal(r.status, 404);

      await shareUser(i.id, b, 'viewer', a.key);
      for (const bad of [{ role: 'admin' }, { role: 'Owner' }, { role: 1 }, { role: null }, {}, []]) {
        r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, bad, a.key);
        assert.equal(r.status, 422, JSON.stringify(bad));
        assert.equal(r.body.detail[0].loc[0], 'body');
      }
      r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, { role: 'admin' }, a.key);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'role']);
      assert.equal(r.body.detail[0].type, 'enum');
      r = await s.call('POST', `/v2/integrations/${i.id}/users`, [{ user_id: b.id, role: 'boss' }], a.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 0, 'role']);
      r = await s.call('POST', `/v2/integrations/${i.id}/users`, { user_id: b.id, role: 'viewer' }, a.key);
      assert.equal(r.status, 422, 'the share body is a list');
      r = await s.call(
        'POST',
        `/v2/integrations/${i.id}/users`,
        [{ user_id: 'nope', role: 'viewer' }],
        a.key,
      );
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 0, 'user_id']);
      r = await s.call('PATCH', `/v2/integrations/${i.id}/users/not-a-uuid`, { role: 'viewer' }, a.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'user_id']);
      // Nothing changed.
      r = await s.call('GET', `/v2/integrations/${i.id}/users`, undefined, a.key);
      assert.equal(r.body.find((x: any) => x.user_id === b.id).role, 'viewer');
    });

    test('the last owner cannot be demoted or removed (422 value_error)', async () => {
      const a = await s.user();
      const b = await s.user();
      const i = await gateway(a);
      const lastOwner = (r: any) => {
        assert.equal(r.status, 422, r.text);
        assert.equal(r.body.detail[0].type, 'value_error');
      };
      for (const role of ['editor', 'annotator', 'viewer']) {
        const r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${a.id}`, { role }, a.key);
        lastOwner(r);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'role']);
      }
      let r = await s.call('DELETE', `/v2/integrations/${i.id}/users/${a.id}`, undefined, a.key);
      lastOwner(r);
      r = await shareUser(i.id, a, 'viewer', a.key);
      lastOwner(r);
      assert.deepEqual(r.body.detail[0].loc, ['body', 0, 'role']);
      // A group shared as owner without members owns nothing.
      const empty = await group();
      r = await s.call(
        'POST',
        `/v2/integrations/${i.id}/groups`,
        [{ group_id: empty, role: 'owner' }],
        a.key,
      );
      assert.equal(r.status, 200, r.text);
      lastOwner(await s.call('DELETE', `/v2/integrations/${i.id}/users/${a.id}`, undefined, a.key));
      // Still the owner, and it still works.
      r = await s.call('GET', `/v2/integrations/${i.id}/users`, undefined, a.key);
      assert.deepEqual(
        r.body.map((x: any) => [x.user_id, x.role]),
        [[a.id, 'owner']],
      );

      // With a second owner, the first may step down, and then not demote the last one.
      assert.equal((await shareUser(i.id, b, 'owner', a.key)).status, 200);
      r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${a.id}`, { role: 'editor' }, a.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.role, 'editor');
      assert.deepEqual(perms(r.body), { update: false, delete: false }, 'the caller is no longer an owner');
      assert.equal(
        (await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, { role: 'viewer' }, a.key)).status,
        403,
      );
      lastOwner(await s.call('PATCH', `/v2/integrations/${i.id}/users/${b.id}`, { role: 'viewer' }, b.key));
      lastOwner(await s.call('DELETE', `/v2/integrations/${i.id}/users/${b.id}`, undefined, b.key));
    });

    test('a group’s role applies to its members; groups count as owners through members', async () => {
      const a = await s.user();
      const m1 = await s.user();
      const m2 = await s.user();
      const outsider = await s.user();
      const g = await group(m1, m2);
      const i = await gateway(a);
      let r = await s.call(
        'POST',
        `/v2/integrations/${i.id}/groups`,
        [{ group_id: g, role: 'viewer' }],
        a.key,
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.length, 1);
      assert.deepEqual(Object.keys(r.body[0]).sort(), [
        'created_at',
        'group_id',
        'group_name',
        'id',
        'permissions',
        'role',
      ]);
      assert.equal(r.body[0].group_id, g);
      assert.equal(r.body[0].role, 'viewer');
      const groupRecordId = r.body[0].id;

      // Members see it as viewers; others do not.
      r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, m1.key);
      assert.equal(r.status, 200);
      assert.deepEqual(perms(r.body), { read: true, update: false, delete: false, share: false });
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, outsider.key)).status, 404);
      assert.equal((await shareUser(i.id, outsider, 'viewer', m1.key)).status, 403);
      r = await s.call('GET', `/v2/integrations/${i.id}/groups`, undefined, m2.key);
      assert.deepEqual(
        r.body.map((x: any) => [x.group_id, x.role]),
        [[g, 'viewer']],
      );

      // The group made owner: its members are owners (they may share and delete).
      r = await s.call('PATCH', `/v2/integrations/${i.id}/groups/${g}`, { role: 'owner' }, a.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.id, groupRecordId);
      assert.equal(r.body.role, 'owner');
      assert.equal(typeof r.body.group_name, 'string');
      r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, m1.key);
      assert.deepEqual(perms(r.body), { read: true, update: true, delete: true, share: true });
      assert.equal((await shareUser(i.id, outsider, 'viewer', m1.key)).status, 200);

      // With owners through the group, the creator may leave; then the group is the last owner.
      r = await s.call('DELETE', `/v2/integrations/${i.id}/users/${a.id}`, undefined, m1.key);
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, a.key)).status, 404);
      r = await s.call('PATCH', `/v2/integrations/${i.id}/groups/${g}`, { role: 'editor' }, m2.key);
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'value_error');
      r = await s.call('DELETE', `/v2/integrations/${i.id}/groups/${g}`, undefined, m2.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'group_id']);

      // Make a user owner, then the group may go; its members lose access.
      assert.equal((await shareUser(i.id, outsider, 'owner', m1.key)).status, 200);
      r = await s.call('DELETE', `/v2/integrations/${i.id}/groups/${g}`, undefined, m2.key);
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, m1.key)).status, 404);
      assert.equal((await s.call('GET', `/v2/integrations/${i.id}`, undefined, outsider.key)).status, 200);
    });

    test('a creator who lost the right to change it gets a new one from PUT; the old token is kept', async () => {
      const a = await s.user();
      const b = await s.user();
      const i = await gateway(a, 'sk-original-token');
      await shareUser(i.id, b, 'owner', a.key);
      // Demoted to viewer: a PUT must not overwrite the shared token.
      let r = await s.call('PATCH', `/v2/integrations/${i.id}/users/${a.id}`, { role: 'viewer' }, b.key);
      assert.equal(r.status, 200, r.text);
      r = await s.call('PUT', GW, body('sk-replacement'), a.key);
      assert.equal(r.status, 200, r.text);
      assert.notEqual(r.body.id, i.id);
      assert.equal(r.body.is_selected, true);
      assert.equal(await s.running.services.integrations.tokenFor(i.id), 'sk-original-token');
      assert.equal(await s.running.services.integrations.tokenFor(r.body.id), 'sk-replacement');
      // The old one is no longer "selected" for anyone; the new one is updated by the next PUT.
      r = await s.call('GET', `/v2/integrations/${i.id}`, undefined, a.key);
      assert.equal(r.body.is_selected, false);
      const again = await s.call('PUT', GW, body('sk-replacement-2'), a.key);
      assert.notEqual(again.body.id, i.id);
      assert.equal(
        (await s.call('GET', '/v2/integrations', undefined, a.key)).body.filter((x: any) => x.is_selected)
          .length,
        1,
      );
      // An editor holder still updates their own.
      const c = await s.user();
      const j = await gateway(c);
      await shareUser(j.id, b, 'owner', c.key);
      await s.call('PATCH', `/v2/integrations/${j.id}/users/${c.id}`, { role: 'editor' }, b.key);
      r = await s.call('PUT', GW, body('sk-editor-update'), c.key);
      assert.equal(r.body.id, j.id);
      assert.equal(await s.running.services.integrations.tokenFor(j.id), 'sk-editor-update');
    });

    test('concurrent first PUTs by one user make one integration', async () => {
      const u = await s.user();
      const replies = await Promise.all(
        [1, 2, 3, 4].map((n) => s.call('PUT', GW, body(`sk-race-${n}`), u.key)),
      );
      for (const r of replies) assert.equal(r.status, 200, r.text);
      assert.equal(new Set(replies.map((r) => r.body.id)).size, 1);
      const list = await s.call('GET', '/v2/integrations', undefined, u.key);
      assert.equal(list.body.length, 1);
      const users = await s.call('GET', `/v2/integrations/${list.body[0].id}/users`, undefined, u.key);
      assert.equal(users.body.length, 1);
    });
  });
}
