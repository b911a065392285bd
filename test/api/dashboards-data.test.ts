/**
 * Widget data: every aggregation, per bucket and group, over records inserted straight into the
 * store, compared with a plain TypeScript computation over the same records (filter trees evaluated
 * by the reference evaluator of query/evaluate.ts), on each store.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { lookupColumn } from '../../src/query/columns.ts';
import { type EvalRecord, evaluate } from '../../src/query/evaluate.ts';
import { validateFilterTree } from '../../src/query/filters.ts';
import type { Store } from '../../src/store/db.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

// ---- seeding (straight into the store, in the row shape ingestion writes) ----

/** A record as tests describe it: JSON columns as values, everything optional but type. */
export interface SeedRecord {
  id?: string;
  type: string;
  name?: string;
  created_at?: number;
  updated_at?: number;
  is_complete?: boolean;
  session_id?: string | null;
  trace_id?: string | null;
  parent_id?: string | null;
  status_code?: number | null;
  duration_ns?: number | null;
  num_input_tokens?: number | null;
  num_output_tokens?: number | null;
  num_total_tokens?: number | null;
  model?: string | null;
  external_id?: string | null;
  error_message?: string | null;
  input_text?: string | null;
  output_text?: string | null;
  metrics?: Record<string, unknown> | null;
  user_metadata?: Record<string, unknown> | null;
  dataset_metadata?: Record<string, unknown> | null;
  tags?: unknown;
  num_children?: number;
}

const T0 = Date.UTC(2025, 0, 1) * 1000;

/** Inserts records straight into the `records` table (the row shape search reads). */
export async function insertRecords(
  store: Store,
  projectId: string,
  runId: string,
  records: SeedRecord[],
): Promise<string[]> {
  const enc = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  const rows = records.map((r, i) => ({
    id: r.id ?? randomUUID(),
    project_id: projectId,
    run_id: runId,
    type: r.type,
    session_id: r.session_id ?? null,
    trace_id: r.trace_id ?? null,
    parent_id: r.parent_id ?? null,
    name: r.name ?? '',
    created_at: r.created_at ?? T0 + i * 1_000_000,
    updated_at: r.updated_at ?? r.created_at ?? T0 + i * 1_000_000,
    is_complete: r.is_complete === false ? 0 : 1,
    status_code: r.status_code ?? null,
    duration_ns: r.duration_ns ?? null,
    num_input_tokens: r.num_input_tokens ?? null,
    num_output_tokens: r.num_output_tokens ?? null,
    num_total_tokens: r.num_total_tokens ?? null,
    num_cache_read_input_tokens: null,
    num_cache_creation_input_tokens: null,
    time_to_first_token_ns: null,
    model: r.model ?? null,
    external_id: r.external_id ?? null,
    error_message: r.error_message ?? null,
    input_text: r.input_text ?? null,
    output_text: r.output_text ?? null,
    metrics: enc(r.metrics),
    user_metadata: enc(r.user_metadata),
    dataset_metadata: enc(r.dataset_metadata),
    tags: enc(r.tags),
    body: null,
    num_children: r.num_children ?? 0,
  }));
  for (let i = 0; i < rows.length; i += 200) {
    await store.db
      .insertInto('records')
      .values(rows.slice(i, i + 200) as any)
      .execute();
  }
  // Records written around ingestion have no dashboard rollups: the log stream's dashboards scan.
  await store.db
    .insertInto('rollup_gaps')
    .values({ run_id: runId })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return rows.map((r) => r.id);
}

/** Notes keys in the column catalogue, as ingestion does. */
export async function catalogue(
  store: Store,
  runId: string,
  entries: {
    column_id: string;
    record_type: string;
    data_type: string;
    first_seen?: number;
    last_seen?: number;
  }[],
): Promise<void> {
  if (!entries.length) return;
  // The ingestion migration (003) creates the table; this keeps the tests independent of its order.
  await sql`create table if not exists column_catalogue (run_id text not null, column_id text not null,
    record_type text not null, data_type text not null, first_seen bigint not null, last_seen bigint not null,
    primary key (run_id, column_id, record_type, data_type))`.execute(store.db);
  await store.db
    .insertInto('column_catalogue')
    .values(
      entries.map((e) => ({
        run_id: runId,
        column_id: e.column_id,
        record_type: e.record_type,
        data_type: e.data_type,
        first_seen: e.first_seen ?? T0,
        last_seen: e.last_seen ?? T0 + 1e12,
      })),
    )
    .execute();
}

