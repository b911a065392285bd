import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const close = (a: unknown, b: number, what = '') => {
  assert.ok(typeof a === 'number' && Math.abs(a - b) < 1e-9, `${what}: ${a} ≠ ${b}`);
};

/** 2025-03-10T12:00:00Z, a day with nothing else in it. */
const T0 = '2025-03-10T12:00:00Z';
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

// Hand-computed bills (catalogue prices per million: gpt-4o $2.50 in, $1.25 cached, $10 out;
// claude-sonnet-4-5 $3 in, $0.30 read, $3.75 write, $15 out).
const GPT = {
  model: 'gpt-4o-2024-08-06',
  metrics: { num_input_tokens: 10_000, num_output_tokens: 500, num_cache_read_input_tokens: 6_000 },
};
const GPT_COST = 0.0225;
const CLAUDE = {
  model: 'claude-sonnet-4-5-20250929',
  metrics: {
    num_input_tokens: 100,
    num_output_tokens: 400,
    num_cache_read_input_tokens: 20_000,
    num_cache_creation_input_tokens: 5_000,
  },
};
const CLAUDE_COST = 0.03105;

const llm = (x: { model: string; metrics: Record<string, number> }, extra: Record<string, unknown> = {}) => ({
  type: 'llm',
  id: randomUUID(),
  input: 'q',
  output: 'a',
  ...x,
  ...extra,
});

