/**
 * Scores in the console, in Chromium against a real server and the fake provider, on each store: an
 * LLM judge enabled on a log stream scores a trace, and the trace view shows the score with the
 * judges' explanation and votes (one abstaining); the scorers page's judge editor previews a draft
 * on a record: the rendered prompt, each judge's raw answer and the parsed score. Screenshots land in
 * SHOT_DIR.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type ConsoleServer, screenshot, startConsoleServer, openSignedIn } from '../helpers/browser.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { storesUnderTest } from '../helpers/server.ts';

const TIMEOUT = 15_000;

for (const store of storesUnderTest()) {
  describe(`scores in the trace view [${store}]`, () => {
    let s: ConsoleServer;
    let fake: FakeProvider;
    let browser: Browser;
    let page: Page;
    let errors: string[];

    before(async () => {
      s = await startConsoleServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_JOB_POLL_MS: '20',
      });
      fake = await startFakeProvider();
      let n = 0;
      fake.reply = () =>
        n++ % 3 === 2 ? 'no idea' : '{"explanation": "The answer names the right city.", "rating": true}';
      const gw = await s.call('PUT', '/v2/integrations/example_gateway', {
        endpoint: fake.url,
        use_case: 'chat',
        token: 'sk-browser-test-token-0123456789',
      });
      assert.equal(gw.status, 200, gw.text);
      ({ browser, page, errors } = await openSignedIn(s, { width: 1280, height: 900 }, TIMEOUT));
    });
    after(async () => {
      await browser?.close();
      await fake?.close();
      await s?.close();
    });

    test('a judged trace shows its score, explanation and votes', async () => {
      const P = (await s.call('POST', '/v2/projects', { name: 'scored project' })).body.id;
      const LS = (await s.call('POST', `/v2/projects/${P}/log_streams`, { name: 'default' })).body.id;
      const sc = (await s.call('POST', '/v2/scorers', { name: 'right_city', scorer_type: 'llm' })).body;
      const v = await s.call('POST', `/v2/scorers/${sc.id}/version/llm`, {
        model_name: 'fake-model',
        num_judges: 3,
        scoreable_node_types: ['trace'],
        chain_poll_template: { template: 'Q: {{input}}\nA: {{output}}\nIs the city right?' },
      });
      assert.equal(v.status, 200, v.text);
      const on = await s.call('POST', `/v2/projects/${P}/runs/${LS}/scorer-settings`, {
        scorers: [{ id: sc.id, scorer_type: 'llm' }],
      });
      assert.equal(on.status, 200, on.text);
      const traceId = crypto.randomUUID();
      await s.call('POST', `/v2/projects/${P}/traces`, {
        log_stream_id: LS,
        traces: [{ id: traceId, name: 'chat', input: 'Capital of France?', output: 'Paris', spans: [] }],
      });
      const until = Date.now() + 8000;
      for (;;) {
        const t = await s.call('GET', `/v2/projects/${P}/traces/${traceId}`);
        if (t.body.metric_info?.right_city?.status_type === 'success') break;
        if (Date.now() > until) assert.fail(JSON.stringify(t.body.metric_info));
        await new Promise((r) => setTimeout(r, 25));
      }
      await page.goto(`${s.url}/projects/${P}/log_streams/${LS}/traces/${traceId}`);
      const score = page.locator('[data-scorer="right_city"]');
      await score.waitFor();
      assert.match(await score.innerText(), /success/);
      // Two judges said yes and one abstained: the share of yes among the votes cast.
      assert.match(await score.innerText(), /success\s+1\s/);
      assert.match(await score.innerText(), /The answer names the right city\./);
      await score.locator('summary').click();
      assert.match(await score.innerText(), /3 judges, 1 abstained/);
      assert.match(await score.innerText(), /abstained: the answer is not a JSON object/);
      await score.scrollIntoViewIfNeeded();
      await screenshot(page, 'trace-scores');
      assert.deepEqual(errors, []);
    });

    test('the judge editor previews a draft: rendered prompt, raw answers, parsed score', async () => {
      const P = (await s.call('POST', '/v2/projects', { name: 'preview project' })).body.id;
      const LS = (await s.call('POST', `/v2/projects/${P}/log_streams`, { name: 'default' })).body.id;
      const spanId = crypto.randomUUID();
      await s.call('POST', `/v2/projects/${P}/traces`, {
        log_stream_id: LS,
        traces: [
          {
            id: crypto.randomUUID(),
            name: 'chat',
            input: 'Capital of Italy?',
            output: 'Rome',
            spans: [{ id: spanId, type: 'llm', name: 'model', input: 'Capital of Italy?', output: 'Rome' }],
          },
        ],
      });
      await page.goto(`${s.url}/scorers`);
      await page.getByRole('cell', { name: 'correctness', exact: true }).waitFor();
      const form = page.locator('form.judge-editor');
      await form.getByLabel('Name').fill('capital_check');
      await form
        .getByLabel(/^Template/)
        .fill('City: {{output}}\nIs this the capital asked for in: {{input}}?');
      await form.getByLabel('Model').fill('fake-model');
      await form.getByLabel('Project').selectOption({ label: 'preview project' });
      await form.getByLabel(/Record ids/).fill(spanId);
      await form.getByRole('button', { name: 'Preview' }).click();
      const result = page.locator(`.preview-result[data-record="${spanId}"]`);
      await result.waitFor();
      assert.equal(
        await result.locator('.rendered-prompt').innerText(),
        'City: Rome\nIs this the capital asked for in: Capital of Italy??',
      );
      assert.equal(await result.locator('.raw-answer').count(), 3);
      assert.match(
        await result.locator('.judge-answers').innerText(),
        /abstained: the answer is not a JSON object/,
      );
      assert.match(await result.locator('.raw-answer').first().innerText(), /"rating": true|no idea/);
      assert.equal(await result.locator('.preview-score').innerText(), '1');
      await screenshot(page, 'judge-preview');
      // Nothing was stored on the record.
      const span = await s.call('GET', `/v2/projects/${P}/spans/${spanId}`);
      assert.equal(span.body.metrics.capital_check, undefined);
      assert.deepEqual(errors, []);
    });
  });
}