const HOUR = 3600;
/** 2025-03-01T00:00:00Z, epoch seconds. */
const T = Date.UTC(2025, 2, 1) / 1000;

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeRecords(n: number, seed: number): SeedRecord[] {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const out: SeedRecord[] = [];
  // Boundaries: the range start (in), a bucket edge, the range end (out), just before the start (out).
  const fixed = [T, T + 6 * HOUR, T + 72 * HOUR, T - 1];
  for (let i = 0; i < n; i++) {
    const type = pick(['trace', 'llm', 'llm', 'tool', 'session']);
    const at = i < fixed.length ? fixed[i] * 1e6 : Math.floor((T - 6 * HOUR + r() * 84 * HOUR) * 1e6);
    const metrics: Record<string, unknown> = {};
    if (r() < 0.7) metrics.cost = Math.round(r() * 1e6) / 1e4;
    if (r() < 0.5) metrics.score = Math.floor(r() * 10);
    const meta: Record<string, unknown> = {};
    const c = r();
    if (c < 0.7) meta.customer = pick(['acme', 'globex', 'initech', 'Acme']);
    else if (c < 0.8) meta.customer = 5;
    const f = r();
    if (f < 0.6) meta.flag = r() < 0.3;
    else if (f < 0.7) meta.flag = 'yes';
    else if (f < 0.75) meta.flag = null;
    out.push({
      type,
      name: pick(['chat', 'search', 'plan', 'answer', 'rerank', 'embed']),
      created_at: at,
      is_complete: r() < 0.8,
      status_code: pick([200, 200, 500, null]),
      // Few distinct values, so percentiles meet ties.
      duration_ns:
        r() < 0.9 ? pick([1, 2, 3, 5, 8, 13, 21, 34, 55, 89]) * 1_000_000 + Math.floor(r() * 3) : null,
      num_total_tokens: type === 'llm' || type === 'trace' ? Math.floor(r() * 5000) : null,
      model: type === 'llm' ? pick(['gpt-4o', 'claude-3', 'llama-3', null]) : null,
      metrics,
      user_metadata: meta,
      tags: r() < 0.5 ? ['a', pick(['x', 'y'])] : [],
      input_text: pick(['hello world', 'Hello World!', 'the WORLD is big', 'nothing here', null]),
    });
  }
  return out;
}

/** The records as the evaluator reads them (rows of `records` with JSON parsed). */
function asRows(records: SeedRecord[]): EvalRecord[] {
  return records.map((x, i) => ({
    ...x,
    id: `r${i}`,
    created_at: x.created_at!,
    is_complete: x.is_complete === false ? 0 : 1,
    metrics: x.metrics ?? null,
    user_metadata: x.user_metadata ?? null,
    tags: x.tags ?? null,
  }));
}

type Agg =
  | 'Count'
  | 'Sum'
  | 'Average'
  | 'Min'
  | 'Max'
  | 'P50'
  | 'P90'
  | 'P95'
  | 'P99'
  | 'PercentageTrue'
  | 'PercentageFalse';

const WIDGETS: [string, Agg][] = [
  ['id', 'Count'],
  ['duration_ns', 'Count'],
  ['user_metadata/customer', 'Count'],
  ['metrics/cost', 'Count'],
  ['num_total_tokens', 'Sum'],
  ['metrics/cost', 'Sum'],
  ['duration_ns', 'Average'],
  ['metrics/score', 'Average'],
  ['user_metadata/customer', 'Average'],
  ['metrics/cost', 'Min'],
  ['duration_ns', 'Min'],
  ['metrics/score', 'Max'],
  ['status_code', 'Max'],
  ['duration_ns', 'P50'],
  ['duration_ns', 'P90'],
  ['duration_ns', 'P95'],
  ['duration_ns', 'P99'],
  ['metrics/cost', 'P50'],
  ['metrics/cost', 'P99'],
  ['num_total_tokens', 'P90'],
  ['is_complete', 'PercentageTrue'],
  ['is_complete', 'PercentageFalse'],
  ['user_metadata/flag', 'PercentageTrue'],
  ['user_metadata/flag', 'PercentageFalse'],
];

/** Widgets drawn as charts (the rest are tables): one percentile and one sum. */
const chartOnly = (metric: string, agg: Agg) =>
  (metric === 'metrics/cost' && agg === 'P99') || (metric === 'num_total_tokens' && agg === 'Sum');

