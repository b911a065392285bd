import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { spanUuid, traceUuid } from '../../src/domain/otel-mapping.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

// The official protobuf definitions (as generated code) to write protobuf bodies and read answers.
const proto = createRequire(import.meta.url)('@opentelemetry/otlp-transformer/build/src/generated/root.js')
  .opentelemetry.proto.collector.trace.v1;

type Attr = string | number | boolean | string[];

interface SpanSpec {
  trace: string;
  id: string;
  parent?: string;
  name?: string;
  kind?: number;
  start?: bigint;
  end?: bigint;
  attrs?: Record<string, Attr>;
  events?: { name: string; attrs: Record<string, Attr> }[];
  status?: { code: number; message?: string };
}

function anyValue(v: Attr): Record<string, unknown> {
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue) } };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}

const kvs = (a: Record<string, Attr> = {}) =>
  Object.entries(a).map(([key, v]) => ({ key, value: anyValue(v) }));

const BASE = 1_750_000_000_000_000_000n;

/** An OTLP/JSON ExportTraceServiceRequest (hex ids, int64 as strings). */
function otlpJson(spans: SpanSpec[], service = 'demo') {
  return {
    resourceSpans: [
      {
        resource: { attributes: kvs({ 'service.name': service }) },
        scopeSpans: [
          {
            scope: { name: 'test', version: '1.0.0' },
            spans: spans.map((s, i) => ({
              traceId: s.trace,
              spanId: s.id,
              parentSpanId: s.parent ?? '',
              name: s.name ?? `span-${i}`,
              kind: s.kind ?? 1,
              startTimeUnixNano: String(s.start ?? BASE + BigInt(i) * 1_000_000n),
              endTimeUnixNano: String(s.end ?? (s.start ?? BASE + BigInt(i) * 1_000_000n) + 5_000_000n),
              attributes: kvs(s.attrs),
              events: (s.events ?? []).map((e) => ({
                name: e.name,
                timeUnixNano: String(BASE),
                attributes: kvs(e.attrs),
              })),
              status: s.status ?? { code: 0 },
            })),
          },
        ],
      },
    ],
  };
}

/** The same request in protobuf. */
function otlpProto(spans: SpanSpec[]): Buffer {
  const json = otlpJson(spans) as any;
  for (const s of json.resourceSpans[0].scopeSpans[0].spans) {
    for (const k of ['traceId', 'spanId', 'parentSpanId']) s[k] = Buffer.from(s[k], 'hex');
  }
  return Buffer.from(
    proto.ExportTraceServiceRequest.encode(proto.ExportTraceServiceRequest.fromObject(json)).finish(),
  );
}

/** Protobuf bytes of one field: tag, length, payload. */
function field(no: number, payload: Buffer): Buffer {
  const len: number[] = [];
  let n = payload.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([(no << 3) | 2, ...len]), payload]);
}

/** An export whose one attribute nests `depth` array values deep (written by hand: encoders recurse). */
function deepProtobuf(trace: string, depth: number): Buffer {
  let v = field(1, Buffer.from('leaf'));
  for (let i = 0; i < depth; i++) v = field(5, field(1, v));
  const kv = Buffer.concat([field(1, Buffer.from('k')), field(2, v)]);
  const span = Buffer.concat([
    field(1, Buffer.from(trace, 'hex')),
    field(2, Buffer.from('5000000000000001', 'hex')),
    field(5, Buffer.from('deep')),
    field(9, kv),
  ]);
  return field(1, field(2, field(2, span)));
}

let traceCounter = 0;
/** A fresh random-looking 32-hex trace id. */
function newTrace(): string {
  traceCounter++;
  return (Date.now().toString(16) + traceCounter.toString(16).padStart(8, '0') + 'a1b2c3d4e5f60718')
    .slice(0, 32)
    .padEnd(32, '7');
}

