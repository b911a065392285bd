import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type AttrValue, type OtelSpan, decodeJson, exportResponse } from '../../src/domain/otel-decode.ts';
import {
  groupTraces,
  mapSpan,
  spanType,
  spanUuid,
  traceRecord,
  traceUuid,
} from '../../src/domain/otel-mapping.ts';

const T = '5b8efff798038103d269b633813fc60c';

function span(attributes: Record<string, AttrValue>, over: Partial<OtelSpan> = {}): OtelSpan {
  return {
    traceId: T,
    spanId: 'eee19b7ec3c1b174',
    parentSpanId: '',
    name: 'op',
    kind: 1,
    startNs: 1_700_000_000_000_000_000n,
    endNs: 1_700_000_000_250_000_000n,
    attributes,
    events: [],
    status: { code: 0, message: '' },
    resource: {},
    scope: { name: '', version: '' },
    ...over,
  };
}

function mapped(attributes: Record<string, AttrValue>, over: Partial<OtelSpan> = {}) {
  const r = mapSpan(span(attributes, over));
  assert.ok(r.ok, 'the span maps');
  return r.span;
}

describe('otel ids', () => {
  test('the trace id is the uuid-formatted 16 bytes', () => {
    assert.equal(traceUuid(T), '5b8efff7-9803-8103-d269-b633813fc60c');
  });
  test('span ids map deterministically, per trace, to uuid-formatted ids', () => {
    const a = spanUuid(T, 'eee19b7ec3c1b174');
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(spanUuid(T.toUpperCase(), 'EEE19B7EC3C1B174'), a);
    assert.notEqual(spanUuid('0'.repeat(31) + '1', 'eee19b7ec3c1b174'), a, 'another trace, another id');
    assert.notEqual(spanUuid(T, 'eee19b7ec3c1b175'), a);
  });
  test('a child knows its parent record id before the parent arrives', () => {
    const child = mapped({}, { spanId: '1111111111111111', parentSpanId: '2222222222222222' });
    const parent = mapped({}, { spanId: '2222222222222222' });
    assert.equal(child.parentId, parent.id);
    assert.equal(child.traceId, parent.traceId);
    assert.equal(parent.parentId, null);
  });
  test('spans without valid ids are refused', () => {
    assert.equal(mapSpan(span({}, { traceId: '0'.repeat(32) })).ok, false);
    assert.equal(mapSpan(span({}, { traceId: 'abcd' })).ok, false);
    assert.equal(mapSpan(span({}, { spanId: '' })).ok, false);
    assert.equal(mapSpan(span({}, { spanId: '0000000000000000' })).ok, false);
  });
});

describe('otel kinds', () => {
  const cases: [Record<string, AttrValue>, number, string][] = [
    [{ 'gen_ai.operation.name': 'chat' }, 3, 'llm'],
    [{ 'gen_ai.operation.name': 'text_completion' }, 1, 'llm'],
    [{ 'gen_ai.operation.name': 'generate_content' }, 1, 'llm'],
    [{ 'gen_ai.operation.name': 'embeddings' }, 1, 'llm'],
    [{ 'gen_ai.operation.name': 'execute_tool' }, 1, 'tool'],
    [{ 'gen_ai.operation.name': 'invoke_agent' }, 1, 'agent'],
    [{ 'gen_ai.operation.name': 'create_agent' }, 1, 'agent'],
    [{ 'openinference.span.kind': 'LLM' }, 1, 'llm'],
    [{ 'openinference.span.kind': 'TOOL' }, 1, 'tool'],
    [{ 'openinference.span.kind': 'RETRIEVER' }, 1, 'retriever'],
    [{ 'openinference.span.kind': 'AGENT' }, 1, 'agent'],
    [{ 'openinference.span.kind': 'CHAIN' }, 1, 'workflow'],
    [{ 'openinference.span.kind': 'EMBEDDING' }, 1, 'llm'],
    [{ 'openinference.span.kind': 'chain' }, 1, 'workflow'],
    [{ 'http.request.method': 'GET', 'url.full': 'http://x/' }, 3, 'http'],
    [{ 'http.method': 'POST' }, 2, 'http'],
    [{ 'http.method': 'POST' }, 1, 'workflow'],
    [{}, 1, 'workflow'],
    [{ 'gen_ai.operation.name': 'something_new' }, 1, 'workflow'],
    // Names of Object.prototype's properties are no kinds.
    [{ 'gen_ai.operation.name': 'constructor' }, 1, 'workflow'],
    [{ 'gen_ai.operation.name': '__proto__' }, 1, 'workflow'],
    [{ 'gen_ai.operation.name': 'hasOwnProperty' }, 1, 'workflow'],
  ];
  for (const [attrs, kind, want] of cases) {
    test(`${JSON.stringify(attrs)} kind ${kind} → ${want}`, () => {
      assert.equal(spanType({ attributes: attrs, kind }), want);
      assert.equal(mapped(attrs, { kind }).record.type, want);
    });
  }
});

