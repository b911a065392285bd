/**
 * Dashboards and token usage in Debian's Chromium against a real server, on each store: a dashboard
 * made in the console (default dashboard, absolute range, a line chart and a number widget) draws
 * the values the API's query answers; group_by gives one series per group; a legend entry opens the
 * record table of its group; a 422 shows beside the field its loc names; a resize is saved to
 * layout_map; the list favourites, renames and deletes; token usage totals equal the API's.
 * Screenshots (1280 and 420 px wide) land in SHOT_DIR.
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
import { type ConsoleWorld, seedConsoleWorld } from '../helpers/console-data.ts';
import { storesUnderTest } from '../helpers/server.ts';

const TIMEOUT = 15_000;

// The functions given to page.evaluate and waitForFunction run in the page; these are its globals.
declare const document: {
  querySelector(selector: string): unknown;
  querySelectorAll(selector: string): { length: number };
};
interface El {
  getAttribute(name: string): string | null;
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): Iterable<El>;
}

/** A datetime-local value (the browser's local time is the test's: both run here). */
const local = (ms: number) => {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

/** Each widget's drawn series as the page lists them: group → values (charts) or total (numbers). */
async function drawn(page: Page, widgetId: string) {
  const w = page.locator(`[data-widget-id="${widgetId}"]`);
  return w.evaluate((el: El) => ({
    series: [...el.querySelectorAll('.legend li')].map((li) => ({
      group: li.getAttribute('data-group'),
      values: JSON.parse(li.getAttribute('data-values') ?? 'null'),
    })),
    figures: [...el.querySelectorAll('.figures li')].map((li) => ({
      group: li.getAttribute('data-group'),
      value: li.querySelector('output')?.getAttribute('data-value'),
    })),
  }));
}

for (const store of storesUnderTest()) {
  describe(`dashboards in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let w: ConsoleWorld;
    let browser: Browser;
    let page: Page;
    let errors: string[];
    let base: string;
    let trends: string;
    let dashboardId: string;
    const api = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      return r.body;
    };
    /** Waits until the page's widgets are drawn from an answer to the dashboard as it is now. */
    const settled = async () => {
      await page.locator('.dashboard[data-data-ready="true"]').waitFor();
      await page.waitForFunction(() => !document.querySelector('.widget.busy'));
    };
    const query = () => api('POST', `${trends}/${dashboardId}/query`, {});

    before(async () => {
      s = await startConsoleServer(store);
      w = await seedConsoleWorld((m, u, b) => s.call(m, u, b));
      base = `/projects/${w.projectId}/log_streams/${w.logStreamId}`;
      trends = `/v2/projects/${w.projectId}/log_streams/${w.logStreamId}/trends`;
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(TIMEOUT);
      page = await context.newPage();
      errors = watchErrors(page);
      page.on('dialog', (d) => d.accept());
      await page.goto(`${s.url}${base}/dashboards`);
      await signIn(page, s.admin.email, s.admin.password);
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test('a dashboard made in the console draws the values of the API query', async () => {
      await page.getByRole('button', { name: 'Create the default dashboard' }).click();
      await page.waitForURL((u) => /\/dashboards\/[0-9a-f-]{36}$/.test(u.pathname));
      dashboardId = page.url().split('/').pop()!;
      await page.getByRole('heading', { name: 'Default' }).waitFor();

      // An absolute range around the seeded records, by the quarter hour.
      await page.getByLabel('Time range').selectOption('custom');
      await page.getByLabel('From', { exact: true }).fill(local(Date.now() - 5 * 3_600_000));
      await page.getByLabel('To', { exact: true }).fill(local(Date.now() + 3_600_000));
      await page.getByRole('button', { name: 'Apply range' }).click();
      await page.getByLabel('Interval').selectOption('15');
      let stored = await api('GET', `${trends}/${dashboardId}`);
      for (let i = 0; i < 50 && stored.interval_mins !== 15; i++) {
        await page.waitForTimeout(100);
        stored = await api('GET', `${trends}/${dashboardId}`);
      }
      assert.equal(stored.relative_time, null);
      assert.equal(stored.interval_mins, 15);

      const addWidget = async (name: string, type: string, aggregation: string, metric: string) => {
        await page.getByRole('button', { name: 'Add widget', exact: true }).click();
        const form = page.getByRole('form', { name: 'New widget' });
        await form.getByLabel('Widget name').fill(name);
        await form.getByLabel('Widget type').selectOption(type);
        await form.getByLabel('Aggregation').selectOption(aggregation);
        await form.getByLabel('Metric').selectOption(metric);
        await form.getByRole('button', { name: 'Add widget' }).click();
        await page.getByRole('heading', { name, exact: true }).waitFor();
      };
      await addWidget('Latency', 'line_chart', 'Average', 'metrics/duration_ns');
      await addWidget('Records', 'number', 'Count', 'metrics/duration_ns');
      await settled();

      const d = await api('GET', `${trends}/${dashboardId}`);
      const [line, number] = d.widgets;
      assert.deepEqual(
        d.widgets.map((x: { type: string }) => x.type),
        ['line_chart', 'number'],
      );
      await page.locator(`[data-widget-id="${line.id}"] .chart[data-drawn="true"]`).waitFor();
      const q = await query();
      const want = (id: string) => q.widgets.find((x: { id: string }) => x.id === id).series;
      const lineDrawn = await drawn(page, line.id);
      assert.deepEqual(
        lineDrawn.series.map((x) => x.values),
        want(line.id).map((x: { values: unknown }) => x.values),
      );
      assert.ok(
        want(line.id)[0].values.some((v: number | null) => v !== null && v > 0),
        'the line has points',
      );
      assert.deepEqual(
        (await drawn(page, number.id)).figures.map((f) => Number(f.value)),
        want(number.id).map((x: { total: number }) => x.total),
      );
      assert.ok(want(number.id)[0].total > 0);
      await screenshot(page, `${store}-dashboard`);

      // A click on a point opens the records of its bucket. The x axis spans whole buckets, each
      // point in the middle of its bucket.
      const values: (number | null)[] = want(line.id)[0].values;
      const i = values.findIndex((v) => v !== null);
      const over = (await page.locator(`[data-widget-id="${line.id}"] .u-over`).boundingBox())!;
      const x = over.x + (over.width * (i + 0.5)) / q.buckets.length;
      await page.mouse.move(x - 3, over.y + over.height / 2);
      await page.mouse.move(x, over.y + over.height / 2);
      await page.mouse.click(x, over.y + over.height / 2);
      await page.waitForURL((u) => u.pathname === `${base}/spans`);
      const url = new URL(page.url());
      const start = Math.max(q.buckets[i], q.start_time);
      assert.equal(url.searchParams.get('from'), new Date(start * 1000).toISOString());
      assert.equal(
        url.searchParams.get('to'),
        new Date(Math.min(q.buckets[i] + 15 * 60, q.end_time) * 1000).toISOString(),
      );
      await page.locator('table.records tbody tr').first().waitFor();
      await page.goBack();
      await settled();
    });

    test('group_by draws one series per group; a legend entry opens that group’s records', async () => {
      await page.getByLabel('Group by').selectOption('user_metadata/customer');
      await page.waitForFunction(
        () => document.querySelectorAll('[data-widget-type="line_chart"] .legend li').length > 1,
      );
      await settled();
      const d = await api('GET', `${trends}/${dashboardId}`);
      assert.equal(d.group_by, 'user_metadata/customer');
      const q = await query();
      const [line, number] = d.widgets;
      const want = (id: string) => q.widgets.find((x: { id: string }) => x.id === id).series;
      const got = await drawn(page, line.id);
      assert.equal(got.series.length, q.groups.length);
      assert.ok(q.groups.includes('acme') && q.groups.includes('globex'), JSON.stringify(q.groups));
      assert.deepEqual(
        got.series.map((x) => x.values),
        want(line.id).map((x: { values: unknown }) => x.values),
      );
      assert.deepEqual(
        (await drawn(page, number.id)).figures.map((f) => [f.group, Number(f.value)]),
        want(number.id).map((x: { group: string | null; total: number }) => [x.group ?? '(none)', x.total]),
      );
      await screenshot(page, `${store}-dashboard-grouped`);
      await page.setViewportSize({ width: 420, height: 900 });
      await page.locator(`[data-widget-id="${line.id}"] .chart[data-drawn="true"]`).waitFor();
      await screenshot(page, `${store}-dashboard-narrow`);
      await page.setViewportSize({ width: 1280, height: 900 });

      // The group's records over the dashboard's range: the traces of globex (the key is a trace's).
      await page
        .locator(`[data-widget-id="${line.id}"] .legend`)
        .getByRole('link', { name: 'globex' })
        .click();
      await page.waitForURL((u) => u.pathname === `${base}/traces`);
      const url = new URL(page.url());
      assert.deepEqual(JSON.parse(url.searchParams.get('filter')!), {
        filter: { column_id: 'user_metadata/customer', type: 'text', operator: 'eq', value: 'globex' },
      });
      assert.equal(url.searchParams.get('from'), new Date(q.start_time * 1000).toISOString());
      assert.equal(url.searchParams.get('to'), new Date(q.end_time * 1000).toISOString());
      const globex = await api('POST', `/v2/projects/${w.projectId}/traces/search`, {
        log_stream_id: w.logStreamId,
        filter_tree: JSON.parse(url.searchParams.get('filter')!),
        pagination: { starting_token: 0, limit: 50 },
      });
      assert.ok(globex.records.length > 0);
      await page
        .locator('table.records tbody tr')
        .nth(globex.records.length - 1)
        .waitFor();
      assert.equal(await page.locator('table.records tbody tr').count(), globex.records.length);
      await page.goBack();
      await settled();
    });

    test('a 422 is shown beside the field its loc names; a resize is saved to layout_map', async () => {
      const d = await api('GET', `${trends}/${dashboardId}`);
      const line = d.widgets[0];
      await page.getByRole('button', { name: 'Edit Latency' }).click();
      const form = page.getByRole('form', { name: 'Edit Latency' });
      // The current metric stays chosen, though a percentage needs a boolean column: the API says so.
      await form.getByLabel('Aggregation').selectOption('PercentageTrue');
      await form.getByRole('button', { name: 'Save widget' }).click();
      const problem = form.locator('[data-field="metric"]');
      await problem.waitFor();
      assert.match(await problem.innerText(), /PercentageTrue needs a boolean column/);
      assert.equal(await form.getByLabel('Metric').getAttribute('aria-invalid'), 'true');
      await form.getByRole('button', { name: 'Cancel' }).click();

      const item = page.locator(`.react-grid-item:has([data-widget-id="${line.id}"])`);
      const before = (await item.boundingBox())!;
      const box = (await item.locator('.react-resizable-handle').boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + 220, box.y + 140, { steps: 8 });
      await page.mouse.up();
      let layout: number[] | undefined;
      for (let i = 0; i < 50 && !layout; i++) {
        await page.waitForTimeout(100);
        layout = (await api('GET', `${trends}/${dashboardId}`)).layout_map[line.id];
      }
      assert.ok(layout, 'the resize was saved');
      assert.ok(layout[2] > 6 && layout[3] > 5, `wider and taller than 6×5: ${layout}`);
      await page.reload();
      await settled();
      const after = (await item.boundingBox())!;
      assert.ok(
        after.width > before.width + 100,
        `the saved size is used on reload: ${before.width} → ${after.width}`,
      );
    });

    test('the list: favourite, rename and delete', async () => {
      await page.goto(`${s.url}${base}/dashboards`);
      await page.getByLabel('New dashboard name').fill('Costs');
      await page.getByRole('button', { name: 'Create dashboard' }).click();
      await page.getByRole('heading', { name: 'Costs' }).waitFor();
      const costsId = page.url().split('/').pop()!;
      await page.getByRole('link', { name: 'Dashboards' }).first().click();
      await page.getByRole('button', { name: 'Favourite Costs' }).click();
      await page.getByRole('button', { name: 'Favourite Costs', pressed: true }).waitFor();
      assert.equal((await api('GET', `${trends}/${costsId}`)).is_favorited, true);
      await page.getByRole('button', { name: 'Rename Costs' }).click();
      await page.getByLabel('New name of Costs').fill('Spend');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('link', { name: 'Spend' }).waitFor();
      assert.equal((await api('GET', `${trends}/${costsId}`)).name, 'Spend');
      await screenshot(page, `${store}-dashboards`);
      await page.getByRole('button', { name: 'Delete Spend' }).click();
      await page.getByRole('link', { name: 'Spend' }).waitFor({ state: 'detached' });
      assert.equal((await s.call('GET', `${trends}/${costsId}`)).status, 404);
    });

    test('token usage: the totals of the range equal the API’s', async () => {
      await page.goto(`${s.url}${base}/token_usage`);
      await page.locator('.usage[data-ready="true"]').waitFor();
      await page.locator('.chart[data-drawn="true"]').first().waitFor();
      const from = await page.getByLabel('From (UTC day)').inputValue();
      const to = await page.getByLabel('To (UTC day)').inputValue();
      const next = new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString();
      const r = await api(
        'POST',
        `/v2/projects/${w.projectId}/log_streams/${w.logStreamId}/logstream_insights/token_usage`,
        {
          filters: [
            { name: 'created_at', operator: 'gte', value: `${from}T00:00:00.000Z` },
            { name: 'created_at', operator: 'lt', value: next },
          ],
          limit: 1000,
        },
      );
      const sum = (k: string) =>
        r.token_usages.reduce(
          (n: number, u: { token_usage: Record<string, number> }) => n + u.token_usage[k],
          0,
        );
      const shown = await page
        .locator('.usage-totals > div')
        .evaluateAll((els: El[]) =>
          Object.fromEntries(els.map((e) => [e.getAttribute('data-kind'), e.getAttribute('data-value')])),
        );
      for (const k of [
        'input_tokens',
        'output_tokens',
        'cache_read_input_tokens',
        'cache_creation_input_tokens',
      ])
        assert.equal(Number(shown[k]), sum(k), k);
      assert.ok(sum('input_tokens') > 0);
      await screenshot(page, `${store}-token-usage`);
      await page.setViewportSize({ width: 420, height: 900 });
      await screenshot(page, `${store}-token-usage-narrow`);
      await page.setViewportSize({ width: 1280, height: 900 });
      // The one error is the 422 the widget form was made to get.
      assert.deepEqual(
        errors.filter((e) => !e.includes('status of 422')),
        [],
      );
      assert.equal(errors.length, 1, errors.join('\n'));
    });
  });
}
