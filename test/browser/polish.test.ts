/**
 * Everyday polish of the console (issue 36), in Chromium against a real server, on each store: one
 * money formatter (a tiny cost is never $0, axis ticks stay distinct), the dashboards list and
 * toolbars, the trace view's keyboard, axis and header, the tables' labels and error marks, the
 * filter builder, the messages, and no react-router warning on a direct load. One server and one
 * browser per store; screenshots land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { formatCost } from '../../web/src/lib/format.ts';
import {
  type ConsoleServer,
  launchChromium,
  screenshot,
  signIn,
  startConsoleServer,
  watchErrors,
} from '../helpers/browser.ts';
import { type ConsoleWorld, seedConsoleWorld } from '../helpers/console-data.ts';
import { storesUnderTest } from '../helpers/server.ts';

type Json = Record<string, any>;
const TIMEOUT = 15_000;
const ms = (n: number) => n * 1_000_000;

/**
 * A log stream of one trace sent without a duration, in a session without a name: a workflow and an
 * llm call of one input token (a cost of a few millionths of a dollar).
 */
function tinyTrace(at: number) {
  const t = (offset: number) => new Date(at + offset).toISOString();
  return {
    id: crypto.randomUUID(),
    name: 'tiny',
    created_at: t(0),
    input: 'Is my tiny order late?',
    output: 'No.',
    spans: [
      {
        type: 'workflow',
        name: 'answer',
        created_at: t(0),
        input: 'Is my tiny order late?',
        output: 'No.',
        metrics: { duration_ns: ms(900) },
        spans: [
          {
            type: 'llm',
            name: 'ask',
            model: 'gpt-4o',
            created_at: t(100),
            input: [{ role: 'user', content: 'Is my tiny order late?' }],
            output: { role: 'assistant', content: 'No.' },
            metrics: { duration_ns: ms(700), num_input_tokens: 1, num_output_tokens: 0 },
          },
        ],
      },
    ],
  };
}

