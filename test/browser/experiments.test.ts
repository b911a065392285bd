/**
 * Experiments in Debian's Chromium against a real server and the fake provider, on each store: an
 * experiment started from the console's form runs to completion (the progress bar polled), a second
 * one over the same dataset with another template version is started through the API, and the
 * comparison aligns their rows: input, ground truth, each output and score, differences marked, and
 * a cell one click from its trace. Screenshots land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  type ConsoleServer,
  assertFitsPhone,
  screenshot,
  startConsoleServer,
  openSignedIn,
} from '../helpers/browser.ts';
import { type World, experimentWorld, newExperiment, ok, startJob, waitJob } from '../helpers/experiments.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { type TestServer, storesUnderTest } from '../helpers/server.ts';

const TIMEOUT = 15_000;

for (const store of storesUnderTest()) {
  describe(`experiments in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let fake: FakeProvider;
    let browser: Browser;
    let page: Page;
    let errors: string[];
    let w: World;

    before(async () => {
      s = await startConsoleServer(store, { SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1' });
      fake = await startFakeProvider();
      w = await experimentWorld(s as unknown as TestServer, fake, 4, `b${store}`);
      ({ browser, page, errors } = await openSignedIn(s, { width: 1280, height: 860 }, TIMEOUT));
    });
    after(async () => {
      await browser?.close();
      await fake?.close();
      await s?.close();
    });

    test('an experiment started from the console completes; two compare row by row', async () => {
      await page.goto(`${s.url}/projects/${w.P}`);
      await page.getByRole('link', { name: 'Experiments' }).click();
      await page.getByRole('heading', { name: 'Experiments', level: 1 }).waitFor();
      await page.getByText('No experiments yet.').waitFor();
      await page.getByLabel('Name', { exact: true }).fill('first');
      await page.getByLabel('Model').fill('fake-model');
      await page.getByLabel('Concurrency').fill('1');
      await page.getByRole('checkbox', { name: w.scorer.name }).check();
      await screenshot(page, 'experiments-new');
      // Slow rows (4 × 400 ms, one at a time): the list shows the job's progress bar while it runs.
      fake.delayMs = 400;
      await page.getByRole('button', { name: 'Start experiment' }).click();
      const first = page.locator('tr[data-experiment="first"]');
      await first.locator('progress').waitFor();
      await screenshot(page, 'experiments-running');
      fake.delayMs = 0;
      // Completed through the page's polling, with the scorer's average (3 of 4 rows match).
      await first.getByText('completed').waitFor({ timeout: 20_000 });
      await first.locator(`[data-score="${w.scorer.name}"]`).waitFor({ timeout: 20_000 });
      assert.match(await first.locator(`[data-score="${w.scorer.name}"]`).innerText(), /0\.75/);
      assert.match(await first.innerText(), /fake-model/);

      // A second experiment over the same dataset, another template version: every output differs.
      const t2 = await ok(s as unknown as TestServer, 'POST', `/v2/projects/${w.P}/templates`, {
        name: `other-${store}`,
        template: [{ role: 'user', content: 'Other: {{question}}' }],
      });
      const second = await newExperiment(s as unknown as TestServer, w, 'second');
      await waitJob(
        s as unknown as TestServer,
        (
          await startJob(s as unknown as TestServer, w, second, {
            prompt_template_version_id: t2.selected_version_id,
          })
        ).job_id,
      );
      await page.reload();
      await page.locator('tr[data-experiment="second"]').getByText('completed').waitFor();
      await page.getByRole('checkbox', { name: 'Select first' }).check();
      await page.getByRole('checkbox', { name: 'Select second' }).check();
      await screenshot(page, 'experiments-list');
      await assertFitsPhone(page, 'experiments-list');
      await page.getByRole('button', { name: /Compare 2 selected/ }).click();
      await page.getByRole('heading', { name: 'Comparison' }).waitFor();
      const rows = page.locator('table.exp-compare tbody tr');
      await rows.first().waitFor();
      assert.equal(await rows.count(), 4);
      const row0 = page.locator('tr[data-row="0"]');
      assert.match(await row0.innerText(), /q0/);
      assert.equal(
        (await row0.locator('[data-experiment="first"] .exp-output').innerText()).trim(),
        'Answer: q0',
      );
      assert.equal(
        (await row0.locator('[data-experiment="second"] .exp-output').innerText()).trim(),
        'Other: q0',
      );
      assert.match(
        await row0.locator(`[data-experiment="first"] [data-score="${w.scorer.name}"]`).innerText(),
        /1$/,
      );
      assert.match(
        await row0.locator(`[data-experiment="second"] [data-score="${w.scorer.name}"]`).innerText(),
        /0$/,
      );
      assert.ok(await row0.evaluate((el) => el.classList.contains('exp-differs')));
      await page.getByLabel('Sort by difference in').selectOption(w.scorer.name);
      // Rows 0-2 differ by 1 (first matches, second not); row 3 (wrong ground truth) by 0: last.
      const until = Date.now() + TIMEOUT;
      while ((await rows.last().getAttribute('data-row')) !== '3' || !page.url().includes('sort=')) {
        assert.ok(Date.now() < until, 'the sorted rows never came');
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(await rows.count(), 4);
      await screenshot(page, 'experiments-compare');
      await assertFitsPhone(page, 'experiments-compare');
      await row0.locator('[data-experiment="first"] a').click();
      await page.waitForURL(/\/experiments\/[^/]+\/traces\/[^/]+$/);
      assert.deepEqual(errors, []);
    });
  });
}
