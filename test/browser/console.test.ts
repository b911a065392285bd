/**
 * The web console in Debian's Chromium against a real server, on each store: sign-in and sign-out,
 * an anonymous deep link, a log stream's tables, the filter builder (its rows must be the API's rows
 * for the same tree), sorting, the column chooser, a trace with its span tree and messages, a
 * session, and a copied URL that rebuilds the same view. Screenshots land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
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

/** Record ids of the table's rows, in order (from each row's open link). */
async function rowIds(page: Page): Promise<string[]> {
  await page.locator('table.records tbody tr').first().waitFor({ timeout: TIMEOUT });
  const hrefs = await page
    .locator('table.records tbody tr a.open-link')
    .evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
  return hrefs.map((h) => /\/([0-9a-f-]{36})\?/.exec(h)?.[1] ?? h);
}

/** Waits until the table shows exactly the rows of this search (the page reloads as the URL changes). */
async function expectRows(page: Page, want: string[]) {
  let got: string[] = [];
  for (let i = 0; i < 50; i++) {
    got = await rowIds(page);
    if (JSON.stringify(got) === JSON.stringify(want) && !(await page.locator('.results.busy').count()))
      return;
    await page.waitForTimeout(100);
  }
  assert.deepEqual(got, want);
}

/**
 * Waits until `locator` matches exactly `n` elements: an action's state and URL updates can land in
 * separate renders (collapsing the selected span's parent selects that parent through the URL).
 */
async function expectCount(locator: Locator, n: number) {
  let got = -1;
  for (let i = 0; i < 50; i++) {
    got = await locator.count();
    if (got === n) return;
    await locator.page().waitForTimeout(100);
  }
  assert.equal(got, n);
}