for (const store of storesUnderTest()) {
  describe(`costs [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    let P: string;

    const send = async (traces: unknown[], extra: Record<string, unknown> = {}) => {
      const r = await s.call('POST', `${P}/traces`, { log_stream_id: logStreamId, traces, ...extra });
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    const span = async (id: string) => (await s.call('GET', `${P}/spans/${id}`)).body;
    const trace = async (id: string) => (await s.call('GET', `${P}/traces/${id}`)).body;
    const session = async (id: string) => (await s.call('GET', `${P}/sessions/${id}`)).body;

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      P = `/v2/projects/${projectId}`;
    });
    after(() => s.close());

    test('llm spans get a cost from the catalogue; traces and sessions carry the sum', async () => {
      const a = llm(GPT);
      const b = llm(CLAUDE);
      const c = llm({ model: 'my-own-model', metrics: { num_input_tokens: 5, num_output_tokens: 5 } });
      const t = {
        id: randomUUID(),
        input: 'q',
        created_at: T0,
        spans: [{ type: 'workflow', spans: [a, b] }, c],
      };
      const r = await send([t]);
      close((await span(a.id)).metrics.cost, GPT_COST, 'openai');
      close((await span(b.id)).metrics.cost, CLAUDE_COST, 'anthropic');
      // No price: no cost at all (not 0), and the model is listed for the user to price.
      assert.equal('cost' in (await span(c.id)).metrics, false);
      close((await trace(t.id)).metrics.cost, GPT_COST + CLAUDE_COST, 'trace');
      close((await session(r.session_id)).metrics.cost, GPT_COST + CLAUDE_COST, 'session');
      const unpriced = await s.call('GET', `${P}/runs/${logStreamId}/models_without_price`);
      assert.equal(unpriced.status, 200, unpriced.text);
      assert.deepEqual(
        unpriced.body.models.map((m: any) => m.model),
        ['my-own-model'],
      );
    });

    test('a cost the client sends wins, on spans and on traces', async () => {
      const a = llm(GPT, { metrics: { ...GPT.metrics, cost: 1.5 } });
      const t = { id: randomUUID(), input: 'q', created_at: T0, spans: [a] };
      await send([t]);
      assert.equal((await span(a.id)).metrics.cost, 1.5);
      close((await trace(t.id)).metrics.cost, 1.5);
      const own = { id: randomUUID(), input: 'q', created_at: T0, metrics: { cost: 9 }, spans: [llm(GPT)] };
      await send([own]);
      assert.equal((await trace(own.id)).metrics.cost, 9);
      // Re-sending the span without a cost keeps the client's.
      await s.call('POST', `${P}/spans`, {
        log_stream_id: logStreamId,
        trace_id: t.id,
        parent_id: t.id,
        spans: [{ ...a, metrics: { num_output_tokens: 900 }, spans: undefined }],
      });
      assert.equal((await span(a.id)).metrics.cost, 1.5);
    });

    test('both cache conventions, and the span that says how it counted', async () => {
      // An Anthropic model whose input count includes the cache (as OpenTelemetry counts it).
      const inclusive = llm(
        { model: 'claude-sonnet-4-5', metrics: { ...CLAUDE.metrics, num_input_tokens: 25_100 } },
        { input_includes_cached_tokens: true },
      );
      const exclusiveGpt = llm(
        { model: 'gpt-4o', metrics: { ...GPT.metrics, num_input_tokens: 4_000 } },
        { input_includes_cached_tokens: false },
      );
      await send([{ id: randomUUID(), created_at: T0, spans: [inclusive, exclusiveGpt] }]);
      close((await span(inclusive.id)).metrics.cost, CLAUDE_COST);
      close((await span(exclusiveGpt.id)).metrics.cost, GPT_COST);
    });

    test('OpenTelemetry spans get the same cost as the JSON route', async () => {
      const traceHex = randomUUID().replaceAll('-', '');
      const attrs = (pairs: [string, string | number][]) =>
        pairs.map(([key, v]) => ({
          key,
          value: typeof v === 'number' ? { intValue: String(v) } : { stringValue: v },
        }));
      const span = (id: string, model: string, usage: [string, number][]) => ({
        traceId: traceHex,
        spanId: id,
        name: `chat ${model}`,
        kind: 3,
        startTimeUnixNano: String(Date.parse(T0) * 1_000_000),
        endTimeUnixNano: String(Date.parse(T0) * 1_000_000 + 1_000_000),
        attributes: attrs([['gen_ai.operation.name', 'chat'], ['gen_ai.request.model', model], ...usage]),
      });
      const body = {
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  // gen_ai.usage.input_tokens counts the cached tokens (the OpenTelemetry convention).
                  span('00000000000000a1', 'claude-sonnet-4-5-20250929', [
                    ['gen_ai.usage.input_tokens', 25_100],
                    ['gen_ai.usage.output_tokens', 400],
                    ['gen_ai.usage.cache_read.input_tokens', 20_000],
                    ['gen_ai.usage.cache_creation.input_tokens', 5_000],
                  ]),
                  span('00000000000000a2', 'gpt-4o-2024-08-06', [
                    ['gen_ai.usage.input_tokens', 10_000],
                    ['gen_ai.usage.output_tokens', 500],
                    ['gen_ai.usage.cache_read.input_tokens', 6_000],
                  ]),
                ],
              },
            ],
          },
        ],
      };
      const r = await s.call('POST', '/otel/v1/traces', body, {
        'Service-API-Key': s.adminKey,
        projectid: projectId,
        logstreamid: logStreamId,
      });
      assert.equal(r.status, 200, r.text);
      const t = await trace(
        `${traceHex.slice(0, 8)}-${traceHex.slice(8, 12)}-${traceHex.slice(12, 16)}-${traceHex.slice(16, 20)}-${traceHex.slice(20)}`,
      );
      const costs = t.spans.map((x: any) => x.metrics.cost).sort();
      close(costs[0], GPT_COST);
      close(costs[1], CLAUDE_COST);
      close(t.metrics.cost, GPT_COST + CLAUDE_COST);
    });

    test('sums follow spans that arrive late and spans sent again', async () => {
      const a = llm(GPT);
      const t = { id: randomUUID(), input: 'q', created_at: T0, spans: [a] };
      const r = await send([t]);
      const late = llm(CLAUDE);
      const add = await s.call('POST', `${P}/spans`, {
        log_stream_id: logStreamId,
        trace_id: t.id,
        parent_id: t.id,
        spans: [late],
      });
      assert.equal(add.status, 200, add.text);
      close((await trace(t.id)).metrics.cost, GPT_COST + CLAUDE_COST);
      // Sent again with twice the output: 500 more output tokens at $10 per million.
      await send([{ ...t, spans: [{ ...a, metrics: { ...GPT.metrics, num_output_tokens: 1_000 } }] }]);
      close((await span(a.id)).metrics.cost, GPT_COST + 0.005);
      close((await trace(t.id)).metrics.cost, GPT_COST + 0.005 + CLAUDE_COST);
      close((await session(r.session_id)).metrics.cost, GPT_COST + 0.005 + CLAUDE_COST);
      // The same batch again changes nothing.
      await send([{ ...t, spans: [{ ...a, metrics: { ...GPT.metrics, num_output_tokens: 1_000 } }] }]);
      close((await session(r.session_id)).metrics.cost, GPT_COST + 0.005 + CLAUDE_COST);
      // A PATCH that changes no token keeps the cost.
      await s.call('PATCH', `${P}/spans/${a.id}`, { log_stream_id: logStreamId, output: 'changed' });
      close((await span(a.id)).metrics.cost, GPT_COST + 0.005);
    });

    test('model prices: create, list with sources, change, delete; 422 with loc', async () => {
      const url = `${P}/model_prices`;
      const bad = async (body: unknown, loc: (string | number)[]) => {
        const r = await s.call('POST', url, body);
        assert.equal(r.status, 422, r.text);
        assert.ok(
          r.body.detail.some((d: any) => JSON.stringify(d.loc) === JSON.stringify(loc)),
          `${JSON.stringify(loc)} in ${r.text}`,
        );
      };
      const good = { model_pattern: 'acme-.*', input_price_per_million: 1, output_price_per_million: 2 };
      await bad({ ...good, input_price_per_million: -1 }, ['body', 'input_price_per_million']);
      await bad({ ...good, cache_read_input_price_per_million: -0.5 }, [
        'body',
        'cache_read_input_price_per_million',
      ]);
      await bad({ ...good, model_pattern: '(acme' }, ['body', 'model_pattern']);
      await bad({ ...good, model_pattern: '(?<=a)b' }, ['body', 'model_pattern']);
      await bad({ ...good, model_pattern: 'x'.repeat(501) }, ['body', 'model_pattern']);
      await bad({ ...good, model_pattern: 'a\u0000' }, ['body', 'model_pattern']);
      await bad({ ...good, start_date: '2025-02-30' }, ['body', 'start_date']);
      await bad({ model_pattern: 'x', input_price_per_million: 1 }, ['body', 'output_price_per_million']);

      const r = await s.call('POST', url, {
        ...good,
        start_date: '2025-01-01',
        cache_read_input_price_per_million: 0.5,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.source, 'project');
      assert.equal(r.body.start_date, '2025-01-01T00:00:00.000Z');
      assert.equal(r.body.cache_creation_input_price_per_million, null);
      const list = await s.call('GET', url);
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.body.project_prices.map((p: any) => p.id),
        [r.body.id],
      );
      assert.ok(list.body.catalogue.models.length >= 150);
      const gpt = list.body.catalogue.models.find((m: any) => m.model_pattern === 'gpt-4o');
      assert.equal(gpt.source, 'litellm:gpt-4o');
      assert.equal(gpt.input_includes_cached_tokens, true);
      assert.ok(list.body.catalogue.sources.litellm);
      assert.match(list.body.catalogue.checked, /^\d{4}-\d{2}-\d{2}$/);

      const patched = await s.call('PATCH', `${url}/${r.body.id}`, {
        output_price_per_million: 3,
        start_date: null,
      });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.body.output_price_per_million, 3);
      assert.equal(patched.body.start_date, null);
      assert.equal(patched.body.cache_read_input_price_per_million, 0.5);
      const badPatch = await s.call('PATCH', `${url}/${r.body.id}`, { model_pattern: '[' });
      assert.equal(badPatch.status, 422);
      assert.deepEqual(badPatch.body.detail[0].loc, ['body', 'model_pattern']);
      assert.equal(
        (await s.call('PATCH', `${url}/${randomUUID()}`, { output_price_per_million: 1 })).status,
        404,
      );
      assert.equal((await s.call('DELETE', `${url}/${r.body.id}`)).status, 200);
      assert.equal((await s.call('DELETE', `${url}/${r.body.id}`)).status, 404);
      assert.deepEqual((await s.call('GET', url)).body.project_prices, []);
    });

    test('viewers read prices, editors change them', async () => {
      const viewer = await s.user();
      const editor = await s.user();
      for (const [u, role] of [
        [viewer, 'viewer'],
        [editor, 'editor'],
      ] as const) {
        const share = await s.call('POST', `${P}/collaborators`, { user_id: u.id, role });
        assert.equal(share.status, 200, share.text);
      }
      const body = { model_pattern: 'v-.*', input_price_per_million: 1, output_price_per_million: 1 };
      assert.equal((await s.call('GET', `${P}/model_prices`, undefined, viewer.key)).status, 200);
      assert.equal((await s.call('POST', `${P}/model_prices`, body, viewer.key)).status, 403);
      const made = await s.call('POST', `${P}/model_prices`, body, editor.key);
      assert.equal(made.status, 200, made.text);
      assert.equal(
        (await s.call('DELETE', `${P}/model_prices/${made.body.id}`, undefined, viewer.key)).status,
        403,
      );
      assert.equal(
        (await s.call('DELETE', `${P}/model_prices/${made.body.id}`, undefined, editor.key)).status,
        200,
      );
    });

    test('project prices beat the catalogue from their start date; recompute applies today’s prices', async () => {
      const own = await projectWithLogStream(s);
      const Q = `/v2/projects/${own.projectId}`;
      const sendTo = async (traces: unknown[]) => {
        const r = await s.call('POST', `${Q}/traces`, { log_stream_id: own.logStreamId, traces });
        assert.equal(r.status, 200, r.text);
        return r.body;
      };
      // $1 in and $1 out per million for gpt-4o from minute 30; the catalogue before.
      const price = await s.call('POST', `${Q}/model_prices`, {
        model_pattern: 'gpt-4o(-\\d{4}-\\d{2}-\\d{2})?',
        input_price_per_million: 1,
        output_price_per_million: 1,
        start_date: at(30),
      });
      assert.equal(price.status, 200, price.text);
      const early = llm(GPT, { created_at: at(0) });
      const later = llm(GPT, { created_at: at(60) });
      const client = llm(GPT, { created_at: at(60), metrics: { ...GPT.metrics, cost: 7 } });
      const mine = llm(
        { model: 'acme-1', metrics: { num_input_tokens: 1_000_000, num_output_tokens: 0 } },
        { created_at: at(60) },
      );
      const t = { id: randomUUID(), input: 'q', created_at: at(0), spans: [early, later, client, mine] };
      const r = await sendTo([t]);
      const get = async (id: string) => (await s.call('GET', `${Q}/spans/${id}`)).body.metrics.cost;
      close(await get(early.id), GPT_COST);
      // 4,000 uncached + 6,000 cached (no cache price: input price) + 500 output, all at $1.
      close(await get(later.id), 0.0105);
      assert.equal(await get(client.id), 7);
      assert.equal(await get(mine.id), undefined);
      const unpriced = await s.call('GET', `${Q}/runs/${own.logStreamId}/models_without_price`);
      assert.deepEqual(
        unpriced.body.models.map((m: any) => m.model),
        ['acme-1'],
      );

      // New prices apply to records written after them; a recompute applies them to stored ones.
      await s.call('POST', `${Q}/model_prices`, {
        model_pattern: 'acme-.*',
        input_price_per_million: 2,
        output_price_per_million: 2,
      });
      assert.equal(await get(mine.id), undefined);
      await s.call('PATCH', `${Q}/model_prices/${price.body.id}`, { start_date: null });
      const re = await s.call('POST', `${Q}/recompute-metrics`, {
        log_stream_id: own.logStreamId,
        scorer_ids: [],
      });
      assert.equal(re.status, 200, re.text);
      assert.equal(re.body.records_scanned, 4);
      assert.equal(re.body.records_updated, 2);
      close(await get(early.id), 0.0105);
      close(await get(later.id), 0.0105);
      assert.equal(await get(client.id), 7);
      close(await get(mine.id), 2);
      const sum = 0.0105 * 2 + 7 + 2;
      close((await s.call('GET', `${Q}/traces/${t.id}`)).body.metrics.cost, sum, 'trace');
      close((await s.call('GET', `${Q}/sessions/${r.session_id}`)).body.metrics.cost, sum, 'session');
      const usage = await s.call(
        'POST',
        `${Q}/log_streams/${own.logStreamId}/logstream_insights/token_usage`,
        {},
      );
      close(usage.body.token_usages[0].cost, sum, 'day');
      assert.deepEqual(
        (await s.call('GET', `${Q}/runs/${own.logStreamId}/models_without_price`)).body.models,
        [],
      );
      // A second recompute finds nothing to change.
      const again = await s.call('POST', `${Q}/recompute-metrics`, { log_stream_id: own.logStreamId });
      assert.equal(again.body.records_updated, 0);
      const none = await s.call('POST', `${Q}/recompute-metrics`, {});
      assert.equal(none.status, 422);
      const unknown = await s.call('POST', `${Q}/recompute-metrics`, { log_stream_id: randomUUID() });
      assert.equal(unknown.status, 404);
    });

    test('cost is a column: available, filtered, sorted; a dashboard metric; in token usage', async () => {
      const own = await projectWithLogStream(s);
      const Q = `/v2/projects/${own.projectId}`;
      const cheap = llm(
        { model: 'gpt-4o-mini', metrics: { num_input_tokens: 1_000, num_output_tokens: 0 } },
        { created_at: T0 },
      );
      const dear = llm(GPT, { created_at: T0 });
      const none = llm({ model: 'unknown', metrics: { num_input_tokens: 1 } }, { created_at: T0 });
      const r = await s.call('POST', `${Q}/traces`, {
        log_stream_id: own.logStreamId,
        traces: [{ id: randomUUID(), created_at: T0, spans: [cheap, dear, none] }],
      });
      assert.equal(r.status, 200, r.text);
      const cols = await s.call('POST', `${Q}/spans/available_columns`, { log_stream_id: own.logStreamId });
      const cost = cols.body.columns.find((c: any) => c.id === 'metrics/cost');
      assert.equal(cost.data_type, 'floating_point');
      assert.equal(cost.filter_type, 'number');
      assert.equal(cols.body.columns.filter((c: any) => c.id === 'metrics/cost').length, 1);
      const search = async (body: Record<string, unknown>) => {
        const x = await s.call('POST', `${Q}/spans/search`, { log_stream_id: own.logStreamId, ...body });
        assert.equal(x.status, 200, x.text);
        return x.body.records.map((rec: any) => rec.id);
      };
      assert.deepEqual(
        await search({
          filters: [{ column_id: 'metrics/cost', operator: 'gt', value: 0.001, type: 'number' }],
        }),
        [dear.id],
      );
      assert.deepEqual(
        await search({
          filters: [{ column_id: 'type', operator: 'eq', value: 'llm' }],
          sort: { name: 'metrics/cost', ascending: true },
        }),
        [cheap.id, dear.id, none.id],
      );
      const usage = await s.call(
        'POST',
        `${Q}/log_streams/${own.logStreamId}/logstream_insights/token_usage`,
        {},
      );
      close(usage.body.token_usages[0].cost, 0.00015 + GPT_COST, 'day');

      const base = `${Q}/log_streams/${own.logStreamId}/trends`;
      const d = await s.call('PUT', base, {
        start_time: Date.parse(T0) / 1000 - 3600,
        end_time: Date.parse(T0) / 1000 + 3600,
        interval_mins: 120,
        filter_tree: { filter: { column_id: 'type', operator: 'eq', value: 'llm' } },
      });
      assert.equal(d.status, 200, d.text);
      for (const aggregation of ['Sum', 'Average', 'Min', 'Max', 'Count', 'P50']) {
        const w = await s.call('POST', `${base}/${d.body.id}/widgets`, {
          name: aggregation,
          type: 'number',
          metric: 'cost',
          aggregation,
        });
        assert.equal(w.status, 200, w.text);
      }
      const q = await s.call('POST', `${base}/${d.body.id}/query`, {});
      assert.equal(q.status, 200, q.text);
      const totals = Object.fromEntries(q.body.widgets.map((w: any) => [w.id, w.series[0].total]));
      const byName = new Map<string, number>();
      const all = await s.call('GET', `${base}/${d.body.id}`);
      for (const w of all.body.widgets) byName.set(w.name, totals[w.id]);
      close(byName.get('Sum'), 0.00015 + GPT_COST, 'Sum');
      close(byName.get('Average'), (0.00015 + GPT_COST) / 2, 'Average');
      close(byName.get('Min'), 0.00015, 'Min');
      close(byName.get('Max'), GPT_COST, 'Max');
      assert.equal(byName.get('Count'), 2);
      close(byName.get('P50'), 0.00015, 'P50');
    });
  });
}