describe('otel tokens, model, status, metadata', () => {
  test('gen_ai usage with the dotted cache spelling', () => {
    const r = mapped({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.response.model': 'gpt-4o-2024',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': '20',
      'gen_ai.usage.cache_read.input_tokens': 30,
      'gen_ai.usage.cache_creation.input_tokens': 7,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.response.finish_reasons': ['stop'],
    }).record;
    assert.deepEqual(r.metrics, {
      duration_ns: 250_000_000,
      num_input_tokens: 100,
      num_output_tokens: 20,
      num_cache_read_input_tokens: 30,
      num_cache_creation_input_tokens: 7,
    });
    assert.equal(r.model, 'gpt-4o');
    assert.equal(r.temperature, 0.2);
    assert.equal(r.finish_reason, 'stop');
    assert.deepEqual(r.user_metadata, { 'gen_ai.response.model': 'gpt-4o-2024' });
  });
  test('gen_ai usage with the underscore cache spelling', () => {
    const r = mapped({
      'gen_ai.operation.name': 'chat',
      'gen_ai.usage.cache_read_input_tokens': 4,
      'gen_ai.usage.cache_creation_input_tokens': 5,
    }).record;
    assert.equal((r.metrics as any).num_cache_read_input_tokens, 4);
    assert.equal((r.metrics as any).num_cache_creation_input_tokens, 5);
  });
  test('OpenInference token counts and model name', () => {
    const r = mapped({
      'openinference.span.kind': 'LLM',
      'llm.model_name': 'claude-3',
      'llm.token_count.prompt': 11,
      'llm.token_count.completion': 6,
      'llm.token_count.total': 17,
      'llm.token_count.prompt_details.cache_read': 2,
      'llm.token_count.prompt_details.cache_write': 1,
      'llm.invocation_parameters': '{"temperature": 0.7}',
    }).record;
    assert.deepEqual(r.metrics, {
      duration_ns: 250_000_000,
      num_input_tokens: 11,
      num_output_tokens: 6,
      num_total_tokens: 17,
      num_cache_read_input_tokens: 2,
      num_cache_creation_input_tokens: 1,
    });
    assert.equal(r.model, 'claude-3');
    assert.equal(r.temperature, 0.7);
  });
  test('bad token values are not metrics', () => {
    const r = mapped({
      'gen_ai.operation.name': 'chat',
      'gen_ai.usage.input_tokens': -3,
      'gen_ai.usage.output_tokens': 'many',
    }).record;
    assert.equal((r.metrics as any).num_input_tokens, undefined);
    assert.equal((r.metrics as any).num_output_tokens, undefined);
  });
  test('error status → status_code and error_message; OK → 200; HTTP status kept', () => {
    let r = mapped({}, { status: { code: 2, message: 'boom' } }).record;
    assert.equal(r.status_code, 500);
    assert.equal(r.error_message, 'boom');
    r = mapped(
      {},
      {
        status: { code: 2, message: '' },
        events: [{ name: 'exception', timeNs: 0n, attributes: { 'exception.message': 'bad thing' } }],
      },
    ).record;
    assert.equal(r.error_message, 'bad thing');
    r = mapped(
      { 'http.response.status_code': 404, 'http.request.method': 'GET' },
      { kind: 3, status: { code: 2, message: '' } },
    ).record;
    assert.equal(r.type, 'http');
    assert.equal(r.status_code, 404);
    r = mapped({}, { status: { code: 1, message: '' } }).record;
    assert.equal(r.status_code, 200);
    r = mapped({}).record;
    assert.equal(r.status_code, undefined);
  });
  test('other attributes become string metadata; session and tags are taken out', () => {
    const r = mapped(
      {
        'app.flag': true,
        'app.count': 3,
        'app.list': ['a', 1],
        'app.obj': { k: 'v' },
        'session.id': 's-1',
        'tag.tags': ['x', 'y'],
      },
      { resource: { 'service.name': 'checkout' } },
    );
    assert.deepEqual(r.record.user_metadata, {
      'app.flag': 'true',
      'app.count': '3',
      'app.list': '["a",1]',
      'app.obj': '{"k":"v"}',
      'service.name': 'checkout',
    });
    assert.equal(r.session, 's-1');
    assert.deepEqual(r.record.tags, ['x', 'y']);
    assert.equal(mapped({ 'gen_ai.conversation.id': 'conv-9' }).session, 'conv-9');
  });
  test('attributes named after Object.prototype properties are kept as metadata', () => {
    const attributes: Record<string, AttrValue> = Object.fromEntries([
      ['constructor', 'c'],
      ['toString', 1],
      ['__proto__', { polluted: 'yes' }],
      ['line\nbreak', 'l'],
    ]);
    const r = mapped(attributes);
    assert.deepEqual(
      r.record.user_metadata,
      Object.fromEntries([
        ['constructor', 'c'],
        ['toString', '1'],
        ['__proto__', '{"polluted":"yes"}'],
        ['line\nbreak', 'l'],
      ]),
    );
    assert.equal(Object.getPrototypeOf(r.record.user_metadata), Object.prototype);
  });
  test('start and duration', () => {
    const r = mapped({}).record;
    assert.equal(r.created_at, '2023-11-14T22:13:20.000Z');
    assert.equal((r.metrics as any).duration_ns, 250_000_000);
    const noEnd = mapped({}, { endNs: 0n }).record;
    assert.equal((noEnd.metrics as any).duration_ns, undefined);
  });
});

