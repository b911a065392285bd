/**
 * The console shows each caller the controls their role on the project allows, in Debian's
 * Chromium against a real server, on each store: a viewer opens the project, its dashboards, a
 * dashboard, the Signals configuration and the annotation queues and finds no control to create,
 * change or delete anything (the API would answer 403), nor a queue list (annotators' and
 * editors'); an admin (an owner everywhere) finds them
 * all. The role comes from GET /v2/projects/{id}/current_user_role (lib/access.tsx); the page marks
 * it on <main data-project-role>, so the checks run once it is known.
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
  describe(`console controls by the caller's role in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let browser: Browser;
    let viewer: { email: string; password: string };
    let pages: { project: string; dashboards: string; dashboard: string; signals: string; queues: string };
    const api = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      return r.body;
    };

    before(async () => {
      s = await startConsoleServer(store);
      browser = await launchChromium();
      const p = await api('POST', '/v2/projects', { name: `roles-${store}` });
      const ls = await api('POST', `/v2/projects/${p.id}/log_streams`, { name: 'production' });
      const trends = `/v2/projects/${p.id}/log_streams/${ls.id}/trends`;
      const d = await api('PUT', trends, { name: 'Overview' });
      await api('POST', `${trends}/${d.id}/widgets`, {
        name: 'Records',
        type: 'number',
        metric: 'duration_ns',
        aggregation: 'Count',
      });
      await api('POST', `${trends}/${d.id}/sections`, { name: 'Costs' });
      await api('POST', `/v2/projects/${p.id}/annotation_templates`, { name: 'helpful', type: 'thumbs' });
      const u = await s.user();
      await api('POST', `/v2/projects/${p.id}/collaborators`, { user_id: u.id, role: 'viewer' });
      viewer = u;
      const run = `${s.url}/projects/${p.id}/log_streams/${ls.id}`;
      pages = {
        project: `${s.url}/projects/${p.id}`,
        dashboards: `${run}/dashboards`,
        dashboard: `${run}/dashboards/${d.id}`,
        signals: `${run}/signals`,
        queues: `${s.url}/projects/${p.id}/annotation_queues`,
      };
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    /** Signs in as `who` in a fresh context and visits each page once its role is known. */
    async function visit(
      who: { email: string; password: string },
      role: string,
      check: Record<keyof typeof pages, (page: Page) => Promise<void>>,
    ) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      context.setDefaultTimeout(TIMEOUT);
      const page = await context.newPage();
      const errors = watchErrors(page);
      try {
        await page.goto(pages.project);
        await signIn(page, who.email, who.password);
        // The sign-in page goes on to the project itself: a goto before it lands would cut it short.
        await page.waitForURL((u) => u.pathname === new URL(pages.project).pathname);
        for (const name of Object.keys(pages) as (keyof typeof pages)[]) {
          await page.goto(pages[name]);
          await page.locator(`main[data-project-role="${role}"]`).waitFor();
          await check[name](page);
          if (name === 'dashboard') await screenshot(page, `${store}-roles-${role}-dashboard`);
        }
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    }

    const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

    test('a viewer sees the project, dashboards, Signals and queues without edit controls', async () => {
      await visit(viewer, 'viewer', {
        project: async (page) => {
          await page.getByRole('link', { name: 'production' }).waitFor();
          assert.equal(await button(page, 'Create log stream').count(), 0);
          assert.equal(await page.getByRole('link', { name: 'Annotation queues' }).count(), 0);
        },
        dashboards: async (page) => {
          await page.getByRole('link', { name: 'Overview' }).waitFor();
          assert.equal(await button(page, 'Create dashboard').count(), 0);
          assert.equal(await button(page, 'Rename Overview').count(), 0);
          assert.equal(await button(page, 'Delete Overview').count(), 0);
          assert.ok(await button(page, 'Favourite Overview').isDisabled());
        },
        dashboard: async (page) => {
          await page.locator('[data-widget-type="number"] .figure').waitFor();
          for (const name of ['Add widget', 'Add section', 'Edit Records', 'Delete Records']) {
            assert.equal(await button(page, name).count(), 0, name);
          }
          assert.equal(await page.getByRole('button', { name: /section/ }).count(), 0);
          assert.ok(await button(page, 'Favourite').isDisabled());
          assert.ok(await page.getByLabel('Interval').isDisabled());
          assert.ok(await page.getByLabel('Group by').isDisabled());
          // The widgets stay where they are: react-grid-layout shows no resize handle.
          assert.equal(await page.locator('.react-resizable-handle:visible').count(), 0);
        },
        signals: async (page) => {
          await page.getByText('Only an editor of the project changes the Signals configuration').waitFor();
          assert.equal(await button(page, 'Save Signals configuration').count(), 0);
          assert.ok(await page.getByLabel('Run mode').isDisabled());
        },
        queues: async (page) => {
          await page.getByRole('note').getByText('Annotation queues are for the project').waitFor();
          assert.equal(await page.getByRole('heading', { name: 'New queue' }).count(), 0);
        },
      });
    });

    test('an admin, an owner of every project, sees every control', async () => {
      await visit(s.admin, 'owner', {
        project: async (page) => {
          await button(page, 'Create log stream').waitFor();
          await page.getByRole('link', { name: 'Annotation queues' }).waitFor();
        },
        dashboards: async (page) => {
          await button(page, 'Create dashboard').waitFor();
          await button(page, 'Rename Overview').waitFor();
          await button(page, 'Delete Overview').waitFor();
          assert.ok(await button(page, 'Favourite Overview').isEnabled());
        },
        dashboard: async (page) => {
          await page.locator('[data-widget-type="number"] .figure').waitFor();
          for (const name of [
            'Add widget',
            'Add section',
            'Edit Records',
            'Delete Records',
            'Edit section Costs',
          ])
            await button(page, name).waitFor();
          assert.ok(await page.getByLabel('Interval').isEnabled());
          assert.ok((await page.locator('.react-resizable-handle:visible').count()) > 0);
        },
        signals: async (page) => {
          await button(page, 'Save Signals configuration').waitFor();
          assert.ok(await page.getByLabel('Run mode').isEnabled());
        },
        queues: async (page) => {
          await page.getByRole('heading', { name: 'New queue' }).waitFor();
        },
      });
    });
  });
}
