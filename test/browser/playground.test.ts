/**
 * The playground in Debian's Chromium against a real server and the fake provider, on each store:
 * an integration and model picked, system and user messages with {{variables}} filled, the reply
 * streamed in with its tokens, cost and latency and the raw exchange; then the spend shows beside the
 * log stream's token usage. Screenshots land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type ConsoleServer, screenshot, startConsoleServer, openSignedIn } from '../helpers/browser.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { storesUnderTest } from '../helpers/server.ts';

const TIMEOUT = 15_000;

for (const store of storesUnderTest()) {
  describe(`playground in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let fake: FakeProvider;
    let browser: Browser;
    let page: Page;
    let errors: string[];
    let projectId: string;
    let logStreamId: string;

    before(async () => {
      s = await startConsoleServer(store, { SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1' });
      fake = await startFakeProvider();
      const gw = await s.call('PUT', '/v2/integrations/example_gateway', {
        endpoint: fake.url,
        use_case: 'chat',
        token: 'sk-browser-test-token-0123456789',
      });
      assert.equal(gw.status, 200, gw.text);
      const p = await s.call('POST', '/v2/projects', { name: 'playground project' });
      projectId = p.body.id;
      logStreamId = (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'default' })).body
        .id;
      ({ browser, page, errors } = await openSignedIn(s, { width: 1280, height: 860 }, TIMEOUT));
    });
    after(async () => {
      await browser?.close();
      await fake?.close();
      await s?.close();
    });

    test('a prompt with variables runs, streams its reply, and shows tokens, cost, latency and the raw exchange', async () => {
      await page.goto(`${s.url}/projects/${projectId}`);
      await page.getByRole('link', { name: 'Playground' }).click();
      await page.getByRole('heading', { name: 'Playground' }).waitFor();
      await page.getByLabel('Model').fill('gpt-4o-mini');
      await page.getByLabel('System message').fill('You write about {{topic}}.');
      await page.getByLabel('User message').fill('Say something about {{topic}} for {{reader.name}}');
      await page.getByLabel('{{topic}}', { exact: true }).fill('owls');
      await page.getByLabel('{{reader.name}}', { exact: true }).fill('Ada');
      await screenshot(page, 'playground-filled');
      await page.getByRole('button', { name: 'Run' }).click();
      const result = page.locator('section[aria-label="Reply"][data-done="true"]');
      await result.waitFor();
      assert.equal(await page.locator('.playground-reply').innerText(), 'Say something about owls for Ada');
      assert.equal(await page.locator('[data-kind="tokens_out"] dd').innerText(), '6');
      assert.match(await page.locator('[data-kind="cost"] dd').innerText(), /^\$0\.\d+/);
      assert.match(await page.locator('[data-kind="latency"] dd').innerText(), /^\d+ ms$/);
      await page.getByText('Raw request').click();
      await page.getByText('Raw response').click();
      const raw = await page.locator('.playground-raw').allInnerTexts();
      assert.match(raw[0], /POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
      assert.match(raw[0], /You write about owls\./);
      assert.match(raw[1], /^200/);
      assert.ok(!raw.join('').includes('sk-browser-test-token'));
      // The provider saw the rendered messages, streamed.
      const req = fake.requests.at(-1)!;
      assert.equal(req.body.stream, true);
      assert.equal(req.body.messages[1].content, 'Say something about owls for Ada');
      await screenshot(page, 'playground-result');
      assert.deepEqual(errors, []);
    });

    test('the spend shows beside the log stream’s token usage', async () => {
      await page.goto(`${s.url}/projects/${projectId}/log_streams/${logStreamId}/token_usage`);
      const row = page.locator('table.model-spend tr[data-purpose="playground"]');
      await row.waitFor();
      const cells = await row.locator('td').allInnerTexts();
      assert.equal(cells[1], 'playground');
      assert.equal(cells[2], '1');
      assert.match(cells[6], /^\$0\.0000\d[1-9]/, 'a small cost is not shown as $0');
      await screenshot(page, 'token-usage-with-model-spend');
      assert.deepEqual(errors, []);
    });

    test('a dataset row fills the variables of the same names, dotted ones from an object column', async () => {
      const ds = await s.call('POST', '/v2/datasets', {
        name: 'readers',
        project_id: projectId,
        rows: [
          { topic: 'owls', reader: { name: 'Ada' } },
          { topic: 'bees', reader: { name: 'Grace' } },
        ],
      });
      assert.equal(ds.status, 200, ds.text);
      await page.goto(`${s.url}/projects/${projectId}/playground`);
      await page.getByRole('heading', { name: 'Playground' }).waitFor();
      await page.getByLabel('Model').fill('gpt-4o-mini');
      await page.getByLabel('User message').fill('Tell {{reader.name}} about {{topic}} in {{style}}');
      await page.getByLabel('Fill from dataset').selectOption({ label: 'readers' });
      const row = page.getByLabel('Row');
      await row.locator('option', { hasText: 'Grace' }).waitFor({ state: 'attached' });
      await row.selectOption({ index: 2 });
      assert.equal(await page.getByLabel('{{topic}}', { exact: true }).inputValue(), 'bees');
      assert.equal(await page.getByLabel('{{reader.name}}', { exact: true }).inputValue(), 'Grace');
      assert.equal(
        await page.locator('.playground-row-picker [role="status"]').innerText(),
        'Row 2 filled 2 of 3 variables; no column for {{style}}',
      );
      await page.getByLabel('{{style}}', { exact: true }).fill('verse');
      await screenshot(page, `${store}-playground-dataset-row`);
      await page.getByRole('button', { name: 'Run' }).click();
      await page.locator('section[aria-label="Reply"][data-done="true"]').waitFor();
      assert.equal(fake.requests.at(-1)!.body.messages.at(-1).content, 'Tell Grace about bees in verse');
      assert.deepEqual(errors, []);
    });
  });
}
