/**
 * Dashboards answered from rollups or by a scan: `answered_by` and `fallback_reason` for each case
 * the rollups leave to a scan, a log stream whose records came before rollups (rebuilt in the
 * background, then answered by rollup with the scan's numbers), and a group column past the cap.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { DIM_VALUE_CAP } from '../../src/domain/rollups.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { ingestTraces, insertRecords } from '../property/support.ts';

const T0 = Date.UTC(2025, 0, 1) * 1000;
const iso = (us: number) => new Date(us / 1000).toISOString();
const EVERYTHING = { filter: { column_id: 'created_at', operator: 'gte', value: '1970-01-01T00:00:00Z' } };

for (const store of storesUnderTest()) {
  describe(`dashboards from rollups [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    before(async () => {
      s = await startTestServer(store);
      projectId = (await s.call('POST', '/v2/projects', { name: `rollups-api-${Date.now()}` })).body.id;
      logStreamId = (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'ls' })).body.id;
      const traces = Array.from({ length: 30 }, (_, i) => ({
        name: i % 2 ? 'chat' : 'search',
        created_at: iso(T0 + i * 7 * 60e6),
        user_metadata: { tier: i % 3 ? 'pro' : 'free', request: `req-${i}` },
        metrics: { duration_ns: 1000 + i * 37, num_input_tokens: i },
        spans: [{ type: 'llm', model: 'gpt-4o', name: 'call', metrics: { duration_ns: 500 + i } }],
      }));
      await ingestTraces(s, projectId, logStreamId, traces);
    });
    after(() => s.close());

    async function query(ls: string, settings: Record<string, unknown>, widgets: [string, string][]) {
      const base = `/v2/projects/${projectId}/log_streams/${ls}/trends`;
      const d = await s.call('POST', base, {
        name: 'd',
        start_time: T0 / 1e6,
        end_time: T0 / 1e6 + 6 * 3600,
        interval_mins: 60,
        ...settings,
      });
      assert.equal(d.status, 200, d.text);
      for (const [metric, aggregation] of widgets) {
        const w = await s.call('POST', `${base}/${d.body.id}/widgets`, {
          name: 'w',
          type: 'table',
          metric,
          aggregation,
        });
        assert.equal(w.status, 200, w.text);
      }
      return async () => {
        const q = await s.call('POST', `${base}/${d.body.id}/query`, {});
        assert.equal(q.status, 200, q.text);
        return q.body;
      };
    }
    const W: [string, string][] = [
      ['id', 'Count'],
      ['duration_ns', 'Average'],
      ['duration_ns', 'P95'],
      ['num_input_tokens', 'Sum'],
    ];

    test('a plain dashboard is answered by rollup, equal to the scan', async () => {
      const a = await (await query(logStreamId, { group_by: 'user_metadata/tier' }, W))();
      const b = await (
        await query(logStreamId, { group_by: 'user_metadata/tier', filter_tree: EVERYTHING }, W)
      )();
      assert.equal(a.answered_by, 'rollup');
      assert.equal(a.fallback_reason, null);
      assert.equal(b.answered_by, 'scan');
      assert.match(b.fallback_reason, /filter_tree/);
      assert.deepEqual(a.groups, b.groups);
      assert.ok(a.groups.includes('pro') && a.groups.includes('free') && a.groups.includes(null));
      for (const k of [0, 1, 3]) assert.deepEqual(a.widgets[k].series, b.widgets[k].series);
      assert.ok(a.widgets[0].series[0].total > 0);
    });

    test('ingestion stores deltas; the fold job adds them to the rollup rows; a read folds its own first', async () => {
      const { store, rollupFold } = s.running.services;
      const deltas = async (runId: string) =>
        Number(
          (
            await store.db
              .selectFrom('rollup_deltas')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('run_id', '=', runId)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const counted = async (runId: string) =>
        Number(
          (
            await store.db
              .selectFrom('rollup_counts')
              .select((eb) => eb.fn.sum('n').as('n'))
              .where('run_id', '=', runId)
              .where('dim', '=', '')
              .executeTakeFirstOrThrow()
          ).n ?? 0,
        );
      const mk = async () =>
        (await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `fold-${randomUUID()}` })).body
          .id as string;
      const traces = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ name: 'f', created_at: iso(T0 + i * 60e6), spans: [] }));

      // The background job: every pending delta folded, the counts those of the records.
      const a = await mk();
      await ingestTraces(s, projectId, a, traces(5));
      await ingestTraces(s, projectId, a, traces(3));
      assert.ok((await deltas(a)) >= 1);
      assert.equal(await counted(a), 0);
      assert.equal(await rollupFold.job.runOnce(), 'done');
      assert.equal(await deltas(a), 0);
      // PostgreSQL: the folded deltas' dead rows were vacuumed.
      if (store.dialect === 'postgres') {
        const { rows } = await sql<{ at: unknown }>`select last_vacuum as at from pg_stat_user_tables
          where relname = 'rollup_deltas' and schemaname = current_schema()`.execute(store.db);
        assert.ok(rows[0]?.at, 'rollup_deltas vacuumed');
      }
      const records = await store.db
        .selectFrom('records')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('run_id', '=', a)
        .executeTakeFirstOrThrow();
      assert.equal(await counted(a), Number(records.n));

      // A dashboard of another log stream, with the job not run: it folds that stream's deltas itself,
      // more than it claims at once (100).
      const b = await mk();
      // The job stopped (for the rest of this server's tests): its timed pass would fold some.
      await rollupFold.job.stop();
      for (let k = 0; k < 130; k++) await ingestTraces(s, projectId, b, traces(1));
      assert.ok((await deltas(b)) > 100);
      const got = await (await query(b, {}, [['id', 'Count']]))();
      assert.equal(got.answered_by, 'rollup');
      const scanned = await (await query(b, { filter_tree: EVERYTHING }, [['id', 'Count']]))();
      assert.equal(got.widgets[0].series[0].total, scanned.widgets[0].series[0].total);
      assert.ok(got.widgets[0].series[0].total >= 130);
      assert.equal(await deltas(b), 0);
    });

    test('what rollups do not answer is scanned, and the answer says why', async () => {
      const cases: [Record<string, unknown>, [string, string][], RegExp][] = [
        [{ interval_mins: 30 }, W, /interval_mins/],
        [{ filter_tree: { filter: { column_id: 'name', operator: 'eq', value: 'chat' } } }, W, /filter_tree/],
        [{}, [['user_metadata/tier', 'Count']], /metric user_metadata\/tier/],
        [{ group_by: 'user_metadata/tier' }, [['duration_ns', 'Max']], /min or max/],
      ];
      for (const [settings, widgets, reason] of cases) {
        const out = await (await query(logStreamId, settings, widgets))();
        assert.equal(out.answered_by, 'scan', JSON.stringify(settings));
        assert.match(out.fallback_reason, reason);
      }
      // Min and Max per metadata value are kept where every record of the range has the key.
      const spansOnly = await (
        await query(logStreamId, { group_by: 'name' }, [
          ['duration_ns', 'Max'],
          ['duration_ns', 'Min'],
        ])
      )();
      assert.equal(spansOnly.answered_by, 'rollup', spansOnly.fallback_reason);
    });

    test('a group column with more values than the cap overflows to a scan', async () => {
      const groups = await (await query(logStreamId, { group_by: 'user_metadata/request' }, W))();
      assert.equal(groups.answered_by, 'rollup', groups.fallback_reason);
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `many-${randomUUID()}` })
      ).body.id;
      const many = Array.from({ length: DIM_VALUE_CAP + 5 }, (_, i) => ({
        name: 't',
        created_at: iso(T0 + i * 1e6),
        user_metadata: { request: `req-${i}` },
        spans: [],
      }));
      await ingestTraces(s, projectId, ls, many);
      const out = await (await query(ls, { group_by: 'user_metadata/request' }, W))();
      assert.equal(out.answered_by, 'scan');
      assert.match(out.fallback_reason, /too many values/);
      assert.equal(out.other_groups + out.groups.length, DIM_VALUE_CAP + 5 + 1);
      const plain = await (await query(ls, {}, W))();
      assert.equal(plain.answered_by, 'rollup', plain.fallback_reason);
    });

    test('keys and values too long to be rollup keys: their dashboards scan, the rest still roll up', async () => {
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `long-${randomUUID()}` })
      ).body.id;
      // PostgreSQL refuses a B-tree key past about 2,700 bytes: these would be rollup keys.
      const longKey = `k${'é'.repeat(400)}`;
      const longMetric = `m${'é'.repeat(400)}`;
      await ingestTraces(s, projectId, ls, [
        {
          name: 'x'.repeat(3000),
          created_at: iso(T0),
          user_metadata: { tier: 'é'.repeat(3000), [longKey]: 'a' },
          metrics: { duration_ns: 5, [longMetric]: 1 },
          spans: [],
        },
        { name: 'short', created_at: iso(T0 + 60e6), user_metadata: { tier: 'pro' }, spans: [] },
      ]);
      const total = (out: any) => out.widgets[0].series.reduce((a: number, x: any) => a + x.total, 0);
      const all = await (await query(ls, {}, W))();
      assert.equal(all.answered_by, 'rollup', all.fallback_reason);
      assert.ok(total(all) >= 2);
      for (const [group, reason] of [
        ['user_metadata/tier', /too many values/],
        ['name', /too many values/],
        [`user_metadata/${longKey}`, /not kept in rollups/],
      ] as const) {
        const out = await (await query(ls, { group_by: group }, W))();
        assert.equal(out.answered_by, 'scan', group);
        assert.match(out.fallback_reason, reason);
        assert.equal(total(out), total(all));
      }
      const metric = await (await query(ls, {}, [[`metrics/${longMetric}`, 'Sum']]))();
      assert.equal(metric.answered_by, 'scan');
      assert.equal(total(metric), 1);
      const plain = await (await query(ls, { group_by: 'model' }, W))();
      assert.equal(plain.answered_by, 'rollup', plain.fallback_reason);
      assert.equal(total(plain), total(all));
    });

    test('records from before rollups: scanned, rebuilt in the background, then answered by rollup', async () => {
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `old-${randomUUID()}` })
      ).body.id;
      await insertRecords(
        s.running.services.store,
        projectId,
        ls,
        Array.from({ length: 50 }, (_, i) => ({
          type: 'llm',
          name: i % 2 ? 'a' : 'b',
          created_at: T0 + i * 5 * 60e6,
          duration_ns: 100 * i,
          num_total_tokens: i,
        })),
      );
      const rollup = await query(ls, { group_by: 'name' }, W);
      const first = await rollup();
      assert.equal(first.answered_by, 'scan');
      assert.match(first.fallback_reason, /before rollups/);
      await s.running.services.widgetData.settled();
      const second = await rollup();
      assert.equal(second.answered_by, 'rollup', second.fallback_reason + ' first:' + first.fallback_reason);
      for (const k of [0, 1, 3]) assert.deepEqual(second.widgets[k].series, first.widgets[k].series);
      assert.equal(second.widgets[0].series[0].total + second.widgets[0].series[1].total, 50);
    });

    test('recomputed costs and written scores keep rollup answers equal to the scan', async () => {
      // A score key the project knows (an unknown metric answers 422).
      const seed = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `seed-${randomUUID()}` })
      ).body.id;
      await ingestTraces(s, projectId, seed, [{ name: 'seed', metrics: { quality: 1 } }]);
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `cost-${randomUUID()}` })
      ).body.id;
      const spanIds: string[] = [];
      const traces = Array.from({ length: 24 }, (_, i) => {
        const id = randomUUID();
        spanIds.push(id);
        return {
          name: 't',
          created_at: iso(T0 + i * 13 * 60e6),
          spans: [
            {
              id,
              type: 'llm',
              name: 'call',
              model: i % 2 ? 'acme-1' : 'gpt-4o',
              created_at: iso(T0 + i * 13 * 60e6 + 1e6),
              metrics: { num_input_tokens: 1000 * (i + 1), num_output_tokens: 10 * i },
            },
          ],
        };
      });
      await ingestTraces(s, projectId, ls, traces);
      const widgets: [string, string][] = [
        ['metrics/cost', 'Sum'],
        ['metrics/cost', 'Count'],
        ['metrics/cost', 'Average'],
        ['metrics/cost', 'P95'],
        ['metrics/quality', 'Sum'],
        ['metrics/quality', 'Count'],
      ];
      const rollup = await query(ls, { group_by: 'model' }, widgets);
      const scan = await query(ls, { group_by: 'model', filter_tree: EVERYTHING }, widgets);
      const same = async (what: string) => {
        const [a, b] = [await rollup(), await scan()];
        assert.equal(a.answered_by, 'rollup', `${what}: ${a.fallback_reason}`);
        assert.deepEqual(a.groups, b.groups, what);
        a.widgets.forEach((w: any, wi: number) => {
          w.series.forEach((x: any, gi: number) => {
            const y = b.widgets[wi].series[gi];
            [...x.values, x.total].forEach((v: number | null, k: number) => {
              const e = k < x.values.length ? y.values[k] : y.total;
              const label = `${what}: ${w.aggregation}(${w.metric}) ${x.group} #${k}: ${v} vs ${e}`;
              if (v === null || e === null) assert.equal(v, e, label);
              else if (w.aggregation === 'P95')
                assert.ok(Math.abs(v - e) <= 0.01 * Math.abs(e) + 1e-12, label);
              else assert.ok(Math.abs(v - e) <= 1e-9 * Math.max(1, Math.abs(e)), label);
            });
          });
        });
        return a;
      };
      const before = await same('as ingested');
      const acmeCost = () => before.widgets[0].series.find((x: any) => x.group === 'acme-1')?.total ?? null;
      assert.equal(acmeCost(), null, 'acme-1 has no price yet');

      // A price for acme-1, then the run priced again: its spans get costs (an update of each).
      const price = await s.call('POST', `/v2/projects/${projectId}/model_prices`, {
        model_pattern: 'acme-.*',
        input_price_per_million: 2,
        output_price_per_million: 2,
      });
      assert.equal(price.status, 200, price.text);
      const re = await s.call('POST', `/v2/projects/${projectId}/recompute-metrics`, { log_stream_id: ls });
      assert.equal(re.status, 200, re.text);
      assert.ok(re.body.records_updated >= 12, JSON.stringify(re.body));
      const priced = await same('after recompute-metrics');
      assert.ok(priced.widgets[0].series.find((x: any) => x.group === 'acme-1').total > 0);

      // Scores written by the background scorers (an update through ingestion).
      for (const [k, id] of spanIds.entries())
        await s.running.services.ingest.writeScore(projectId, ls, id, 'quality', k % 3 === 0 ? null : k / 10);
      const scored = await same('after scores');
      assert.ok(scored.widgets[5].series.reduce((n: number, x: any) => n + x.total, 0) > 0);

      // And once the changed hours are recomputed from the records.
      await s.running.services.widgetData.settled();
      await s.running.services.widgetData.recomputeAll(ls);
      await same('after the recompute of changed hours');
    });

    test('more records outside clean whole hours than a read takes: scanned, and the dirty hours recomputed', async () => {
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `dirty-${randomUUID()}` })
      ).body.id;
      const traces = Array.from({ length: 30 }, (_, i) => ({
        name: 't',
        created_at: iso(T0 + i * 60e6),
        spans: [],
      }));
      await ingestTraces(s, projectId, ls, traces);
      const draw = await query(ls, {}, [['id', 'Count']]);
      const { store, widgetData, rollups } = s.running.services;
      assert.equal((await draw()).answered_by, 'rollup');
      await store.db.insertInto('rollup_dirty').values({ run_id: ls, hour: T0 }).execute();
      const bound = rollups.maxRecordsRead;
      rollups.maxRecordsRead = 10;
      try {
        const scanned = await draw();
        assert.equal(scanned.answered_by, 'scan');
        assert.match(scanned.fallback_reason, /more than 10 records .* \(recompute under way\)/);
        assert.equal(scanned.widgets[0].series[0].total, 31);
        await widgetData.settled();
        const again = await draw();
        assert.equal(again.answered_by, 'rollup', again.fallback_reason);
        assert.equal(again.widgets[0].series[0].total, 31);
      } finally {
        rollups.maxRecordsRead = bound;
      }
    });

    test('daily buckets read the built days from their day rows; a change to a day sets it aside until built again', async () => {
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `days-${randomUUID()}` })
      ).body.id;
      const DAY = 86_400e6;
      // Three days, several hours each, two groups.
      const traces = Array.from({ length: 36 }, (_, i) => ({
        name: i % 2 ? 'a' : 'b',
        created_at: iso(T0 + Math.floor(i / 12) * DAY + (i % 12) * 2 * 3600e6 + 60e6),
        metrics: { duration_ns: 1000 + i * 13 },
        spans: [],
      }));
      await ingestTraces(s, projectId, ls, traces);
      const widgets: [string, string][] = [
        ['id', 'Count'],
        ['duration_ns', 'Sum'],
        ['duration_ns', 'Max'],
        ['duration_ns', 'P95'],
      ];
      const range = { start_time: T0 / 1e6 - 3600, end_time: (T0 + 3 * DAY) / 1e6 + 1800, group_by: 'name' };
      const daily = await query(ls, { ...range, interval_mins: 1440 }, widgets);
      const hourly = await query(ls, { ...range, interval_mins: 60 }, widgets);
      const scan = await query(ls, { ...range, interval_mins: 1440, filter_tree: EVERYTHING }, widgets);
      const { store, rollups } = s.running.services;
      const same = async (what: string) => {
        const [a, b] = [await daily(), await scan()];
        assert.equal(a.answered_by, 'rollup', `${what}: ${a.fallback_reason}`);
        assert.deepEqual(a.groups, b.groups, what);
        for (const k of [0, 1, 2]) assert.deepEqual(a.widgets[k].series, b.widgets[k].series, what);
        return a;
      };
      const built = async () =>
        (
          await store.db
            .selectFrom('rollup_days')
            .select('day')
            .where('run_id', '=', ls)
            .where('built', '=', 1)
            .orderBy('day')
            .execute()
        ).map((r) => Number(r.day));
      /** GET /metrics' count of days waiting to be built (every log stream's). */
      const unbuilt = async () => {
        const m = await s.running.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
        return Number(/^spanbase_rollup_days_unbuilt (\S+)$/m.exec(m.body)?.[1]);
      };
      await same('before the days are built');
      assert.ok((await unbuilt()) >= 3);
      // A minute's quiet is asked of a day before it is built.
      await rollups.buildDays();
      assert.deepEqual(await built(), []);
      while ((await rollups.buildDays({ quietUs: 0 })) > 0);
      assert.deepEqual(await built(), [T0, T0 + DAY, T0 + 2 * DAY]);
      assert.equal(await unbuilt(), 0);
      const before = await same('the days built');

      // The day rows are what a daily dashboard reads: a day row changed by hand shows in it (not in
      // the hourly one, which reads hours).
      await store.db
        .updateTable('rollup_counts')
        .set({ n: sql`n + 100` })
        .where('run_id', '=', ls)
        .where('dim', '=', 'day:name')
        .where('hour', '=', T0 + DAY)
        .where('value', '=', '"a"')
        .execute();
      const tampered = await daily();
      const a = tampered.groups.findIndex((g: unknown) => g === 'a');
      assert.equal(tampered.widgets[0].series[a].values[2], before.widgets[0].series[a].values[2] + 100);
      const hours = await hourly();
      assert.equal(hours.widgets[0].series[a].total, before.widgets[0].series[a].total);

      // A record into that day: its day is set aside (read from its hours) until built again.
      await ingestTraces(s, projectId, ls, [
        { name: 'a', created_at: iso(T0 + DAY + 5 * 60e6), metrics: { duration_ns: 99_999 }, spans: [] },
      ]);
      const after = await same('a record added to a built day');
      assert.equal(after.widgets[0].series[a].values[2], before.widgets[0].series[a].values[2] + 1);
      assert.deepEqual(await built(), [T0, T0 + 2 * DAY]);
      await rollups.buildDays({ quietUs: 0 });
      assert.deepEqual(await built(), [T0, T0 + DAY, T0 + 2 * DAY]);
      await same('built again');

      // A dirty hour: its day is read from hours and records; building it recomputes the hour first.
      await store.db
        .insertInto('rollup_dirty')
        .values({ run_id: ls, hour: T0 + 2 * DAY })
        .execute();
      await same('a dirty hour in a built day');
      await store.db
        .updateTable('rollup_days')
        .set({ built: 0, changed_at: 0 })
        .where('run_id', '=', ls)
        .execute();
      await rollups.buildDays({ quietUs: 0 });
      const left = await store.db
        .selectFrom('rollup_dirty')
        .select('hour')
        .where('run_id', '=', ls)
        .execute();
      assert.deepEqual(left, []);
      assert.deepEqual(await built(), [T0, T0 + DAY, T0 + 2 * DAY]);
      await same('built with its dirty hour recomputed');
    });

    test('an hour of more records than a recompute reads at once is recomputed whole', async () => {
      const ls = (
        await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: `big-${randomUUID()}` })
      ).body.id;
      // 4,500 traces in one hour on 7 instants: the pages of 2,000 split records of one instant.
      const traces = Array.from({ length: 4500 }, (_, i) => ({
        name: i % 2 ? 'a' : 'b',
        created_at: iso(T0 + (i % 7) * 1e6),
        metrics: { duration_ns: 1000 + i },
        spans: [],
      }));
      await ingestTraces(s, projectId, ls, traces);
      const widgets: [string, string][] = [
        ['id', 'Count'],
        ['duration_ns', 'Sum'],
      ];
      const rollup = await query(ls, { group_by: 'name' }, widgets);
      const scan = await query(ls, { group_by: 'name', filter_tree: EVERYTHING }, widgets);
      const { store, widgetData } = s.running.services;
      await widgetData.settled();
      await store.db.insertInto('rollup_dirty').values({ run_id: ls, hour: T0 }).execute();
      await widgetData.recomputeAll(ls);
      const [a, b] = [await rollup(), await scan()];
      assert.equal(a.answered_by, 'rollup', a.fallback_reason);
      assert.deepEqual(a.groups, b.groups);
      for (const k of [0, 1]) assert.deepEqual(a.widgets[k].series, b.widgets[k].series);
      // The traces and their session.
      assert.equal(
        a.widgets[0].series.reduce((n: number, x: any) => n + x.total, 0),
        4501,
      );
    });
  });
}