describe('otel messages', () => {
  test('gen_ai.input.messages / gen_ai.output.messages with parts and tool calls', () => {
    const r = mapped({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'Be brief.' }]),
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          parts: [{ type: 'tool_call', id: 'c1', name: 'weather', arguments: { city: 'Paris' } }],
        },
        { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: 'rainy' }] },
      ]),
      'gen_ai.output.messages': JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: 'It is rainy.' }], finish_reason: 'stop' },
      ]),
    }).record;
    assert.deepEqual(r.input, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', content: 'rainy', tool_call_id: 'c1' },
    ]);
    assert.deepEqual(r.output, { role: 'assistant', content: 'It is rainy.' });
    assert.equal(r.finish_reason, 'stop');
    assert.equal(r.user_metadata, undefined, 'message attributes are not metadata');
  });
  test('gen_ai message events and the choice event', () => {
    const r = mapped(
      { 'gen_ai.operation.name': 'chat' },
      {
        events: [
          { name: 'gen_ai.system.message', timeNs: 0n, attributes: { content: 'sys' } },
          { name: 'gen_ai.user.message', timeNs: 0n, attributes: { content: 'hello' } },
          {
            name: 'gen_ai.choice',
            timeNs: 0n,
            attributes: { finish_reason: 'stop', message: { role: 'assistant', content: 'hi there' } },
          },
        ],
      },
    ).record;
    assert.deepEqual(r.input, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hello' },
    ]);
    assert.deepEqual(r.output, { role: 'assistant', content: 'hi there' });
    assert.equal(r.finish_reason, 'stop');
  });
  test('roles and event names named after Object.prototype properties are no aliases', () => {
    const r = mapped(
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.prompt.0.role': 'constructor',
        'gen_ai.prompt.0.content': 'q',
        'gen_ai.prompt.1.role': '__proto__',
        'gen_ai.prompt.1.content': 'r',
      },
      {
        events: [
          { name: 'constructor', timeNs: 0n, attributes: { content: 'not a message' } },
          { name: 'toString', timeNs: 0n, attributes: { content: 'nor this' } },
        ],
      },
    ).record;
    assert.deepEqual(r.input, [
      { role: 'user', content: 'q' },
      { role: 'user', content: 'r' },
    ]);
    assert.equal(r.output, undefined);
  });
  test('older indexed gen_ai.prompt.N / gen_ai.completion.N attributes', () => {
    const r = mapped({
      'gen_ai.operation.name': 'chat',
      'gen_ai.prompt.0.role': 'system',
      'gen_ai.prompt.0.content': 'sys',
      'gen_ai.prompt.1.role': 'user',
      'gen_ai.prompt.1.content': 'q',
      'gen_ai.completion.0.role': 'assistant',
      'gen_ai.completion.0.content': 'a',
      'gen_ai.completion.0.tool_calls.0.name': 'lookup',
      'gen_ai.completion.0.tool_calls.0.arguments': '{}',
      'gen_ai.completion.0.tool_calls.0.id': 't1',
    }).record;
    assert.deepEqual(r.input, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q' },
    ]);
    assert.deepEqual(r.output, {
      role: 'assistant',
      content: 'a',
      tool_calls: [{ id: 't1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
    });
    assert.equal(r.user_metadata, undefined);
  });
  test('OpenInference flattened messages, contents and tool calls', () => {
    const r = mapped({
      'openinference.span.kind': 'LLM',
      'llm.input_messages.0.message.role': 'system',
      'llm.input_messages.0.message.content': 'sys',
      'llm.input_messages.1.message.role': 'user',
      'llm.input_messages.1.message.contents.0.message_content.type': 'text',
      'llm.input_messages.1.message.contents.0.message_content.text': 'part one',
      'llm.input_messages.1.message.contents.1.message_content.text': 'part two',
      'llm.output_messages.0.message.role': 'assistant',
      'llm.output_messages.0.message.tool_calls.0.tool_call.id': 'call_1',
      'llm.output_messages.0.message.tool_calls.0.tool_call.function.name': 'search',
      'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments': '{"q":"x"}',
      'input.value': '{"raw": true}',
      'output.value': 'raw out',
    }).record;
    assert.deepEqual(r.input, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'part one\npart two' },
    ]);
    assert.deepEqual(r.output, {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
    });
  });
  test('OpenInference input.value / output.value when there are no messages', () => {
    const r = mapped({
      'openinference.span.kind': 'CHAIN',
      'input.value': 'question',
      'output.value': 'answer',
    }).record;
    assert.equal(r.input, 'question');
    assert.equal(r.output, 'answer');
  });
  test('unknown roles become a known one; objects become text', () => {
    const r = mapped({
      'gen_ai.operation.name': 'chat',
      'gen_ai.input.messages': JSON.stringify([
        { role: 'human', content: { a: 1 } },
        { role: 'wizard', content: 'x' },
      ]),
      'gen_ai.output.messages': JSON.stringify([{ role: 'model', content: 'y' }]),
    }).record;
    assert.deepEqual(r.input, [
      { role: 'user', content: '{"a":1}' },
      { role: 'user', content: 'x' },
    ]);
    assert.deepEqual(r.output, { role: 'assistant', content: 'y' });
  });
  test('tool spans: call id, arguments and result', () => {
    const r = mapped({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'weather',
      'gen_ai.tool.call.id': 'c1',
      'gen_ai.tool.call.arguments': '{"city":"Paris"}',
      'gen_ai.tool.call.result': 'rainy',
    }).record;
    assert.equal(r.type, 'tool');
    assert.equal(r.tool_call_id, 'c1');
    assert.equal(r.input, '{"city":"Paris"}');
    assert.equal(r.output, 'rainy');
    assert.deepEqual(r.user_metadata, { 'gen_ai.tool.name': 'weather' });
  });
  test('retriever documents', () => {
    const r = mapped({
      'openinference.span.kind': 'RETRIEVER',
      'input.value': 'what is x',
      'retrieval.documents.0.document.id': 'd1',
      'retrieval.documents.0.document.content': 'x is y',
      'retrieval.documents.0.document.score': 0.9,
      'retrieval.documents.0.document.metadata': '{"source":"wiki","nested":{"a":1}}',
      'retrieval.documents.1.document.content': 'second',
    }).record;
    assert.equal(r.input, 'what is x');
    assert.deepEqual(r.output, [
      { content: 'x is y', metadata: { id: 'd1', score: 0.9, source: 'wiki', nested: '{"a":1}' } },
      { content: 'second', metadata: {} },
    ]);
  });
});

