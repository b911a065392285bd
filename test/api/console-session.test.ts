/**
 * The web console's cookie session: sign-in with a password or an API key, cookie attributes, CSRF
 * checks on state-changing requests, sign-out on the server, expiry, throttling, and the page routes'
 * redirect of a browser that has not signed in.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

interface Browser {
  cookie: string;
  csrf: string;
  setCookies: string[];
}

let ipCounter = 1;
/** Each test signs in from its own address, so failed logins in one do not throttle another. */
const nextIp = () => `10.9.${Math.floor(ipCounter / 250)}.${(ipCounter++ % 250) + 1}`;

for (const store of storesUnderTest()) {
  describe(`console session [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    const inject = (opts: {
      method: string;
      url: string;
      body?: unknown;
      headers?: Record<string, string>;
      ip?: string;
    }) =>
      s.running.app.inject({
        method: opts.method as any,
        url: opts.url,
        remoteAddress: opts.ip ?? '127.0.0.1',
        headers: {
          ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...opts.headers,
        },
        payload: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      });

    async function signIn(body: Record<string, string>, ip = nextIp()): Promise<Browser> {
      const r = await inject({ method: 'POST', url: '/v2/console/login', body, ip });
      assert.equal(r.statusCode, 200, r.body);
      const setCookies = r.headers['set-cookie'] as string[];
      return {
        cookie: setCookies.map((c) => c.split(';')[0]).join('; '),
        csrf: JSON.parse(r.body).csrf_token,
        setCookies,
      };
    }

    test('signing in with a password sets an HttpOnly SameSite session cookie that expires', async () => {
      const u = await s.user();
      const before = Date.now();
      const b = await signIn({ email: u.email, password: u.password });
      const session = b.setCookies.find((c) => c.startsWith('spanbase_session='))!;
      assert.match(session, /; HttpOnly/);
      assert.match(session, /; SameSite=Lax/);
      assert.doesNotMatch(session, /; Secure/, 'plain http: no Secure flag');
      const expires = Date.parse(/Expires=([^;]+)/.exec(session)![1]);
      const ttl = s.config.consoleSessionTtlSeconds * 1000;
      assert.ok(expires > before + ttl - 5000 && expires < Date.now() + ttl + 5000, session);
      const csrf = b.setCookies.find((c) => c.startsWith('spanbase_csrf='))!;
      assert.doesNotMatch(csrf, /HttpOnly/, 'the console reads its CSRF token');
      assert.match(csrf, /; SameSite=Strict/);
      const me = await inject({ method: 'GET', url: '/v2/current_user', headers: { cookie: b.cookie } });
      assert.equal(me.statusCode, 200);
      assert.equal(JSON.parse(me.body).id, u.id);
    });

    test('behind https the cookies are Secure', async () => {
      const u = await s.user();
      const r = await s.running.app.inject({
        method: 'POST',
        url: '/v2/console/login',
        remoteAddress: nextIp(),
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        payload: JSON.stringify({ email: u.email, password: u.password }),
      });
      for (const c of r.headers['set-cookie'] as string[]) assert.match(c, /; Secure/);
    });

    test('an API key signs in too; wrong credentials answer 401 with a message', async () => {
      const u = await s.user();
      const b = await signIn({ api_key: u.key });
      const me = await inject({ method: 'GET', url: '/v2/current_user', headers: { cookie: b.cookie } });
      assert.equal(JSON.parse(me.body).id, u.id);
      const ip = nextIp();
      const bad = await inject({
        method: 'POST',
        url: '/v2/console/login',
        body: { email: u.email, password: 'not-the-password' },
        ip,
      });
      assert.equal(bad.statusCode, 401);
      assert.equal(JSON.parse(bad.body).detail, 'Incorrect username or password');
      assert.equal(bad.headers['set-cookie'], undefined);
      const badKey = await inject({
        method: 'POST',
        url: '/v2/console/login',
        body: { api_key: 'sb_x' },
        ip,
      });
      assert.equal(badKey.statusCode, 401);
      assert.equal(JSON.parse(badKey.body).detail, 'This API key is not known (check it was copied whole).');
    });

    test('a body without credentials, or with both kinds, answers 422 at the fault', async () => {
      const cases: [unknown, (string | number)[]][] = [
        [{}, ['body', 'email']],
        [{ email: 'a@example.com' }, ['body', 'password']],
        [{ api_key: 'sb_x', email: 'a@example.com' }, ['body']],
        [{ email: 5, password: 'x' }, ['body', 'email']],
      ];
      for (const [body, loc] of cases) {
        const r = await inject({ method: 'POST', url: '/v2/console/login', body, ip: nextIp() });
        assert.equal(r.statusCode, 422, r.body);
        assert.deepEqual(JSON.parse(r.body).detail[0].loc, loc);
      }
    });

    test('repeated failures are throttled like the API logins (429 with Retry-After)', async () => {
      const u = await s.user();
      const ip = nextIp();
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await inject({
          method: 'POST',
          url: '/v2/console/login',
          body: { email: u.email, password: `wrong-${i}` },
          ip,
        });
        statuses.push(r.statusCode);
        if (r.statusCode === 429) {
          const seconds = Number(r.headers['retry-after']);
          assert.ok(seconds >= 1);
          // The message says when to try again, as Retry-After does.
          const when =
            seconds < 60
              ? `${seconds} second${seconds === 1 ? '' : 's'}`
              : `${Math.ceil(seconds / 60)} minute`;
          assert.match(JSON.parse(r.body).detail, new RegExp(`try again in ${when}`));
        }
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
      // The API's own login shares the count: the account stays throttled there too.
      const api = await s.running.app.inject({
        method: 'POST',
        url: '/login',
        remoteAddress: nextIp(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ username: u.email, password: u.password }).toString(),
      });
      assert.equal(api.statusCode, 429);
    });

    test('a cross-site or non-JSON sign-in is refused', async () => {
      const u = await s.user();
      const json = JSON.stringify({ email: u.email, password: u.password });
      const cross = await s.running.app.inject({
        method: 'POST',
        url: '/v2/console/login',
        remoteAddress: nextIp(),
        headers: { 'content-type': 'application/json', origin: 'https://evil.example', host: 'localhost' },
        payload: json,
      });
      assert.equal(cross.statusCode, 403);
      const form = await s.running.app.inject({
        method: 'POST',
        url: '/v2/console/login',
        remoteAddress: nextIp(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email: u.email, password: u.password }).toString(),
      });
      assert.equal(form.statusCode, 415);
      assert.equal(form.headers['set-cookie'], undefined);
    });

    test('a state-changing request with the cookie needs the CSRF token and the same site', async () => {
      const u = await s.user();
      const b = await signIn({ email: u.email, password: u.password });
      const create = (headers: Record<string, string>) =>
        inject({ method: 'POST', url: '/v2/projects', body: { name: `p-${nextIp()}` }, headers });
      assert.equal((await create({ cookie: b.cookie })).statusCode, 403, 'no token');
      assert.equal((await create({ cookie: b.cookie, 'x-csrf-token': 'x'.repeat(43) })).statusCode, 403);
      const other = await signIn({ email: u.email, password: u.password });
      assert.equal(
        (await create({ cookie: b.cookie, 'x-csrf-token': other.csrf })).statusCode,
        403,
        "another session's token",
      );
      assert.equal(
        (
          await create({
            cookie: b.cookie,
            'x-csrf-token': b.csrf,
            origin: 'https://evil.example',
            host: 'localhost',
          })
        ).statusCode,
        403,
        'cross-site origin',
      );
      assert.equal(
        (await create({ cookie: b.cookie, 'x-csrf-token': b.csrf, 'sec-fetch-site': 'cross-site' }))
          .statusCode,
        403,
      );
      const ok = await create({
        cookie: b.cookie,
        'x-csrf-token': b.csrf,
        origin: 'http://localhost',
        host: 'localhost',
        'sec-fetch-site': 'same-origin',
      });
      assert.equal(ok.statusCode, 200, ok.body);
      // Reads need no token; the search routes are POSTs and need it like any other.
      const list = await inject({ method: 'GET', url: '/v2/projects', headers: { cookie: b.cookie } });
      assert.equal(list.statusCode, 200);
    });

    test('API credentials win over the cookie: the four schemes are unchanged', async () => {
      const a = await s.user();
      const other = await s.user();
      const b = await signIn({ email: a.email, password: a.password });
      const me = await inject({
        method: 'GET',
        url: '/v2/current_user',
        headers: { cookie: b.cookie, 'service-api-key': other.key },
      });
      assert.equal(JSON.parse(me.body).id, other.id);
      // A POST with an API key needs no CSRF token even when a cookie rides along.
      const p = await inject({
        method: 'POST',
        url: '/v2/projects',
        body: { name: `k-${nextIp()}` },
        headers: { cookie: b.cookie, 'service-api-key': other.key },
      });
      assert.equal(p.statusCode, 200);
    });

    test('signing out ends the session on the server', async () => {
      const u = await s.user();
      const b = await signIn({ email: u.email, password: u.password });
      const noToken = await inject({
        method: 'POST',
        url: '/v2/console/logout',
        headers: { cookie: b.cookie },
      });
      assert.equal(noToken.statusCode, 403, 'sign-out is state-changing too');
      const out = await inject({
        method: 'POST',
        url: '/v2/console/logout',
        headers: { cookie: b.cookie, 'x-csrf-token': b.csrf },
      });
      assert.equal(out.statusCode, 200);
      for (const c of out.headers['set-cookie'] as string[]) assert.match(c, /Max-Age=0/);
      // The old cookie, replayed, no longer works.
      const me = await inject({ method: 'GET', url: '/v2/current_user', headers: { cookie: b.cookie } });
      assert.equal(me.statusCode, 401);
      assert.ok(me.headers['www-authenticate']);
      const page = await inject({ method: 'GET', url: '/projects', headers: { cookie: b.cookie } });
      assert.equal(page.statusCode, 302);
    });

    test('an expired session signs nobody in', async () => {
      const short = await startTestServer(store, { SPANBASE_CONSOLE_SESSION_TTL_SECONDS: '60' });
      try {
        const r = await short.running.app.inject({
          method: 'POST',
          url: '/v2/console/login',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ api_key: short.adminKey }),
        });
        const cookie = (r.headers['set-cookie'] as string[]).map((c) => c.split(';')[0]).join('; ');
        const me = () =>
          short.running.app.inject({ method: 'GET', url: '/v2/current_user', headers: { cookie } });
        assert.equal((await me()).statusCode, 200);
        // Move the session's end into the past, as 60 s of waiting would.
        await short.running.services.store.db
          .updateTable('console_sessions')
          .set({ expires_at: Date.now() * 1000 - 1 })
          .execute();
        assert.equal((await me()).statusCode, 401);
      } finally {
        await short.close();
      }
    });

    test('a deep link without a session redirects to /login?next=... and sends no data', async () => {
      const u = await s.user();
      const p = await s.call('POST', '/v2/projects', { name: `deep-${nextIp()}` }, u.key);
      const path = `/projects/${p.body.id}/log_streams/${crypto.randomUUID()}/traces?sort=name%3Aasc`;
      for (const headers of [{}, { cookie: 'spanbase_session=sbs_forged' }] as Record<string, string>[]) {
        const r = await inject({ method: 'GET', url: path, headers });
        assert.equal(r.statusCode, 302);
        assert.equal(r.headers.location, `/login?next=${encodeURIComponent(path)}`);
        assert.doesNotMatch(r.body, new RegExp(p.body.id));
      }
      // The login page itself answers without a session.
      const login = await inject({ method: 'GET', url: '/login' });
      assert.notEqual(login.statusCode, 302);
      // Signed in, the page is served (or 503 when the console has not been built).
      const b = await signIn({ email: u.email, password: u.password });
      const page = await inject({ method: 'GET', url: path, headers: { cookie: b.cookie } });
      assert.ok([200, 503].includes(page.statusCode), String(page.statusCode));
      assert.match(String(page.headers['content-security-policy']), /default-src 'self'/);
    });
  });
}
