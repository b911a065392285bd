import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

for (const store of storesUnderTest()) {
  describe(`authentication [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    async function login(username: string, password: string) {
      const res = await s.running.app.inject({
        method: 'POST',
        url: '/login',
        payload: form({ username, password }),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      return { status: res.statusCode, body: JSON.parse(res.body), headers: res.headers };
    }

    test('each of the four schemes authenticates', async () => {
      const u = await s.user();
      const me = (auth: Record<string, string>) => s.call('GET', '/v2/current_user', undefined, auth);
      assert.equal((await me({ 'service-api-key': u.key })).body.id, u.id);
      assert.equal((await me({ 'platform-ao-api-key': u.key })).body.id, u.id);
      assert.equal(
        (await me({ 'galileo-api-key': u.key })).body.id,
        u.id,
        'the hosted service header works too',
      );
      const basic = Buffer.from(`${u.email}:${u.password}`).toString('base64');
      assert.equal((await me({ authorization: `Basic ${basic}` })).body.id, u.id);
      const tok = await login(u.email, u.password);
      assert.equal(tok.status, 200);
      assert.equal(tok.body.token_type, 'bearer');
      assert.equal((await me({ authorization: `Bearer ${tok.body.access_token}` })).body.id, u.id);
      const v2 = await s.call('POST', '/v2/login/api_key', { api_key: u.key }, null);
      assert.equal(v2.status, 200);
      assert.equal((await me({ authorization: `Bearer ${v2.body.access_token}` })).body.id, u.id);
    });

    test('wrong credentials of each kind answer 401 with WWW-Authenticate', async () => {
      const u = await s.user();
      const cases: Record<string, string>[] = [
        { 'service-api-key': 'sb_nope' },
        { 'platform-ao-api-key': 'nope' },
        { authorization: 'Bearer not.a.jwt' },
        { authorization: `Basic ${Buffer.from(`${u.email}:wrong-password`).toString('base64')}` },
        { authorization: 'Digest abc' },
      ];
      for (const auth of cases) {
        const r = await s.call('GET', '/v2/current_user', undefined, auth);
        assert.equal(r.status, 401, JSON.stringify(auth));
        assert.ok(r.headers['www-authenticate']);
        assert.equal(typeof r.body.detail, 'string');
      }
      assert.equal((await s.call('POST', '/v2/login/api_key', { api_key: 'sb_nope' }, null)).status, 401);
      assert.equal((await login(u.email, 'wrong')).status, 401);
      assert.equal((await login('nobody@example.com', 'wrong')).status, 401);
    });

    test('an expired or foreign-signed token is 401', async () => {
      const key = s.running.services.keyring.derive('jwt');
      const expired = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(s.adminId)
        .setExpirationTime(Math.floor(Date.now() / 1000) - 10)
        .sign(key);
      const foreign = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(s.adminId)
        .setExpirationTime('1h')
        .sign(new Uint8Array(32));
      for (const t of [expired, foreign]) {
        const r = await s.call('GET', '/v2/current_user', undefined, { authorization: `Bearer ${t}` });
        assert.equal(r.status, 401);
      }
    });

    test('API keys: created once, listed without the secret, revoked, expired', async () => {
      const created = await s.call('POST', '/v2/users/api_keys', { description: 'ci' });
      assert.equal(created.status, 200);
      assert.match(created.body.api_key, /^sb_/);
      const list = await s.call('GET', '/v2/users/api_keys');
      const listed = list.body.find((k: any) => k.id === created.body.id);
      assert.ok(listed);
      assert.equal(listed.api_key, undefined);
      assert.ok(!list.text.includes(created.body.api_key));
      assert.equal((await s.call('GET', '/v2/current_user', undefined, created.body.api_key)).status, 200);
      assert.equal((await s.call('DELETE', `/v2/users/api_keys/${created.body.id}`)).status, 200);
      assert.equal((await s.call('GET', '/v2/current_user', undefined, created.body.api_key)).status, 401);
      assert.equal((await s.call('DELETE', `/v2/users/api_keys/${created.body.id}`)).status, 404);
      const past = await s.call('POST', '/v2/users/api_keys', { expires_at: '2001-01-01T00:00:00Z' });
      assert.equal((await s.call('GET', '/v2/current_user', undefined, past.body.api_key)).status, 401);
      // One user cannot revoke another's key.
      const u = await s.user();
      const theirs = await s.call('POST', '/v2/users/api_keys', {}, u.key);
      assert.equal((await s.call('DELETE', `/v2/users/api_keys/${theirs.body.id}`)).status, 404);
    });

    test('keys are stored hashed, passwords under scrypt', async () => {
      const u = await s.user();
      const { db } = s.running.services.store;
      const keys = await db.selectFrom('api_keys').select(['key_hash', 'key_prefix']).execute();
      assert.ok(keys.every((k) => !k.key_hash.startsWith('sb_') && k.key_hash.length === 64));
      const row = await db
        .selectFrom('users')
        .select('password_hash')
        .where('id', '=', u.id)
        .executeTakeFirstOrThrow();
      assert.match(row.password_hash!, /^scrypt\$/);
      assert.ok(!row.password_hash!.includes(u.password));
    });

    test('repeated failed logins are slowed down with 429 and Retry-After', async () => {
      const u = await s.user();
      let last = 0;
      let retryAfter: unknown;
      for (let i = 0; i < 8; i++) {
        const r = await login(u.email, 'definitely-wrong');
        last = r.status;
        retryAfter = r.headers['retry-after'];
      }
      assert.equal(last, 429);
      assert.ok(Number(retryAfter) >= 1);
      // Even the right password waits while the account is throttled.
      assert.equal((await login(u.email, u.password)).status, 429);
    });

    test('login bodies are validated', async () => {
      const r = await s.running.app.inject({
        method: 'POST',
        url: '/login',
        payload: form({ username: 'a' }),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(r.statusCode, 422);
      const v = await s.call('POST', '/v2/login/api_key', {}, null);
      assert.equal(v.status, 422);
      assert.deepEqual(v.body.detail[0].loc, ['body', 'api_key']);
      const secret = await s.call('POST', '/v2/login/api_key', { api_key: 12345 }, null);
      assert.equal(secret.status, 422);
      assert.equal(secret.body.detail[0].input, undefined, 'a secret field is never echoed');
    });
  });

  describe(`users and groups [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    test('admins create users; users may not', async () => {
      const u = await s.user();
      const r = await s.call(
        'POST',
        '/v2/users',
        { email: 'x@example.com', password: 'long-enough-1' },
        u.key,
      );
      assert.equal(r.status, 403);
      const dup = await s.call('POST', '/v2/users', { email: u.email, password: 'long-enough-1' });
      assert.equal(dup.status, 409);
      const bad = await s.call('POST', '/v2/users', { email: 'not-an-email', role: 'root' });
      assert.equal(bad.status, 422);
      assert.deepEqual(bad.body.detail.map((d: any) => d.loc.join('.')).sort(), ['body.email', 'body.role']);
      const list = await s.call('GET', '/v2/users');
      assert.ok(list.body.some((x: any) => x.id === u.id));
      assert.ok(list.body.every((x: any) => x.password_hash === undefined));
    });

    test('groups and members', async () => {
      const u = await s.user();
      const g = await s.call('POST', '/v2/groups', { name: 'team', description: 'the team' });
      assert.equal(g.status, 200);
      assert.equal((await s.call('POST', '/v2/groups', { name: 'team' })).status, 409);
      assert.equal((await s.call('POST', '/v2/groups', { name: 'other' }, u.key)).status, 403);
      const m = await s.call('POST', `/v2/groups/${g.body.id}/members`, [{ user_id: u.id }]);
      assert.equal(m.status, 200);
      assert.deepEqual(
        m.body.map((x: any) => x.id),
        [u.id],
      );
      const missing = await s.call('POST', `/v2/groups/${g.body.id}/members`, [
        { user_id: crypto.randomUUID() },
      ]);
      assert.equal(missing.status, 404);
      assert.equal((await s.call('DELETE', `/v2/groups/${g.body.id}/members/${u.id}`)).status, 200);
      assert.equal((await s.call('GET', `/v2/groups/${g.body.id}/members`)).body.length, 0);
    });
  });
}
