/**
 * Messages a console user reads: validation bounds as sentences, and an unknown console address
 * answered by the console's page (its router shows "Page not found"), not by JSON.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ensureConsoleBuilt } from '../../web/build.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`console messages [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      await ensureConsoleBuilt();
      s = await startTestServer(store);
    });
    after(() => s.close());

    test('a too short password is a sentence, not "must NOT have fewer than 8 characters"', async () => {
      const r = await s.call('POST', '/v2/users', {
        email: 'short@example.com',
        password: 'abc',
        role: 'user',
      });
      assert.equal(r.status, 422, r.text);
      const item = r.body.detail.find((i: { loc: unknown[] }) => i.loc.includes('password'));
      assert.equal(item.msg, 'String should have at least 8 characters');
      assert.equal(item.type, 'string_too_short');
      const long = await s.call('POST', '/v2/projects', { name: 'x'.repeat(1000) });
      assert.equal(long.status, 422);
      assert.match(long.body.detail[0].msg, /^String should have at most \d+ characters$/);
    });

    test('an unknown console address in a browser gets the console page with 404; the API keeps JSON', async () => {
      const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
      for (const url of ['/no-such-page', '/projectz/1', '/settings-old']) {
        const r = await s.running.app.inject({ method: 'GET', url, headers: html });
        assert.equal(r.statusCode, 404, url);
        assert.match(String(r.headers['content-type']), /^text\/html/, url);
        assert.match(r.body, /<div id="root">/, url);
      }
      for (const url of ['/v2/no-such-route', '/otel/nothing', '/assets/missing.js']) {
        const r = await s.running.app.inject({ method: 'GET', url, headers: html });
        assert.equal(r.statusCode, 404, url);
        assert.deepEqual(JSON.parse(r.body), { detail: 'Not Found' }, url);
      }
      const api = await s.running.app.inject({ method: 'GET', url: '/no-such-page' });
      assert.deepEqual(JSON.parse(api.body), { detail: 'Not Found' });
    });
  });
}