/** The spans of an agent calling an LLM and a tool, gen_ai style. */
function genAiAgent(trace: string, session?: string): SpanSpec[] {
  const s: Record<string, Attr> = session ? { 'gen_ai.conversation.id': session } : {};
  return [
    {
      trace,
      id: '1000000000000001',
      name: 'invoke_agent planner',
      attrs: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'planner', ...s },
    },
    {
      trace,
      id: '1000000000000002',
      parent: '1000000000000001',
      name: 'chat gpt-4o',
      kind: 3,
      attrs: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.usage.input_tokens': 120,
        'gen_ai.usage.output_tokens': 30,
        'gen_ai.usage.cache_read.input_tokens': 100,
        'gen_ai.usage.cache_creation.input_tokens': 8,
        'gen_ai.response.finish_reasons': ['tool_calls'],
        ...s,
      },
      events: [
        { name: 'gen_ai.system.message', attrs: { content: 'You plan trips.' } },
        { name: 'gen_ai.user.message', attrs: { content: 'Weather in Paris?' } },
        {
          name: 'gen_ai.choice',
          attrs: {
            finish_reason: 'tool_calls',
            message: JSON.stringify({
              role: 'assistant',
              tool_calls: [
                {
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'weather', arguments: '{"city":"Paris"}' },
                },
              ],
            }),
          },
        },
      ],
    },
    {
      trace,
      id: '1000000000000003',
      parent: '1000000000000001',
      name: 'execute_tool weather',
      attrs: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'weather',
        'gen_ai.tool.call.id': 'call_1',
        'gen_ai.tool.call.arguments': '{"city":"Paris"}',
        'gen_ai.tool.call.result': 'rainy, 12°C',
      },
    },
  ];
}

