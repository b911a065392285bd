/**
 * Operations, on each store: /readyz, /metrics (its content, and who may read it), the request id
 * and the one log line per request (ids known, no secret).
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const TOKEN = 'metrics-token-for-tests-0123456789';

for (const store of storesUnderTest()) {
  describe(`operations (${store})`, () => {
    let s: TestServer;
    const logs: string[] = [];
    before(async () => {
      s = await startTestServer(store, { SPANBASE_METRICS_TOKEN: TOKEN }, { logs, logLevel: 'info' });
    });
    after(async () => s?.close());

    const get = (url: string, remoteAddress: string, headers: Record<string, string> = {}) =>
      s.running.app.inject({ method: 'GET', url, remoteAddress, headers });

    test('/readyz answers once the store is reachable and migrated', async () => {
      const r = await s.call('GET', '/readyz', undefined, null);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { status: 'ready' });
    });

    test('/metrics: open on loopback, a bearer token elsewhere', async () => {
      assert.equal((await get('/metrics', '127.0.0.1')).statusCode, 200);
      assert.equal((await get('/metrics', '::1')).statusCode, 200);
      assert.equal((await get('/metrics', '10.1.2.3')).statusCode, 403);
      assert.equal((await get('/metrics', '10.1.2.3', { authorization: 'Bearer wrong' })).statusCode, 403);
      const ok = await get('/metrics', '10.1.2.3', { authorization: `Bearer ${TOKEN}` });
      assert.equal(ok.statusCode, 200);
      assert.match(String(ok.headers['content-type']), /^text\/plain/);
    });

    test('/metrics counts requests, ingestion, deletes and reports the text-index backlog', async () => {
      const p = await s.call('POST', '/v2/projects', { name: `ops-${crypto.randomUUID()}` });
      const ls = await s.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'ls' });
      const r = await s.call('POST', `/v2/projects/${p.body.id}/traces`, {
        log_stream_id: ls.body.id,
        traces: [{ name: 't', input: 'i', output: 'o', spans: [{ type: 'tool', input: 'a', output: 'b' }] }],
      });
      assert.equal(r.status, 200, r.text);
      const d = await s.call('POST', `/v2/projects/${p.body.id}/traces/delete`, {
        log_stream_id: ls.body.id,
      });
      assert.equal(d.status, 200, d.text);
      const text = (await get('/metrics', '127.0.0.1')).body;
      const value = (line: string) => {
        const found = text.split('\n').find((l) => l.startsWith(line));
        assert.ok(found, `${line} in\n${text.slice(0, 3000)}`);
        return Number(found.slice(line.length).trim());
      };
      assert.equal(value('spanbase_records_ingested_total{kind="trace"}'), 1);
      assert.equal(value('spanbase_records_ingested_total{kind="span"}'), 1);
      assert.equal(value('spanbase_records_ingested_total{kind="session"}'), 1);
      assert.equal(value('spanbase_records_deleted_total{reason="request"}'), 2);
      assert.equal(value('spanbase_delete_roots_total{reason="request",kind="trace"}'), 1);
      assert.ok(
        value(
          'spanbase_http_request_duration_seconds_count{method="POST",route="/v2/projects/:project_id/traces",status="200"}',
        ) >= 1,
      );
      assert.ok(value('spanbase_text_index_backlog') >= 0);
      assert.ok(value('spanbase_process_resident_memory_bytes') > 0);
      assert.ok(text.includes('spanbase_nodejs_eventloop_lag_seconds'));
      if (store === 'postgres') assert.ok(value('spanbase_db_pool_connections') >= 1);
      assert.ok([0, 1].includes(value('spanbase_lease_held{job="retention"}')));
    });

    test('one log line per request, with its id (also answered), user and project; no secret', async () => {
      logs.length = 0;
      const p = await s.call('POST', '/v2/projects', { name: `log-${crypto.randomUUID()}` });
      const given = await s.running.app.inject({
        method: 'GET',
        url: `/v2/projects/${p.body.id}?x=1`,
        headers: { 'service-api-key': s.adminKey, 'x-request-id': 'client-chosen.id-1' },
      });
      assert.equal(given.headers['x-request-id'], 'client-chosen.id-1');
      const odd = await s.running.app.inject({
        method: 'GET',
        url: '/v2/healthcheck',
        headers: { 'x-request-id': 'bad id\nwith a newline' },
      });
      assert.match(String(odd.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      const parsed = logs.map((l) => JSON.parse(l));
      const lines = parsed.filter((l) => l.msg === 'request completed');
      assert.equal(lines.length, 3, 'one line each');
      assert.ok(
        parsed.every((l) => l.msg !== 'incoming request'),
        'arrivals are logged at debug level only',
      );
      const line = lines.find((l) => l.reqId === 'client-chosen.id-1');
      assert.ok(line);
      assert.equal(line.user_id, s.adminId);
      assert.equal(line.project_id, p.body.id);
      assert.equal(line.statusCode, 200);
      assert.equal(typeof line.responseTime, 'number');
      assert.equal(line.path, `/v2/projects/${p.body.id}`);
      assert.equal(line.route, '/v2/projects/:project_id');
      assert.ok(!logs.join('\n').includes(s.adminKey), 'the key is in no log line');
    });
  });
}