describe('otel traces of one export', () => {
  const ids = {
    root: 'aaaaaaaaaaaaaaaa',
    child: 'bbbbbbbbbbbbbbbb',
    grand: 'cccccccccccccccc',
    lost: 'dddddddddddddddd',
  };
  test('spans nest under their parents; a span whose parent is elsewhere is an orphan', () => {
    const spans = [
      mapped({ 'session.id': 's' }, { spanId: ids.root, name: 'root', startNs: 2_000_000n }),
      mapped({}, { spanId: ids.child, parentSpanId: ids.root, startNs: 3_000_000n }),
      mapped({}, { spanId: ids.grand, parentSpanId: ids.child, startNs: 4_000_000n }),
      mapped({}, { spanId: 'eeeeeeeeeeeeeeee', parentSpanId: ids.lost, startNs: 1_000_000n }),
    ];
    const [g] = groupTraces(spans);
    assert.equal(g.traceId, traceUuid(T));
    assert.equal(g.root?.record.name, 'root');
    assert.equal(g.top.length, 1);
    assert.equal(g.top[0].children[0].children[0].span.id, spanUuid(T, ids.grand));
    assert.equal(g.orphans.length, 1);
    assert.equal(g.session, 's');
    assert.equal(g.startUs, 1000);
    const t = traceRecord(g);
    assert.equal(t.id, traceUuid(T));
    assert.equal(t.name, 'root');
  });
  test('a trace without its root in the export carries only its id and start', () => {
    const [g] = groupTraces([mapped({}, { spanId: ids.child, parentSpanId: ids.root })]);
    assert.deepEqual(Object.keys(traceRecord(g)).sort(), ['created_at', 'id']);
  });
  test('a cycle of parents does not loop', () => {
    const [g] = groupTraces([
      mapped({}, { spanId: ids.child, parentSpanId: ids.grand }),
      mapped({}, { spanId: ids.grand, parentSpanId: ids.child }),
    ]);
    assert.equal(g.top.length + g.orphans.length >= 1, true);
  });
});