for (const store of storesUnderTest()) {
  describe(`OTLP/HTTP ingestion [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;

    before(async () => {
      s = await startTestServer(store);
      projectId = (await s.call('POST', '/v2/projects', { name: 'otel-app' })).body.id;
      logStreamId = (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'prod' })).body.id;
    });
    after(() => s.close());

    async function send(
      body: Buffer | string,
      headers: Record<string, string>,
      opts: { url?: string; auth?: Record<string, string> | null } = {},
    ) {
      const res = await s.running.app.inject({
        method: 'POST',
        url: opts.url ?? '/otel/v1/traces',
        headers: {
          ...(opts.auth === undefined ? { 'service-api-key': s.adminKey } : (opts.auth ?? {})),
          ...headers,
        },
        payload: body,
      });
      return res;
    }
    const asJson = (spans: SpanSpec[]) => JSON.stringify(otlpJson(spans));
    const jsonHeaders = (extra: Record<string, string> = {}) => ({
      'content-type': 'application/json',
      projectid: projectId,
      logstreamid: logStreamId,
      ...extra,
    });
    const protoHeaders = (extra: Record<string, string> = {}) => ({
      'content-type': 'application/x-protobuf',
      projectid: projectId,
      logstreamid: logStreamId,
      ...extra,
    });
    const readTrace = (traceHex: string, pid = projectId) =>
      s.call('GET', `/v2/projects/${pid}/traces/${traceUuid(traceHex)}`);
    const flatten = (node: any): any[] => [node, ...(node.spans ?? []).flatMap(flatten)];

    test('protobuf export: protobuf answer, spans land with kinds, tokens, model and messages', async () => {
      const trace = newTrace();
      const res = await send(otlpProto(genAiAgent(trace)), protoHeaders());
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^application\/x-protobuf/);
      const answer = proto.ExportTraceServiceResponse.decode(res.rawPayload);
      assert.equal(answer.partialSuccess, null, 'nothing rejected');

      const t = await readTrace(trace);
      assert.equal(t.status, 200, t.text);
      assert.equal(t.body.id, traceUuid(trace));
      assert.equal(t.body.name, 'invoke_agent planner');
      const [agent] = t.body.spans;
      assert.equal(agent.type, 'agent');
      assert.equal(agent.id, spanUuid(trace, '1000000000000001'));
      const byType = Object.fromEntries(agent.spans.map((x: any) => [x.type, x]));
      const llm = byType.llm;
      assert.equal(llm.model, 'gpt-4o');
      assert.equal(llm.parent_id, agent.id);
      assert.equal(llm.metrics.num_input_tokens, 120);
      assert.equal(llm.metrics.num_output_tokens, 30);
      assert.equal(llm.metrics.num_cache_read_input_tokens, 100);
      assert.equal(llm.metrics.num_cache_creation_input_tokens, 8);
      assert.equal(llm.metrics.duration_ns, 5_000_000);
      assert.equal(llm.finish_reason, 'tool_calls');
      assert.deepEqual(llm.input, [
        { role: 'system', content: 'You plan trips.' },
        { role: 'user', content: 'Weather in Paris?' },
      ]);
      assert.equal(llm.output.role, 'assistant');
      assert.equal(llm.output.tool_calls[0].function.name, 'weather');
      assert.equal(llm.user_metadata['gen_ai.system'], 'openai');
      assert.equal(llm.user_metadata['service.name'], 'demo');
      const tool = byType.tool;
      assert.equal(tool.tool_call_id, 'call_1');
      assert.equal(tool.input, '{"city":"Paris"}');
      assert.equal(tool.output, 'rainy, 12°C');
      assert.equal(t.body.metrics.num_input_tokens, 120, 'the trace sums its llm spans');
      assert.equal(t.body.created_at, '2025-06-15T15:06:40.000Z');
    });

    test('JSON export: JSON answer; OpenInference spans map', async () => {
      const trace = newTrace();
      const spans: SpanSpec[] = [
        {
          trace,
          id: '2000000000000001',
          name: 'agent',
          attrs: {
            'openinference.span.kind': 'AGENT',
            'input.value': 'plan a trip',
            'output.value': 'done',
            'session.id': 'oi-session',
          },
        },
        {
          trace,
          id: '2000000000000002',
          parent: '2000000000000001',
          name: 'ChatCompletion',
          attrs: {
            'openinference.span.kind': 'LLM',
            'llm.model_name': 'claude-3-5-sonnet',
            'llm.token_count.prompt': 50,
            'llm.token_count.completion': 10,
            'llm.token_count.total': 60,
            'llm.token_count.prompt_details.cache_read': 40,
            'llm.token_count.prompt_details.cache_write': 5,
            'llm.input_messages.0.message.role': 'user',
            'llm.input_messages.0.message.content': 'plan a trip',
            'llm.output_messages.0.message.role': 'assistant',
            'llm.output_messages.0.message.content': 'Go to Lisbon.',
          },
        },
        {
          trace,
          id: '2000000000000003',
          parent: '2000000000000001',
          name: 'retrieve',
          attrs: {
            'openinference.span.kind': 'RETRIEVER',
            'input.value': 'lisbon',
            'retrieval.documents.0.document.content': 'Lisbon is sunny',
            'retrieval.documents.0.document.id': 'doc-1',
          },
        },
        {
          trace,
          id: '2000000000000004',
          parent: '2000000000000001',
          name: 'step',
          attrs: { 'openinference.span.kind': 'CHAIN' },
        },
        {
          trace,
          id: '2000000000000005',
          parent: '2000000000000001',
          name: 'GET',
          kind: 3,
          attrs: {
            'http.request.method': 'GET',
            'url.full': 'https://api.example/x',
            'http.response.status_code': 200,
          },
        },
      ];
      const res = await send(asJson(spans), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.deepEqual(JSON.parse(res.body), {});
      const t = await readTrace(trace);
      assert.equal(t.status, 200, t.text);
      const all = flatten(t.body);
      const types = all.map((r: any) => r.type).sort();
      assert.deepEqual(types, ['agent', 'http', 'llm', 'retriever', 'trace', 'workflow']);
      const llm = all.find((r: any) => r.type === 'llm');
      assert.equal(llm.model, 'claude-3-5-sonnet');
      assert.deepEqual(
        [llm.metrics.num_input_tokens, llm.metrics.num_output_tokens, llm.metrics.num_total_tokens],
        [50, 10, 60],
      );
      assert.equal(llm.metrics.num_cache_read_input_tokens, 40);
      assert.equal(llm.metrics.num_cache_creation_input_tokens, 5);
      assert.deepEqual(llm.input, [{ role: 'user', content: 'plan a trip' }]);
      assert.deepEqual(llm.output, { role: 'assistant', content: 'Go to Lisbon.' });
      const retriever = all.find((r: any) => r.type === 'retriever');
      assert.equal(retriever.input, 'lisbon');
      assert.equal(retriever.output[0].page_content ?? retriever.output[0].content, 'Lisbon is sunny');
      assert.equal(all.find((r: any) => r.type === 'http').status_code, 200);
      assert.equal(t.body.input, 'plan a trip', 'the trace takes its root span input and output');
      assert.equal(t.body.output, 'done');
      // session.id groups the trace into a session with that external id.
      const session = await s.call('GET', `/v2/projects/${projectId}/sessions/${t.body.session_id}`);
      assert.equal(session.status, 200, session.text);
      assert.equal(session.body.external_id, 'oi-session');
    });

    test('gzip-encoded protobuf and JSON; the /otel/traces and /v2 aliases', async () => {
      const a = newTrace();
      let res = await send(
        zlib.gzipSync(otlpProto(genAiAgent(a))),
        protoHeaders({ 'content-encoding': 'gzip' }),
        {
          url: '/otel/traces',
        },
      );
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await readTrace(a)).status, 200);
      const b = newTrace();
      res = await send(zlib.gzipSync(asJson(genAiAgent(b))), jsonHeaders({ 'content-encoding': 'gzip' }), {
        url: '/v2/otel/v1/traces',
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await readTrace(b)).status, 200);
      const c = newTrace();
      res = await send(asJson(genAiAgent(c)), jsonHeaders(), { url: '/v2/otel/traces' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await readTrace(c)).status, 200);
    });

    test('targets from headers: names, a log stream created on first use, experiments', async () => {
      const trace = newTrace();
      let res = await send(asJson(genAiAgent(trace)), {
        'content-type': 'application/json',
        project: 'otel-app',
        logstream: 'from-otel',
      });
      assert.equal(res.statusCode, 200, res.body);
      const streams = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      const made = streams.body.find((r: any) => r.name === 'from-otel');
      assert.ok(made, 'the named log stream was created');
      const t = await readTrace(trace);
      assert.equal(t.body.run_id, made.id);
      // The same name again reuses it.
      res = await send(asJson(genAiAgent(newTrace())), {
        'content-type': 'application/json',
        project: 'otel-app',
        logstream: 'from-otel',
      });
      assert.equal(res.statusCode, 200);
      const again = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      assert.equal(again.body.filter((r: any) => r.name === 'from-otel').length, 1);
      // Experiments by name and by id.
      const exp = (await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: 'exp-1' })).body;
      const e1 = newTrace();
      res = await send(asJson(genAiAgent(e1)), {
        'content-type': 'application/json',
        projectid: projectId,
        experiment: 'exp-1',
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await readTrace(e1)).body.run_id, exp.id);
      const e2 = newTrace();
      res = await send(asJson(genAiAgent(e2)), {
        'content-type': 'application/json',
        projectid: projectId,
        experimentid: exp.id,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await readTrace(e2)).body.run_id, exp.id);
    });

    test('header faults: missing project or target 422, unknown project 404, bad uuid 422, unknown experiment 404', async () => {
      const body = asJson(genAiAgent(newTrace()));
      let res = await send(body, { 'content-type': 'application/json', logstream: 'x' });
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(JSON.parse(res.body).detail[0].loc, ['header', 'projectid']);
      res = await send(body, { 'content-type': 'application/json', projectid: projectId });
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(JSON.parse(res.body).detail[0].loc[0], 'header');
      res = await send(body, {
        'content-type': 'application/json',
        projectid: '00000000-0000-4000-8000-000000000000',
        logstream: 'x',
      });
      assert.equal(res.statusCode, 404, res.body);
      res = await send(body, {
        'content-type': 'application/json',
        project: 'no-such-project',
        logstream: 'x',
      });
      assert.equal(res.statusCode, 404, res.body);
      const unknown = JSON.parse(res.body).detail;
      assert.match(unknown, /No project is named "no-such-project"/);
      assert.match(unknown, /POST \/v2\/projects/, 'says how to create it');
      assert.match(unknown, /projectid header/, 'and which header names a project');
      res = await send(body, { 'content-type': 'application/json', projectid: 'not-a-uuid', logstream: 'x' });
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(JSON.parse(res.body).detail[0].loc, ['header', 'projectid']);
      res = await send(body, {
        'content-type': 'application/json',
        projectid: projectId,
        experiment: 'nope',
      });
      assert.equal(res.statusCode, 404, res.body);
      res = await send(body, {
        'content-type': 'application/json',
        projectid: projectId,
        logstreamid: '00000000-0000-4000-8000-000000000000',
      });
      assert.equal(res.statusCode, 404, res.body);
    });

    test('credentials: none is 401; a user who cannot see the project gets 404, a viewer 403', async () => {
      const body = asJson(genAiAgent(newTrace()));
      let res = await send(body, jsonHeaders(), { auth: null });
      assert.equal(res.statusCode, 401, res.body);
      assert.ok(res.headers['www-authenticate']);
      res = await send(body, jsonHeaders(), { auth: { 'service-api-key': 'wrong' } });
      assert.equal(res.statusCode, 401);
      const u = await s.user();
      res = await send(body, jsonHeaders(), { auth: { 'service-api-key': u.key } });
      assert.equal(res.statusCode, 404, res.body);
      const share = await s.call('POST', `/v2/projects/${projectId}/collaborators`, {
        user_id: u.id,
        role: 'viewer',
      });
      assert.equal(share.status, 200, share.text);
      res = await send(body, jsonHeaders(), { auth: { 'service-api-key': u.key } });
      assert.equal(res.statusCode, 403, res.body);
      res = await send(body, jsonHeaders(), { auth: { 'platform-ao-api-key': s.adminKey } });
      assert.equal(res.statusCode, 200, 'the other API-key header works too');
    });

    test('spans of one trace in separate exports, children first, join the same trace', async () => {
      const trace = newTrace();
      const [root, llm, tool] = genAiAgent(trace, 'split-session');
      // 1st export: the tool span (its parent, the agent, has not ended yet).
      let res = await send(asJson([tool]), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(JSON.parse(res.body), {});
      // 2nd export: the llm span, in protobuf.
      res = await send(otlpProto([llm]), protoHeaders());
      assert.equal(res.statusCode, 200, res.body);
      // 3rd export: the root.
      res = await send(asJson([root]), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      const t = await readTrace(trace);
      assert.equal(t.status, 200, t.text);
      assert.equal(t.body.name, 'invoke_agent planner', 'the root, arriving last, names the trace');
      const all = flatten(t.body).filter((r: any) => r.type !== 'trace');
      assert.deepEqual(
        all.map((r: any) => r.id).sort(),
        [root, llm, tool].map((x) => spanUuid(trace, x.id)).sort(),
      );
      for (const r of all) assert.equal(r.trace_id, traceUuid(trace));
      const agentId = spanUuid(trace, root.id);
      for (const x of [llm, tool]) {
        const r = all.find((y: any) => y.id === spanUuid(trace, x.id));
        assert.equal(r.parent_id, agentId, 'a child exported before its parent hangs under it');
      }
      assert.equal(t.body.spans.length, 1, 'the agent is the only span directly under the trace');
      assert.equal(t.body.metrics.num_input_tokens, 120);
      // A later child whose parent is stored hangs under it.
      const late: SpanSpec = {
        trace,
        id: '1000000000000009',
        parent: root.id,
        name: 'late',
        attrs: { 'openinference.span.kind': 'TOOL' },
      };
      res = await send(asJson([late]), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      const span = await s.call('GET', `/v2/projects/${projectId}/spans/${spanUuid(trace, late.id)}`);
      assert.equal(span.status, 200, span.text);
      assert.equal(span.body.parent_id, spanUuid(trace, root.id));
      assert.equal(span.body.trace_id, traceUuid(trace));
      // Sending the same export again changes nothing.
      res = await send(asJson([late]), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      const t2 = await readTrace(trace);
      assert.equal(flatten(t2.body).length, flatten(t.body).length + 1);
    });

    test('a parent arriving after its children counts them (has_children)', async () => {
      const trace = newTrace();
      const [root, llm, tool] = genAiAgent(trace);
      // A grandchild first (its parent, the tool, and the root are both still open), then the two
      // children, then the root.
      const sub: SpanSpec = { trace, id: '1000000000000004', parent: tool.id, name: 'fetch' };
      const counts = async () => {
        const t = await readTrace(trace);
        assert.equal(t.status, 200, t.text);
        const [agent] = t.body.spans;
        const toolRec = agent.spans.find((x: any) => x.id === spanUuid(trace, tool.id));
        const subSpan = await s.call('GET', `/v2/projects/${projectId}/spans/${spanUuid(trace, sub.id)}`);
        return {
          numSpans: t.body.num_spans,
          agentChildren: agent.has_children,
          agentSpans: agent.spans.length,
          toolChildren: toolRec.has_children,
          subChildren: subSpan.body.has_children,
          inputTokens: t.body.metrics.num_input_tokens,
        };
      };
      assert.equal((await send(asJson([sub]), jsonHeaders())).statusCode, 200);
      assert.equal((await send(asJson([llm, tool]), jsonHeaders())).statusCode, 200);
      assert.equal((await send(asJson([root]), jsonHeaders())).statusCode, 200);
      const expected = {
        numSpans: 4,
        agentChildren: true,
        agentSpans: 2,
        toolChildren: true,
        subChildren: false,
        inputTokens: 120,
      };
      assert.deepEqual(await counts(), expected);
      // Re-sending every export (and all of it at once) counts nothing twice.
      assert.equal((await send(asJson([sub]), jsonHeaders())).statusCode, 200);
      assert.equal((await send(asJson([llm, tool]), jsonHeaders())).statusCode, 200);
      assert.equal((await send(asJson([root]), jsonHeaders())).statusCode, 200);
      assert.equal((await send(asJson([root, llm, tool, sub]), jsonHeaders())).statusCode, 200);
      assert.deepEqual(await counts(), expected);
    });

    test('sessionid header: an external id found or created, or the id of a session', async () => {
      const a = newTrace();
      const b = newTrace();
      let res = await send(asJson(genAiAgent(a)), jsonHeaders({ sessionid: 'chat-42' }));
      assert.equal(res.statusCode, 200, res.body);
      res = await send(otlpProto(genAiAgent(b)), protoHeaders({ sessionid: 'chat-42' }));
      assert.equal(res.statusCode, 200, res.body);
      const ta = (await readTrace(a)).body;
      const tb = (await readTrace(b)).body;
      assert.equal(ta.session_id, tb.session_id);
      const c = newTrace();
      res = await send(asJson(genAiAgent(c)), jsonHeaders({ sessionid: ta.session_id }));
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await readTrace(c)).body.session_id, ta.session_id);
    });

    test('traces that name no session each get their own; traces naming one share it', async () => {
      const [a, b, c, d] = [newTrace(), newTrace(), newTrace(), newTrace()];
      let res = await send(asJson([...genAiAgent(a), ...genAiAgent(b)]), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      const [ta, tb] = [(await readTrace(a)).body, (await readTrace(b)).body];
      assert.notEqual(ta.session_id, tb.session_id, 'one export batches unrelated traces');
      res = await send(otlpProto([...genAiAgent(c, 'conv-x'), ...genAiAgent(d, 'conv-x')]), protoHeaders());
      assert.equal(res.statusCode, 200, res.body);
      const [tc, td] = [(await readTrace(c)).body, (await readTrace(d)).body];
      assert.equal(tc.session_id, td.session_id);
    });

    test('partialSuccess counts spans it rejects (JSON and protobuf)', async () => {
      const trace = newTrace();
      const spans: SpanSpec[] = [
        ...genAiAgent(trace),
        { trace: '0'.repeat(32), id: '3000000000000001', name: 'no trace id' },
        { trace, id: '0000000000000000', name: 'no span id' },
      ];
      let res = await send(asJson(spans), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      const body = JSON.parse(res.body);
      assert.equal(Number(body.partialSuccess.rejectedSpans), 2);
      assert.match(body.partialSuccess.errorMessage, /invalid/);
      assert.equal((await readTrace(trace)).status, 200, 'the valid spans landed');
      res = await send(otlpProto(spans), protoHeaders());
      const answer = proto.ExportTraceServiceResponse.decode(res.rawPayload);
      assert.equal(Number(answer.partialSuccess.rejectedSpans), 2);
      // A span refused by ingestion (it changes kind) is rejected alone, the rest of the export lands.
      const other = newTrace();
      const changed = { ...genAiAgent(trace)[2], attrs: { 'gen_ai.operation.name': 'chat' } };
      res = await send(asJson([changed, ...genAiAgent(other)]), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(Number(JSON.parse(res.body).partialSuccess.rejectedSpans) >= 1, res.body);
      assert.equal((await readTrace(other)).status, 200);
    });

    test('a bad trace or span id is refused naming the id the client sent', async () => {
      const trace = newTrace();
      const json = otlpJson([
        { trace, id: '3100000000000001', name: 'fine' },
        { trace, id: '3100000000000002', name: 'bad trace' },
      ]) as any;
      const spans = json.resourceSpans[0].scopeSpans[0].spans;
      // Neither is hex; read as base64 (protobufjs' reading of bytes) they would be other ids.
      spans[1].traceId = 'my-trace-0001';
      let res = await send(JSON.stringify(json), jsonHeaders());
      assert.equal(res.statusCode, 200, res.body);
      let partial = JSON.parse(res.body).partialSuccess;
      assert.equal(Number(partial.rejectedSpans), 1);
      assert.match(partial.errorMessage, /^span 3100000000000002 of trace my-trace-0001: invalid trace id/);
      // 32 characters, but not hex: refused too, by the text sent.
      spans[1].traceId = 'z'.repeat(32);
      spans[1].spanId = 'not+a+span+id';
      res = await send(JSON.stringify(json), jsonHeaders());
      partial = JSON.parse(res.body).partialSuccess;
      assert.equal(Number(partial.rejectedSpans), 1, res.body);
      assert.match(
        partial.errorMessage,
        new RegExp(`^span not\\+a\\+span\\+id of trace ${'z'.repeat(32)}: `),
      );
      assert.equal((await readTrace(trace)).status, 200, 'the good span landed');
    });

    test('bodies that are not OTLP answer 400 (never 500); the wrong content type 415', async () => {
      const cases: [string | Buffer, Record<string, string>][] = [
        ['{"resourceSpans": 5}', jsonHeaders()],
        ['[1,2,3]', jsonHeaders()],
        ['not json', jsonHeaders()],
        ['', jsonHeaders()],
        ['{"resourceSpans":[{"scopeSpans":[{"spans":[7]}]}]}', jsonHeaders()],
        [`${'['.repeat(600)}${']'.repeat(600)}`, jsonHeaders()],
        [Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), protoHeaders()],
        [Buffer.from('this is not protobuf at all'), protoHeaders()],
        [Buffer.from('not gzip'), protoHeaders({ 'content-encoding': 'gzip' })],
      ];
      for (const [body, headers] of cases) {
        const res = await send(body, headers);
        assert.equal(res.statusCode, 400, `${String(body).slice(0, 40)}: ${res.statusCode} ${res.body}`);
        assert.equal(typeof JSON.parse(res.body).detail, 'string');
      }
      let res = await send('x', { ...jsonHeaders(), 'content-type': 'text/plain' });
      assert.equal(res.statusCode, 415, res.body);
      res = await send(asJson([]), jsonHeaders({ 'content-encoding': 'compress' }));
      assert.equal(res.statusCode, 415, res.body);
      // An empty protobuf body is an empty export.
      res = await send(Buffer.alloc(0), protoHeaders());
      assert.equal(res.statusCode, 200, res.body);
      // Deeply nested attribute values do not crash the decoders.
      const leaf = '{"stringValue":"leaf"}';
      const deepValue = '{"arrayValue":{"values":['.repeat(160) + leaf + ']}}'.repeat(160);
      const deepJson = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"${newTrace()}","spanId":"4000000000000001","name":"deep","attributes":[{"key":"k","value":${deepValue}}]}]}]}]}`;
      res = await send(deepJson, jsonHeaders());
      assert.equal(res.statusCode, 200, res.body.slice(0, 200));
      res = await send(deepProtobuf(newTrace(), 20_000), protoHeaders());
      assert.ok(
        res.statusCode === 200 || res.statusCode === 400,
        `${res.statusCode} ${res.body.slice(0, 200)}`,
      );
    });

    test('a gzip bomb answers 413 (the body limit applies after decompression)', async () => {
      const bomb = zlib.gzipSync(Buffer.alloc(s.config.bodyLimitBytes + 1024 * 1024));
      assert.ok(bomb.length < s.config.bodyLimitBytes / 10);
      const res = await send(bomb, protoHeaders({ 'content-encoding': 'gzip' }));
      assert.equal(res.statusCode, 413, res.body);
      assert.equal(typeof JSON.parse(res.body).detail, 'string');
    });

    test('other routes keep their JSON parser', async () => {
      const r = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'after-otel' });
      assert.equal(r.status, 200, r.text);
      const bad = await s.call('POST', '/v2/projects', '{"name": ');
      assert.equal(bad.status, 422);
      assert.equal(bad.body.detail[0].type, 'json_invalid');
    });
  });
}
