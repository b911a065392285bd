/**
 * The official client (npm `galileo`), unchanged, enables metrics on its log stream, with a preset
 * (`GalileoMetrics.correctness`) and with a custom LLM metric (`createCustomLlmMetric`); the traces it
 * logs then come back scored by Spanbase's judges (the fake provider answers).
 * See test/api/galileo-client.test.ts for how the client is pointed at a test server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  GalileoMetrics,
  createCustomLlmMetric,
  disableLogging,
  enableMetrics,
  getLogger,
  init,
  resetAll,
} from 'galileo';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { pointClientAt } from '../helpers/galileo-client.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`official galileo client: enableMetrics → scored traces [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let restoreClient = () => {};
    const project = `client-scored-${store}`;
    const stream = 'scored-stream';

    before(async () => {
      s = await startTestServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_JOB_POLL_MS: '20',
        SPANBASE_MODEL_RETRY_BASE_MS: '1',
      });
      restoreClient = await pointClientAt(s, { GALILEO_PROJECT: project, GALILEO_LOG_STREAM: stream });
      fake = await startFakeProvider();
      // Every judge says yes, with a reason.
      fake.reply = () => '{"explanation": "The reply answers the question.", "rating": true}';
      disableLogging();
      // The client's user holds an integration (enabling metrics keeps it for the run's judges).
      const r = await s.call('PUT', '/v2/integrations/example_gateway', {
        endpoint: fake.url,
        use_case: 'chat',
        token: 'tok',
      });
      assert.equal(r.status, 200, r.text);
    });
    after(async () => {
      await resetAll();
      restoreClient();
      await fake?.close();
      await s?.close();
    });

    test('a preset and a custom LLM metric enabled by the client score the traces it logs', async () => {
      await init({});
      const custom = `politeness_${store}`;
      await createCustomLlmMetric({
        name: custom,
        userPrompt: 'Is the reply polite?',
        modelName: 'fake-model',
        numJudges: 2,
      } as any);
      await enableMetrics({
        projectName: project,
        logStreamName: stream,
        metrics: [GalileoMetrics.correctness, custom],
      });
      const logger = getLogger();
      logger.startTrace({ input: 'Where is my order?', name: 'turn' });
      logger.addLlmSpan({
        input: [{ role: 'user', content: 'Where is my order?' }],
        output: { role: 'assistant', content: 'It shipped on Monday.' },
        model: 'gpt-4o',
        name: 'answer',
      } as any);
      logger.conclude({ output: 'It shipped on Monday.' });
      const [trace] = await logger.flush();
      assert.ok(trace?.id, 'the trace was sent');

      const projectId = (await s.call('GET', `/v2/projects?project_name=${project}`)).body[0].id;
      const until = Date.now() + 8000;
      let t: any;
      for (;;) {
        t = (await s.call('GET', `/v2/projects/${projectId}/traces/${trace.id}`)).body;
        const span = t.spans?.[0];
        const done = (x: any) => x?.status_type === 'success';
        if (
          done(t.metric_info?.correctness) &&
          done(span?.metric_info?.correctness) &&
          done(span?.metric_info?.[custom])
        )
          break;
        if (Date.now() > until)
          assert.fail(JSON.stringify({ trace: t.metric_info, span: span?.metric_info }));
        await new Promise((r) => setTimeout(r, 25));
      }
      const span = t.spans[0];
      assert.equal(t.metrics.correctness, 1);
      assert.equal(span.metrics.correctness, 1);
      assert.equal(span.metrics[custom], 1);
      assert.equal(span.metric_info[custom].num_judges, 2);
      assert.equal(span.metric_info[custom].explanation, 'The reply answers the question.');
      // The custom metric's user prompt was sent with the record it judges.
      const asked = fake.requests.find((r) => JSON.stringify(r.body).includes('Is the reply polite?'));
      assert.match(asked?.body.messages.at(-1).content, /It shipped on Monday/);
    });
  });
}