/** The metric value of a record, written out plainly from the rules in the README. */
function metricValue(rec: EvalRecord, metric: string, agg: Agg): number | null {
  const id = lookupColumn(metric).ok ? metric : `metrics/${metric}`;
  const slash = id.indexOf('/');
  const ns = slash > 0 ? id.slice(0, slash) : null;
  const key = slash > 0 ? id.slice(slash + 1) : id;
  const boolWanted = agg === 'PercentageTrue' || agg === 'PercentageFalse';
  let v: unknown;
  if (
    ns === 'user_metadata' ||
    ns === 'dataset_metadata' ||
    (ns === 'metrics' && !['duration_ns', 'num_total_tokens'].includes(key))
  ) {
    const obj = rec[ns!] as Record<string, unknown> | null;
    if (!obj || !Object.hasOwn(obj, key)) return null;
    v = obj[key];
    if (agg === 'Count') return v === null ? null : 1;
    if (boolWanted) return typeof v === 'boolean' ? (v ? 1 : 0) : null;
    return typeof v === 'number' ? v : null;
  }
  v = rec[key];
  if (v === null || v === undefined) return null;
  if (agg === 'Count') return 1;
  return Number(v);
}

/** Plain definitions: nearest-below rank floor(p·(N−1)/100) for percentiles (see README). */
function reference(values: number[], agg: Agg): number | null {
  if (agg === 'Count') return values.length;
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  let sum = 0;
  for (const v of values) sum += v;
  switch (agg) {
    case 'Sum':
      return sum;
    case 'Average':
      return sum / values.length;
    case 'Min':
      return sorted[0];
    case 'Max':
      return sorted[sorted.length - 1];
    case 'PercentageTrue':
      return (100 * values.filter((v) => v === 1).length) / values.length;
    case 'PercentageFalse':
      return (100 * values.filter((v) => v === 0).length) / values.length;
    default: {
      const p = Number(agg.slice(1));
      return sorted[Math.floor((p * (sorted.length - 1)) / 100)];
    }
  }
}

function groupValue(rec: EvalRecord, groupBy: string | null): unknown {
  if (!groupBy) return null;
  if (groupBy.startsWith('user_metadata/')) {
    const v = (rec.user_metadata as Record<string, unknown> | null)?.[groupBy.slice('user_metadata/'.length)];
    return typeof v === 'string' ? v : null;
  }
  const v = rec[groupBy];
  if (v === null || v === undefined) return null;
  if (groupBy === 'is_complete') return v === 1;
  return v;
}

function close(actual: number | null, expected: number | null, what: string) {
  if (expected === null || actual === null) return assert.equal(actual, expected, what);
  if (Number.isInteger(expected) && Math.abs(expected) < 2 ** 53 && Number.isInteger(actual))
    return assert.equal(actual, expected, what);
  assert.ok(
    Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)),
    `${what}: ${actual} vs ${expected}`,
  );
}

interface Setup {
  groupBy: string | null;
  filter: unknown;
  intervalMins: number;
  groupLimit?: number;
}