for (const store of storesUnderTest()) {
  describe(`web console in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let w: ConsoleWorld;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let errors: string[];
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
      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      context.setDefaultTimeout(TIMEOUT);
      page = await context.newPage();
      errors = watchErrors(page);
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test('an anonymous deep link lands on the sign-in page without record data, then returns after signing in', async () => {
      const deep = `${base}/traces?sort=name%3Aasc`;
      const seen: { url: string; status: number; body: string }[] = [];
      page.on('response', async (r) => {
        const body = await r.text().catch(() => '');
        seen.push({ url: r.url(), status: r.status(), body });
      });
      await page.goto(s.url + deep);
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/login');
      assert.equal(new URL(page.url()).searchParams.get('next'), deep);
      for (const r of seen) {
        assert.ok(
          !r.url.includes('/v2/') || r.status >= 400,
          `an API answer before sign-in: ${r.url} ${r.status}`,
        );
        assert.ok(
          !r.body.includes(w.projectName) && !r.body.includes('Where is my order'),
          `record data in ${r.url}`,
        );
      }
      page.removeAllListeners('response');
      await screenshot(page, `${store}-login`);

      await signIn(page, s.admin.email, 'not-the-password');
      await page.getByRole('alert').filter({ hasText: 'Incorrect username or password' }).waitFor();

      await signIn(page, s.admin.email, s.admin.password);
      await page.waitForURL(
        (u) => u.pathname === `${base}/traces` && u.searchParams.get('sort') === 'name:asc',
      );
      await page.locator('table.records tbody tr').first().waitFor();
      const sortedHeader = page.locator('th[aria-sort="ascending"]');
      assert.match(await sortedHeader.innerText(), /^name/i);
    });

    test('projects → project → log stream, and a new log stream from the console', async () => {
      await page.goto(`${s.url}/`);
      await page.getByRole('link', { name: new RegExp(w.projectName) }).click();
      await page.getByRole('heading', { name: w.projectName }).waitFor();
      await page.getByRole('link', { name: 'prompt-v2' }).waitFor();
      await page.getByLabel('New log stream name').fill('staging');
      await page.getByRole('button', { name: 'Create log stream' }).click();
      // A new log stream opens on its (empty) traces, which tell how to send the first one.
      await page.getByRole('heading', { name: 'No records yet' }).waitFor();
      assert.match(
        await page.locator('.onboarding').innerText(),
        new RegExp(`/v2/projects/${w.projectId}/traces`),
      );
      const streams = await api('GET', `/v2/projects/${w.projectId}/log_streams`);
      assert.ok(streams.some((r: { name: string }) => r.name === 'staging'));
      await screenshot(page, `${store}-empty-log-stream`);

      await page.goto(`${s.url}/projects/${w.projectId}`);
      await page.getByRole('link', { name: 'production' }).click();
      await page.waitForURL((u) => u.pathname === `${base}/traces`);
      const all = await api('POST', `/v2/projects/${w.projectId}/traces/search`, {
        log_stream_id: w.logStreamId,
        pagination: { starting_token: 0, limit: 50 },
      });
      await expectRows(
        page,
        all.records.map((r: { id: string }) => r.id),
      );
      assert.equal(all.records.length, w.traceCount);
      await screenshot(page, `${store}-traces`);
    });

    test('sort by a header; choose columns, remembered; a copied URL rebuilds the same view', async () => {
      await page.goto(`${s.url}${base}/traces`);
      await page.getByRole('button', { name: /^Duration/ }).click();
      await page.waitForURL((u) => u.searchParams.get('sort') === 'metrics/duration_ns:asc');
      const asc = await api('POST', `/v2/projects/${w.projectId}/traces/search`, {
        log_stream_id: w.logStreamId,
        sort: { name: 'metrics/duration_ns', ascending: true },
        pagination: { starting_token: 0, limit: 50 },
      });
      await expectRows(
        page,
        asc.records.map((r: { id: string }) => r.id),
      );
      await page.getByRole('button', { name: /^Duration/ }).click();
      await page.waitForURL((u) => u.searchParams.get('sort') === 'metrics/duration_ns:desc');

      await page.locator('summary', { hasText: 'Columns' }).click();
      await page.getByRole('checkbox', { name: 'customer' }).check();
      await page.waitForURL((u) => (u.searchParams.get('cols') ?? '').includes('user_metadata/customer'));
      await page.getByRole('checkbox', { name: 'Status Code' }).uncheck();
      await page.waitForURL((u) => !(u.searchParams.get('cols') ?? 'status_code').includes('status_code'));
      await page.locator('summary', { hasText: 'Columns' }).click();
      await page.getByLabel('Input or output contains').fill('ORDER');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForURL((u) => u.searchParams.get('q') === 'ORDER');
      await page.getByLabel('Time range').selectOption('24h');
      await page.waitForURL((u) => u.searchParams.get('last') === '24h');
      const view = page.url();
      // Every record was made within the last 24 hours, so the range leaves them all in.
      const q = await api('POST', `/v2/projects/${w.projectId}/traces/search`, {
        log_stream_id: w.logStreamId,
        filter_tree: {
          or: ['input', 'output'].map((c) => ({
            filter: { column_id: c, operator: 'contains', value: 'ORDER', case_sensitive: false },
          })),
        },
        sort: { name: 'metrics/duration_ns', ascending: false },
        pagination: { starting_token: 0, limit: 50 },
      });
      const rows = q.records.map((r: { id: string }) => r.id);
      await expectRows(page, rows);
      const headers = await page.locator('table.records thead th').allInnerTexts();
      assert.ok(headers.some((h) => /customer/i.test(h)));
      assert.ok(!headers.some((h) => /status/i.test(h)));

      // The copied URL in a fresh page: the same rows, sort, columns, search and range.
      const copy = await context.newPage();
      await copy.goto(view);
      assert.deepEqual(await rowIds(copy), rows);
      assert.deepEqual(await copy.locator('table.records thead th').allInnerTexts(), headers);
      assert.equal(await copy.getByLabel('Input or output contains').inputValue(), 'ORDER');
      assert.equal(await copy.getByLabel('Time range').inputValue(), '24h');
      await copy.close();

      // The column choice is remembered for a plain list too.
      await page.goto(`${s.url}${base}/traces`);
      await page.locator('table.records tbody tr').first().waitFor();
      const plain = await page.locator('table.records thead th').allInnerTexts();
      assert.ok(plain.some((h) => /customer/i.test(h)));
    });

    test('a nested filter built in the builder shows exactly the rows the API gives for its tree', async () => {
      await page.goto(`${s.url}${base}/spans`);
      await page.locator('table.records tbody tr').first().waitFor();
      await page.getByRole('button', { name: /^Filters/ }).click();
      const builder = page.getByRole('region', { name: 'Filter builder' });
      // type is llm  AND  ( NOT name contains "PLAN" (any case)  OR  output tokens > 30 )
      await builder.locator('.builder-actions').getByRole('button', { name: '+ Condition' }).click();
      const conditions = builder.locator('.condition');
      await conditions.nth(0).getByLabel('Column').selectOption('type');
      await conditions.nth(0).getByLabel('Operator').selectOption('eq');
      await conditions.nth(0).getByLabel('Value').fill('llm');
      await builder.locator('.builder-actions').getByRole('button', { name: '+ Group' }).click();
      const group = builder.locator('.group .group');
      await group.getByLabel('Match', { exact: true }).selectOption('or');
      await conditions.nth(1).getByLabel('Column').selectOption('name');
      await conditions.nth(1).getByLabel('Value').fill('PLAN');
      await conditions.nth(1).getByLabel('Match case').uncheck();
      await conditions.nth(1).getByRole('button', { name: 'NOT' }).click();
      await group.locator('.group-add').getByRole('button', { name: '+ Condition' }).click();
      await conditions.nth(2).getByLabel('Column').selectOption('metrics/num_output_tokens');
      await conditions.nth(2).getByLabel('Operator').selectOption('gt');
      await conditions.nth(2).getByLabel('Value').fill('thirty');
      await builder.getByRole('button', { name: 'Apply filters' }).click();
      await builder.getByRole('alert').filter({ hasText: 'Fix the marked condition' }).waitFor();
      await conditions.nth(2).getByLabel('Value').fill('30');
      await builder.getByRole('button', { name: 'Apply filters' }).click();
      await page.waitForURL((u) => u.searchParams.has('filter'));
      const tree = JSON.parse(new URL(page.url()).searchParams.get('filter')!);
      assert.deepEqual(tree, {
        and: [
          // Match case starts off.
          {
            filter: { column_id: 'type', type: 'text', operator: 'eq', value: 'llm', case_sensitive: false },
          },
          {
            or: [
              {
                not: {
                  filter: {
                    column_id: 'name',
                    type: 'text',
                    operator: 'contains',
                    value: 'PLAN',
                    case_sensitive: false,
                  },
                },
              },
              {
                filter: { column_id: 'metrics/num_output_tokens', type: 'number', operator: 'gt', value: 30 },
              },
            ],
          },
        ],
      });
      const want = await api('POST', `/v2/projects/${w.projectId}/spans/search`, {
        log_stream_id: w.logStreamId,
        filter_tree: tree,
        pagination: { starting_token: 0, limit: 50 },
      });
      assert.ok(want.records.length > 0);
      assert.ok(
        want.records.every((r: { type: string; name: string }) => r.type === 'llm' && r.name === 'respond'),
      );
      await expectRows(
        page,
        want.records.map((r: { id: string }) => r.id),
      );
      await screenshot(page, `${store}-filter-builder`);

      // Reloading the URL shows the same tree in the builder and the same rows.
      await page.reload();
      await page.getByRole('region', { name: 'Filter builder' }).waitFor();
      assert.equal(await page.locator('.condition').count(), 3);
      assert.equal(await page.locator('.not-box').count(), 1);
      await expectRows(
        page,
        want.records.map((r: { id: string }) => r.id),
      );
    });

    test('a trace from the list: its span tree, a chat message, the selected span in the URL', async () => {
      await page.goto(`${s.url}${base}/traces?sort=created_at%3Aasc&last=1h`);
      await page.locator('table.records tbody tr', { hasText: 'Where is my order #4417?' }).click();
      await page.waitForURL((u) => u.pathname === `${base}/traces/${w.chatTraceIds[0]}`);
      const tree = page.getByRole('tree');
      await tree.getByRole('treeitem').first().waitFor();
      assert.equal(await tree.getByRole('treeitem').count(), 6);
      await tree.getByRole('treeitem', { name: /respond/ }).click();
      await page.waitForURL((u) => u.searchParams.has('span'));
      const panel = page.locator('.panel');
      await panel.locator('.message.role-user', { hasText: 'Where is my order #4417?' }).first().waitFor();
      await panel.locator('.tool-call', { hasText: 'lookup_order' }).first().waitFor();
      assert.match(await panel.locator('.message.role-assistant').last().innerText(), /tracking number/);
      // The keyboard moves the selection: up from respond is the tool span.
      await tree.focus();
      await page.keyboard.press('ArrowUp');
      await panel.getByRole('heading', { name: 'lookup_order' }).waitFor();
      await tree.getByRole('treeitem', { name: /respond/ }).click();
      await screenshot(page, `${store}-trace`);
      await page.setViewportSize({ width: 420, height: 860 });
      await screenshot(page, `${store}-trace-narrow`);
      await page.setViewportSize({ width: 1280, height: 860 });

      // The selected span survives a reload; collapsing hides its children.
      await page.reload();
      await page.locator('.panel').getByRole('heading', { name: 'respond' }).waitFor();
      await page.getByRole('button', { name: 'Collapse answer' }).click();
      await expectCount(tree.getByRole('treeitem'), 2);

      // Next record of the list it came from (the chat's second turn, in created_at order).
      await page.getByRole('link', { name: 'Next trace' }).click();
      await page.waitForURL((u) => u.pathname === `${base}/traces/${w.chatTraceIds[1]}`);
      await page.locator('.panel', { hasText: 'Great, when will it arrive?' }).waitFor();
    });

    test('a span deep link opens the span in its trace', async () => {
      const trace = await api('GET', `/v2/projects/${w.projectId}/traces/${w.chatTraceIds[0]}`);
      const plan = trace.spans[0].spans.find((x: { name: string }) => x.name === 'plan');
      await page.goto(`${s.url}${base}/spans/${plan.id}`);
      await page.locator('.panel').getByRole('heading', { name: 'plan' }).waitFor();
      assert.equal(await page.getByRole('treeitem', { selected: true }).count(), 1);
      assert.match(await page.getByRole('treeitem', { selected: true }).innerText(), /plan/);
    });

    test('a session: its traces as a conversation, each one click from its trace', async () => {
      await page.goto(`${s.url}${base}/sessions`);
      await page.locator('table.records tbody tr', { hasText: 'Order 4417 follow-up' }).click();
      await page.waitForURL((u) => u.pathname === `${base}/sessions/${w.sessionId}`);
      const turns = page.getByRole('list', { name: 'Conversation' }).locator('.turn');
      await turns.first().waitFor();
      assert.equal(await turns.count(), 3);
      assert.match(await turns.nth(1).innerText(), /Great, when will it arrive\?[\s\S]*DHL expects/);
      assert.match(await turns.nth(2).innerText(), /Upstream model timed out/);
      await screenshot(page, `${store}-session`);
      await turns.nth(1).getByRole('link', { name: 'support' }).click();
      await page.waitForURL((u) => u.pathname === `${base}/traces/${w.chatTraceIds[1]}`);
      await page.getByRole('tree').waitFor();
    });

    test('an API error is shown, not swallowed', async () => {
      await page.goto(`${s.url}${base}/traces/${crypto.randomUUID()}`);
      await page
        .getByRole('alert')
        .filter({ hasText: /not found/i })
        .waitFor();
      errors.splice(0); // the 404 itself is logged by Chromium as a failed load
    });

    test('log out ends the session on the server', async () => {
      const before = (await context.cookies()).find((c) => c.name === 'spanbase_session');
      assert.ok(before?.httpOnly);
      await page.goto(`${s.url}/`);
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL((u) => u.pathname === '/login');
      // The old cookie, put back, signs nobody in.
      await context.addCookies([before]);
      const r = await page.request.get(`${s.url}/v2/current_user`);
      assert.equal(r.status(), 401);
      await page.goto(`${s.url}${base}/traces`);
      await page.waitForURL((u) => u.pathname === '/login');
      assert.deepEqual(errors, [], 'no script errors on any page');
    });
  });
}
