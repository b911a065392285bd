/**
 * Signals and alerts in Debian's Chromium against a real server, on each store: "Run now" finds the
 * errors of a log stream, a signal opens and its occurrence leads to its trace; an alert rule is
 * created with the preview of its metric and the threshold drawn on it; a webhook is added and its
 * secret shown once. Screenshots land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
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
import { insertRecords } from '../property/support.ts';

const TIMEOUT = 15_000;
const MIN_US = 60e6;

for (const store of storesUnderTest()) {
  describe(`Signals and alerts in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let browser: Browser;
    let page: Page;
    let errors: string[];
    let projectId: string;
    let logStreamId: string;
    let traceId: string;
    const api = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      return r.body;
    };

    before(async () => {
      s = await startConsoleServer(store, { SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1' });
      const p = await api('POST', '/v2/projects', { name: 'signals-console' });
      const ls = await api('POST', `/v2/projects/${p.id}/log_streams`, { name: 'prod' });
      projectId = p.id;
      logStreamId = ls.id;
      // A trace whose tool span failed, and an hour of traces with durations for the alert preview.
      const now = Date.now() * 1000;
      traceId = randomUUID();
      await insertRecords(s.running.services.store, projectId, logStreamId, [
        { id: traceId, type: 'trace', name: 'checkout', trace_id: traceId, created_at: now - 5 * MIN_US },
        {
          type: 'tool',
          name: 'payment-tool',
          trace_id: traceId,
          parent_id: traceId,
          status_code: 503,
          created_at: now - 5 * MIN_US + 1000,
        },
        ...Array.from({ length: 24 }, (_, i) => ({
          type: 'trace',
          name: 'answer',
          created_at: now - (i * 60 + 30) * MIN_US,
          duration_ns: (i % 6 === 0 ? 4000 : 800) * 1e6,
        })),
      ]);
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      context.setDefaultTimeout(TIMEOUT);
      page = await context.newPage();
      errors = watchErrors(page);
      await page.goto(`${s.url}/projects/${projectId}/log_streams/${logStreamId}/signals`);
      await signIn(page, s.admin.email, s.admin.password);
      await page.waitForURL((u) => u.pathname.endsWith('/signals'));
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test('Run now finds the failed span; the signal opens and its occurrence leads to the trace', async () => {
      await page.getByText('No Signals run yet.').waitFor();
      await page.getByRole('button', { name: 'Run now' }).click();
      const signal = page.locator('li.signal', { hasText: "Errors 503 in 'payment-tool'" });
      await signal.waitFor();
      await page.locator('table.signal-runs td', { hasText: 'succeeded' }).waitFor();
      await signal.locator('summary').click();
      await signal.getByRole('button', { name: 'Resolve' }).waitFor();
      await screenshot(page, `${store}-signals-page`);
      await signal.getByRole('link', { name: /^tool / }).click();
      await page.waitForURL((u) => u.pathname.includes('/spans/'));
      await page.getByText('payment-tool').first().waitFor();
      await screenshot(page, `${store}-signals-occurrence-trace`);

      await page.goBack();
      const again = page.locator('li.signal', { hasText: "Errors 503 in 'payment-tool'" });
      await again.locator('summary').click();
      await again.getByRole('button', { name: 'Resolve' }).click();
      await again.waitFor({ state: 'detached' });
      const left = await api('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals?status=resolved`);
      assert.equal(left.signals.length, 1);
    });

    test('an alert rule is created with the preview of its metric and the threshold drawn on it', async () => {
      await page.goto(`${s.url}/projects/${projectId}/log_streams/${logStreamId}/alerts`);
      await page.getByRole('button', { name: 'New alert rule' }).click();
      await page.getByLabel('Name').fill('slow answers');
      await page.getByLabel('Aggregation').selectOption('Max');
      await page.getByLabel('Metric').fill('duration_ns');
      await page.getByLabel('Threshold').fill('2000000000');
      const chart = page.locator('.alert-preview svg');
      // A horizontal line has no height: attached, not "visible" to playwright.
      await chart.locator('line.threshold').waitFor({ state: 'attached' });
      assert.ok(
        (await chart.locator('circle.holding').count()) >= 3,
        'the slow windows are drawn as holding',
      );
      await page.getByText(/Would have held in \d+ of 24 windows/).waitFor();
      await screenshot(page, `${store}-alerts-preview`);
      await page.getByRole('button', { name: 'Create alert rule' }).click();
      const row = page.locator('tr', { hasText: 'slow answers' });
      await row.waitFor();
      const rules = await api('GET', `/v2/projects/${projectId}/log_streams/${logStreamId}/alerts`);
      assert.equal(rules.alerts[0].threshold, 2e9);
      assert.equal(rules.alerts[0].aggregation, 'Max');
      await row.getByRole('button', { name: 'History' }).click();
      await page.getByText('It has not fired.').waitFor();
      await screenshot(page, `${store}-alerts-list`);
    });

    test('a webhook is added with its secret shown once, and its deliveries open', async () => {
      await page.goto(`${s.url}/projects/${projectId}/webhooks`);
      await page.getByLabel('URL').fill('http://127.0.0.1:9/hook');
      await page.getByRole('button', { name: 'Add webhook' }).click();
      const secret = await page.getByTestId('webhook-secret').innerText();
      assert.ok(secret.length >= 20);
      const row = page.locator('tr', { hasText: '127.0.0.1:9/hook' });
      await row.getByRole('button', { name: 'Deliveries' }).click();
      await page.getByText('Nothing sent yet.').waitFor();
      await screenshot(page, `${store}-webhooks`);
      assert.deepEqual(errors, []);
    });
  });
}
