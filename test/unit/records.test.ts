import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from '../../src/domain/errors.ts';
import {
  MAX_SPAN_DEPTH,
  parsePatch,
  parseSpansRequest,
  parseTracesRequest,
} from '../../src/domain/ingest.ts';
import { type StoredRecord, decodeIo, encodeIo, recordToApi } from '../../src/domain/records.ts';

const LS = '00000000-0000-4000-8000-000000000001';
const NOW = Date.UTC(2024, 0, 1) * 1000;

function errorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ValidationError, String(err));
    return err.items;
  }
  assert.fail('expected a ValidationError');
}

const message = fc.record(
  {
    role: fc.constantFrom('user', 'assistant', 'system', 'tool'),
    content: fc.oneof(fc.string(), fc.constant(null)),
    tool_call_id: fc.string(),
  },
  { requiredKeys: ['role', 'content'] },
);
const document = fc.record({ page_content: fc.string(), metadata: fc.dictionary(fc.string(), fc.string()) });
const io = fc.oneof(
  fc.string(),
  message,
  fc.array(fc.oneof(message, document, fc.string()), { maxLength: 6 }),
);

describe('input/output storage', () => {
  test('text and skeleton give back exactly what was stored (property)', () => {
    fc.assert(
      fc.property(io, (value) => {
        const { text, skeleton } = encodeIo(value as any);
        assert.deepEqual(
          decodeIo(text, JSON.parse(JSON.stringify(skeleton ?? null))),
          JSON.parse(JSON.stringify(value)),
        );
      }),
      { numRuns: 500 },
    );
  });

  test('the flattened text is the contents joined by newlines, stored once', () => {
    const v = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello' },
    ];
    const { text, skeleton } = encodeIo(v);
    assert.equal(text, 'be brief\nhello');
    assert.ok(!JSON.stringify(skeleton).includes('hello'));
    assert.deepEqual(encodeIo('plain'), { text: 'plain', skeleton: undefined });
    assert.deepEqual(encodeIo(null), { text: null, skeleton: undefined });
  });
});

