/**
 * The datasets console in Debian's Chromium against a real server, on each store: upload a CSV (with
 * its progress bar) and see its rows, edit a row (a new version), and see the diff of two versions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
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
  describe(`datasets console in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let browser: Browser;
    let page: Page;
    let errors: string[];

    before(async () => {
      s = await startConsoleServer(store);
      await s.call('POST', '/v2/projects', { name: `evals-${store}` });
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.setDefaultTimeout(TIMEOUT);
      errors = watchErrors(page);
      await page.goto(`${s.url}/login?next=/datasets`);
      await signIn(page, s.admin.email, s.admin.password);
      await page.waitForURL(/\/datasets$/);
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test('upload a CSV and see its rows', async () => {
      const csv = [
        'input,output,metadata',
        '"What is the capital of France?",Paris,geo',
        '"2 + 2, please",4,math',
        '"Who wrote ""Hamlet""?",Shakespeare,books',
      ].join('\n');
      await page
        .getByLabel('File')
        .setInputFiles({ name: 'quiz.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
      await page.getByLabel('Name').fill('quiz');
      await page.getByLabel('Used in project').selectOption({ label: `evals-${store}` });
      await screenshot(page, `datasets-upload-${store}`);
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.waitForURL(/\/datasets\/[0-9a-f-]{36}$/);
      const table = page.getByRole('table').first();
      await table.getByRole('cell', { name: 'Who wrote "Hamlet"?' }).waitFor();
      const cells = await table.locator('tbody tr td.cell-text').allInnerTexts();
      assert.deepEqual(cells, [
        'What is the capital of France?',
        'Paris',
        'geo',
        '2 + 2, please',
        '4',
        'math',
        'Who wrote "Hamlet"?',
        'Shakespeare',
        'books',
      ]);
      await page.getByText('3 rows · version 1 · used in 1 project').waitFor();
      await screenshot(page, `dataset-rows-${store}`);
    });

    test('edit a row: a new version, and the diff between the two', async () => {
      await page.getByRole('button', { name: 'Edit row 2' }).click();
      const form = page.getByRole('form', { name: 'Edit row 2' });
      await form.getByLabel('output').fill('four');
      await screenshot(page, `dataset-edit-${store}`);
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('cell', { name: 'four', exact: true }).waitFor();
      await page.getByText('3 rows · version 2').waitFor();
      await page.getByLabel('From version').selectOption('1');
      await page.getByLabel('To version').selectOption('2');
      await page.getByRole('button', { name: 'Compare' }).click();
      const diff = page.getByLabel('Changes from version 1 to version 2');
      await diff.getByText('0 added, 0 removed, 1 edited').waitFor();
      assert.match(await diff.locator('.diff-changed').innerText(), /output: 4 → four/);
      // Version 1 still reads as it was.
      await page.getByLabel('Version shown').selectOption('1');
      await page.getByRole('cell', { name: '4', exact: true }).waitFor();
      await screenshot(page, `dataset-versions-${store}`);
      assert.deepEqual(errors, []);
    });
  });
}
