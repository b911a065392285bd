/**
 * The console's dashboard pieces without a browser: widget places from layout_map and back
 * (web/src/lib/dashboard-view.ts), the record table a chart point opens, 422 items placed beside
 * their fields (field-errors.ts), and token usage laid out per day (token-usage.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Column, Widget } from '../../web/src/lib/api-types.ts';
import { ApiError } from '../../web/src/lib/api-error.ts';
import {
  drillDownHref,
  drillDowns,
  drillTab,
  layoutOf,
  mergedColumns,
  metricColumns,
  rowWindow,
  sameCells,
  withCells,
} from '../../web/src/lib/dashboard-view.ts';
import { FieldErrors } from '../../web/src/lib/field-errors.ts';
import { emptyView, parseView, viewToParams } from '../../web/src/lib/list-view.ts';
import { dailyUsage, usageRequest } from '../../web/src/lib/token-usage.ts';

const widget = (id: string, type = 'line_chart'): Widget => ({
  id,
  name: id,
  description: null,
  type,
  dataset: null,
  metric: 'duration_ns',
  aggregation: 'Average',
  section_id: null,
});

const column = (id: string, extra: Partial<Column> = {}): Column =>
  ({
    id,
    label: id,
    category: 'standard',
    data_type: 'text',
    filter_type: 'text',
    multi_valued: false,
    ...extra,
  }) as Column;

describe('dashboard layout', () => {
  test('stored places are kept; widgets without one go below, left to right, in rows of 12', () => {
    const cells = layoutOf([widget('a'), widget('b'), widget('c', 'number'), widget('d')], {
      a: [0, 0, 12, 4],
      b: 'not a place',
      d: [10, 0, 4, 2], // wider than the grid from x = 10: placed anew
    });
    assert.deepEqual(cells, [
      { i: 'a', x: 0, y: 0, w: 12, h: 4 },
      { i: 'b', x: 0, y: 4, w: 6, h: 5 },
      { i: 'c', x: 6, y: 4, w: 3, h: 3 },
      { i: 'd', x: 0, y: 9, w: 6, h: 5 },
    ]);
  });

  test("a grid's cells are written into layout_map beside the other grids' entries", () => {
    const next = withCells({ other: [1, 2, 3, 4], a: [0, 0, 1, 1], junk: 'x' }, [
      { i: 'a', x: 2, y: 3, w: 4, h: 5 },
    ]);
    assert.deepEqual(next, { other: [1, 2, 3, 4], a: [2, 3, 4, 5] });
    const cells = layoutOf([widget('a')], next);
    assert.ok(sameCells(cells, [{ i: 'a', x: 2, y: 3, w: 4, h: 5 }]));
    assert.ok(!sameCells(cells, [{ i: 'a', x: 2, y: 3, w: 4, h: 6 }]));
  });
});

describe('drill-down', () => {
  const data = { start_time: 1_700_000_000, end_time: 1_700_100_000, interval_mins: 60 };
  const columns = {
    spans: [column('model'), column('metrics/duration_ns', { data_type: 'integer', filter_type: 'number' })],
    traces: [column('user_metadata/customer', { category: 'user_metadata' })],
  };

  test('a point opens its bucket (clipped to the range) with the filter and the group', () => {
    const filter = { filter: { column_id: 'type', operator: 'eq', value: 'llm' } };
    const href = drillDownHref(
      '/projects/p/log_streams/l',
      { filter_tree: filter, group_by: 'model' },
      data,
      1_699_999_200, // the first bucket starts before the range
      'gpt-4o',
      columns,
    );
    const [path, query] = href.split('?');
    assert.equal(path, '/projects/p/log_streams/l/spans');
    const view = parseView(new URLSearchParams(query));
    assert.deepEqual(view.range, {
      kind: 'absolute',
      from: new Date(1_700_000_000_000).toISOString(),
      to: new Date((1_699_999_200 + 3600) * 1000).toISOString(),
    });
    assert.deepEqual(view.filter, {
      and: [filter, { filter: { column_id: 'model', type: 'text', operator: 'eq', value: 'gpt-4o' } }],
    });
  });

  test("every point's link is the record table's own query string for its view", () => {
    const filter = { filter: { column_id: 'name', operator: 'contains', value: "a b: c'(d)" } };
    const links = drillDowns('/r', { filter_tree: filter, group_by: 'model' }, data, columns);
    const plain = drillDowns('/r', { filter_tree: null, group_by: null }, data, columns);
    for (const bucket of [null, 1_699_999_200, 1_700_003_600]) {
      for (const group of ['gpt-4o', 'a&b=c', null]) {
        const href = links(bucket, group);
        const view = parseView(new URLSearchParams(href.split('?')[1]));
        assert.equal(href, `/r/spans?${viewToParams(view).toString()}`);
        assert.equal(view.range.kind, 'absolute');
      }
      const whole = plain(bucket, null);
      assert.equal(
        whole,
        `/r/spans?${viewToParams({ ...emptyView(), range: parseView(new URLSearchParams(whole.split('?')[1])).range }).toString()}`,
      );
    }
  });

  test('the whole range; a bare metric group; no group filter for the records without a value', () => {
    const whole = parseView(
      new URLSearchParams(
        drillDownHref('/b', { filter_tree: null, group_by: 'duration_ns' }, data, null, 5, columns).split(
          '?',
        )[1],
      ),
    );
    assert.deepEqual(whole.filter, {
      filter: { column_id: 'metrics/duration_ns', type: 'number', operator: 'eq', value: 5 },
    });
    assert.equal(
      whole.range.kind === 'absolute' && whole.range.to,
      new Date(1_700_100_000_000).toISOString(),
    );
    const none = parseView(
      new URLSearchParams(
        drillDownHref('/b', { filter_tree: null, group_by: 'model' }, data, null, null, columns).split(
          '?',
        )[1],
      ),
    );
    assert.equal(none.filter, null);
  });

  test('a filter keeping only traces or sessions opens that table; else the first with the group column', () => {
    const only = (value: string) => ({ and: [{ filter: { column_id: 'type', operator: 'eq', value } }] });
    assert.equal(drillTab(only('trace'), 'model', columns), 'traces');
    assert.equal(drillTab(only('session'), null, columns), 'sessions');
    assert.equal(drillTab(only('llm'), null, columns), 'spans');
    const or = { or: [{ filter: { column_id: 'type', operator: 'eq', value: 'trace' } }] };
    assert.equal(drillTab(or, null, columns), 'spans');
    assert.equal(drillTab(null, 'user_metadata/customer', columns), 'traces', "a trace's metadata key");
    const href = drillDownHref(
      '/b',
      { filter_tree: null, group_by: 'user_metadata/customer' },
      data,
      null,
      'acme',
      columns,
    );
    assert.equal(href.split('?')[0], '/b/traces');
    assert.deepEqual(parseView(new URLSearchParams(href.split('?')[1])).filter, {
      filter: { column_id: 'user_metadata/customer', type: 'text', operator: 'eq', value: 'acme' },
    });
  });

  test("the dashboard's column choices: every table's columns once", () => {
    assert.deepEqual(
      mergedColumns({ ...columns, sessions: [column('model', { label: 'other' })] }).map((c) => [
        c.id,
        c.label,
      ]),
      [
        ['model', 'model'],
        ['metrics/duration_ns', 'metrics/duration_ns'],
        ['user_metadata/customer', 'user_metadata/customer'],
      ],
    );
  });

  test('metric choices follow the aggregation', () => {
    const cols = [
      column('name'),
      column('metrics/duration_ns', { data_type: 'integer' }),
      column('is_complete', { data_type: 'boolean' }),
      column('tags', { multi_valued: true, data_type: 'string_list' }),
      column('user_metadata/x', { category: 'user_metadata' }),
    ];
    const ids = (agg: string) => metricColumns(cols, agg).map((c) => c.id);
    assert.deepEqual(ids('Count'), ['name', 'metrics/duration_ns', 'is_complete', 'user_metadata/x']);
    assert.deepEqual(ids('P95'), ['metrics/duration_ns', 'user_metadata/x']);
    assert.deepEqual(ids('PercentageTrue'), ['is_complete', 'user_metadata/x']);
  });
});

describe('422 items beside their fields', () => {
  const err = new ApiError(422, 'x', [
    { loc: ['body', 'metric'], msg: 'Value error, Sum needs a numeric column' },
    { loc: ['body', 'filter_tree', 'and', 0, 'filter', 'value'], msg: 'bad value' },
    { loc: ['body'], msg: 'Value error, give start_time and end_time, or relative_time, not both' },
    { loc: ['body', 'dataset'], msg: 'too long' },
  ]);

  test('each item goes to the field its loc names; the rest are listed with where they point', () => {
    const e = FieldErrors.of(err, ['metric', 'filter_tree', 'name']);
    assert.equal(e.of('metric'), 'Sum needs a numeric column');
    assert.equal(e.of('filter_tree'), 'bad value');
    assert.equal(e.of('name'), null);
    assert.deepEqual(e.unplaced(), [
      'give start_time and end_time, or relative_time, not both',
      'dataset: too long',
    ]);
    assert.ok(e.any);
  });

  test('an error without items (404, network) is shown whole', () => {
    const e = FieldErrors.of(new ApiError(404, 'Dashboard not found'), ['name']);
    assert.equal(e.of('name'), null);
    assert.deepEqual(e.unplaced(), ['Dashboard not found']);
    assert.ok(!FieldErrors.none.any);
  });
});

describe('token usage per day', () => {
  test('the request covers whole UTC days, both ends included', () => {
    assert.deepEqual(usageRequest('2025-06-01', '2025-06-03').filters, [
      { name: 'created_at', operator: 'gte', value: '2025-06-01T00:00:00.000Z' },
      { name: 'created_at', operator: 'lt', value: '2025-06-04T00:00:00.000Z' },
    ]);
  });

  test('one column per day; days without records are zero with no cost; totals add up', () => {
    const rec = (day: string, input: number, cost: number | null) => ({
      id: day,
      project_id: 'p',
      log_stream_id: 'l',
      created_at: `${day}T00:00:00.000Z`,
      updated_at: `${day}T05:00:00.000Z`,
      token_usage: {
        input_tokens: input,
        output_tokens: 2 * input,
        cache_read_input_tokens: 1,
        cache_creation_input_tokens: 0,
      },
      cost,
    });
    const u = dailyUsage(
      [rec('2025-06-01', 10, 0.5), rec('2025-06-03', 5, null)],
      '2025-06-01',
      '2025-06-03',
    );
    assert.equal(u.days.length, 3);
    assert.deepEqual(u.tokens.input_tokens, [10, 0, 5]);
    assert.deepEqual(u.tokens.output_tokens, [20, 0, 10]);
    assert.deepEqual(u.cost, [0.5, null, null]);
    assert.deepEqual(
      { ...u.totals },
      {
        input_tokens: 15,
        output_tokens: 30,
        cache_read_input_tokens: 2,
        cache_creation_input_tokens: 0,
        cost: 0.5,
      },
    );
  });
});

describe('the rows a long dashboard table puts in the page', () => {
  test('the rows in view and the overscan on each side, within the table', () => {
    // 25 px rows under a 50 px heading, a 250 px box.
    assert.deepEqual(rowWindow(0, 250, 25, 480, 10, 50), { start: 0, end: 18 });
    assert.deepEqual(rowWindow(1000, 250, 25, 480, 10, 50), { start: 28, end: 58 });
    assert.deepEqual(rowWindow(50 + 479 * 25, 250, 25, 480, 10, 50), { start: 469, end: 480 });
    assert.deepEqual(rowWindow(0, 600, 25, 3, 10), { start: 0, end: 3 });
    assert.deepEqual(rowWindow(0, 0, 25, 0, 10), { start: 0, end: 0 });
  });
});
