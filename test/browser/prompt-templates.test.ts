/**
 * The prompt template pages in Debian's Chromium against a real server, on each store: an editor
 * creates a template from the list page, saves a new version with an edited line and another model,
 * and sees the two versions side by side with the edited line marked, the changes in the version
 * list, and the new version selected; selecting the first version again moves the mark; a viewer
 * sees the versions without the controls to change them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import {
  type ConsoleServer,
  launchChromium,
  screenshot,
  signIn,
  startConsoleServer,
  watchErrors,
} from '../helpers/browser.ts';
import { storesUnderTest } from '../helpers/server.ts';

const TIMEOUT = 15_000;

for (const store of storesUnderTest()) {
  describe(`console prompt templates in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let browser: Browser;
    let projectId: string;
    let viewer: { email: string; password: string };

    before(async () => {
      s = await startConsoleServer(store);
      browser = await launchChromium();
      const p = await s.call('POST', '/v2/projects', { name: `prompts-${store}` });
      projectId = p.body.id;
      const u = await s.user();
      await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: u.id, role: 'viewer' });
      viewer = u;
      const ds = await s.call('POST', '/v2/datasets', {
        name: 'questions',
        project_id: projectId,
        rows: [{ input: { question: 'Where is my order?' } }, { input: '{"question": "Can I pay later?"}' }],
      });
      assert.equal(ds.status, 200, ds.text);
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    async function open(who: { email: string; password: string }, url: string) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(TIMEOUT);
      const page = await context.newPage();
      const errors = watchErrors(page);
      await page.goto(url);
      await signIn(page, who.email, who.password);
      await page.waitForURL((u) => u.pathname === new URL(url).pathname);
      return { page, errors, close: () => context.close() };
    }

    test('create a template, save a new version, see the diff, select a version', async () => {
      const { page, errors, close } = await open(s.admin, `${s.url}/projects/${projectId}/templates`);
      try {
        await page.getByText('No prompt templates yet.').waitFor();
        const form = page.locator('form[aria-labelledby="new-template"]');
        await form.getByLabel('Name').fill('support answer');
        await form.getByLabel('Template').fill('You help with orders.\nBe brief.\nQuestion: {{question}}');
        await form.getByLabel('Model').fill('gpt-4o');
        await form.getByRole('button', { name: 'Create template' }).click();
        await page.getByRole('heading', { name: 'support answer' }).waitFor();
        await page.getByText('selected: v0').waitFor();

        const next = page.locator('form[aria-labelledby="new-version"]');
        await next
          .getByLabel('Template')
          .fill('You help with orders.\nBe kind.\nQuestion: {{question}}\nAnswer in English.');
        await next.getByLabel('Model').fill('gpt-4o-mini');
        await next.getByRole('button', { name: 'Save as new version' }).click();
        await page.getByText('selected: v1').waitFor();

        const diff = page.getByRole('table', { name: 'Version 0 against version 1' });
        await diff.waitFor();
        const kinds = await diff
          .locator('tbody tr')
          .evaluateAll((rows) =>
            rows.map((r) => [
              r.getAttribute('data-kind'),
              ...[...r.querySelectorAll('td')].map((td) => td.textContent),
            ]),
          );
        assert.deepEqual(kinds, [
          ['same', 'You help with orders.', 'You help with orders.'],
          ['edited', 'Be brief.', 'Be kind.'],
          ['same', 'Question: {{question}}', 'Question: {{question}}'],
          ['added', '', 'Answer in English.'],
        ]);
        const modelRow = page
          .getByRole('table', { name: 'Settings' })
          .getByRole('row', { name: /model_alias/ });
        assert.match((await modelRow.textContent()) ?? '', /"gpt-4o".*"gpt-4o-mini"/);
        const versions = page.locator('table.versions tbody tr');
        assert.equal(await versions.count(), 2);
        assert.match((await versions.nth(0).textContent()) ?? '', /v1\+1 ~1 −0 lines · model.*Selected/);
        assert.match((await versions.nth(1).textContent()) ?? '', /v0no change/);

        // The variables of the compared version render with a warning for the missing one.
        const preview = page.locator('form[aria-labelledby="preview"]');
        await preview.getByLabel('Variables (JSON)').fill('{"other": 1}');
        await preview.getByRole('button', { name: 'Render', exact: true }).click();
        await preview.getByText("Variable 'question' has no value").waitFor();
        // A dataset's rows fill the variables (the keys of each row's input).
        await preview.getByLabel("Or a dataset's first rows").selectOption({ label: 'questions' });
        await preview.getByRole('button', { name: 'Render rows' }).click();
        await preview.getByText('Question: Where is my order?').waitFor();
        await preview.getByText('Question: Can I pay later?').waitFor();
        await screenshot(page, `${store}-prompt-template-diff`);

        await page.getByRole('button', { name: 'Select v0' }).click();
        await page.getByText('selected: v0').waitFor();
        assert.match((await versions.nth(1).textContent()) ?? '', /Selected/);
        const api = await s.call('GET', `/v2/projects/${projectId}/templates`);
        assert.equal(api.body[0].selected_version.version, 0);

        await page.goto(`${s.url}/projects/${projectId}/templates`);
        await page.getByRole('link', { name: 'support answer' }).waitFor();
        await screenshot(page, `${store}-prompt-templates`);
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });

    test('a viewer sees the versions and the diff, without controls to change them', async () => {
      const list = await s.call('GET', `/v2/projects/${projectId}/templates`);
      const { page, errors, close } = await open(
        viewer,
        `${s.url}/projects/${projectId}/templates/${list.body[0].id}`,
      );
      try {
        await page.locator('main[data-project-role="viewer"]').waitFor();
        await page.getByRole('table', { name: /against version/ }).waitFor();
        assert.equal(await page.getByRole('button', { name: /^Select v/ }).count(), 0);
        assert.equal(await page.locator('form[aria-labelledby="new-version"]').count(), 0);
        await page.goto(`${s.url}/projects/${projectId}/templates`);
        await page.getByRole('link', { name: 'support answer' }).waitFor();
        assert.equal(await page.locator('form[aria-labelledby="new-template"]').count(), 0);
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  });
}
