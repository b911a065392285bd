/** Faults a new user makes answer with a message that points at the fix. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`messages that point at the fix [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    const post = (url: string, payload: string, headers: Record<string, string>) =>
      s.running.app.inject({
        method: 'POST',
        url,
        payload,
        headers: { 'service-api-key': s.adminKey, ...headers },
      });

    test("a JSON body sent as a form (curl -d's default) is 415 naming the content type to send", async () => {
      const r = await post('/v2/projects', '{"name":"form"}', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      assert.equal(r.statusCode, 415);
      const { detail } = JSON.parse(r.body);
      assert.match(detail, /Unsupported Content-Type 'application\/x-www-form-urlencoded'/);
      assert.match(detail, /takes application\/json/);
      assert.match(detail, /-H 'content-type: application\/json'/);
      assert.equal((await s.call('GET', '/v2/projects?project_name=form')).body.length, 0);
    });

    test('text/plain and a body without a content type are 415 too', async () => {
      const plain = await post('/v2/projects', '{"name":"p"}', { 'content-type': 'text/plain' });
      assert.equal(plain.statusCode, 415);
      assert.match(JSON.parse(plain.body).detail, /'text\/plain': this route takes application\/json/);
      const none = await post('/v2/projects', '{"name":"p"}', {});
      assert.equal(none.statusCode, 415);
      assert.match(
        JSON.parse(none.body).detail,
        /no Content-Type header: this route takes application\/json/,
      );
    });

    test('each route names its own types: the login form, OTLP', async () => {
      const login = await s.running.app.inject({
        method: 'POST',
        url: '/login',
        payload: 'x',
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(login.statusCode, 415);
      assert.match(JSON.parse(login.body).detail, /takes application\/x-www-form-urlencoded/);
      const otlp = await post('/otel/v1/traces', 'x', { 'content-type': 'text/plain' });
      assert.equal(otlp.statusCode, 415);
      assert.match(JSON.parse(otlp.body).detail, /takes application\/x-protobuf or application\/json/);
    });

    test('a login form still logs in', async () => {
      const u = await s.user();
      const r = await s.running.app.inject({
        method: 'POST',
        url: '/login',
        payload: new URLSearchParams({ username: u.email, password: u.password }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(r.statusCode, 200, r.body);
    });

    test('a key in a header Spanbase does not read: 401 naming the headers it reads', async () => {
      for (const headers of [{ 'x-api-key': s.adminKey }, {}] as Record<string, string>[]) {
        const r = await s.call('GET', '/v2/current_user', undefined, headers);
        assert.equal(r.status, 401);
        assert.match(r.body.detail, /^Not authenticated\. Send an API key in the Service-API-Key/);
        assert.match(r.body.detail, /Authorization: Bearer/);
      }
    });

    test('a bare key in Authorization: 401 saying what Authorization takes', async () => {
      const r = await s.call('GET', '/v2/current_user', undefined, { authorization: s.adminKey });
      assert.equal(r.status, 401);
      assert.match(r.body.detail, /Authorization header must be 'Bearer <token>' or 'Basic <credentials>'/);
      assert.match(r.body.detail, /Service-API-Key/);
      assert.ok(!r.text.includes(s.adminKey), 'the key is not echoed');
    });

    test('a wrong key: 401 naming the key headers and where a bearer token comes from', async () => {
      for (const key of ['not-a-key', 'sb_wrongwrongwrong']) {
        const r = await s.call('GET', '/v2/current_user', undefined, key);
        assert.equal(r.status, 401);
        assert.match(r.body.detail, /not known/);
        assert.match(r.body.detail, /Service-API-Key/);
        assert.match(r.body.detail, /POST \/v2\/login\/api_key/);
      }
    });

    test('an API key sent as Authorization: Bearer: 401 saying where a key goes', async () => {
      const r = await s.call('GET', '/v2/current_user', undefined, { authorization: `Bearer ${s.adminKey}` });
      assert.equal(r.status, 401);
      assert.match(r.body.detail, /^An API key is not a bearer token: send it in the Service-API-Key/);
      assert.match(r.body.detail, /POST \/v2\/login\/api_key/);
      assert.ok(!r.text.includes(s.adminKey), 'the key is not echoed');
      const token = await s.call('GET', '/v2/current_user', undefined, { authorization: 'Bearer not.a.jwt' });
      assert.match(token.body.detail, /bearer token is invalid or has expired/);
      assert.match(token.body.detail, /POST \/v2\/login\/api_key/);
    });

    test('a revoked or expired key says so', async () => {
      const revoked = await s.call('POST', '/v2/users/api_keys', { description: 'gone' });
      await s.call('DELETE', `/v2/users/api_keys/${revoked.body.id}`);
      const r = await s.call('GET', '/v2/current_user', undefined, revoked.body.api_key);
      assert.equal(r.status, 401);
      assert.match(r.body.detail, /^This API key was revoked at \d{4}-/);
      const expired = await s.call('POST', '/v2/users/api_keys', { expires_at: '2001-01-01T00:00:00Z' });
      const e = await s.call('GET', '/v2/current_user', undefined, expired.body.api_key);
      assert.equal(e.status, 401);
      assert.match(e.body.detail, /^This API key expired at 2001-01-01T00:00:00/);
      const login = await s.call('POST', '/v2/login/api_key', { api_key: expired.body.api_key }, null);
      assert.equal(login.status, 401);
      assert.match(login.body.detail, /expired/);
    });

    test('a path that exists with other methods: 405 with Allow, not 404', async () => {
      const otlp = await s.call('GET', '/otel/v1/traces');
      assert.equal(otlp.status, 405);
      assert.equal(otlp.headers.allow, 'POST');
      assert.match(otlp.body.detail, /^Method GET is not allowed here; this path takes POST/);
      const me = await s.call('DELETE', '/v2/current_user/');
      assert.equal(me.status, 405, 'a trailing slash is the same path, as for the router');
      assert.equal(me.headers.allow, 'GET, HEAD');
      const project = await s.call('PUT', '/v2/projects/00000000-0000-4000-8000-000000000000?x=1');
      assert.equal(project.status, 405);
      assert.match(String(project.headers.allow), /DELETE/);
      const none = await s.call('GET', '/v2/no-such-route');
      assert.equal(none.status, 404);
      assert.equal(none.headers.allow, undefined);
    });

    test('counts read as words: Deleted 1 trace, not 1 traces', async () => {
      const P = (await s.call('POST', '/v2/projects', { name: `plural-${Date.now()}` })).body.id;
      const LS = (await s.call('POST', `/v2/projects/${P}/log_streams`, { name: 'ls' })).body.id;
      const id = crypto.randomUUID();
      const sent = await s.call('POST', `/v2/projects/${P}/traces`, {
        log_stream_id: LS,
        traces: [{ id, name: 't', spans: [{ type: 'llm', name: 'l', input: 'q', output: 'a' }] }],
      });
      assert.equal(sent.status, 200, sent.text);
      const del = await s.call('POST', `/v2/projects/${P}/traces/delete`, {
        log_stream_id: LS,
        filters: [{ column_id: 'id', operator: 'eq', value: id }],
      });
      assert.equal(del.status, 200, del.text);
      assert.equal(del.body.message, 'Deleted 1 trace (2 records with those below them)');
    });
  });
}
