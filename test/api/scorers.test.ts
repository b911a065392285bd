import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { PRESETS } from '../../src/domain/scorer-presets.ts';
import { RollupsRepo } from '../../src/store/rollups.ts';
import { ScorersRepo } from '../../src/store/scorers.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

type Json = Record<string, any>;

for (const store of storesUnderTest()) {
  describe(`scorers [${store}]`, () => {
    let s: TestServer;
    let P: string;
    let LS: string;
    const ok = async (method: string, url: string, body?: unknown, key?: string | null) => {
      const r = await s.call(method, url, body, key);
      assert.equal(r.status, 200, `${method} ${url}: ${r.text}`);
      return r.body;
    };
    const fail = async (status: number, method: string, url: string, body?: unknown, key?: string | null) => {
      const r = await s.call(method, url, body, key);
      assert.equal(r.status, status, `${method} ${url}: ${r.text}`);
      return r.body;
    };
    const proj = (path: string) => `/v2/projects/${P}${path}`;
    const settings = () => proj(`/runs/${LS}/scorer-settings`);
    const rule = async (name: string, version: Json) => {
      const sc = await ok('POST', '/v2/scorers', { name, scorer_type: 'rule' });
      await ok('POST', `/v2/scorers/${sc.id}/version/rule`, version);
      return sc.id as string;
    };
    const trace = (id: string, output: string, extra: Json = {}) => ({
      id,
      name: 'chat',
      input: 'What is 2+2?',
      output,
      spans: [{ type: 'llm', name: 'model', input: 'What is 2+2?', output, ...extra }],
      ...extra,
    });
    const traceById = (id: string) => ok('GET', proj(`/traces/${id}`));
    /** An inline scorer's status counts by state; checks the records agree with the rollups on them. */
    const inlineStatus = async (ls: string, name: string) => {
      const status = await ok('GET', proj(`/runs/${ls}/scorer-settings/status`));
      const counts = status.scorers.find((x: Json) => x.name === name).counts;
      const store = s.running.services.store;
      const fromRollups = await new RollupsRepo(store).inlineTallies(ls, [name]);
      assert.ok(fromRollups, 'the rollups answer');
      assert.deepEqual(await new ScorersRepo(store.db, store.dialect).inlineTallies(ls, [name]), fromRollups);
      return Object.fromEntries(counts.map((c: Json) => [c.status, c.count]));
    };

    before(async () => {
      s = await startTestServer(store, { SPANBASE_JOB_POLL_MS: '20', SPANBASE_JOB_RETRY_BASE_MS: '1' });
      P = (await ok('POST', '/v2/projects', { name: `sc-${Date.now()}` })).id;
      LS = (await ok('POST', proj('/log_streams'), { name: 'ls' })).id;
    });
    after(() => s?.close());

    test('presets are listed by the names the official client knows, a page at a time', async () => {
      const all = await ok('POST', '/v2/scorers/list', { filters: [] });
      const names = all.scorers.map((x: Json) => x.name);
      for (const n of [
        'correctness',
        'completeness',
        'context_adherence',
        'instruction_adherence',
        'tool_selection_quality',
        'output_toxicity',
        'bleu',
        'rouge',
      ])
        assert.ok(names.includes(n), n);
      assert.equal(all.next_starting_token, null);
      const one = await ok('POST', '/v2/scorers/list', {
        filters: [{ name: 'name', operator: 'eq', value: 'correctness' }],
      });
      assert.equal(one.scorers.length, 1);
      assert.equal(one.scorers[0].scorer_type, 'preset');
      assert.match(one.scorers[0].default_version.chain_poll_template.template, /\{\{output\}\}/);
      const some = await ok('POST', '/v2/scorers/list', {
        filters: [{ name: 'name', operator: 'one_of', value: ['bleu', 'rouge', 'nope'] }],
      });
      assert.deepEqual(
        some.scorers.map((x: Json) => x.name),
        ['bleu', 'rouge'],
      );
      const page1 = await ok('POST', '/v2/scorers/list?starting_token=0&limit=3', {});
      assert.equal(page1.scorers.length, 3);
      assert.equal(page1.next_starting_token, 3);
      const last = await ok('POST', `/v2/scorers/list?starting_token=${PRESETS.length - 1}&limit=100`, {
        filters: [{ name: 'scorer_type', operator: 'eq', value: 'preset' }],
      });
      assert.equal(last.scorers.length, 1);
      assert.equal(last.next_starting_token, null);
      const preset = await ok('GET', `/v2/scorers/${one.scorers[0].id}`);
      assert.equal(preset.name, 'correctness');
      await fail(403, 'PATCH', `/v2/scorers/${preset.id}`, { description: 'x' });
      await fail(422, 'POST', '/v2/scorers/list', {
        filters: [{ name: 'created_at', operator: 'gt', value: 'x' }],
      });
    });

    test('an LLM scorer: create, versions, restore, tags, update, delete, and who may change it', async () => {
      const sc = await ok('POST', '/v2/scorers', {
        name: 'polite',
        scorer_type: 'llm',
        tags: ['tone'],
        defaults: { model_name: 'gpt-4.1-mini', num_judges: 3 },
        output_type: 'boolean',
        scoreable_node_types: ['llm'],
      });
      assert.equal(sc.latest_version, null);
      await fail(409, 'POST', '/v2/scorers', { name: 'polite', scorer_type: 'llm' });
      await fail(409, 'POST', '/v2/scorers', { name: 'correctness', scorer_type: 'llm' });
      await fail(422, 'POST', '/v2/scorers', { name: 'cost', scorer_type: 'llm' });
      await fail(422, 'POST', '/v2/scorers', { name: 'x', scorer_type: 'magic' });
      await fail(422, 'POST', `/v2/scorers/${sc.id}/version/llm`, { model_name: 'm' });
      const v1 = await ok('POST', `/v2/scorers/${sc.id}/version/llm`, {
        user_prompt: 'Is the answer polite?',
      });
      assert.equal(v1.version, 1);
      assert.equal(v1.model_name, 'gpt-4.1-mini');
      assert.equal(v1.num_judges, 3);
      const v2 = await ok('POST', `/v2/scorers/${sc.id}/version/llm`, {
        chain_poll_template: { template: 'Reply: {{output}}. Polite?' },
        num_judges: 5,
      });
      assert.equal(v2.version, 2);
      assert.equal((await ok('GET', `/v2/scorers/${sc.id}`)).default_version.version, 2);
      assert.equal(
        (await ok('GET', `/v2/scorers/${sc.id}/version?version=1`)).user_prompt,
        'Is the answer polite?',
      );
      await fail(404, 'GET', `/v2/scorers/${sc.id}/version?version=9`);
      assert.equal((await ok('GET', `/v2/scorers/${sc.id}/versions`)).versions.length, 2);
      await ok('POST', `/v2/scorers/${sc.id}/versions/1/restore`);
      assert.equal((await ok('GET', `/v2/scorers/${sc.id}`)).default_version.version, 1);
      assert.deepEqual(await ok('GET', '/v2/scorers/tags'), ['tone']);
      const other = await s.user();
      assert.equal((await ok('GET', `/v2/scorers/${sc.id}`, undefined, other.key)).name, 'polite');
      await fail(403, 'PATCH', `/v2/scorers/${sc.id}`, { description: 'mine' }, other.key);
      await fail(403, 'DELETE', `/v2/scorers/${sc.id}`, undefined, other.key);
      await fail(401, 'GET', `/v2/scorers/${sc.id}`, undefined, null);
      const patched = await ok('PATCH', `/v2/scorers/${sc.id}`, {
        description: 'politeness',
        tags: ['tone', 'style'],
      });
      assert.equal(patched.description, 'politeness');
      await fail(422, 'POST', `/v2/scorers/${sc.id}/version/rule`, { rule: 'json_valid' });
      await ok('DELETE', `/v2/scorers/${sc.id}`);
      await fail(404, 'GET', `/v2/scorers/${sc.id}`);
      await fail(422, 'GET', '/v2/scorers/not-a-uuid');
    });

    test('Python code scorers answer the hosted task shape with a refusal pointing at rule scorers', async () => {
      const task = await ok('POST', '/v2/scorers/code/validate');
      assert.equal(task.status, 'failed');
      assert.match(task.result.error_message, /rule scorer/);
      assert.equal((await ok('GET', '/v2/scorers/code/validate/abc')).status, 'failed');
      const code = await ok('POST', '/v2/scorers', { name: 'py', scorer_type: 'code' });
      const r = await fail(422, 'POST', `/v2/scorers/${code.id}/version/code`);
      assert.match(JSON.stringify(r), /rule scorer/);
      const b = await fail(422, 'POST', settings(), { scorers: [{ id: code.id, scorer_type: 'code' }] });
      assert.match(JSON.stringify(b), /not run by Spanbase/);
    });

    test('rule versions are checked', async () => {
      const sc = await ok('POST', '/v2/scorers', { name: 'checked', scorer_type: 'rule' });
      const url = `/v2/scorers/${sc.id}/version/rule`;
      await fail(422, 'POST', url, { rule: 'regex', params: { pattern: '(' } });
      await fail(422, 'POST', url, { rule: 'regex', params: {} });
      await fail(422, 'POST', url, { rule: 'contains', field: 'elsewhere', params: { value: 'x' } });
      await fail(422, 'POST', url, { rule: 'json_schema', params: { schema: { type: 'nope' } } });
      await fail(422, 'POST', url, { rule: 'length', params: { max: 'ten' } });
      await fail(422, 'POST', url, { rule: 'telepathy' });
      const v = await ok('POST', url, { rule: 'contains', field: 'metadata.lang', params: { value: 'en' } });
      assert.equal(v.rule.field, 'metadata.lang');
      assert.equal(v.output_type, 'boolean');
    });

    test('rules run at ingestion into metrics, with a state and reason for every record and scorer', async () => {
      const has4 = await rule('has_four', { rule: 'contains', field: 'output', params: { value: '4' } });
      const json = await rule('is_json', { rule: 'json_valid', field: 'output' });
      const schema = await rule('answer_schema', {
        rule: 'json_schema',
        field: 'output',
        params: { schema: { type: 'object', required: ['answer'] } },
      });
      const short = await rule('short', { rule: 'length', field: 'output', params: { max: 10 } });
      const chars = await rule('chars', { rule: 'length', field: 'output' });
      const lang = await rule('english', {
        rule: 'regex',
        field: 'metadata.lang',
        params: { pattern: '^en', flags: 'i' },
      });
      const exact = await rule('exact', { rule: 'equals_ground_truth', field: 'output' });
      const slow = await rule('slow', { rule: 'latency_ms', params: { min: 1000 } });
      const viewer = await s.user();
      await ok('POST', proj('/collaborators'), { user_id: viewer.id, role: 'viewer' });
      await fail(403, 'POST', settings(), { scorers: [] }, viewer.key);
      await fail(422, 'POST', settings(), { scorers: [{ id: crypto.randomUUID(), scorer_type: 'rule' }] });
      await fail(422, 'POST', settings(), {
        scorers: [
          { id: has4, scorer_type: 'rule' },
          { id: has4, scorer_type: 'rule' },
        ],
      });
      const saved = await ok('POST', settings(), {
        run_id: LS,
        scorers: [has4, json, schema, short, chars, lang, exact, slow].map((id) => ({
          id,
          scorer_type: 'rule',
          scoreable_node_types: ['trace'],
        })),
      });
      assert.equal(saved.scorers.length, 8);
      assert.equal(saved.scorers[0].scorer_version.version, 1);
      assert.deepEqual((await ok('GET', settings())).scorers.map((x: Json) => x.name).slice(0, 2), [
        'has_four',
        'is_json',
      ]);

      const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      await ok('POST', proj('/traces'), {
        log_stream_id: LS,
        traces: [
          {
            ...trace(a, '4'),
            user_metadata: { lang: 'EN-us' },
            dataset_output: '4',
            metrics: { duration_ns: 2e9 },
          },
          { ...trace(b, '{"answer": 5}'), user_metadata: { lang: 'fr' } },
          trace(c, 'It is four, I believe.'),
        ],
      });
      const ta = await traceById(a);
      assert.equal(ta.metrics.has_four, 1);
      assert.equal(ta.metrics.is_json, 1);
      assert.equal(ta.metrics.answer_schema, 0);
      assert.equal(ta.metrics.short, 1);
      assert.equal(ta.metrics.chars, 1);
      assert.equal(ta.metrics.english, 1);
      assert.equal(ta.metrics.exact, 1);
      assert.equal(ta.metrics.slow, 1);
      assert.deepEqual(ta.metric_info.has_four, {
        status_type: 'success',
        value: 1,
        display_value: '1',
        explanation: null,
      });
      // Spans are not a scoreable type of these scorers: no entry.
      assert.deepEqual(ta.spans[0].metric_info, {});
      const tb = await traceById(b);
      assert.equal(tb.metrics.has_four, 0);
      assert.equal(tb.metrics.answer_schema, 1);
      assert.equal(tb.metrics.english, 0);
      assert.equal(tb.metric_info.exact.status_type, 'not_applicable');
      assert.match(tb.metric_info.exact.message, /ground truth/);
      const tc = await traceById(c);
      assert.equal(tc.metrics.is_json, 0);
      assert.equal(tc.metrics.chars, 22);
      assert.equal(tc.metric_info.english.status_type, 'not_applicable');
      assert.match(tc.metric_info.english.message, /metadata\.lang/);
      assert.equal(tc.metric_info.slow.status_type, 'not_applicable');

      // A later write of the output scores the record again.
      await ok('PATCH', proj(`/traces/${c}`), { log_stream_id: LS, output: 'It is 4' });
      assert.equal((await traceById(c)).metrics.has_four, 1);

      // metrics/<name> is a column like any other: filter, sort, available columns with scorer_config.
      const found = await ok('POST', proj('/traces/search'), {
        log_stream_id: LS,
        filters: [{ column_id: 'metrics/has_four', operator: 'eq', value: 1, type: 'number' }],
        sort: { column_id: 'metrics/chars', ascending: true, sort_type: 'column' },
      });
      assert.deepEqual(
        found.records.map((r: Json) => r.id),
        [a, c],
      );
      assert.equal(found.records[0].metric_info, undefined);
      const withInfo = await ok('POST', proj('/traces/search'), {
        log_stream_id: LS,
        include_code_metric_metadata: true,
        filters: [{ column_id: 'metrics/has_four', operator: 'eq', value: 1, type: 'number' }],
      });
      assert.equal(withInfo.records[0].metric_info.has_four.status_type, 'success');
      const cols = await ok('POST', proj('/traces/available_columns'), { log_stream_id: LS });
      const col = cols.columns.find((x: Json) => x.id === 'metrics/has_four');
      assert.equal(col.scorer_id, has4);
      assert.equal(col.scorer_config.name, 'has_four');
      await ok('POST', settings(), { scorers: [] });
    });

    test('filters and deterministic sampling decide which records are scored, and say why not', async () => {
      const ls = (await ok('POST', proj('/log_streams'), { name: `sampled-${Date.now()}` })).id;
      const has4 = await rule('has_four_sampled', {
        rule: 'contains',
        field: 'output',
        params: { value: '4' },
      });
      const url = proj(`/runs/${ls}/scorer-settings`);
      await ok('POST', url, {
        scorers: [
          {
            id: has4,
            scorer_type: 'rule',
            scoreable_node_types: ['trace'],
            filters: [{ name: 'metadata', key: 'env', operator: 'eq', value: 'prod' }],
          },
        ],
        segment_filters: [{ filter: null, sample_rate: 0.5 }],
      });
      const ids = Array.from({ length: 40 }, () => crypto.randomUUID());
      await ok('POST', proj('/traces'), {
        log_stream_id: ls,
        traces: ids.map((id, i) => ({ ...trace(id, '4'), user_metadata: { env: i < 30 ? 'prod' : 'dev' } })),
      });
      const page = await ok('POST', proj('/traces/search'), {
        log_stream_id: ls,
        include_code_metric_metadata: true,
        limit: 100,
      });
      const states = page.records.map((r: Json) => r.metric_info.has_four_sampled);
      const filtered = states.filter((x: Json) => /filtered out/.test(x.message ?? ''));
      const sampled = states.filter((x: Json) => /sampled out/.test(x.message ?? ''));
      const scored = page.records.filter((r: Json) => r.metrics.has_four_sampled === 1);
      assert.equal(filtered.length, 10);
      assert.equal(sampled.length + scored.length, 30);
      assert.ok(sampled.length > 0 && scored.length > 0);
      assert.deepEqual(await inlineStatus(ls, 'has_four_sampled'), {
        success: scored.length,
        not_computed: 40 - scored.length,
      });
      // The segment keeps its rate when a later save leaves segment_filters out.
      const again = await ok('PATCH', url, {
        scorers: [{ id: has4, scorer_type: 'rule', scoreable_node_types: ['trace'] }],
      });
      assert.equal(again.segment_filters[0].sample_rate, 0.5);
    });

    test('recompute: dry run counts and estimates, the cap holds, and a backfill scores earlier records', async () => {
      const ls = (await ok('POST', proj('/log_streams'), { name: `backfill-${Date.now()}` })).id;
      const ids = Array.from({ length: 12 }, () => crypto.randomUUID());
      await ok('POST', proj('/traces'), {
        log_stream_id: ls,
        traces: ids.map((id, i) => trace(id, i % 2 ? 'yes 4' : 'no')),
      });
      const later = await rule('later_rule', { rule: 'contains', field: 'output', params: { value: '4' } });
      await ok('POST', proj(`/runs/${ls}/scorer-settings`), {
        scorers: [{ id: later, scorer_type: 'rule', scoreable_node_types: ['trace'] }],
      });
      const before = await traceById(ids[1]);
      assert.equal(before.metrics.later_rule, undefined);
      assert.deepEqual(await inlineStatus(ls, 'later_rule'), { success: 0, not_computed: 12 });
      assert.match(before.metric_info.later_rule.message, /recompute/);
      await fail(422, 'POST', proj('/recompute_metrics'), {
        log_stream_id: ls,
        scorer_ids: [crypto.randomUUID()],
      });
      const dry = await ok('POST', proj('/recompute_metrics'), {
        log_stream_id: ls,
        scorer_ids: [later],
        dry_run: true,
      });
      assert.equal(dry.records, 12);
      assert.equal(dry.estimated_cost, 0);
      assert.equal(dry.records_scored, 0);
      assert.equal((await traceById(ids[1])).metrics.later_rule, undefined);
      const capped = await fail(422, 'POST', proj('/recompute-metrics'), {
        log_stream_id: ls,
        scorer_ids: [later],
        max_records: 5,
      });
      assert.match(JSON.stringify(capped), /12 records, more than the cap of 5/);
      const done = await ok('POST', proj('/recompute-metrics'), {
        log_stream_id: ls,
        scorer_ids: [later],
        filters: [{ column_id: 'output', operator: 'contains', value: '4', type: 'text' }],
      });
      assert.equal(done.records, 6);
      assert.equal(done.records_changed, 6);
      assert.equal((await traceById(ids[1])).metrics.later_rule, 1);
      assert.equal((await traceById(ids[0])).metrics.later_rule, undefined);
      assert.deepEqual(await inlineStatus(ls, 'later_rule'), { success: 6, not_computed: 6 });
      // Without scorer_ids the route still reprices costs.
      const priced = await ok('POST', proj('/recompute-metrics'), { log_stream_id: ls });
      assert.equal(typeof priced.records_scanned, 'number');
    });

    test('LLM scorers queue one task per record and scorer version; the status route counts them', async () => {
      const ls = (await ok('POST', proj('/log_streams'), { name: `llm-${Date.now()}` })).id;
      const preset = (
        await ok('POST', '/v2/scorers/list', {
          filters: [{ name: 'name', operator: 'eq', value: 'correctness' }],
        })
      ).scorers[0];
      const has4 = await rule('has_four_llm_run', {
        rule: 'contains',
        field: 'output',
        params: { value: '4' },
      });
      await ok('POST', proj(`/runs/${ls}/scorer-settings`), {
        scorers: [
          { id: preset.id, name: 'correctness', scorer_type: 'preset' },
          { id: has4, scorer_type: 'rule' },
        ],
      });
      const ids = Array.from({ length: 3 }, () => crypto.randomUUID());
      const spanIds = ids.map(() => crypto.randomUUID());
      const traces = ids.map((id, i) => {
        const t = trace(id, '4');
        return { ...t, spans: [{ ...t.spans[0], id: spanIds[i] }] };
      });
      await ok('POST', proj('/traces'), { log_stream_id: ls, traces });
      // Sent again: no second task.
      await ok('POST', proj('/traces'), { log_stream_id: ls, traces });
      const t = await traceById(ids[0]);
      assert.equal(t.metric_info.correctness.status_type, 'pending');
      assert.equal(t.spans[0].metric_info.correctness.status_type, 'pending');
      assert.equal(t.metrics.has_four_llm_run, 1);
      const status = await ok('GET', proj(`/runs/${ls}/scorer-settings/status`));
      const correctness = status.scorers.find((x: Json) => x.name === 'correctness');
      assert.equal(correctness.kind, 'llm');
      const pending = correctness.counts
        .filter((c: Json) => c.status === 'pending')
        .reduce((n: number, c: Json) => n + c.count, 0);
      // Three traces and their three llm spans (queued, or paused: nobody here has an integration).
      assert.equal(pending, 6);
      assert.equal(status.spend_today, 0);
      const other = await s.user();
      await fail(404, 'GET', proj(`/runs/${ls}/scorer-settings/status`), undefined, other.key);
      // Each request wrote one batch job, not a job per task. The queue expanded the first into its
      // six tasks; their first call paused the run (no integration), and a paused run's batches wait.
      const db = s.running.services.store.db;
      const jobs = async (kind: string) =>
        db
          .selectFrom('jobs')
          .select(['status', 'payload'])
          .where('run_id', '=', ls)
          .where('kind', '=', kind)
          .execute();
      const batches = await jobs('score_batch');
      assert.equal(batches.length, 2);
      for (const b of batches) {
        const payload = typeof b.payload === 'string' ? JSON.parse(b.payload) : b.payload;
        assert.equal(
          payload.groups.reduce((n: number, g: Json) => n + g.record_ids.length, 0),
          6,
        );
      }
      const end = Date.now() + 30_000;
      while (!(await jobs('score_batch')).some((b) => b.status === 'done') && Date.now() < end)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal((await jobs('score')).length, 6);
    });
  });
}
