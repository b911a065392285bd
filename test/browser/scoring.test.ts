/**
 * A run's scoring in the console, in Chromium against a real server and the fake provider, on each
 * store: a rule scorer created on the scorers page (a refused rule first, then fixed), enabled on a
 * log stream with an LLM judge on the run's Scoring page; records ingested through the API are
 * counted in the status (polled while the page is open), re-scored after a dry run, and the rule's
 * score is a column of the traces table. A judge whose provider answers 401 pauses the run, and the
 * page says so. A viewer sees the settings read-only. Screenshots land in SHOT_DIR.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  type ConsoleServer,
  assertFitsPhone,
  screenshot,
  signIn,
  startConsoleServer,
  openSignedIn,
} from '../helpers/browser.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { storesUnderTest } from '../helpers/server.ts';

const TIMEOUT = 15_000;

/** Waits until the element's text matches (the page changes it on its own: polling, no reload). */
async function textMatches(page: Page, selector: string, re: RegExp): Promise<string> {
  const until = Date.now() + TIMEOUT;
  for (;;) {
    const text = await page.locator(selector).innerText({ timeout: TIMEOUT });
    if (re.test(text)) return text;
    if (Date.now() > until) assert.fail(`${selector} never matched ${re}: ${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const store of storesUnderTest()) {
  describe(`a run's scoring page [${store}]`, () => {
    let s: ConsoleServer;
    let fake: FakeProvider;
    let browser: Browser;
    let page: Page;
    let errors: string[];

    before(async () => {
      s = await startConsoleServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_JOB_POLL_MS: '20',
      });
      fake = await startFakeProvider();
      fake.reply = () => '{"explanation": "Fine.", "rating": true}';
      const gw = await s.call('PUT', '/v2/integrations/example_gateway', {
        endpoint: fake.url,
        use_case: 'chat',
        token: 'sk-browser-test-token-0123456789',
      });
      assert.equal(gw.status, 200, gw.text);
      ({ browser, page, errors } = await openSignedIn(s, { width: 1280, height: 900 }, TIMEOUT));
    });
    after(async () => {
      await browser?.close();
      await fake?.close();
      await s?.close();
    });

    /** An LLM judge of traces through the fake provider, made through the API. */
    async function judge(name: string) {
      const sc = (await s.call('POST', '/v2/scorers', { name, scorer_type: 'llm' })).body;
      const v = await s.call('POST', `/v2/scorers/${sc.id}/version/llm`, {
        model_name: 'fake-model',
        num_judges: 1,
        scoreable_node_types: ['trace'],
        chain_poll_template: { template: 'Q: {{input}}\nA: {{output}}\nIs it right?' },
      });
      assert.equal(v.status, 200, v.text);
      return sc.id as string;
    }

    async function ingest(P: string, LS: string, traces: { name: string; output: string }[]) {
      const r = await s.call('POST', `/v2/projects/${P}/traces`, {
        log_stream_id: LS,
        traces: traces.map((t) => ({
          id: crypto.randomUUID(),
          input: 'Capital of France?',
          spans: [],
          ...t,
        })),
      });
      assert.equal(r.status, 200, r.text);
    }

    test('a rule made in the console, enabled on a log stream, is counted, re-scored and a column', async () => {
      const P = (await s.call('POST', '/v2/projects', { name: 'scoring project' })).body.id;
      const LS = (await s.call('POST', `/v2/projects/${P}/log_streams`, { name: 'production' })).body.id;
      await judge('city_judge');

      // The scorers page: a rule the server refuses (a bad pattern) is explained; fixed, it is made.
      await page.goto(`${s.url}/scorers`);
      const form = page.locator('form.rule-editor');
      await form.getByLabel('Rule name').fill('mentions_paris');
      await form.getByLabel('Rule', { exact: true }).selectOption('regex');
      await form.getByLabel('Pattern').fill('(paris');
      await form.getByRole('button', { name: 'Create rule scorer' }).click();
      await form.locator('.form-error').waitFor();
      assert.match(await form.locator('.form-error').innerText(), /not a valid regular expression/);
      // (The refusal's 422 is the console's: expected, not an error of the page.)
      errors.length = 0;
      await form.getByLabel('Pattern').fill('paris');
      await form.getByLabel('Flags').fill('i');
      await form.getByRole('button', { name: 'Create rule scorer' }).click();
      await form.getByText('Created mentions_paris').waitFor();
      const row = page.locator('.scorers-table tr[data-scorer="mentions_paris"]');
      await row.waitFor();
      assert.match(await row.innerText(), /rule/);
      assert.match(await row.locator('.definition').innerText(), /^output matches \/paris\/i$/);
      // One scorer of that name (the fixed rule went to the scorer the refused one made).
      const listed = await s.call('POST', '/v2/scorers/list', {
        filters: [{ name: 'name', operator: 'eq', value: 'mentions_paris' }],
      });
      assert.equal(listed.body.scorers.length, 1);
      assert.equal(listed.body.scorers[0].default_version.rule.params.flags, 'i');
      await page.evaluate('window.scrollTo(0, 0)');
      await screenshot(page, 'scorers-rule');
      await assertFitsPhone(page, 'scorers-rule');

      // The run's Scoring page, through its tab: enable the rule and the judge, save.
      await page.goto(`${s.url}/projects/${P}/log_streams/${LS}/traces`);
      await page
        .getByRole('navigation', { name: 'Run pages' })
        .getByRole('link', { name: 'Scoring' })
        .click();
      await page.waitForURL((u) => u.pathname.endsWith('/scoring'));
      const settings = page.getByRole('form', { name: 'Scorer settings' });
      await settings.getByRole('checkbox', { name: 'mentions_paris' }).check();
      await settings.getByRole('checkbox', { name: 'city_judge' }).check();
      assert.match(
        await settings.locator('tr[data-scorer="correctness"]').innerText(),
        /preset/,
        'presets are offered with their type',
      );
      await settings.getByLabel('Sample rate (%)').fill('100');
      await settings.getByRole('button', { name: 'Save scorer settings' }).click();
      await settings.getByText('Saved', { exact: true }).waitFor();
      const saved = (await s.call('GET', `/v2/projects/${P}/runs/${LS}/scorer-settings`)).body;
      assert.deepEqual(saved.scorers.map((c: { name: string }) => c.name).sort(), [
        'city_judge',
        'mentions_paris',
      ]);
      assert.deepEqual(saved.segment_filters, []);
      assert.ok(saved.integration_id, 'the judges call the caller’s integration');

      // Records arrive: the status, asked again while the page is open, counts the judge's scores.
      await ingest(P, LS, [
        { name: 'paris-1', output: 'Paris' },
        { name: 'rome', output: 'Rome' },
        { name: 'paris-2', output: 'It is paris.' },
      ]);
      const judged = page.locator('[data-status-scorer="city_judge"]');
      await textMatches(page, '[data-status-scorer="city_judge"]', /success\s+\S*\s*3/);
      assert.match(await judged.innerText(), /LLM judge/);
      // The rule scored the three traces as they were written (its node type; spans are not its).
      await textMatches(
        page,
        '[data-status-scorer="mentions_paris"]',
        /success\s+scored as the record was written.*\s3$/,
      );
      assert.match(await page.locator('[data-status-scorer="mentions_paris"]').innerText(), /rule/);
      await page.evaluate('window.scrollTo(0, 0)');
      await screenshot(page, 'scoring-page');
      await assertFitsPhone(page, 'scoring-page');

      // Re-score: a dry run counts the records and the cost, then the confirmation does it.
      const rescore = page.getByRole('form', { name: 'Re-score existing records' });
      await rescore.getByRole('checkbox', { name: 'city_judge' }).uncheck();
      await rescore.getByRole('button', { name: 'Count records (dry run)' }).click();
      const estimate = rescore.locator('.rescore-estimate');
      await estimate.waitFor();
      assert.match(await estimate.innerText(), /3 records would be scored again; estimated cost \$0\.00/);
      await page.evaluate('window.scrollTo(0, 0)');
      await screenshot(page, 'scoring-rescore-estimate');
      await rescore.getByRole('button', { name: 'Re-score 3 records' }).click();
      await rescore.getByText(/Re-scored: 3 records/).waitFor();

      // The traces table: the rule's score is a column to choose, with each trace's value.
      await page.goto(`${s.url}/projects/${P}/log_streams/${LS}/traces`);
      await page.locator('summary', { hasText: 'Columns' }).click();
      await page.getByRole('checkbox', { name: 'mentions_paris' }).check();
      await page.waitForURL((u) => (u.searchParams.get('cols') ?? '').includes('metrics/mentions_paris'));
      await page.locator('summary', { hasText: 'Columns' }).click();
      const table = page.locator('table.records');
      await table.locator('th', { hasText: 'mentions_paris' }).waitFor();
      // (Headers are shown in capitals.)
      const heads = (await table.locator('thead th').allInnerTexts()).map((h) => h.trim().toLowerCase());
      const at = heads.findIndex((h) => h.startsWith('mentions_paris'));
      const name = heads.findIndex((h) => h.startsWith('name'));
      const cells: Record<string, string> = {};
      for (const r of await table.locator('tbody tr').all()) {
        const texts = (await r.locator('td').allInnerTexts()).map((t) => t.trim());
        cells[texts[name]] = texts[at];
      }
      assert.deepEqual(cells, { 'paris-1': '1', rome: '0', 'paris-2': '1' });
      await table.locator('th', { hasText: 'mentions_paris' }).scrollIntoViewIfNeeded();
      await screenshot(page, 'traces-score-column');
      assert.deepEqual(errors, []);
    });

    test('a judge whose provider answers 401 pauses the run: the page shows why', async () => {
      const P = (await s.call('POST', '/v2/projects', { name: 'paused project' })).body.id;
      const LS = (await s.call('POST', `/v2/projects/${P}/log_streams`, { name: 'default' })).body.id;
      const id = await judge('auth_judge');
      const on = await s.call('POST', `/v2/projects/${P}/runs/${LS}/scorer-settings`, {
        scorers: [{ id, scorer_type: 'llm' }],
      });
      assert.equal(on.status, 200, on.text);
      await page.goto(`${s.url}/projects/${P}/log_streams/${LS}/scoring`);
      await page.locator('[data-status-scorer="auth_judge"]').waitFor();
      assert.equal(await page.locator('.pause-banner').count(), 0);
      fake.queueFault({ status: 401, body: '{"error":{"message":"bad key"}}' });
      await ingest(P, LS, [{ name: 'one', output: 'Paris' }]);
      // No reload: the page's polling brings the pause.
      const banner = page.locator('.pause-banner');
      await banner.waitFor();
      assert.match(await banner.innerText(), /LLM scorers are paused: .*credential/);
      await textMatches(page, '[data-status-scorer="auth_judge"]', /pending\s+paused/);
      await page.evaluate('window.scrollTo(0, 0)');
      await screenshot(page, 'scoring-paused');
      // Saving the settings again lifts the pause; the fake answers again: the record is scored.
      await page.getByRole('button', { name: 'Save scorer settings' }).click();
      await banner.waitFor({ state: 'detached' });
      await textMatches(page, '[data-status-scorer="auth_judge"]', /success\s+\S*\s*1/);
      assert.deepEqual(errors, []);
    });

    test("an experiment has its Scoring page too: the rule enabled there is the experiment's", async () => {
      const P = (await s.call('POST', '/v2/projects', { name: 'experiment project' })).body.id;
      const EX = (await s.call('POST', `/v2/projects/${P}/experiments`, { name: 'prompt v2' })).body.id;
      await page.goto(`${s.url}/projects/${P}/experiments/${EX}/traces`);
      await page
        .getByRole('navigation', { name: 'Run pages' })
        .getByRole('link', { name: 'Scoring' })
        .click();
      const settings = page.getByRole('form', { name: 'Scorer settings' });
      await settings.getByRole('checkbox', { name: 'bleu' }).check();
      await settings.getByLabel('Sample rate (%)').fill('25');
      await settings.getByLabel('Sample LLM judges only (rules score every record)').check();
      await settings.getByRole('button', { name: 'Save scorer settings' }).click();
      await settings.getByText('Saved', { exact: true }).waitFor();
      const saved = (await s.call('GET', `/v2/projects/${P}/runs/${EX}/scorer-settings`)).body;
      assert.deepEqual(
        saved.scorers.map((c: { name: string }) => c.name),
        ['bleu'],
      );
      assert.deepEqual(saved.segment_filters, [{ filter: null, sample_rate: 0.25, llm_scorers: true }]);
      // Opened again, the form shows what was saved.
      await page.reload();
      assert.equal(await settings.getByLabel('Sample rate (%)').inputValue(), '25');
      assert.equal(await settings.getByRole('checkbox', { name: 'bleu' }).isChecked(), true);
      await settings.getByRole('checkbox', { name: 'bleu' }).uncheck();
      await settings.getByLabel('Sample rate (%)').fill('120');
      await settings.getByRole('button', { name: 'Save scorer settings' }).click();
      await settings.getByText('A percentage from 0 to 100').waitFor();
      assert.equal(
        (await s.call('GET', `/v2/projects/${P}/runs/${EX}/scorer-settings`)).body.scorers.length,
        1,
      );
      assert.deepEqual(errors, []);
    });

    test('a viewer sees the settings and status, read-only, and no re-score', async () => {
      const P = (await s.call('POST', '/v2/projects', { name: 'viewed project' })).body.id;
      const LS = (await s.call('POST', `/v2/projects/${P}/log_streams`, { name: 'default' })).body.id;
      const id = await judge('viewed_judge');
      await s.call('POST', `/v2/projects/${P}/runs/${LS}/scorer-settings`, {
        scorers: [{ id, scorer_type: 'llm' }],
      });
      const viewer = await s.user();
      const share = await s.call('POST', `/v2/projects/${P}/collaborators`, {
        user_id: viewer.id,
        role: 'viewer',
      });
      assert.ok(share.status < 300, share.text);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(TIMEOUT);
      const vp = await context.newPage();
      await vp.goto(`${s.url}/login`);
      await signIn(vp, viewer.email, viewer.password);
      await vp.waitForURL((u) => !u.pathname.startsWith('/login'));
      await vp.goto(`${s.url}/projects/${P}/log_streams/${LS}/scoring`);
      const settings = vp.getByRole('form', { name: 'Scorer settings' });
      await settings.getByText('Only an editor of the project changes').waitFor();
      assert.equal(await settings.getByRole('checkbox', { name: 'viewed_judge' }).isChecked(), true);
      assert.equal(await settings.getByRole('checkbox', { name: 'viewed_judge' }).isDisabled(), true);
      assert.equal(await settings.getByRole('button', { name: 'Save scorer settings' }).count(), 0);
      assert.equal(await vp.getByRole('form', { name: 'Re-score existing records' }).count(), 0);
      await vp.locator('[data-status-scorer="viewed_judge"]').waitFor();
      await context.close();
    });
  });
}
