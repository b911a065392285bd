/**
 * The console's settings pages in Debian's Chromium against a real server, on each store: an API key
 * created (its secret shown once) and revoked (the API then refuses it), the gateway integration
 * saved and shared with a group, and a bad cron answered by the API beside its field. Screenshots
 * of each page at 1280 and 420 px land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
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

/** Full-page screenshots of the page as it is, wide and narrow. */
async function shots(page: Page, name: string) {
  // From the top: a full-page capture of a scrolled page draws the sticky top bar mid-page.
  await page.evaluate('window.scrollTo(0, 0)');
  await screenshot(page, `${name}-1280`);
  await page.setViewportSize({ width: 420, height: 860 });
  await page.evaluate('window.scrollTo(0, 0)');
  await screenshot(page, `${name}-420`);
  await page.setViewportSize({ width: 1280, height: 860 });
}

/** The message shown beside a labelled control (the element its aria-describedby names). */
async function messageBeside(page: Page, label: string): Promise<string> {
  const control = page.getByLabel(label, { exact: true });
  await control.and(page.locator('[aria-invalid="true"]')).waitFor();
  const ids = (await control.getAttribute('aria-describedby')) ?? '';
  const error = ids.split(' ').find((id) => id.endsWith('-error'));
  assert.ok(error, `no message tied to ${label}`);
  return page.locator(`[id="${error}"]`).innerText();
}

