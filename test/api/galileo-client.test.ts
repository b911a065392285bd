/**
 * The hosted service's official TypeScript client (npm `galileo`), unchanged, against a listening
 * Spanbase: GALILEO_API_URL points at /v2 on loopback, GALILEO_API_KEY is a Spanbase API key. The
 * client initialises (health check, API-key login, project and log stream by name, created when
 * missing), starts a session, logs traces with llm, tool and retriever spans, flushes, and reads them
 * back with its own search calls.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createLogStream,
  disableLogging,
  getLogStream,
  getLogStreams,
  getProject,
  getProjects,
  getLogger,
  getSessions,
  getSpans,
  getTraces,
  init,
  resetAll,
} from 'galileo';
import { pointClientAt } from '../helpers/galileo-client.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`official galileo client → Spanbase [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    let restoreClient = () => {};
    const project = `client-app-${store}`;
    const stream = 'client-stream';
    const ids: { traces: string[]; session: string } = { traces: [], session: '' };

    before(async () => {
      s = await startTestServer(store);
      restoreClient = await pointClientAt(s, { GALILEO_PROJECT: project, GALILEO_LOG_STREAM: stream });
      disableLogging();
    });
    after(async () => {
      await resetAll();
      restoreClient();
      await s.close();
    });

    test('init creates the project and log stream, starts a session; flush logs the traces', async () => {
      await init({ startNewSession: true, sessionName: 'support chat', externalId: `ext-${store}` });
      const logger = getLogger();
      ids.session = logger.currentSessionId() as string;
      assert.match(ids.session ?? '', /^[0-9a-f-]{36}$/, 'the session was created');

      logger.startTrace({
        input: 'Where is my order?',
        name: 'support-turn',
        tags: ['support'],
        metadata: { customer: 'c-1' },
      });
      logger.addRetrieverSpan({
        input: 'order 7 status',
        output: [{ content: 'Order 7 shipped on Monday', metadata: { source: 'orders-db', rank: 1 } }] as any,
        name: 'kb-search',
      });
      logger.addToolSpan({
        input: '{"order": 7}',
        output: 'shipped',
        name: 'lookup_order',
        toolCallId: 'call_7',
      });
      logger.addLlmSpan({
        input: [
          { role: 'system', content: 'You help with orders.' },
          { role: 'user', content: 'Where is my order?' },
        ],
        output: { role: 'assistant', content: 'Your order shipped on Monday.' },
        model: 'gpt-4o',
        name: 'answer',
        numInputTokens: 30,
        numOutputTokens: 8,
        totalTokens: 38,
        temperature: 0.2,
      } as any);
      logger.conclude({ output: 'Your order shipped on Monday.' });

      logger.startTrace({ input: 'Thanks!', name: 'support-turn-2' });
      logger.addLlmSpan({
        input: [{ role: 'user', content: 'Thanks!' }],
        output: { role: 'assistant', content: 'You are welcome.' },
        model: 'gpt-4o-mini',
        numInputTokens: 5,
        numOutputTokens: 4,
      } as any);
      logger.conclude({ output: 'You are welcome.' });

      const flushed = await logger.flush();
      assert.equal(
        flushed.length,
        2,
        'flush reports both traces sent (it returns [] when the upload failed)',
      );
      ids.traces = flushed.map((t: any) => t.id);

      const projects = await s.call('GET', `/v2/projects?project_name=${project}`);
      assert.equal(projects.body.length, 1, 'the client created the project');
      projectId = projects.body[0].id;
      const streams = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      logStreamId = streams.body.find((r: any) => r.name === stream)?.id;
      assert.ok(logStreamId, 'the client created the log stream');
    });

    test('getTraces finds both traces of the session', async () => {
      const r: any = await getTraces({ projectId, logStreamId, limit: 10 } as any);
      const names = r.records.map((x: any) => x.name).sort();
      assert.deepEqual(names, ['support-turn', 'support-turn-2']);
      for (const t of r.records) assert.equal(t.sessionId, ids.session);
      assert.deepEqual(r.records.map((x: any) => x.id).sort(), [...ids.traces].sort());
      const first = r.records.find((x: any) => x.name === 'support-turn');
      assert.equal(first.input, 'Where is my order?');
      assert.equal(first.output, 'Your order shipped on Monday.');
      assert.deepEqual(first.tags, ['support']);
      assert.equal(first.userMetadata.customer, 'c-1');
      assert.equal(first.metrics.numInputTokens, 30, 'the trace sums the tokens of its llm spans');
      assert.equal(first.metrics.numOutputTokens, 8);
      const one: any = await getTraces({
        projectId,
        logStreamId,
        filters: [{ columnId: 'name', operator: 'eq', value: 'support-turn-2', type: 'text' }],
      } as any);
      assert.deepEqual(
        one.records.map((x: any) => x.name),
        ['support-turn-2'],
      );
    });

    test('getSpans finds the llm, tool and retriever spans with their fields', async () => {
      const r: any = await getSpans({ projectId, logStreamId, limit: 100 } as any);
      const types = r.records.map((x: any) => x.type).sort();
      assert.deepEqual(types, ['llm', 'llm', 'retriever', 'tool']);
      const llms: any = await getSpans({
        projectId,
        logStreamId,
        filters: [{ columnId: 'type', operator: 'eq', value: 'llm', type: 'text' }],
        sort: { columnId: 'created_at', ascending: true },
      } as any);
      assert.equal(llms.records.length, 2);
      const answer = llms.records.find((x: any) => x.name === 'answer');
      assert.ok(answer);
      // The client's search records carry the full record (it camel-cases keys, nested ones too).
      assert.equal(answer.model, 'gpt-4o');
      assert.equal(answer.temperature, 0.2);
      assert.equal(answer.metrics.numInputTokens, 30);
      assert.equal(answer.metrics.numOutputTokens, 8);
      assert.equal(answer.metrics.numTotalTokens, 38);
      assert.deepEqual(answer.input, [
        { role: 'system', content: 'You help with orders.' },
        { role: 'user', content: 'Where is my order?' },
      ]);
      assert.deepEqual(answer.output, { role: 'assistant', content: 'Your order shipped on Monday.' });
      assert.ok(ids.traces.includes(answer.traceId), answer.traceId);
      assert.equal(answer.sessionId, ids.session);
      const other = llms.records.find((x: any) => x.name !== 'answer');
      assert.equal(other.model, 'gpt-4o-mini');
      assert.deepEqual([other.metrics.numInputTokens, other.metrics.numOutputTokens], [5, 4]);
      const retriever = r.records.find((x: any) => x.type === 'retriever');
      assert.deepEqual(
        retriever.output,
        [{ pageContent: 'Order 7 shipped on Monday', metadata: { source: 'orders-db', rank: 1 } }],
        'documents sent as {content, metadata}',
      );
      const tool = r.records.find((x: any) => x.type === 'tool');
      assert.equal(tool.toolCallId, 'call_7');
      assert.equal(tool.output, 'shipped');
    });

    test('getSessions finds the session by its external id; starting it again reuses it', async () => {
      const r: any = await getSessions({
        projectId,
        logStreamId,
        filters: [{ columnId: 'external_id', operator: 'eq', value: `ext-${store}`, type: 'text' }],
      } as any);
      assert.equal(r.records.length, 1);
      assert.equal(r.records[0].id, ids.session);
      assert.equal(r.records[0].metrics.numInputTokens, 35, 'the session sums the tokens of its traces');
      assert.equal(r.records[0].metrics.numOutputTokens, 12);
      const back = await s.call('GET', `/v2/projects/${projectId}/sessions/${ids.session}`);
      assert.equal(back.body.traces.length, 2, 'the read-back route answers the session with its traces');
      const again = await getLogger().startSession({ externalId: `ext-${store}` });
      assert.equal(again, ids.session, 'the client found the session by external id');
    });

    test('project and log stream calls: getProjects, getProject, getLogStreams, getLogStream, createLogStream', async () => {
      const all: any[] = await getProjects();
      assert.ok(
        all.some((p) => p.id === projectId && p.name === project),
        JSON.stringify(all),
      );
      const byName: any = await getProject({ name: project } as any);
      assert.equal(byName.id, projectId);
      const byId: any = await getProject({ projectId } as any);
      assert.equal(byId.name, project);
      const streams: any[] = await (getLogStreams as any)({ projectName: project });
      assert.ok(streams.some((r) => r.id === logStreamId));
      const one: any = await (getLogStream as any)({ name: stream, projectName: project });
      assert.equal(one.id, logStreamId);
      const made: any = await (createLogStream as any)('client-made', project);
      assert.equal(made.name, 'client-made');
      const again = await s.call('GET', `/v2/projects/${projectId}/log_streams`);
      assert.ok(again.body.some((r: any) => r.id === made.id));
    });

    test('streaming mode: each trace and span is sent as it is made, then updated on conclude', async () => {
      // The log stream exists by now (the batch logger made it): in streaming mode the client
      // initialises from several tasks at once, which race to create a missing project or log stream.
      const logger = getLogger({ logstream: stream, mode: 'streaming' });
      const trace = logger.startTrace({ input: 'stream me', name: 'streamed-turn' });
      logger.addWorkflowSpan({ input: 'plan', name: 'planner' });
      logger.addLlmSpan({
        input: [{ role: 'user', content: 'stream me' }],
        output: { role: 'assistant', content: 'streamed' },
        model: 'gpt-4o-mini',
        numInputTokens: 3,
        numOutputTokens: 1,
      } as any);
      logger.conclude({ output: 'planned' });
      logger.conclude({ output: 'done streaming' });
      await logger.terminate();
      const t = await s.call('GET', `/v2/projects/${projectId}/traces/${trace.id}`);
      assert.equal(t.status, 200, t.text);
      assert.equal(t.body.name, 'streamed-turn');
      assert.equal(t.body.output, 'done streaming', 'the trace was updated on conclude');
      assert.equal(t.body.spans.length, 1);
      const workflow = t.body.spans[0];
      assert.equal(workflow.type, 'workflow');
      assert.equal(workflow.output, 'planned');
      assert.equal(workflow.spans[0].type, 'llm');
      assert.equal(workflow.spans[0].model, 'gpt-4o-mini');
      assert.equal(t.body.metrics.num_input_tokens, 3);
    });
  });
}
