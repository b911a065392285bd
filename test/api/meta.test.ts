import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { OTEL_PATHS } from '../../src/http/routes/otel.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`service basics [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store, { SPANBASE_BODY_LIMIT_BYTES: '4096' });
    });
    after(() => s.close());

    test('healthcheck answers without credentials', async () => {
      const r = await s.call('GET', '/v2/healthcheck', undefined, null);
      assert.equal(r.status, 200);
      assert.equal(r.body.api_version, 'v2');
      assert.equal(r.body.message, 'ok');
      assert.match(r.body.version, /^\d+\.\d+\.\d+/);
    });

    test('the OpenAPI document is 3.1.0 with the four security schemes and every route', async () => {
      const r = await s.call('GET', '/openapi.json', undefined, null);
      assert.equal(r.status, 200);
      assert.equal(r.body.openapi, '3.1.0');
      assert.deepEqual(Object.keys(r.body.components.securitySchemes).sort(), [
        'APIKeyHeader',
        'ClassicAPIKeyHeader',
        'HTTPBasic',
        'OAuth2PasswordBearer',
      ]);
      assert.equal(r.body.components.securitySchemes.ClassicAPIKeyHeader.name, 'Service-API-Key');
      assert.equal(r.body.components.securitySchemes.APIKeyHeader.name, 'Platform-AO-API-Key');
      assert.ok(r.body.paths['/v2/projects'].post);
      assert.ok(r.body.paths['/v2/projects/{project_id}/log_streams/search'].post);
    });

    test('the API reference page is served at /docs', async () => {
      const r = await s.running.app.inject({ method: 'GET', url: '/docs/' });
      assert.equal(r.statusCode, 200);
      assert.match(r.body, /<html/i);
    });

    test('/ is the web console: a browser that has not signed in is sent to its sign-in page', async () => {
      const r = await s.call('GET', '/', undefined, null);
      assert.equal(r.status, 302);
      assert.equal(r.headers.location, '/login?next=%2F');
    });

    test('every OpenAPI operation has a summary, the OTLP aliases included', async () => {
      const doc = (await s.call('GET', '/openapi.json', undefined, null)).body;
      const ops = Object.entries<any>(doc.paths).flatMap(([p, item]) =>
        Object.entries<any>(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${p}`, op })),
      );
      assert.ok(ops.length >= 74, `${ops.length} operations`);
      assert.deepEqual(
        ops.filter((o) => typeof o.op.summary !== 'string' || o.op.summary.length < 5).map((o) => o.key),
        [],
      );
      for (const p of OTEL_PATHS) assert.ok(doc.paths[p]?.post, p);
    });

    test('a body over the limit is 413 with a JSON detail', async () => {
      const r = await s.call('POST', '/v2/projects', { name: 'x'.repeat(5000) });
      assert.equal(r.status, 413);
      assert.equal(typeof r.body.detail, 'string');
    });

    test('unknown routes are 404 with a JSON detail', async () => {
      const r = await s.call('GET', '/v2/nothing-here');
      assert.equal(r.status, 404);
      assert.equal(typeof r.body.detail, 'string');
    });

    test('the first admin key is written once, owner-only', async () => {
      const file = path.join(s.config.dataDir, 'initial-admin-key');
      assert.equal(fs.readFileSync(file, 'utf8').trim(), s.adminKey);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.equal(
        await s.running.services.users.bootstrap(),
        null,
        'a store with users is not bootstrapped again',
      );
    });
  });
}