describe('otel decoding', () => {
  test('OTLP/JSON with hex ids, string int64 and enum names', () => {
    const spans = decodeJson({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc' } }] },
          scopeSpans: [
            {
              scope: { name: 'lib', version: '1' },
              spans: [
                {
                  traceId: T,
                  spanId: 'EEE19B7EC3C1B174',
                  name: 'x\u0000y',
                  kind: 'SPAN_KIND_CLIENT',
                  startTimeUnixNano: '1700000000000000123',
                  endTimeUnixNano: 1700000000000001000,
                  attributes: [
                    { key: 'i', value: { intValue: '9007199254740993' } },
                    { key: 'd', value: { doubleValue: 1.5 } },
                    { key: 'b', value: { boolValue: true } },
                    { key: 'a', value: { arrayValue: { values: [{ stringValue: 'p' }, { intValue: 2 }] } } },
                    {
                      key: 'k',
                      value: { kvlistValue: { values: [{ key: 'z', value: { stringValue: 'q' } }] } },
                    },
                  ],
                  status: { code: 2, message: 'err' },
                },
              ],
            },
          ],
        },
      ],
    });
    assert.equal(spans.length, 1);
    const s = spans[0];
    assert.equal(s.traceId, T);
    assert.equal(s.spanId, 'eee19b7ec3c1b174');
    assert.equal(s.name, 'xy', 'NUL is dropped');
    assert.equal(s.kind, 3);
    assert.equal(s.startNs, 1_700_000_000_000_000_123n);
    assert.deepEqual(s.attributes, { i: '9007199254740993', d: 1.5, b: true, a: ['p', 2], k: { z: 'q' } });
    assert.deepEqual(s.status, { code: 2, message: 'err' });
    assert.deepEqual(s.resource, { 'service.name': 'svc' });
  });
  test('OTLP/JSON attributes named `__proto__` are attributes, not prototypes', () => {
    const kv = (key: string, value: unknown) => ({ key, value });
    const spans = decodeJson({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: T,
                  spanId: 'eee19b7ec3c1b174',
                  name: 'p',
                  attributes: [
                    kv('__proto__', { kvlistValue: { values: [kv('injected', { stringValue: 'x' })] } }),
                    kv('constructor', { stringValue: 'c' }),
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
    const a = spans[0].attributes;
    assert.deepEqual(Object.keys(a), ['__proto__', 'constructor']);
    assert.equal(Object.getPrototypeOf(a), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(a, '__proto__')?.value, { injected: 'x' });
    const meta = mapSpan(spans[0]);
    assert.ok(meta.ok);
    assert.deepEqual(
      meta.span.record.user_metadata,
      Object.fromEntries([
        ['__proto__', '{"injected":"x"}'],
        ['constructor', 'c'],
      ]),
    );
  });
  test('non-OTLP JSON is refused', () => {
    assert.throws(() => decodeJson([1, 2]));
    assert.throws(() => decodeJson('x'));
    assert.throws(() => decodeJson({ resourceSpans: 'nope' }));
    assert.throws(() => decodeJson({ resourceSpans: [{ scopeSpans: [{ spans: [5] }] }] }));
    assert.deepEqual(decodeJson({}), [], 'an empty export is valid');
  });
  test('the response: empty on success, partialSuccess otherwise', () => {
    assert.deepEqual(exportResponse(0, ''), { protobuf: Buffer.alloc(0), json: {} });
    const r = exportResponse(3, 'bad ids');
    assert.deepEqual(r.json, { partialSuccess: { rejectedSpans: '3', errorMessage: 'bad ids' } });
    assert.ok(r.protobuf.length > 0);
  });
});