for (const store of storesUnderTest()) {
  describe(`console settings in Chromium [${store}]`, () => {
    let s: ConsoleServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let errors: string[];
    const api = async (method: string, url: string, body?: unknown, key?: string) => {
      const r = await s.call(method, url, body, key);
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      return r.body;
    };

    before(async () => {
      s = await startConsoleServer(store);
      browser = await launchChromium();
      context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      context.setDefaultTimeout(TIMEOUT);
      page = await context.newPage();
      errors = watchErrors(page);
      await page.goto(`${s.url}/settings/api-keys`);
      await signIn(page, s.admin.email, s.admin.password);
      await page.waitForURL((u) => u.pathname === '/settings/api-keys');
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    test('an API key: created with its secret shown once, then revoked, after which the API answers 401', async () => {
      await page.getByLabel('Description').fill('from the browser');
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = await page.getByLabel('New API key').inputValue();
      assert.match(secret, /^\S{20,}$/);
      assert.equal((await s.call('GET', '/v2/current_user', undefined, secret)).status, 200);
      const row = page.locator('tr', { hasText: 'from the browser' });
      await row.waitFor();
      await shots(page, `${store}-settings-api-keys`);

      await page.getByRole('button', { name: 'Done' }).click();
      assert.equal(await page.getByLabel('New API key').count(), 0, 'the secret is shown once only');
      await row.getByRole('button', { name: 'Revoke key from the browser' }).click();
      await row.getByRole('button', { name: 'Revoke from the browser' }).click();
      await row.waitFor({ state: 'detached' });
      const refused = await s.call('GET', '/v2/current_user', undefined, secret);
      assert.equal(refused.status, 401, refused.text);
      const left = await api('GET', '/v2/users/api_keys');
      assert.ok(!left.some((k: { description: string }) => k.description === 'from the browser'));
    });

    test('the gateway integration: saved with a write-only token, then shared with a group whose role changes', async () => {
      const group = await api('POST', '/v2/groups', { name: 'reviewers' });
      await page.goto(`${s.url}/settings/integrations`);
      await page.getByLabel('Endpoint').fill('https://gateway.example.com/v1');
      await page.getByLabel('Use case').fill('chat');
      await page.getByLabel('Token').fill('sk-browser-secret-token');
      await page.getByRole('button', { name: 'Create integration' }).click();
      await page.locator('[data-token-state="set"]').waitFor();
      assert.equal(await page.getByLabel('Token').inputValue(), '', 'the token field is emptied');
      assert.ok(!(await page.content()).includes('sk-browser-secret-token'), 'the token is not in the page');
      // Reloaded, the form shows the saved endpoint and use case; the token stays write-only.
      await page.reload();
      await page.locator('[data-token-state="set"]').waitFor();
      assert.equal(await page.getByLabel('Endpoint').inputValue(), 'https://gateway.example.com/v1');
      assert.equal(await page.getByLabel('Use case').inputValue(), 'chat');
      assert.equal(await page.getByLabel('Token').inputValue(), '');
      assert.ok(!(await page.content()).includes('sk-browser-secret-token'), 'nor after a reload');
      const [integration] = await api('GET', '/v2/integrations');
      const section = page.locator(`[data-integration-id="${integration.id}"]`);

      await section.getByLabel('Share with').selectOption('group');
      await section.getByLabel('Group', { exact: true }).selectOption({ label: 'reviewers' });
      await section.getByLabel('Role', { exact: true }).selectOption('editor');
      await section.getByRole('button', { name: 'Share' }).click();
      const roleOf = section.getByLabel('Role of reviewers');
      await roleOf.waitFor();
      const shared = await api('GET', `/v2/integrations/${integration.id}/groups`);
      assert.deepEqual(
        shared.map((g: { group_id: string; role: string }) => [g.group_id, g.role]),
        [[group.id, 'editor']],
      );
      await roleOf.selectOption('viewer');
      for (let i = 0; i < 50; i++) {
        const now = await api('GET', `/v2/integrations/${integration.id}/groups`);
        if (now[0]?.role === 'viewer') break;
        await page.waitForTimeout(100);
      }
      assert.equal((await api('GET', `/v2/integrations/${integration.id}/groups`))[0].role, 'viewer');
      await shots(page, `${store}-settings-integrations`);
    });

    test("Signals: a bad cron shows the API's own message beside the field; a good one previews and saves", async () => {
      const p = await api('POST', '/v2/projects', { name: 'signals-browser' });
      const ls = await api('POST', `/v2/projects/${p.id}/log_streams`, { name: 'prod' });
      const url = `/v2/projects/${p.id}/runs/${ls.id}/signals/configuration`;
      const refusal = await s.call('PUT', url, { schedule: { cron: '61 * * * *' } });
      assert.equal(refusal.status, 422, refusal.text);
      const apiMessage = refusal.body.detail.find(
        (d: { loc: string[] }) => d.loc.join('.') === 'body.schedule.cron',
      ).msg;

      await page.goto(`${s.url}/projects/${p.id}/log_streams/${ls.id}/signals`);
      await page.getByLabel('Cron schedule').fill('61 * * * *');
      await page.getByRole('button', { name: 'Save Signals configuration' }).click();
      assert.equal(await messageBeside(page, 'Cron schedule'), apiMessage);
      await shots(page, `${store}-settings-signals-bad-cron`);

      await page.getByLabel('Cron schedule').fill('0 9 * * 1-5');
      await page.getByLabel('Time zone').fill('Europe/Paris');
      const preview = page.getByTestId('cron-preview');
      await preview.getByText('At 09:00, Monday through Friday').waitFor();
      assert.equal(await preview.locator('li').count(), 5);
      await page.getByLabel('Run mode').selectOption('SCHEDULED');
      await page.getByRole('checkbox', { name: 'high' }).check();
      await page.getByLabel('Focus on', { exact: true }).fill('refunds');
      await page.getByRole('button', { name: 'Save Signals configuration' }).click();
      await page.getByText(/^Saved /).waitFor();
      assert.equal(await page.getByLabel('Cron schedule').getAttribute('aria-invalid'), null);
      const saved = (await api('GET', url)).data;
      assert.deepEqual(saved.schedule, { type: 'CRON', cron: '0 9 * * 1-5', timezone: 'Europe/Paris' });
      assert.equal(saved.run_mode, 'SCHEDULED');
      assert.deepEqual(saved.notification_severities, ['LOW', 'HIGH']);
      assert.equal(saved.user_preferences.focus_on, 'refunds');
      await shots(page, `${store}-settings-signals`);
    });

    test('users, groups and project collaborators pages draw for an admin (screenshots)', async () => {
      const p = await api('POST', '/v2/projects', { name: 'shared-project' });
      const ann = await s.user();
      await api('POST', `/v2/projects/${p.id}/collaborators`, { user_id: ann.id, role: 'viewer' });
      await page.goto(`${s.url}/settings/users`);
      await page.getByRole('heading', { name: 'Users', exact: true }).waitFor();
      await page.getByRole('button', { name: /reviewers/ }).click();
      await page.getByLabel('Add to reviewers').selectOption({ label: ann.email });
      await page.getByRole('button', { name: 'Add member' }).click();
      await page.getByRole('list', { name: 'Members of reviewers' }).getByText(ann.email).waitFor();
      await shots(page, `${store}-settings-users`);

      await page.goto(`${s.url}/projects/${p.id}/collaborators`);
      await page.getByLabel(`Role of ${ann.email}`).selectOption('editor');
      for (let i = 0; i < 50; i++) {
        const users = await api('GET', `/v2/projects/${p.id}/users`);
        if (users.find((u: { user_id: string }) => u.user_id === ann.id)?.role === 'editor') break;
        await page.waitForTimeout(100);
      }
      const users = await api('GET', `/v2/projects/${p.id}/users`);
      assert.equal(users.find((u: { user_id: string }) => u.user_id === ann.id).role, 'editor');
      await shots(page, `${store}-settings-collaborators`);
      // The bad cron's 422 is logged by Chromium as a failed load; nothing else may be.
      assert.deepEqual(
        errors.filter((e) => !e.includes('status of 422')),
        [],
      );
    });
    test('a user who is not an admin sees why the users page is not theirs to change', async () => {
      const u = await s.user();
      const other = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      try {
        const p = await other.newPage();
        await p.goto(`${s.url}/settings/users`);
        await signIn(p, u.email, u.password);
        await p.getByRole('note').getByText('Only admins create users').waitFor({ timeout: TIMEOUT });
        assert.equal(await p.getByRole('button', { name: 'Create user' }).count(), 0);
        assert.equal(await p.getByRole('button', { name: 'Create group' }).count(), 0);
        await screenshot(p, `${store}-settings-users-not-admin-1280`);
      } finally {
        await other.close();
      }
    });
  });
}
