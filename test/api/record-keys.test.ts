/**
 * Free-form keys of records (user_metadata, dataset_metadata, metrics, document metadata, extra
 * message fields) are kept whatever they are: keys holding a line break (which a `^(.*)$` key pattern
 * does not match) and keys named after properties of Object.prototype (`constructor`, `__proto__`...)
 * come back from every read: GET trace, span and session, and the sessions, traces and spans searches.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const uuid = () => crypto.randomUUID();

/** Keys a plain object or a key pattern would lose. */
const ODD_KEYS = [
  'a\nb',
  'line\r\nbreak',
  'u\u2028v',
  'w\u2029x',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__proto__',
  '__defineGetter__',
  'isPrototypeOf',
];

/**
 * An object with own properties (an object literal or plain assignment would set the prototype for
 * `__proto__` instead). JSON.stringify writes every own key, JSON.parse reads them back as own keys.
 */
const own = (entries: [string, unknown][]): Record<string, any> => Object.fromEntries(entries);
const strings = (tag: string) =>
  own([['plain', tag], ...ODD_KEYS.map((k, i): [string, unknown] => [k, `${tag}${i}`])]);
const numbers = (base: number) =>
  own([['plain', base], ...ODD_KEYS.map((k, i): [string, unknown] => [k, base + i])]);

