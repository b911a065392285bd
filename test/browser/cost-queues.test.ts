/**
 * Cost and annotation queues in the console, in Debian's Chromium against a real server, on each
 * store: the trace view's cost is the API's metrics.cost (the trace's sum, an llm span's own), two
 * records of a queue annotated with the keyboard alone and the progress shown equal to the API's,
 * and the queues list (create, rename, delete). Screenshots land in SHOT_DIR, wide and narrow.
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

/**
 * Polls until `check` holds (the page reloads what it shows after each save), for up to TIMEOUT: on a
 * loaded CI machine a save took longer than the 6 s this once allowed.
 */
async function eventually(check: () => Promise<boolean>, what: () => Promise<string>) {
  const deadline = Date.now() + TIMEOUT;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(await what());
}

for (const store of storesUnderTest()) {
  describe(`cost and annotation queues in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let w: ConsoleWorld;
    let browser: Browser;
    let page: Page;
    let errors: string[];
    const api = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      return r.body;
    };

    before(async () => {
      s = await startConsoleServer(store);
      w = await seedConsoleWorld((m, u, b) => s.call(m, u, b));
      browser = await launchChromium();
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      context.setDefaultTimeout(TIMEOUT);
      page = await context.newPage();
      errors = watchErrors(page);
      await page.goto(`${s.url}/`);
      await signIn(page, s.admin.email, s.admin.password);
      await page.getByRole('heading', { name: 'Projects' }).waitFor();
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test("the trace view's cost is the API's metrics.cost: the trace's sum and each llm span's own", async () => {
      const traceId = w.chatTraceIds[0];
      const trace = await api('GET', `/v2/projects/${w.projectId}/traces/${traceId}`);
      const llm: Json[] = [];
      const walk = (r: Json) => {
        if (r.type === 'llm') llm.push(r);
        for (const c of r.spans ?? []) walk(c);
      };
      walk(trace);
      const respond = llm.find((r) => r.name === 'respond') as Json;
      // gpt-4o has a price in the shipped catalogue: the seeded llm spans are priced.
      assert.equal(typeof trace.metrics.cost, 'number');
      assert.equal(typeof respond.metrics.cost, 'number');
      assert.ok(
        Math.abs(trace.metrics.cost - llm.reduce((sum, r) => sum + r.metrics.cost, 0)) < 1e-12,
        'the trace carries the sum of its spans',
      );

      await page.goto(`${s.url}/projects/${w.projectId}/log_streams/${w.logStreamId}/traces/${traceId}`);
      const head = page.locator('.page-head .muted');
      await head.waitFor();
      assert.match(
        await head.innerText(),
        new RegExp(`· ${formatCost(trace.metrics.cost).replace('$', '\\$')} ·`),
      );
      const row = page.getByRole('treeitem', { name: /respond/ });
      assert.equal(await row.locator('.cost').innerText(), formatCost(respond.metrics.cost));
      // A tool span has no tokens and shows no cost.
      assert.equal(
        await page
          .getByRole('treeitem', { name: /lookup_order/ })
          .locator('.cost')
          .count(),
        0,
      );
      await row.click();
      await page.locator('#panel-title', { hasText: 'respond' }).waitFor();
      const fact = page
        .locator('.panel .facts div')
        .filter({ has: page.locator('dt', { hasText: /^Cost$/ }) });
      assert.equal(await fact.locator('dd').innerText(), formatCost(respond.metrics.cost));
      const metric = page
        .locator('.panel .kv div')
        .filter({ has: page.locator('dt', { hasText: /^Cost$/ }) }); // the API's column label
      assert.equal(await metric.locator('dd').innerText(), formatCost(respond.metrics.cost));
      await screenshot(page, `${store}-trace-cost`);

      // The traces table's Cost column reads the same.
      await page.goto(`${s.url}/projects/${w.projectId}/log_streams/${w.logStreamId}/traces`);
      // Header and cell read together: the columns settle once the run's catalogue is in.
      const costCell = () =>
        page.locator('table.records').evaluate((table, id) => {
          const heads = [...table.querySelectorAll('thead th')].map((th) =>
            (th.textContent ?? '').replace(/[▲▼↕]/g, '').trim(),
          );
          const row = [...table.querySelectorAll('tbody tr')].find((tr) =>
            tr.querySelector(`a[href*="${id}"]`),
          );
          return row?.querySelectorAll('td')[heads.indexOf('Cost')]?.textContent ?? null;
        }, traceId);
      await eventually(
        async () => (await costCell()) === formatCost(trace.metrics.cost),
        async () => `cost cell: ${await costCell()}, API: ${trace.metrics.cost}`,
      );
      assert.deepEqual(errors, []);
    });

    test('a queue annotated with the keyboard alone; the progress shown is the API’s', async () => {
      const P = `/v2/projects/${w.projectId}`;
      const helpful = (await api('POST', `${P}/annotation_templates`, { name: 'helpful', type: 'thumbs' }))
        .id;
      const quality = (await api('POST', `${P}/annotation_templates`, { name: 'quality', type: 'stars' })).id;
      const tone = (
        await api('POST', `${P}/annotation_templates`, {
          name: 'tone',
          type: 'categorical',
          options: ['friendly', 'neutral', 'curt'],
        })
      ).id;
      const q = await api('POST', `${P}/annotation_queues`, {
        name: 'Support answers',
        description: 'Are the answers right and kind?',
        template_ids: [helpful, quality, tone],
        user_ids: [s.adminId],
      });
      await api('POST', `${P}/annotation_queues/${q.id}/records`, { record_ids: w.chatTraceIds });
      const order = (
        await api('POST', `${P}/annotation_queues/${q.id}/records/search`, { pagination: { limit: 10 } })
      ).records.map((r: Json) => r.id) as string[];
      assert.equal(order.length, 3);

      await page.goto(`${s.url}/projects/${w.projectId}/annotation_queues/${q.id}`);
      await page.getByRole('heading', { name: 'Support answers' }).waitFor();
      await page.getByText('Record 1 of 3').waitFor();
      const showing = (id: string) => page.locator('.panel p.mono', { hasText: id }).waitFor();
      await showing(order[0]);
      await page.locator('.annotation-field').first().waitFor();
      const saved = (n: number) =>
        eventually(
          async () => (await page.locator('.save-state', { hasText: 'Saved' }).count()) === n,
          async () => `saves shown: ${await page.locator('.save-state').allInnerTexts()}`,
        );
      // First record: thumbs up, four stars, the second option; then the next record.
      await page.keyboard.press('y');
      await page.keyboard.press('4');
      await page.keyboard.press('2');
      await saved(3);
      await screenshot(page, `${store}-queue`);
      await page.setViewportSize({ width: 420, height: 860 });
      await screenshot(page, `${store}-queue-narrow`);
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.keyboard.press('j');
      await page.getByText('Record 2 of 3').waitFor();
      await showing(order[1]);
      assert.equal(new URL(page.url()).searchParams.get('i'), '1');
      // Second record: thumbs down, two stars, the third option (arrows move between templates).
      await page.keyboard.press('n');
      await page.keyboard.press('2');
      await page.keyboard.press('ArrowUp');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('3');
      await saved(3);

      const mine = async (recordId: string) => {
        const r = await api('GET', `${P}/traces/${recordId}`);
        return [helpful, quality, tone].map((t) => r.annotations[t]?.[s.adminId]?.value);
      };
      assert.deepEqual(await mine(order[0]), [true, 4, 'neutral']);
      assert.deepEqual(await mine(order[1]), [false, 2, 'curt']);
      assert.deepEqual(await mine(order[2]), [undefined, undefined, undefined]);

      const progress = await api('GET', `${P}/annotation_queues/${q.id}/progress`);
      assert.deepEqual(
        progress.users.map((u: Json) => [u.user_id, u.num_annotated]),
        [[s.adminId, 2]],
      );
      const shown = page.locator(`.members li[data-user="${s.adminId}"] [data-testid="annotated"]`);
      await eventually(
        async () =>
          (await shown.innerText()) === `${progress.users[0].num_annotated} / ${progress.num_records}`,
        async () => `progress shown: ${await shown.innerText()}`,
      );
      assert.equal(
        await page.getByTestId('complete').innerText(),
        `${progress.num_complete} of ${progress.num_records} done by every member`,
      );

      // k goes back, and the form shows what was saved there.
      await page.keyboard.press('k');
      await showing(order[0]);
      await page.getByRole('button', { name: '▲ Up (y)', pressed: true }).waitFor();
      assert.deepEqual(errors, []);
    });

    test('the queues list: counts, create, rename and delete', async () => {
      await page.goto(`${s.url}/projects/${w.projectId}`);
      await page.getByRole('link', { name: 'Annotation queues' }).click();
      await page.getByRole('heading', { name: 'Annotation queues' }).waitFor();
      const row = page.locator('.queue-list tbody tr').filter({ hasText: 'Support answers' });
      // The heading shows before the list's rows have loaded.
      await row.waitFor();
      assert.deepEqual(await row.locator('td.num').allInnerTexts(), ['3', '3', '1']);
      await screenshot(page, `${store}-queues`);
      await page.setViewportSize({ width: 420, height: 860 });
      await screenshot(page, `${store}-queues-narrow`);
      await page.setViewportSize({ width: 1280, height: 860 });

      await page.getByLabel('Name', { exact: true }).fill('Escalations');
      await page.getByRole('button', { name: 'Create queue' }).click();
      const created = page.locator('.queue-list tbody tr').filter({ hasText: 'Escalations' });
      await created.waitFor();
      const queues = await api('GET', `/v2/projects/${w.projectId}/annotation_queues`);
      const esc = queues.find((x: Json) => x.name === 'Escalations');
      assert.deepEqual(esc.user_ids, [s.adminId]);
      assert.equal(esc.template_ids.length, 3);

      await page.getByRole('button', { name: 'Rename Escalations' }).click();
      await page.getByLabel('New name of Escalations').fill('Escalated chats');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('link', { name: 'Escalated chats' }).waitFor();
      await page.getByRole('button', { name: 'Delete Escalated chats…' }).click();
      await page.getByRole('button', { name: 'Delete Escalated chats', exact: true }).click();
      await eventually(
        async () => (await page.locator('.queue-list tbody tr').count()) === 1,
        async () => `rows: ${await page.locator('.queue-list tbody tr').allInnerTexts()}`,
      );
      const left = await api('GET', `/v2/projects/${w.projectId}/annotation_queues`);
      assert.deepEqual(
        left.map((x: Json) => x.name),
        ['Support answers'],
      );
      assert.deepEqual(errors, []);
    });
  });
}
