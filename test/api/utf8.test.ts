import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type Operation, fillPath, operations } from '../helpers/openapi.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

/** `{"name":"ab<bad>"}`: the bad bytes start at offset 11. */
const PREFIX = '{"name":"ab';
const BAD_AT = PREFIX.length;
const body = (bad: number[]) => Buffer.concat([Buffer.from(PREFIX), Buffer.from(bad), Buffer.from('"}')]);

/** Ill-formed sequences: a stray continuation, an overlong '/', a surrogate, past U+10FFFF, cut short. */
const ILL_FORMED = [[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]];

for (const store of storesUnderTest()) {
  describe(`request bodies must be UTF-8 [${store}]`, () => {
    let s: TestServer;
    let ops: Operation[];
    before(async () => {
      s = await startTestServer(store);
      ops = operations((await s.call('GET', '/openapi.json', undefined, null)).body);
    });
    after(() => s.close());

    const send = (method: string, url: string, payload: Buffer, headers: Record<string, string> = {}) =>
      s.running.app.inject({
        method: method as any,
        url,
        payload,
        headers: { 'service-api-key': s.adminKey, 'content-type': 'application/json', ...headers },
      });

    test('every route that takes JSON answers 400 naming the offset of the first bad byte', async () => {
      const jsonOps = ops.filter((o) => o.body && Object.keys(o.body.content).some((ct) => /json/.test(ct)));
      assert.ok(jsonOps.length > 30, `only ${jsonOps.length} JSON routes found`);
      const faults: string[] = [];
      for (const op of jsonOps) {
        const ids = Object.fromEntries(op.pathParams.map((p) => [p.name, crypto.randomUUID()]));
        const url = fillPath(op.path, op.path.includes('example_gateway') ? {} : ids);
        const r = await send(op.method, url, body([0xff]));
        const detail = r.statusCode === 400 ? JSON.parse(r.body).detail : null;
        if (typeof detail !== 'string' || !detail.includes(`0xFF at offset ${BAD_AT}`))
          faults.push(`${op.key}: ${r.statusCode} ${r.body.slice(0, 160)}`);
      }
      assert.deepEqual(faults, []);
    });

    test('each kind of ill-formed sequence is refused at its first byte, before anything is stored', async () => {
      const { projectId } = await projectWithLogStream(s);
      for (const bad of ILL_FORMED) {
        const r = await send('POST', `/v2/projects/${projectId}/log_streams`, body(bad));
        assert.equal(r.statusCode, 400, r.body);
        const hex = bad[0].toString(16).toUpperCase();
        assert.match(JSON.parse(r.body).detail, new RegExp(`byte 0x${hex} at offset ${BAD_AT} `));
      }
      const list = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      assert.deepEqual(
        list.body.map((l: { name: string }) => l.name),
        ['default'],
      );
    });

    test('ingestion refuses broken bytes instead of storing U+FFFD; a \\ud800 escape is still stored as U+FFFD', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const id = crypto.randomUUID();
      const batch = (input: string) =>
        `{"log_stream_id":"${logStreamId}","traces":[{"id":"${id}","name":"t","input":"${input}"}]}`;
      const raw = Buffer.from(batch('caf\u00e9 XX'));
      const at = raw.indexOf('XX');
      raw[at] = 0xc3; // a lead byte followed by a space: cut short
      raw[at + 1] = 0x20;
      const refused = await send('POST', `/v2/projects/${projectId}/traces`, raw);
      assert.equal(refused.statusCode, 400);
      assert.match(JSON.parse(refused.body).detail, new RegExp(`0xC3 at offset ${at} `));
      assert.equal((await s.call('GET', `/v2/projects/${projectId}/traces/${id}`)).status, 404);

      const escaped = await send('POST', `/v2/projects/${projectId}/traces`, Buffer.from(batch('a\\ud800b')));
      assert.equal(escaped.statusCode, 200, escaped.body);
      const trace = await s.call('GET', `/v2/projects/${projectId}/traces/${id}`);
      assert.equal(trace.body.input, 'a\uFFFDb');
    });

    test('OTLP/JSON must be UTF-8 too, counted in the decompressed body when gzip-encoded', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const otlp = Buffer.from(
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",' +
          '"spanId":"eee19b7ec3c1b174","name":"n\u00e9","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}',
      );
      const at = otlp.indexOf(0xa9); // the second byte of é, now a stray continuation
      otlp[at - 1] = 0x41;
      const headers = { projectid: projectId, logstreamid: logStreamId };
      const plain = await send('POST', '/otel/v1/traces', otlp, headers);
      assert.equal(plain.statusCode, 400);
      assert.match(JSON.parse(plain.body).detail, new RegExp(`0xA9 at offset ${at} does`));
      const gz = await send('POST', '/v2/otel/traces', zlib.gzipSync(otlp), {
        ...headers,
        'content-encoding': 'gzip',
      });
      assert.equal(gz.statusCode, 400);
      assert.match(JSON.parse(gz.body).detail, new RegExp(`offset ${at} of the decompressed body`));
    });
  });
}