for (const store of storesUnderTest()) {
  describe(`record keys [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    const traceId = uuid();
    const llmId = uuid();
    const retrieverId = uuid();
    const sessionId = uuid();
    const user = strings('u');
    const dataset = strings('d');
    const spanUser = strings('s');
    const sessionUser = strings('x');
    const traceMetrics = own([['duration_ns', 5], ...Object.entries(numbers(100))]);
    const spanMetrics = own([['num_input_tokens', 3], ...Object.entries(numbers(200))]);
    const message = own([
      ['role', 'user'],
      ['content', 'hi'],
      ['__proto__', 'message field'],
      ['constructor', 'another'],
    ]);
    const docMetadata = strings('m');
    const path = (p: string) => `/v2/projects/${projectId}${p}`;

    /** The record of `id` in a search answer, checked to be there. */
    const searched = async (target: string, id: string, body: Record<string, unknown> = {}) => {
      const r = await s.call('POST', path(`/${target}/search`), {
        log_stream_id: logStreamId,
        include_counts: true,
        limit: 1000,
        ...body,
      });
      assert.equal(r.status, 200, r.text);
      const rec = r.body.records.find((x: any) => x.id === id);
      assert.ok(rec, `${target} search answers ${id}`);
      return rec;
    };

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      const r = await s.call('POST', path('/traces'), {
        log_stream_id: logStreamId,
        sessions: [{ id: sessionId, name: 'keys', user_metadata: sessionUser }],
        traces: [
          {
            id: traceId,
            session_id: sessionId,
            name: 'odd keys',
            input: 'in',
            output: 'out',
            user_metadata: user,
            dataset_metadata: dataset,
            metrics: traceMetrics,
            tags: ['constructor', '__proto__', 'a\nb'],
            spans: [
              {
                type: 'llm',
                id: llmId,
                name: 'gen',
                input: [message],
                output: { role: 'assistant', content: 'ok' },
                user_metadata: spanUser,
                metrics: spanMetrics,
              },
              {
                type: 'retriever',
                id: retrieverId,
                name: 'docs',
                input: 'q',
                output: [{ content: 'doc', metadata: docMetadata }],
              },
            ],
          },
        ],
      });
      assert.equal(r.status, 200, r.text);
    });
    after(() => s.close());

    const checkTrace = (t: any) => {
      assert.deepEqual(t.user_metadata, user);
      assert.deepEqual(t.dataset_metadata, dataset);
      // Token metrics are the sums over the llm span.
      assert.deepEqual(t.metrics, { ...traceMetrics, num_input_tokens: 3, num_total_tokens: 3 });
      assert.deepEqual(t.tags, ['constructor', '__proto__', 'a\nb']);
    };
    const checkLlm = (sp: any) => {
      assert.deepEqual(sp.user_metadata, spanUser);
      assert.deepEqual(sp.metrics, { ...spanMetrics, num_total_tokens: 3 });
    };

    test('GET trace, span and session return every key', async () => {
      const t = await s.call('GET', path(`/traces/${traceId}`));
      assert.equal(t.status, 200, t.text);
      checkTrace(t.body);
      const llm = t.body.spans.find((x: any) => x.id === llmId);
      checkLlm(llm);
      assert.deepEqual(llm.input, [message]);
      const retriever = t.body.spans.find((x: any) => x.id === retrieverId);
      assert.deepEqual(retriever.output, [{ page_content: 'doc', metadata: docMetadata }]);

      const sp = await s.call('GET', path(`/spans/${llmId}`));
      assert.equal(sp.status, 200, sp.text);
      checkLlm(sp.body);
      assert.deepEqual(sp.body.input, [message]);
      const rs = await s.call('GET', path(`/spans/${retrieverId}`));
      assert.deepEqual(rs.body.output, [{ page_content: 'doc', metadata: docMetadata }]);

      const ss = await s.call('GET', path(`/sessions/${sessionId}`));
      assert.equal(ss.status, 200, ss.text);
      assert.deepEqual(ss.body.user_metadata, sessionUser);
      checkTrace(ss.body.traces[0]);
    });

    test('sessions, traces and spans searches return every key', async () => {
      const session = await searched('sessions', sessionId);
      assert.deepEqual(session.user_metadata, sessionUser);
      checkTrace(await searched('traces', traceId));
      checkLlm(await searched('spans', llmId));
      const retriever = await searched('spans', retrieverId);
      assert.deepEqual(retriever.output, [{ page_content: 'doc', metadata: docMetadata }]);
      // Without include_counts too (the other rendering of the page).
      checkTrace(await searched('traces', traceId, { include_counts: false }));
    });

    test('filters name such keys', async () => {
      for (const [i, key] of ODD_KEYS.entries()) {
        const byUser = await searched('traces', traceId, {
          filters: [{ column_id: `user_metadata/${key}`, operator: 'eq', value: `u${i}` }],
        });
        assert.equal(byUser.id, traceId);
        const byMetric = await searched('traces', traceId, {
          filters: [{ column_id: `metrics/${key}`, operator: 'eq', value: 100 + i }],
        });
        assert.equal(byMetric.id, traceId);
      }
      // A record lacking the key does not match (an inherited property is not a value).
      const r = await s.call('POST', path('/spans/search'), {
        log_stream_id: logStreamId,
        filters: [{ column_id: 'dataset_metadata/constructor', operator: 'ne', value: 'x' }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.records.map((x: any) => x.id).sort(), [llmId, retrieverId].sort());
    });

    test('`constructor/x` names no column namespace: an unknown column (422), not an error', async () => {
      for (const column of ['constructor/x', 'toString/x', '__proto__/x']) {
        const bad = await s.call('POST', path('/traces/search'), {
          log_stream_id: logStreamId,
          filters: [{ column_id: column, operator: 'eq', value: 'x' }],
        });
        assert.equal(bad.status, 422, `${column}: ${bad.text}`);
        const sort = await s.call('POST', path('/traces/search'), {
          log_stream_id: logStreamId,
          sort: { name: column, ascending: true },
        });
        assert.equal(sort.status, 422, `${column}: ${sort.text}`);
      }
    });

    test('the column catalogue lists such keys', async () => {
      const r = await s.call('POST', path('/traces/available_columns'), { log_stream_id: logStreamId });
      assert.equal(r.status, 200, r.text);
      const ids = new Set(r.body.columns.map((c: any) => c.id));
      for (const key of ODD_KEYS)
        for (const ns of ['user_metadata', 'dataset_metadata', 'metrics'])
          assert.ok(ids.has(`${ns}/${key}`), `${ns}/${JSON.stringify(key)} is listed`);
    });

    test('re-sending and PATCH keep and merge such keys', async () => {
      const id = uuid();
      const first = { id, name: 'merge', input: 'in', user_metadata: user, metrics: traceMetrics };
      let r = await s.call('POST', path('/traces'), { log_stream_id: logStreamId, traces: [first] });
      assert.equal(r.status, 200, r.text);
      // A re-send changes two extra metrics, one of them `__proto__`, and keeps the others.
      const changed = own([
        ['__proto__', 7],
        ['a\nb', 8],
      ]);
      r = await s.call('POST', path('/traces'), {
        log_stream_id: logStreamId,
        traces: [{ id, metrics: changed }],
      });
      assert.equal(r.status, 200, r.text);
      let t = await s.call('GET', path(`/traces/${id}`));
      assert.deepEqual(t.body.metrics, { ...traceMetrics, ...changed });
      assert.deepEqual(t.body.user_metadata, user);

      const patched = own([
        ['__proto__', 'patched'],
        ['constructor', 'c'],
      ]);
      r = await s.call('PATCH', path(`/traces/${id}`), {
        log_stream_id: logStreamId,
        user_metadata: patched,
      });
      assert.equal(r.status, 200, r.text);
      t = await s.call('GET', path(`/traces/${id}`));
      assert.deepEqual(t.body.user_metadata, patched);
      assert.deepEqual(t.body.metrics, { ...traceMetrics, ...changed });
      assert.deepEqual((await searched('traces', id)).user_metadata, patched);
    });

    test('`__proto__` never sets a prototype: an object under it is refused like any other', async () => {
      const bad = (field: string, value: unknown) =>
        s.call(
          'POST',
          path('/traces'),
          `{"log_stream_id":"${logStreamId}","traces":[{"name":"p","${field}":{"__proto__":${JSON.stringify(value)}}}]}`,
        );
      let r = await bad('user_metadata', { polluted: 'yes' });
      assert.equal(r.status, 422, r.text);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces', 0, 'user_metadata', '__proto__']);
      r = await bad('metrics', { num_input_tokens: 5 });
      assert.equal(r.status, 422, r.text);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces', 0, 'metrics', '__proto__']);
      assert.equal(({} as any).polluted, undefined);

      // A trace-level `__proto__` is an unknown field: ignored, also on a re-send.
      const id = uuid();
      const body = (name: string) =>
        `{"log_stream_id":"${logStreamId}","traces":[{"id":"${id}","name":"${name}","__proto__":{"name":"injected","user_metadata":{"k":"v"}}}]}`;
      for (const name of ['first', 'second']) {
        r = await s.call('POST', path('/traces'), body(name));
        assert.equal(r.status, 200, r.text);
        const t = await s.call('GET', path(`/traces/${id}`));
        assert.equal(t.body.name, name);
        assert.deepEqual(t.body.user_metadata, {});
      }
    });
  });
}