describe('normalising ingest bodies', () => {
  const trace = (spans: unknown[] = [], extra = {}) => ({ name: 't', input: 'in', spans, ...extra });

  test('nested spans become rows with parents, trace ids and child counts', () => {
    const r = parseTracesRequest(
      {
        log_stream_id: LS,
        traces: [
          trace([
            {
              type: 'workflow',
              spans: [{ type: 'llm', input: [{ role: 'user', content: 'q' }] }, { type: 'tool' }],
            },
            { type: 'retriever', output: [{ content: 'd', metadata: { a: 1 } }] },
          ]),
        ],
      },
      {},
      NOW,
    );
    assert.equal(r.traces, 1);
    assert.deepEqual(
      r.records.map((x) => x.row.type),
      ['trace', 'workflow', 'llm', 'tool', 'retriever'],
    );
    const [t, wf, llm, tool, ret] = r.records.map((x) => x.row);
    assert.equal(t.trace_id, t.id);
    assert.equal(t.parent_id, null);
    assert.equal(wf.parent_id, t.id);
    assert.equal(llm.parent_id, wf.id);
    assert.equal(tool.trace_id, t.id);
    assert.equal(ret.parent_id, t.id);
    assert.equal(ret.output_text, 'd');
    // Documents sent as {content} are kept as {page_content}.
    assert.deepEqual(JSON.parse(ret.body as string).out, [{ page_content: 1, metadata: { a: 1 } }]);
    assert.equal(r.records[0].children, 2);
    assert.equal(r.records[1].children, 2);
  });

  test('faults are reported with their exact loc, all of them', () => {
    const items = errorsOf(() =>
      parseTracesRequest(
        {
          log_stream_id: LS,
          traces: [
            trace([
              { type: 'llm', id: 'nope' },
              { type: 'tool', name: 5, metrics: { num_input_tokens: 1.5, latency: 'x' } },
              { type: 'bogus' },
            ]),
          ],
        },
        {},
        NOW,
      ),
    );
    const got = items.map((i) => [JSON.stringify(i.loc), i.type]);
    assert.deepEqual(got, [
      ['["body","traces",0,"spans",0,"id"]', 'uuid_parsing'],
      ['["body","traces",0,"spans",1,"name"]', 'string_type'],
      ['["body","traces",0,"spans",1,"metrics","num_input_tokens"]', 'int_type'],
      ['["body","traces",0,"spans",1,"metrics","latency"]', 'float_type'],
      ['["body","traces",0,"spans",2,"type"]', 'enum'],
    ]);
  });

  test('target rules: exactly one of log_stream_id and experiment_id', () => {
    let items = errorsOf(() => parseTracesRequest({ traces: [trace()] }, {}, NOW));
    assert.deepEqual(items[0].loc, ['body']);
    assert.equal(items[0].type, 'value_error');
    items = errorsOf(() =>
      parseTracesRequest({ log_stream_id: LS, experiment_id: LS, traces: [trace()] }, {}, NOW),
    );
    assert.equal(items[0].type, 'value_error');
    // Repeated as a query parameter, as the hosted client does.
    const r = parseTracesRequest({ traces: [trace()] }, { log_stream_id: LS }, NOW);
    assert.equal(r.target.log_stream_id, LS);
  });

  test(`spans nest at most ${MAX_SPAN_DEPTH} levels`, () => {
    const nest = (depth: number): any => (depth === 0 ? [] : [{ type: 'workflow', spans: nest(depth - 1) }]);
    assert.equal(
      parseTracesRequest({ log_stream_id: LS, traces: [trace(nest(MAX_SPAN_DEPTH))] }, {}, NOW).records
        .length,
      65,
    );
    const items = errorsOf(() =>
      parseTracesRequest({ log_stream_id: LS, traces: [trace(nest(MAX_SPAN_DEPTH + 1))] }, {}, NOW),
    );
    assert.equal(items.length, 1);
    assert.equal(items[0].type, 'value_error');
    assert.equal(items[0].loc.filter((x) => x === 'spans').length, MAX_SPAN_DEPTH + 1);
  });

  test('ids: duplicates, a trace_id or parent_id that contradicts the nesting', () => {
    const id = '00000000-0000-4000-8000-0000000000aa';
    let items = errorsOf(() =>
      parseTracesRequest(
        {
          log_stream_id: LS,
          traces: [
            trace([
              { type: 'tool', id },
              { type: 'tool', id },
            ]),
          ],
        },
        {},
        NOW,
      ),
    );
    assert.deepEqual(items[0].loc, ['body', 'traces', 0, 'spans', 1, 'id']);
    items = errorsOf(() =>
      parseTracesRequest({ log_stream_id: LS, traces: [trace([{ type: 'tool', parent_id: id }])] }, {}, NOW),
    );
    assert.deepEqual(items[0].loc, ['body', 'traces', 0, 'spans', 0, 'parent_id']);
    items = errorsOf(() =>
      parseTracesRequest({ log_stream_id: LS, traces: [trace([{ type: 'tool', trace_id: id }])] }, {}, NOW),
    );
    assert.deepEqual(items[0].loc, ['body', 'traces', 0, 'spans', 0, 'trace_id']);
  });

  test('llm token totals default to input + output', () => {
    const r = parseTracesRequest(
      {
        log_stream_id: LS,
        traces: [trace([{ type: 'llm', metrics: { num_input_tokens: 3, num_output_tokens: 4 } }])],
      },
      {},
      NOW,
    );
    assert.equal(r.records[1].row.num_total_tokens, 7);
  });

  test('spans and patch bodies', () => {
    const t = '00000000-0000-4000-8000-0000000000bb';
    const r = parseSpansRequest(
      { log_stream_id: LS, trace_id: t, parent_id: t, spans: [{ type: 'http' }] },
      {},
      NOW,
    );
    assert.equal(r.records[0].row.parent_id, t);
    const items = errorsOf(() => parseSpansRequest({ log_stream_id: LS, spans: [] }, {}, NOW));
    assert.deepEqual(
      items.map((i) => i.loc.join('.')),
      ['body.trace_id', 'body.parent_id', 'body.spans'],
    );
    const p = parsePatch({ output: 'x', tags: ['a'], duration_ns: 5, status_code: 200 });
    assert.deepEqual(p.raw, { output: 'x', tags: ['a'], duration_ns: 5, status_code: 200 });
    assert.deepEqual(errorsOf(() => parsePatch({ duration_ns: -1 }))[0].loc, ['body', 'duration_ns']);
  });

  test('recordToApi maps a stored row back to the client shape', () => {
    const r = parseTracesRequest(
      {
        log_stream_id: LS,
        traces: [
          trace([
            {
              type: 'llm',
              model: 'm',
              temperature: 0.5,
              input: [{ role: 'user', content: 'hi' }],
              output: { role: 'assistant', content: 'yo' },
              metrics: { num_input_tokens: 1, latency_ms: 2.5 },
              user_metadata: { k: 'v' },
              created_at: '2024-05-01T10:00:00.123456Z',
            },
          ]),
        ],
      },
      {},
      NOW,
    );
    const row = { ...r.records[1].row, project_id: LS, run_id: LS } as unknown as StoredRecord;
    const api = recordToApi(row);
    assert.deepEqual(api.input, [{ role: 'user', content: 'hi' }]);
    assert.deepEqual(api.output, { role: 'assistant', content: 'yo' });
    assert.equal(api.model, 'm');
    assert.equal(api.temperature, 0.5);
    assert.deepEqual(api.metrics, { num_input_tokens: 1, num_total_tokens: 1, latency_ms: 2.5 });
    assert.deepEqual(api.user_metadata, { k: 'v' });
    assert.equal(api.created_at, '2024-05-01T10:00:00.123456Z');
    assert.equal(api.type, 'llm');
  });
});
