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
import { quickSearchTree } from '../../web/src/lib/list-view.ts';
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
// The page's globals, in functions that run in the browser (the tests compile without the DOM lib).
declare const document: any;
declare function getComputedStyle(el: unknown): any;
const TIMEOUT = 15_000;
const ms = (n: number) => n * 1_000_000;

/** A trace with no error of its own whose llm span failed. */
function failedSpanTrace(at: number) {
  const t = tinyTrace(at);
  const llm = t.spans[0].spans[0] as Record<string, unknown>;
  Object.assign(llm, { status_code: 502, error_message: 'Bad gateway' });
  return { ...t, id: crypto.randomUUID(), name: 'flaky', metrics: { duration_ns: ms(900) } };
}

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
    let tiny: { logStreamId: string; traceId: string; flakyId: string; sessionId: string; base: string };
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
      const flaky = failedSpanTrace(Date.now() - 120_000);
      await api('POST', `${P}/traces`, {
        log_stream_id: ls.id,
        sessions: [{ id: sessionId, external_id: 'ticket-77' }],
        session_id: sessionId,
        traces: [trace],
      });
      await api('POST', `${P}/traces`, { log_stream_id: ls.id, traces: [flaky] });
      tiny = {
        logStreamId: ls.id,
        traceId: trace.id,
        flakyId: flaky.id,
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
      assert.equal(
        await shownTotal.innerText(),
        formatCost(Number(await page.locator('[data-kind="cost"]').getAttribute('data-value'))),
      );
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
      assert.equal((await page.locator('table.dashboards tbody tr').count()) > 0, true);
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

    test('an unknown project in a console URL shows one message', async () => {
      const unknown = crypto.randomUUID();
      await page.goto(`${s.url}/projects/${unknown}/log_streams/${crypto.randomUUID()}/traces`);
      await page.getByRole('heading', { name: 'Project not found' }).waitFor();
      assert.equal(await page.locator('.error-note').count(), 0, 'no other error beside it');
      await screenshot(page, `${store}-polish-unknown-project`);
      errors.length = 0; // the refused requests of that page are logged by the browser
    });

    test('trace view: Home then Left keeps the focus in the tree; the header and axis read cleanly', async () => {
      await page.setViewportSize({ width: 1000, height: 800 });
      try {
        await page.goto(`${s.url}${tiny.base}/traces/${tiny.traceId}`);
        const tree = page.getByRole('tree');
        await page.getByRole('treeitem', { name: /ask/ }).click();
        await page.keyboard.press('Home');
        await page.getByRole('treeitem', { name: /tiny/, selected: true }).waitFor();
        await page.keyboard.press('ArrowLeft');
        await page.waitForFunction(() => document.querySelectorAll('[role="treeitem"]').length === 1);
        assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('role')), 'tree');
        await page.keyboard.press('ArrowRight');
        await page.waitForFunction(() => document.querySelectorAll('[role="treeitem"]').length === 3);
        await page.keyboard.press('ArrowDown');
        await page.getByRole('treeitem', { name: /answer/, selected: true }).waitFor();
        assert.ok(await tree.evaluate((el) => el === document.activeElement));

        // Sent without a duration: the trace's runs from its start to its last span's end (900 ms).
        const head = await page.locator('.page-head .muted').innerText();
        assert.match(head, /^900 ms · 1 tokens · \$[\d.]+ · 2 spans$/);
        const rootRow = page.getByRole('treeitem', { name: /tiny/ });
        assert.match(await rootRow.innerText(), /900 ms/);
        // Axis labels never overlap.
        const boxes = await page
          .locator('.tree-head .axis span')
          .evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => [r.left, r.right]));
        for (let i = 1; i < boxes.length; i++)
          assert.ok(boxes[i][0] >= boxes[i - 1][1], `axis labels overlap: ${JSON.stringify(boxes)}`);
        await screenshot(page, `${store}-polish-trace`);

        await page.goto(`${s.url}${tiny.base}/sessions/${tiny.sessionId}`);
        await page.locator('.turn').first().waitFor();
        const texts = [
          await page.locator('.page-head .muted').innerText(),
          ...(await page.locator('.turn-head .muted').allInnerTexts()),
        ];
        for (const t of texts) assert.doesNotMatch(t, /·\s*·|^\s*·|·\s*$/, `an empty separator: ${t}`);
        await screenshot(page, `${store}-polish-session`);
      } finally {
        await page.setViewportSize({ width: 1280, height: 860 });
      }
      assert.deepEqual(errors, []);
    });

    test('tables: an unnamed session by its external id and first input; a failed span marks its trace', async () => {
      await page.goto(`${s.url}${tiny.base}/sessions`);
      const table = page.locator('table.records');
      await table.locator('tbody tr').first().waitFor();
      const heads = (await table.locator('thead th').allTextContents()).map((h) =>
        h.replace(/[▲▼↕]/g, '').trim(),
      );
      assert.ok(heads.includes('External ID'), `headings: ${heads}`);
      const row = table.locator('tbody tr').first();
      assert.match(await row.innerText(), /Is my tiny order late\?[\s\S]*ticket-77/);

      await page.goto(`${s.url}${tiny.base}/traces`);
      const flaky = table.locator('tbody tr').filter({ has: page.locator(`a[href*="${tiny.flakyId}"]`) });
      await flaky.getByRole('img', { name: 'error' }).waitFor();
      assert.match(await flaky.locator('.status.bad').innerText(), /502/);
      const fine = table.locator('tbody tr').filter({ has: page.locator(`a[href*="${tiny.traceId}"]`) });
      assert.equal(await fine.getByRole('img', { name: 'error' }).count(), 0);
      await screenshot(page, `${store}-polish-traces-table`);

      // The record panel's metrics and the JSON viewer read as labels.
      await page.goto(`${s.url}${tiny.base}/traces/${tiny.flakyId}`);
      await page.getByRole('treeitem', { name: /ask/ }).click();
      const metrics = page.locator('.panel section[aria-labelledby="metrics-title"] dt');
      await page.waitForFunction(() =>
        [...document.querySelectorAll('.panel section[aria-labelledby="metrics-title"] dt')].some(
          (d) => d.textContent === 'Input tokens',
        ),
      );
      const names = await metrics.allTextContents();
      assert.ok(!names.some((n) => /_/.test(n)), `raw metric names: ${names}`);
      assert.deepEqual(errors, []);
    });

    test('filter builder: no "fully annotated" on a table, durations in ms, Match case off, a refused filter once', async () => {
      await page.goto(`${s.url}${base}/traces`);
      await page.getByRole('button', { name: /^Filters/ }).click();
      await page.getByRole('button', { name: '+ Condition' }).click();
      const kinds = await page.getByLabel('Filter kind').locator('option').allInnerTexts();
      assert.ok(!kinds.includes('fully annotated'), `kinds: ${kinds}`);
      assert.equal(await page.getByRole('checkbox', { name: 'Match case' }).isChecked(), false);
      // Longer than 30 s, typed in the milliseconds the table shows: the two failed traces (30.4 s).
      await page.getByLabel('Column').selectOption('metrics/duration_ns');
      await page.getByLabel('Operator').selectOption('gt');
      await page.getByLabel('Value (ms)').fill('30000');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.waitForFunction(() => document.querySelectorAll('table.records tbody tr').length === 2);
      const sent = JSON.parse(new URL(page.url()).searchParams.get('filter') ?? 'null');
      assert.equal(JSON.stringify(sent).includes('30000000000'), true, JSON.stringify(sent));

      // A filter the API refuses (fully_annotated, written as JSON) shows its error once, alone.
      await page.getByRole('button', { name: 'Edit as JSON' }).click();
      await page.locator('.filter-builder textarea').fill('{"filter":{"type":"fully_annotated"}}');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await page.locator('.error-note').waitFor();
      assert.equal(await page.getByText(/fully_annotated filter only works/).count(), 1);
      assert.equal(await page.getByText(/No traces match/).count(), 0);
      assert.equal(await page.locator('table.records').count(), 0);
      await screenshot(page, `${store}-polish-refused-filter`);
      errors.length = 0; // the browser logs the refused request
    });

    test('an annotation queue filled from the console: templates, selected rows, all matching, members', async () => {
      const P = `/v2/projects/${w.projectId}`;
      await page.goto(`${s.url}/projects/${w.projectId}/annotation_queues`);
      // A template of each of two kinds, made here.
      await page.getByLabel('Template name').fill('helpful');
      await page.getByRole('button', { name: 'Create template' }).click();
      await page.locator('.template-list li[data-template="helpful"]').waitFor();
      await page.getByLabel('Template name').fill('tone');
      await page.getByLabel('Kind').selectOption('categorical');
      await page.getByLabel('Options (one per line)').fill('friendly\ncurt');
      await page.getByRole('button', { name: 'Create template' }).click();
      await page.locator('.template-list li[data-template="tone"]').waitFor();
      await page.getByRole('button', { name: 'Edit helpful' }).click();
      await page.getByLabel('New name of helpful').fill('helpful answer');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.locator('.template-list li[data-template="helpful answer"]').waitFor();
      const templates = await api('GET', `${P}/annotation_templates`);
      assert.deepEqual(templates.map((t: Json) => [t.name, t.type, t.options ?? null]).sort(), [
        ['helpful answer', 'thumbs', null],
        ['tone', 'categorical', ['friendly', 'curt']],
      ]);
      await page.getByLabel('Name', { exact: true }).fill('Escalations');
      await page.getByRole('button', { name: 'Create queue' }).click();
      await page.getByRole('link', { name: 'Escalations' }).waitFor();
      await screenshot(page, `${store}-polish-queues`);
      const queue = (await api('GET', `${P}/annotation_queues`)).find((q: Json) => q.name === 'Escalations');

      // Two rows picked in the traces table.
      await page.goto(`${s.url}${base}/traces`);
      const picks = page.getByRole('checkbox', { name: /^Select trace/ });
      await picks.nth(0).check();
      await picks.nth(1).check();
      await page.getByRole('button', { name: 'Add 2 selected' }).click();
      await page.getByRole('status').filter({ hasText: 'Added 2 to Escalations' }).waitFor();
      // Then every trace the search matches: the table shows them all, so it knows how many.
      await page.getByLabel('Input or output contains').fill('refund');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const matching = await api('POST', `${P}/traces/search`, {
        log_stream_id: w.logStreamId,
        filter_tree: quickSearchTree('refund'),
        pagination: { limit: 100 },
      });
      const n = matching.records.length;
      assert.ok(n > 0);
      await page.getByRole('button', { name: `Add all ${n} matching` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /Added \d+ to Escalations/ })
        .waitFor();
      const inQueue = await api('POST', `${P}/annotation_queues/${queue.id}/records/search`, {
        pagination: { limit: 100 },
      });
      const ids = new Set(inQueue.records.map((r: Json) => r.id));
      assert.ok(
        inQueue.records.every((r: Json) => r.type === 'trace'),
        'only traces were added',
      );
      for (const r of matching.records) assert.ok(ids.has(r.id), `matching trace ${r.id} is in the queue`);
      await screenshot(page, `${store}-polish-add-to-queue`);

      // Members: the admin removed, then added back.
      await page.goto(`${s.url}/projects/${w.projectId}/annotation_queues/${queue.id}`);
      const members = page.locator('.queue-members');
      await members.getByRole('button', { name: `Remove ${s.admin.email}` }).click();
      await members.getByText('No members').waitFor();
      assert.deepEqual((await api('GET', `${P}/annotation_queues/${queue.id}`)).user_ids, []);
      await members.getByRole('button', { name: 'Add member' }).click();
      await members.getByRole('button', { name: `Remove ${s.admin.email}` }).waitFor();
      assert.deepEqual((await api('GET', `${P}/annotation_queues/${queue.id}`)).user_ids, [s.adminId]);
      await screenshot(page, `${store}-polish-queue-members`);
      assert.deepEqual(errors, []);
    });
  });
}