for (const store of storesUnderTest()) {
  describe(`trends dashboard data [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    let base: string;
    const records = makeRecords(700, 7);
    const rows = asRows(records);
    const widgetIds: string[] = [];

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      base = `/v2/projects/${projectId}/log_streams/${logStreamId}/trends`;
      const st = s.running.services.store;
      await insertRecords(st, projectId, logStreamId, records);
      await catalogue(st, logStreamId, [
        { column_id: 'metrics/cost', record_type: 'llm', data_type: 'floating_point' },
        { column_id: 'metrics/score', record_type: 'llm', data_type: 'integer' },
      ]);
    });
    after(() => s.close());

    async function check(setup: Setup) {
      const d = await s.call('POST', base, {
        name: 'data',
        start_time: T,
        end_time: T + 72 * HOUR,
        interval_mins: setup.intervalMins,
        group_by: setup.groupBy,
        filter_tree: setup.filter,
      });
      assert.equal(d.status, 200, d.text);
      const ids: string[] = [];
      for (const [metric, aggregation] of WIDGETS) {
        const w = await s.call('POST', `${base}/${d.body.id}/widgets`, {
          name: `${aggregation} ${metric}`,
          type: chartOnly(metric, aggregation) ? 'line_chart' : 'table',
          metric,
          aggregation,
        });
        assert.equal(w.status, 200, w.text);
        ids.push(w.body.id);
      }
      widgetIds.splice(0, widgetIds.length, ...ids);
      const q = await s.call(
        'POST',
        `${base}/${d.body.id}/query`,
        setup.groupLimit ? { group_limit: setup.groupLimit } : undefined,
      );
      assert.equal(q.status, 200, q.text);
      const data = q.body;

      // The reference.
      const size = setup.intervalMins * 60;
      const first = Math.floor(T / size) * size;
      const count = Math.ceil((T + 72 * HOUR - first) / size);
      assert.deepEqual(
        data.buckets,
        Array.from({ length: count }, (_, i) => first + i * size),
      );
      const tree = setup.filter ? validateFilterTree(setup.filter, ['body', 'filter_tree']) : null;
      const inRange = rows.filter(
        (r) => r.created_at >= T * 1e6 && r.created_at < (T + 72 * HOUR) * 1e6 && evaluate(tree, r),
      );
      const groupCounts = new Map<unknown, number>();
      for (const r of inRange) {
        const g = groupValue(r, setup.groupBy);
        groupCounts.set(g, (groupCounts.get(g) ?? 0) + 1);
      }
      const cmp = (a: unknown, b: unknown) =>
        a === b
          ? 0
          : a === null
            ? 1
            : b === null
              ? -1
              : typeof a === 'number' && typeof b === 'number'
                ? a - b
                : String(a) < String(b)
                  ? -1
                  : 1;
      const ranked = [...groupCounts.entries()]
        .sort((x, y) => y[1] - x[1] || cmp(x[0], y[0]))
        .map(([g]) => g);
      const limit = setup.groupLimit ?? 10;
      const shown = setup.groupBy ? ranked.slice(0, limit) : [null];
      assert.deepEqual(data.groups, shown);
      assert.equal(data.other_groups, setup.groupBy ? Math.max(0, ranked.length - limit) : 0);
      assert.equal(data.widgets.length, WIDGETS.length);

      WIDGETS.forEach(([metric, agg], wi) => {
        const got = data.widgets[wi];
        assert.equal(got.id, ids[wi]);
        assert.equal(got.series.length, shown.length);
        shown.forEach((g, gi) => {
          const series = got.series[gi];
          assert.deepEqual(series.group, g);
          const mine = inRange.filter(
            (r) => Object.is(groupValue(r, setup.groupBy), g) || groupValue(r, setup.groupBy) === g,
          );
          const values = (rs: EvalRecord[]) =>
            rs.map((r) => metricValue(r, metric, agg)).filter((v): v is number => v !== null);
          for (let b = 0; b < count; b++) {
            const inBucket = mine.filter((r) => Math.floor((r.created_at / 1e6 - first) / size) === b);
            close(
              series.values[b],
              reference(values(inBucket), agg),
              `${agg}(${metric}) group ${g} bucket ${b}`,
            );
          }
          // A chart's percentile has no total (it would take another pass); every other total is there.
          const total = chartOnly(metric, agg) && agg.startsWith('P') ? null : reference(values(mine), agg);
          close(series.total, total, `${agg}(${metric}) group ${g} total`);
        });
      });
      return data;
    }

    test('no group_by, no filter, 6-hour buckets', async () => {
      const data = await check({ groupBy: null, filter: null, intervalMins: 360 });
      // Something was counted: the comparison is not vacuous.
      assert.ok(data.widgets[0].series[0].total > 500);
    });

    test('grouped by model, filtered by type', async () => {
      await check({
        groupBy: 'model',
        filter: { filter: { column_id: 'type', operator: 'one_of', value: ['llm', 'trace'] } },
        intervalMins: 180,
      });
    });

    test('grouped by a metadata key, filtered with not/or over a metric and tags', async () => {
      await check({
        groupBy: 'user_metadata/customer',
        filter: {
          or: [
            { not: { filter: { column_id: 'metrics/cost', operator: 'gt', value: 50 } } },
            { filter: { column_id: 'tags', operator: 'contains', value: 'x' } },
          ],
        },
        intervalMins: 47,
      });
    });

    // Text search through the trigram index (and, on PostgreSQL, its queue of records not yet indexed).
    test('grouped by name, filtered by text contained in the input', async () => {
      await check({
        groupBy: 'name',
        filter: {
          or: [
            {
              filter: {
                type: 'text',
                column_id: 'input',
                operator: 'contains',
                value: 'world',
                case_sensitive: false,
              },
            },
            {
              filter: {
                type: 'text',
                column_id: 'input',
                operator: 'contains',
                value: 'Hello',
                case_sensitive: true,
              },
            },
          ],
        },
        intervalMins: 60,
      });
    });

    test('grouped by a boolean, hourly buckets', async () => {
      await check({ groupBy: 'is_complete', filter: null, intervalMins: 60 });
    });

    // 864 buckets: more than one statement covers (store/widget-cells-sqlite.ts MAX_CHUNKS), so each row
    // carries its bucket.
    test('grouped by name, 5-minute buckets', async () => {
      await check({ groupBy: 'name', filter: null, intervalMins: 5 });
    });

    test('no group_by, filtered, 5-minute buckets', async () => {
      await check({
        groupBy: null,
        filter: { filter: { column_id: 'type', operator: 'eq', value: 'llm' } },
        intervalMins: 5,
      });
    });

    test('group_limit keeps the groups with most records', async () => {
      const data = await check({ groupBy: 'name', filter: null, intervalMins: 1440, groupLimit: 2 });
      assert.equal(data.groups.length, 2);
      assert.equal(data.other_groups, 4);
    });

    test('the query body may pick widgets and override the range and interval', async () => {
      const d = (await s.call('GET', base)).body.at(-1);
      const q = await s.call('POST', `${base}/${d.id}/query`, {
        widget_ids: [widgetIds[0]],
        start_time: T,
        end_time: T + HOUR,
        interval_mins: 30,
      });
      assert.equal(q.status, 200, q.text);
      assert.deepEqual(q.body.buckets, [T, T + 1800]);
      assert.equal(q.body.widgets.length, 1);
      assert.equal(q.body.interval_mins, 30);
      const inHour = rows.filter((r) => r.created_at >= T * 1e6 && r.created_at < (T + HOUR) * 1e6);
      const total = q.body.widgets[0].series.reduce((a: number, x: any) => a + x.total, 0);
      assert.equal(total, Math.min(inHour.length, total), 'counts within the hour');
      const rel = await s.call('POST', `${base}/${d.id}/query`, {
        relative_time: 'last_2_hours',
        interval_mins: 60,
      });
      assert.equal(rel.status, 200, rel.text);
      assert.ok(rel.body.buckets.length === 2 || rel.body.buckets.length === 3);
      assert.ok(
        rel.body.widgets.every((w: any) =>
          w.series.every((x: any) => x.values.every((v: any) => v === null || v === 0)),
        ),
      );

      const bad: [unknown, unknown[], string][] = [
        [{ widget_ids: [crypto.randomUUID()] }, ['body', 'widget_ids', 0], 'value_error'],
        [{ start_time: T, relative_time: 'last_1_day' }, ['body'], 'value_error'],
        [
          { interval_mins: 1, start_time: T, end_time: T + 30 * 86_400 },
          ['body', 'interval_mins'],
          'value_error',
        ],
        [{ group_limit: 0 }, ['body', 'group_limit'], 'greater_than_equal'],
        [{ relative_time: 'last_5_eons' }, ['body', 'relative_time'], 'string_pattern_mismatch'],
      ];
      for (const [body, loc, type] of bad) {
        const r = await s.call('POST', `${base}/${d.id}/query`, body);
        assert.equal(r.status, 422, r.text);
        assert.deepEqual(r.body.detail[0].loc, loc, JSON.stringify(body));
        assert.equal(r.body.detail[0].type, type, JSON.stringify(body));
      }
      assert.equal((await s.call('POST', `${base}/${crypto.randomUUID()}/query`, {})).status, 404);
    });

    test('a text filter with contains reads the same as a scan', async () => {
      const d = await s.call('POST', base, {
        start_time: T - HOUR,
        end_time: T + 80 * HOUR,
        interval_mins: 1440,
        filter_tree: { filter: { column_id: 'name', operator: 'contains', value: 'ch' } },
      });
      await s.call('POST', `${base}/${d.body.id}/widgets`, {
        name: 'n',
        type: 'number',
        metric: 'id',
        aggregation: 'Count',
      });
      const q = await s.call('POST', `${base}/${d.body.id}/query`);
      assert.equal(q.status, 200, q.text);
      const expected = rows.filter(
        (r) =>
          r.created_at >= (T - HOUR) * 1e6 &&
          r.created_at < (T + 80 * HOUR) * 1e6 &&
          String(r.name).includes('ch'),
      ).length;
      assert.equal(q.body.widgets[0].series[0].total, expected);
    });
  });
}