for (const store of storesUnderTest()) {
  describe(`console polish in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let w: ConsoleWorld;
    let browser: Browser;
    let page: Page;
    let errors: string[];
    const warnings: string[] = [];
    let tiny: { logStreamId: string; traceId: string; sessionId: string; base: string };
    let base: string;
    const api = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      return r.body;
    };

    before(async () => {
      s = await startConsoleServer(store);
      w = await seedConsoleWorld((m, u, b) => s.call(m, u, b));
      base = `/projects/${w.projectId}/log_streams/${w.logStreamId}`;
      const P = `/v2/projects/${w.projectId}`;
      const ls = await api('POST', `${P}/log_streams`, { name: 'tiny' });
      const sessionId = crypto.randomUUID();
      const trace = tinyTrace(Date.now() - 60_000);
      await api('POST', `${P}/traces`, {
        log_stream_id: ls.id,
        sessions: [{ id: sessionId, external_id: 'ticket-77' }],
        session_id: sessionId,
        traces: [trace],
      });
      tiny = {
        logStreamId: ls.id,
        traceId: trace.id,
        sessionId,
        base: `/projects/${w.projectId}/log_streams/${ls.id}`,
      };
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      context.setDefaultTimeout(TIMEOUT);
      page = await context.newPage();
      errors = watchErrors(page);
      page.on('console', (m) => {
        if (m.type() === 'warning') warnings.push(m.text());
      });
      await page.goto(`${s.url}/`);
      await signIn(page, s.admin.email, s.admin.password);
      await page.getByRole('heading', { name: 'Projects' }).waitFor();
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test('a tiny cost is never $0: the number widget and the token usage page, with distinct axis ticks', async () => {
      const trends = `/v2/projects/${w.projectId}/log_streams/${tiny.logStreamId}/trends`;
      const d = await api('PUT', trends, {});
      await api('POST', `${trends}/${d.id}/widgets`, {
        name: 'Spend',
        type: 'number',
        metric: 'metrics/cost',
        aggregation: 'Sum',
      });
      const total = (await api('POST', `${trends}/${d.id}/query`, {})).widgets[0].series[0].total;
      assert.ok(total > 0 && total < 0.0001, `a few millionths of a dollar: ${total}`);
      // A direct load of a page loaded on demand: no react-router warning (HydrateFallback).
      await page.goto(`${s.url}${tiny.base}/dashboards/${d.id}`);
      const figure = page.locator('output.figure');
      await figure.waitFor();
      await page.locator('.dashboard[data-data-ready="true"]').waitFor();
      assert.equal(await figure.innerText(), formatCost(total));
      assert.notEqual(await figure.innerText(), '$0');
      await screenshot(page, `${store}-polish-tiny-cost`);
      assert.deepEqual(
        warnings.filter((m) => /HydrateFallback/.test(m)),
        [],
      );

      await page.goto(`${s.url}${tiny.base}/token_usage`);
      const costChart = page.getByRole('img', { name: /Cost in dollars per day/ });
      await page.locator('.chart[data-drawn="true"][data-y-ticks]').nth(1).waitFor();
      const ticks: string[] = JSON.parse((await costChart.getAttribute('data-y-ticks')) ?? '[]');
      assert.ok(ticks.length >= 2, `ticks: ${ticks}`);
      assert.equal(new Set(ticks).size, ticks.length, `distinct ticks: ${ticks}`);
      assert.ok(
        ticks.every((t) => t.startsWith('$')),
        `dollars: ${ticks}`,
      );
      const shownTotal = page.locator('[data-kind="cost"] dd');
      assert.equal(await shownTotal.innerText(), formatCost(Number(await page.locator('[data-kind="cost"]').getAttribute('data-value'))));
      await screenshot(page, `${store}-polish-token-usage`);
      assert.deepEqual(errors, []);
    });

    test('the dashboards list: a styled Default badge and star, a visible Delete after a cancelled delete', async () => {
      const trends = `/v2/projects/${w.projectId}/log_streams/${w.logStreamId}/trends`;
      await api('PUT', trends, {});
      // A direct load of the list (its stylesheet must come with it, not with a dashboard page).
      await page.goto(`${s.url}${base}/dashboards`);
      const row = page.locator('table.dashboards tbody tr').first();
      const badge = row.locator('.badge');
      await badge.waitFor();
      const look = (sel: string, props: string[]) =>
        row
          .locator(sel)
          .first()
          .evaluate((el, ps) => {
            const cs = getComputedStyle(el);
            return Object.fromEntries(ps.map((p) => [p, cs.getPropertyValue(p)]));
          }, props);
      const b = await look('.badge', ['margin-left', 'border-top-left-radius', 'background-color']);
      assert.notEqual(b['margin-left'], '0px', 'the badge stands apart from the name');
      assert.notEqual(b['background-color'], 'rgba(0, 0, 0, 0)', 'the badge has its pill');
      const star = await look('.star', ['border-top-width', 'background-color']);
      assert.deepEqual(star, { 'border-top-width': '0px', 'background-color': 'rgba(0, 0, 0, 0)' });
      // Cancel a delete: the button keeps readable (red) text on no fill.
      page.once('dialog', (dl) => dl.dismiss());
      const del = row.getByRole('button', { name: /^Delete/ });
      await del.click();
      const colours = await del.evaluate((el) => {
        const cs = getComputedStyle(el);
        return { color: cs.color, background: cs.backgroundColor };
      });
      assert.notEqual(colours.color, 'rgb(255, 255, 255)', `delete text: ${JSON.stringify(colours)}`);
      await screenshot(page, `${store}-polish-dashboards`);
      assert.equal(await page.locator('table.dashboards tbody tr').count() > 0, true);
    });

    test('a custom range keeps the toolbar’s buttons on its first line', async () => {
      await page.setViewportSize({ width: 1000, height: 800 });
      try {
        await page.goto(`${s.url}${base}/traces`);
        await page.getByLabel('Time range').first().selectOption('custom');
        await page.getByLabel('From').waitFor();
        const top = (name: string) =>
          page
            .getByRole('button', { name, exact: true })
            .evaluate((el) => Math.round(el.getBoundingClientRect().top));
        const first = await top('Search');
        assert.deepEqual([await top('Filters'), await top('Refresh')], [first, first]);
        await screenshot(page, `${store}-polish-custom-range`);
      } finally {
        await page.setViewportSize({ width: 1280, height: 860 });
      }
    });

    test('an unknown console address shows the console’s not-found page', async () => {
      const r = await page.goto(`${s.url}/no-such-page/here`);
      assert.equal(r?.status(), 404);
      await page.getByRole('heading', { name: 'Page not found' }).waitFor();
      await screenshot(page, `${store}-polish-not-found`);
    });
  });
}
