/**
 * The real OpenTelemetry JS SDK against a listening Spanbase: a NodeTracerProvider with the OTLP
 * protobuf exporter (gzip, batched) sends gen_ai-style spans, another with the OTLP/JSON exporter
 * (one export per ended span, so children reach the server before their parent) sends
 * OpenInference-style spans; the spans are then found through traces, spans and sessions search.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { spanUuid, traceUuid } from '../../src/domain/otel-mapping.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

/** Wraps an exporter to keep the result code of every export (0 = success). */
function recording(inner: SpanExporter, results: number[]): SpanExporter {
  return {
    export(spans: ReadableSpan[], done) {
      inner.export(spans, (r) => {
        results.push(r.code);
        done(r);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

const child = (parent: Span): Context => trace.setSpan(ROOT_CONTEXT, parent);

for (const store of storesUnderTest()) {
  describe(`OpenTelemetry JS SDK → Spanbase [${store}]`, () => {
    let s: TestServer;
    let base: string;
    let projectId: string;
    let logStreamId: string;
    const ids = {
      genAiTrace: '',
      oiTrace: '',
      genAi: {} as Record<string, string>,
      oi: {} as Record<string, string>,
    };

    before(async () => {
      s = await startTestServer(store);
      await s.running.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(s.running.app.server.address() as AddressInfo).port}`;
      projectId = (await s.call('POST', '/v2/projects', { name: 'sdk-app' })).body.id;
    });
    after(() => s.close());

    test('gen_ai-style spans through the protobuf exporter (gzip, batched)', async () => {
      const results: number[] = [];
      const exporter = new ProtoExporter({
        url: `${base}/otel/v1/traces`,
        headers: { 'Service-API-Key': s.adminKey, project: 'sdk-app', logstream: 'sdk-stream' },
        compression: 'gzip' as any,
      });
      const provider = new NodeTracerProvider({
        resource: resourceFromAttributes({ 'service.name': 'trip-planner' }),
        spanProcessors: [new BatchSpanProcessor(recording(exporter, results))],
      });
      const tracer = provider.getTracer('gen-ai-test', '1.0.0');
      const agent = tracer.startSpan('invoke_agent planner', {
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'planner',
          'gen_ai.conversation.id': 'sdk-conv-1',
        },
      });
      const llm = tracer.startSpan(
        'chat gpt-4o-mini',
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.system': 'openai',
            'gen_ai.request.model': 'gpt-4o-mini',
            'gen_ai.request.temperature': 0.3,
            'gen_ai.conversation.id': 'sdk-conv-1',
            'gen_ai.input.messages': JSON.stringify([
              { role: 'system', parts: [{ type: 'text', content: 'You plan trips.' }] },
              { role: 'user', parts: [{ type: 'text', content: 'What should I pack for Oslo?' }] },
            ]),
          },
        },
        child(agent),
      );
      llm.setAttributes({
        'gen_ai.usage.input_tokens': 250,
        'gen_ai.usage.output_tokens': 40,
        'gen_ai.usage.cache_read.input_tokens': 200,
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: 'A warm coat.' }], finish_reason: 'stop' },
        ]),
      });
      llm.end();
      const tool = tracer.startSpan(
        'execute_tool forecast',
        {
          attributes: {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': 'forecast',
            'gen_ai.tool.call.id': 'call_42',
            'gen_ai.tool.call.arguments': '{"city":"Oslo"}',
          },
        },
        child(agent),
      );
      tool.setAttribute('gen_ai.tool.call.result', '-3°C, snow');
      tool.end();
      agent.end();
      await provider.forceFlush();
      await provider.shutdown();
      assert.ok(results.length >= 1, 'something was exported');
      assert.deepEqual(
        results.filter((c) => c !== 0),
        [],
        'every export succeeded',
      );
      ids.genAiTrace = agent.spanContext().traceId;
      ids.genAi = {
        agent: agent.spanContext().spanId,
        llm: llm.spanContext().spanId,
        tool: tool.spanContext().spanId,
      };
      const streams = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      logStreamId = streams.body.find((r: any) => r.name === 'sdk-stream')?.id;
      assert.ok(logStreamId, 'the log stream named in the headers was created');
    });

    test('OpenInference-style spans through the JSON exporter, one export per span (children first)', async () => {
      const results: number[] = [];
      const exporter = new JsonExporter({
        url: `${base}/otel/v1/traces`,
        headers: { 'Service-API-Key': s.adminKey, projectid: projectId, logstreamid: logStreamId },
      });
      const provider = new NodeTracerProvider({
        resource: resourceFromAttributes({ 'service.name': 'qa-bot' }),
        spanProcessors: [new SimpleSpanProcessor(recording(exporter, results))],
      });
      const tracer = provider.getTracer('openinference-test');
      const session = { 'session.id': 'sdk-oi-1' };
      const agent = tracer.startSpan('qa-agent', {
        attributes: { 'openinference.span.kind': 'AGENT', 'input.value': 'Who wrote Dune?', ...session },
      });
      const llm = tracer.startSpan(
        'ChatCompletion',
        {
          attributes: {
            'openinference.span.kind': 'LLM',
            'llm.model_name': 'claude-3-5-haiku',
            'llm.input_messages.0.message.role': 'user',
            'llm.input_messages.0.message.content': 'Who wrote Dune?',
            'llm.output_messages.0.message.role': 'assistant',
            'llm.output_messages.0.message.content': 'Frank Herbert.',
            'llm.token_count.prompt': 12,
            'llm.token_count.completion': 4,
            'llm.token_count.total': 16,
            'llm.token_count.prompt_details.cache_write': 9,
            ...session,
          },
        },
        child(agent),
      );
      llm.end();
      await provider.forceFlush();
      const tool = tracer.startSpan(
        'wiki_lookup',
        {
          attributes: {
            'openinference.span.kind': 'TOOL',
            'input.value': 'Dune',
            'output.value': 'novel by Frank Herbert',
            ...session,
          },
        },
        child(agent),
      );
      tool.setStatus({ code: SpanStatusCode.ERROR, message: 'rate limited' });
      tool.end();
      await provider.forceFlush();
      agent.setAttribute('output.value', 'Frank Herbert.');
      agent.end();
      await provider.forceFlush();
      await provider.shutdown();
      assert.equal(results.length, 3, 'three exports, the parent last');
      assert.deepEqual(
        results.filter((c) => c !== 0),
        [],
        'every export succeeded',
      );
      ids.oiTrace = agent.spanContext().traceId;
      ids.oi = {
        agent: agent.spanContext().spanId,
        llm: llm.spanContext().spanId,
        tool: tool.spanContext().spanId,
      };
    });

    const search = (what: string, body: Record<string, unknown>) =>
      s.call('POST', `/v2/projects/${projectId}/${what}/search`, {
        log_stream_id: logStreamId,
        limit: 100,
        ...body,
      });

    /** The search records by id. */
    const byId = (r: { body: { records: any[] } }) => new Map(r.body.records.map((x: any) => [x.id, x]));

    test('spans search finds both llm spans with model, tokens and messages', async () => {
      const r = await search('spans', {
        filters: [{ column_id: 'type', operator: 'eq', value: 'llm', type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      const found = byId(r);
      const g = found.get(spanUuid(ids.genAiTrace, ids.genAi.llm));
      assert.ok(g, 'the gen_ai llm span');
      assert.equal(g.type, 'llm');
      assert.equal(g.model, 'gpt-4o-mini');
      assert.equal(g.temperature, 0.3);
      assert.equal(g.metrics.num_input_tokens, 250);
      assert.equal(g.metrics.num_output_tokens, 40);
      assert.equal(g.metrics.num_cache_read_input_tokens, 200);
      assert.ok(g.metrics.duration_ns >= 0);
      assert.deepEqual(g.input, [
        { role: 'system', content: 'You plan trips.' },
        { role: 'user', content: 'What should I pack for Oslo?' },
      ]);
      assert.deepEqual(g.output, { role: 'assistant', content: 'A warm coat.' });
      assert.equal(g.parent_id, spanUuid(ids.genAiTrace, ids.genAi.agent));
      assert.equal(g.trace_id, traceUuid(ids.genAiTrace));
      const o = found.get(spanUuid(ids.oiTrace, ids.oi.llm));
      assert.ok(o, 'the OpenInference llm span');
      assert.equal(o.model, 'claude-3-5-haiku');
      assert.deepEqual(
        [o.metrics.num_input_tokens, o.metrics.num_output_tokens, o.metrics.num_total_tokens],
        [12, 4, 16],
      );
      assert.equal(o.metrics.num_cache_creation_input_tokens, 9);
      assert.deepEqual(o.input, [{ role: 'user', content: 'Who wrote Dune?' }]);
      assert.deepEqual(o.output, { role: 'assistant', content: 'Frank Herbert.' });
      assert.equal(
        o.trace_id,
        traceUuid(ids.oiTrace),
        'exported before its parent, it still joined its trace',
      );
      const agentId = spanUuid(ids.oiTrace, ids.oi.agent);
      assert.equal(o.parent_id, agentId, 'exported before its parent, it hangs under it');
      // Kinds of the other spans.
      const all = byId(await search('spans', {}));
      assert.equal(all.get(spanUuid(ids.genAiTrace, ids.genAi.agent))?.type, 'agent');
      assert.equal(all.get(spanUuid(ids.genAiTrace, ids.genAi.tool))?.type, 'tool');
      assert.equal(all.get(agentId)?.type, 'agent');
      assert.equal(all.get(agentId)?.has_children, true, 'the agent arrived after its children');
      const tool = all.get(spanUuid(ids.oiTrace, ids.oi.tool));
      assert.equal(tool?.type, 'tool');
      assert.equal(tool.status_code, 500);
      assert.equal(tool.error_message, 'rate limited');
      const gtool = all.get(spanUuid(ids.genAiTrace, ids.genAi.tool));
      assert.equal(gtool.tool_call_id, 'call_42');
      assert.equal(gtool.output, '-3°C, snow');
      // Filters on the mapped columns work.
      const byModel = await search('spans', {
        filters: [{ column_id: 'model', operator: 'eq', value: 'claude-3-5-haiku', type: 'text' }],
      });
      assert.deepEqual(
        byModel.body.records.map((x: any) => x.id),
        [spanUuid(ids.oiTrace, ids.oi.llm)],
      );
    });

    test('traces search finds both traces, named after their roots, with summed tokens', async () => {
      const r = await search('traces', { include_counts: true });
      assert.equal(r.status, 200, r.text);
      const found = byId(r);
      const g = found.get(traceUuid(ids.genAiTrace));
      const o = found.get(traceUuid(ids.oiTrace));
      assert.ok(g && o, r.text);
      assert.equal(g.name, 'invoke_agent planner');
      assert.equal(g.metrics.num_input_tokens, 250);
      assert.equal(g.metrics.num_output_tokens, 40);
      assert.equal(g.num_spans, 3);
      assert.equal(o.name, 'qa-agent', 'the root arrived last and named the trace');
      assert.equal(o.input, 'Who wrote Dune?');
      assert.equal(o.output, 'Frank Herbert.');
      assert.equal(o.metrics.num_input_tokens, 12);
      const text = await search('traces', {
        filters: [{ column_id: 'input', operator: 'contains', value: 'Dune', type: 'text' }],
      });
      assert.deepEqual(
        text.body.records.map((x: any) => x.id),
        [traceUuid(ids.oiTrace)],
      );
    });

    test('sessions search finds the sessions named by gen_ai.conversation.id and session.id', async () => {
      for (const [external, traceHex, tokens] of [
        ['sdk-conv-1', ids.genAiTrace, 250],
        ['sdk-oi-1', ids.oiTrace, 12],
      ] as const) {
        const r = await search('sessions', {
          filters: [{ column_id: 'external_id', operator: 'eq', value: external, type: 'text' }],
          include_counts: true,
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.records.length, 1, `${external}: ${r.text}`);
        const session = r.body.records[0];
        assert.equal(session.external_id, external);
        assert.equal(session.num_traces, 1);
        assert.equal(session.metrics.num_input_tokens, tokens, 'the session sums its traces');
        const t = await search('traces', {
          filters: [{ column_id: 'id', operator: 'eq', value: traceUuid(traceHex), type: 'id' }],
        });
        assert.equal(t.status, 200, t.text);
        assert.deepEqual(
          t.body.records.map((x: any) => x.session_id),
          [session.id],
        );
      }
    });

    test('search records carry the full record: model, metrics, messages', async () => {
      const r = await search('spans', {
        filters: [{ column_id: 'model', operator: 'eq', value: 'gpt-4o-mini', type: 'text' }],
      });
      const [g] = r.body.records;
      assert.equal(g.model, 'gpt-4o-mini');
      assert.equal(g.metrics.num_input_tokens, 250);
      assert.deepEqual(g.output, { role: 'assistant', content: 'A warm coat.' });
    });
  });
}
