import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Store } from '../../src/store/db.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const T0 = Date.UTC(2025, 0, 1) * 1000;

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

const DAY = 86_400;

for (const store of storesUnderTest()) {
  describe(`trends dashboards [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    let base: string;
    const put = (body: unknown, query = '', key?: string | null) =>
      s.call('PUT', `${base}${query}`, body, key);
    const detail = (r: { body: any }) => r.body.detail as { loc: unknown[]; type: string; msg: string }[];
    const one = (r: { status: number; body: any; text: string }) => {
      assert.equal(r.status, 422, r.text);
      assert.equal(detail(r).length, 1, r.text);
      return detail(r)[0];
    };

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      base = `/v2/projects/${projectId}/log_streams/${logStreamId}/trends`;
      await catalogue(s.running.services.store, logStreamId, [
        { column_id: 'metrics/cost', record_type: 'llm', data_type: 'floating_point' },
      ]);
    });
    after(() => s.close());

    test('the first PUT creates the default dashboard with the defaults', async () => {
      const before = Math.floor(Date.now() / 1000);
      const r = await put({});
      assert.equal(r.status, 200, r.text);
      const d = r.body;
      assert.match(d.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal(d.name, 'Default');
      assert.equal(d.description, null);
      assert.equal(d.is_default, true);
      assert.equal(d.visibility, 'private');
      assert.equal(d.created_by, s.adminId);
      assert.equal(d.is_favorited, false);
      assert.equal(d.log_stream_id, logStreamId);
      assert.equal(d.project_id, projectId);
      assert.deepEqual(d.widgets, []);
      assert.deepEqual(d.sections, []);
      assert.deepEqual(d.layout_map, {});
      assert.equal(d.interval_mins, 60);
      assert.equal(d.group_by, null);
      assert.equal(d.filter_tree, null);
      assert.equal(d.relative_time, 'last_7_days');
      assert.equal(d.end_time - d.start_time, 7 * DAY);
      assert.ok(d.end_time >= before && d.end_time <= Math.ceil(Date.now() / 1000) + 1, `${d.end_time}`);

      const again = await put({
        name: 'Mine',
        description: 'about',
        interval_mins: 15,
        layout_map: { a: [1, 2] },
      });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.id, d.id, 'the default dashboard is updated, not created again');
      assert.equal(again.body.name, 'Mine');
      assert.equal(again.body.description, 'about');
      assert.equal(again.body.interval_mins, 15);
      assert.deepEqual(again.body.layout_map, { a: [1, 2] });
      const list = await s.call('GET', base);
      assert.equal(list.status, 200);
      assert.equal(list.body.length, 1);
      assert.equal(list.body[0].name, 'Mine');
    });

    test('layout and dataset keys are any text, line breaks and Object.prototype names included', async () => {
      // A log stream of its own: the other tests count this one's dashboards.
      const own = await projectWithLogStream(s);
      const base = `/v2/projects/${own.projectId}/log_streams/${own.logStreamId}/trends`;
      const keys = { 'row\n1': [1], 'a\r\nb\u2028c': [2], constructor: [3], toString: [4] };
      const d = await s.call('POST', base, { name: 'keys', layout_map: keys, interval_mins: 60 });
      assert.equal(d.status, 200, d.text);
      assert.deepEqual(d.body.layout_map, keys);
      const dataset = [{ 'series\none': ['x'], constructor: ['y'] }];
      const w = await s.call('POST', `${base}/${d.body.id}/widgets`, {
        name: 'w',
        type: 'line_chart',
        metric: 'duration_ns',
        aggregation: 'Count',
        dataset,
      });
      assert.equal(w.status, 200, w.text);
      const again = await s.call('GET', `${base}/${d.body.id}`);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body.layout_map, keys);
      assert.deepEqual(again.body.widgets[0].dataset, dataset);
    });

    test('null leaves name, interval and layout alone and clears description, group_by, filter_tree', async () => {
      await put({
        group_by: 'model',
        filter_tree: { filter: { column_id: 'type', operator: 'eq', value: 'llm' } },
      });
      const r = await put({
        name: null,
        interval_mins: null,
        layout_map: null,
        description: null,
        group_by: null,
        filter_tree: null,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.name, 'Mine');
      assert.equal(r.body.interval_mins, 15);
      assert.deepEqual(r.body.layout_map, { a: [1, 2] });
      assert.equal(r.body.description, null);
      assert.equal(r.body.group_by, null);
      assert.equal(r.body.filter_tree, null);
    });

    test('time range: absolute or relative, never both; one clears the other', async () => {
      let r = await put({ start_time: 1_700_000_000, end_time: 1_700_086_400 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.relative_time, null);
      assert.equal(r.body.start_time, 1_700_000_000);
      assert.equal(r.body.end_time, 1_700_086_400);

      // One end of an absolute range may move alone.
      r = await put({ start_time: 1_700_003_600 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.start_time, 1_700_003_600);
      assert.equal(r.body.end_time, 1_700_086_400);

      let e = one(
        await put({ start_time: 1_700_000_000, end_time: 1_700_086_400, relative_time: 'last_1_day' }),
      );
      assert.deepEqual(e.loc, ['body']);
      assert.equal(e.type, 'value_error');
      e = one(await put({ start_time: 1_700_086_400, end_time: 1_700_086_400 }));
      assert.deepEqual(e.loc, ['body']);
      assert.equal(e.type, 'value_error');
      e = one(await put({ end_time: 1_700_000_000 }));
      assert.deepEqual(e.loc, ['body'], 'end before the kept start');

      r = await put({ relative_time: 'last_3_hours', start_time: null, end_time: null });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.relative_time, 'last_3_hours');
      assert.equal(r.body.end_time - r.body.start_time, 3 * 3600);

      // A relative range has no end to keep.
      e = one(await put({ start_time: 1_700_000_000 }));
      assert.deepEqual(e.loc, ['body', 'end_time']);
      assert.equal(e.type, 'value_error');
      e = one(await put({ end_time: 1_700_000_000 }));
      assert.deepEqual(e.loc, ['body', 'start_time']);
      const kept = await s.call('GET', base);
      assert.equal(kept.body[0].relative_time, 'last_3_hours', 'a refused PUT changes nothing');
    });

    test('relative_time: pattern, length and the 5-year window', async () => {
      for (const ok of [
        'last_1_second',
        'last_30_seconds',
        'last_1826_days',
        'last_260_weeks',
        'last_60_months',
        'last_43824_hours',
        'last_007_days',
      ]) {
        const r = await put({ relative_time: ok });
        assert.equal(r.status, 200, `${ok}: ${r.text}`);
        assert.equal(r.body.relative_time, ok);
      }
      const r = await put({ relative_time: 'last_60_months' });
      assert.equal(r.body.end_time - r.body.start_time, 60 * 30 * DAY);
      for (const tooLong of [
        'last_1827_days',
        'last_261_weeks',
        'last_61_months',
        'last_43825_hours',
        'last_99999999999999999999999_days',
      ]) {
        const e = one(await put({ relative_time: tooLong }));
        assert.deepEqual(e.loc, ['body', 'relative_time'], tooLong);
        assert.equal(e.type, 'value_error');
      }
      let e = one(await put({ relative_time: 'last_0_days' }));
      assert.equal(e.type, 'value_error');
      for (const bad of [
        'last_7_fortnights',
        'last_days',
        '7_days',
        'last_-1_days',
        'LAST_7_DAYS',
        'last_7_days ',
      ]) {
        e = one(await put({ relative_time: bad }));
        assert.deepEqual(e.loc, ['body', 'relative_time'], bad);
        assert.equal(e.type, 'string_pattern_mismatch', bad);
      }
      const long = await put({ relative_time: `last_${'1'.repeat(60)}_days` });
      assert.equal(long.status, 422);
      assert.ok(
        detail(long).some((d) => d.type === 'string_too_long' && d.loc.join() === 'body,relative_time'),
      );
      e = one(await put({ relative_time: 7 }));
      assert.equal(e.type, 'string_type');
    });

    test('field constraints answer 422 with the exact loc', async () => {
      const cases: [unknown, unknown[], string][] = [
        [{ name: '' }, ['body', 'name'], 'string_too_short'],
        [{ name: 'x'.repeat(256) }, ['body', 'name'], 'string_too_long'],
        [{ name: 5 }, ['body', 'name'], 'string_type'],
        [{ description: 'x'.repeat(1001) }, ['body', 'description'], 'string_too_long'],
        [{ interval_mins: 0 }, ['body', 'interval_mins'], 'greater_than_equal'],
        [{ interval_mins: 1.5 }, ['body', 'interval_mins'], 'int_type'],
        [{ interval_mins: '60' }, ['body', 'interval_mins'], 'int_type'],
        [{ start_time: -1, end_time: 5 }, ['body', 'start_time'], 'greater_than_equal'],
        [{ start_time: 'yesterday', end_time: 5 }, ['body', 'start_time'], 'int_type'],
        [{ layout_map: { a: ['x'] } }, ['body', 'layout_map', 'a', 0], 'int_type'],
        [{ layout_map: [] }, ['body', 'layout_map'], 'dict_type'],
        [{ group_by: 'nope' }, ['body', 'group_by'], 'value_error'],
        [{ group_by: 'tags' }, ['body', 'group_by'], 'value_error'],
        [{ group_by: 'metrics/never_seen' }, ['body', 'group_by'], 'value_error'],
        [
          { filter_tree: { filter: { column_id: 'nope', value: 'x' } } },
          ['body', 'filter_tree', 'filter', 'column_id'],
          'value_error',
        ],
        [
          { filter_tree: { and: [{ filter: { column_id: 'name', operator: 'between', value: 'x' } }] } },
          ['body', 'filter_tree', 'and', 0, 'filter', 'operator'],
          'enum',
        ],
        [
          { filter_tree: { not: { filter: { column_id: 'metrics/never_seen', operator: 'gt', value: 1 } } } },
          ['body', 'filter_tree', 'not', 'filter', 'column_id'],
          'value_error',
        ],
        [{ filter_tree: 'type = llm' }, ['body', 'filter_tree'], 'dict_type'],
      ];
      for (const [body, loc, type] of cases) {
        const e = one(await put(body));
        assert.deepEqual(e.loc, loc, JSON.stringify(body));
        assert.equal(e.type, type, JSON.stringify(body));
      }
      // Several faults answer together.
      const r = await put({ name: '', interval_mins: 0, group_by: 'nope' });
      assert.equal(r.status, 422);
      assert.deepEqual(
        detail(r)
          .map((d) => d.loc.join('.'))
          .sort(),
        ['body.interval_mins', 'body.name'],
      );
      const missing = await s.call('PUT', base);
      assert.equal(missing.status, 422);
      assert.deepEqual(detail(missing)[0].loc, ['body']);
      const notJson = await s.call('PUT', base, '{"name":');
      assert.equal(detail(notJson)[0].type, 'json_invalid');
      const bad = await put({}, '?trends_dashboard_id=nope');
      assert.deepEqual(one(bad).loc, ['query', 'trends_dashboard_id']);
    });

    test('NUL anywhere in a stored body is a 422 on both stores (PostgreSQL cannot hold it)', async () => {
      const d = (await put({})).body;
      const cases: [string, string, unknown, unknown[]][] = [
        ['PUT', base, { name: 'a\u0000b' }, ['body', 'name']],
        ['PUT', base, { description: '\u0000' }, ['body', 'description']],
        ['PUT', base, { group_by: 'user_metadata/a\u0000' }, ['body', 'group_by']],
        ['PUT', base, { layout_map: { 'k\u0000': [1] } }, ['body', 'layout_map', 'k\u0000']],
        [
          'PUT',
          base,
          { filter_tree: { filter: { column_id: 'name', operator: 'eq', value: 'x\u0000' } } },
          ['body', 'filter_tree', 'filter', 'value'],
        ],
        ['POST', base, { name: '\u0000' }, ['body', 'name']],
        [
          'POST',
          `${base}/${d.id}/widgets`,
          { name: 'w', type: 'number', metric: 'id', aggregation: 'Count', dataset: [{ k: ['\u0000'] }] },
          ['body', 'dataset', 0, 'k', 0],
        ],
        [
          'POST',
          `${base}/${d.id}/widgets`,
          { name: 'w', type: 'number', metric: 'user_metadata/\u0000', aggregation: 'Count' },
          ['body', 'metric'],
        ],
        ['POST', `${base}/${d.id}/sections`, { name: 's', color: '#\u0000' }, ['body', 'color']],
      ];
      for (const [method, url, body, loc] of cases) {
        const r = await s.call(method, url, body);
        assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
        assert.deepEqual(detail(r)[0].loc, loc, JSON.stringify(body));
        assert.equal(detail(r)[0].type, 'value_error');
      }
    });

    test('valid filter_tree and group_by are kept as given', async () => {
      const tree = {
        or: [
          { filter: { column_id: 'metrics/cost', operator: 'gt', value: 0.5 } },
          {
            not: { filter: { name: 'user_metadata/customer', operator: 'eq', value: 'acme', type: 'text' } },
          },
        ],
      };
      const r = await put({ filter_tree: tree, group_by: 'user_metadata/customer' });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.filter_tree, tree);
      assert.equal(r.body.group_by, 'user_metadata/customer');
      for (const g of ['model', 'type', 'is_complete', 'metrics/cost', 'status_code']) {
        const x = await put({ group_by: g });
        assert.equal(x.status, 200, `${g}: ${x.text}`);
      }
    });

    test('trends_dashboard_id updates that dashboard; one on another log stream is 404', async () => {
      const created = await s.call('POST', base, { name: 'Second', relative_time: 'last_1_day' });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.is_default, false);
      const r = await put({ name: 'Second, renamed' }, `?trends_dashboard_id=${created.body.id}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.id, created.body.id);
      assert.equal(r.body.name, 'Second, renamed');
      assert.equal(r.body.is_default, false);
      const list = await s.call('GET', base);
      assert.deepEqual(
        list.body.map((d: any) => [d.is_default, d.name]),
        [
          [true, 'Mine'],
          [false, 'Second, renamed'],
        ],
      );
      assert.equal((await put({}, `?trends_dashboard_id=${crypto.randomUUID()}`)).status, 404);
      const other = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'other' });
      const elsewhere = await s.call(
        'PUT',
        `/v2/projects/${projectId}/log_streams/${other.body.id}/trends`,
        {},
        undefined,
      );
      assert.equal(elsewhere.status, 200);
      assert.equal(
        (await put({}, `?trends_dashboard_id=${elsewhere.body.id}`)).status,
        404,
        "another log stream's dashboard",
      );
      const get = await s.call('GET', `${base}/${created.body.id}`);
      assert.equal(get.body.name, 'Second, renamed');
      assert.equal((await s.call('DELETE', `${base}/${created.body.id}`)).status, 200);
      assert.equal((await s.call('GET', `${base}/${created.body.id}`)).status, 404);
    });

    test('is_favorited is set and cleared by PUT; null or absent leaves it; not a boolean is 422', async () => {
      const created = await s.call('POST', base, { name: 'Fav', is_favorited: true });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.is_favorited, true);
      const q = `?trends_dashboard_id=${created.body.id}`;
      assert.equal((await put({ name: 'Fav 2' }, q)).body.is_favorited, true, 'absent leaves it');
      assert.equal((await put({ is_favorited: null }, q)).body.is_favorited, true, 'null leaves it');
      const off = await put({ is_favorited: false }, q);
      assert.equal(off.body.is_favorited, false);
      const got = await s.call('GET', `${base}/${created.body.id}`);
      assert.equal(got.body.is_favorited, false, 'stored');
      assert.equal((await put({ is_favorited: true }, q)).body.is_favorited, true);
      assert.deepEqual(one(await put({ is_favorited: 'yes' }, q)).loc, ['body', 'is_favorited']);
      assert.equal((await s.call('DELETE', `${base}/${created.body.id}`)).status, 200);
    });

    test('access: 401 without credentials, 404 for strangers and unknown log streams, viewers read', async () => {
      assert.equal((await put({}, '', null)).status, 401);
      assert.equal((await s.call('GET', base, undefined, null)).status, 401);
      const stranger = await s.user();
      assert.equal((await put({}, '', stranger.key)).status, 404);
      assert.equal((await s.call('GET', base, undefined, stranger.key)).status, 404);
      const viewer = await s.user();
      await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: viewer.id, role: 'viewer' });
      assert.equal((await s.call('GET', base, undefined, viewer.key)).status, 200);
      assert.equal((await put({ name: 'v' }, '', viewer.key)).status, 403);
      const editor = await s.user();
      await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: editor.id, role: 'editor' });
      assert.equal((await put({ description: 'by editor' }, '', editor.key)).status, 200);
      const unknown = `/v2/projects/${projectId}/log_streams/${crypto.randomUUID()}/trends`;
      assert.equal((await s.call('PUT', unknown, {})).status, 404);
      const ex = await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: 'exp' });
      assert.equal(
        (await s.call('PUT', `/v2/projects/${projectId}/log_streams/${ex.body.id}/trends`, {})).status,
        404,
        'an experiment is not a log stream',
      );
      assert.equal(
        (await s.call('PUT', `/v2/projects/${crypto.randomUUID()}/log_streams/${logStreamId}/trends`, {}))
          .status,
        404,
      );
    });

    test('widgets and sections: create, edit, delete, nesting and limits', async () => {
      const d = (await put({})).body;
      const w = `${base}/${d.id}/widgets`;
      const sec = `${base}/${d.id}/sections`;
      const widget = { name: 'Latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'P95' };
      const a = await s.call('POST', w, { ...widget, description: 'p95', dataset: [{ model: ['gpt-4o'] }] });
      assert.equal(a.status, 200, a.text);
      assert.deepEqual(
        { ...a.body, id: undefined },
        {
          id: undefined,
          name: 'Latency',
          description: 'p95',
          type: 'line_chart',
          dataset: [{ model: ['gpt-4o'] }],
          metric: 'duration_ns',
          aggregation: 'P95',
          section_id: null,
        },
      );
      const s1 = await s.call('POST', sec, { name: 'Costs', color: '#ff0000' });
      assert.equal(s1.status, 200, s1.text);
      assert.deepEqual(
        { ...s1.body, id: undefined },
        { id: undefined, name: 'Costs', description: null, color: '#ff0000', widgets: [] },
      );
      const b = await s.call('POST', w, {
        name: 'Cost',
        type: 'number',
        metric: 'metrics/cost',
        aggregation: 'Sum',
        section_id: s1.body.id,
      });
      assert.equal(b.status, 200, b.text);
      let full = (await s.call('GET', `${base}/${d.id}`)).body;
      assert.deepEqual(
        full.widgets.map((x: any) => x.id),
        [a.body.id],
      );
      assert.deepEqual(
        full.sections.map((x: any) => [x.id, x.widgets.map((y: any) => y.id)]),
        [[s1.body.id, [b.body.id]]],
      );

      // Edit: move the first widget into the section, rename, change the aggregation.
      const moved = await s.call('PUT', `${w}/${a.body.id}`, {
        section_id: s1.body.id,
        name: 'Lat',
        aggregation: 'Max',
      });
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.body.section_id, s1.body.id);
      assert.equal(moved.body.aggregation, 'Max');
      assert.equal(moved.body.description, 'p95', 'fields not given stay');
      const cleared = await s.call('PUT', `${w}/${a.body.id}`, { description: null, dataset: null });
      assert.equal(cleared.body.description, null);
      assert.equal(cleared.body.dataset, null);
      // A custom metric is checked against the column catalogue: on SQLite that read once waited for
      // ever on the connection the widget's lock held, and every later request behind it.
      const custom = await Promise.race([
        s.call('PUT', `${w}/${a.body.id}`, { metric: 'metrics/never_seen' }),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000).unref()),
      ]);
      assert.ok(custom, 'a PUT of a custom metric answers');
      assert.equal(custom.status, 422, custom.text);
      const renamedSection = await s.call('PUT', `${sec}/${s1.body.id}`, { name: 'Spend', color: null });
      assert.equal(renamedSection.status, 200, renamedSection.text);
      assert.equal(renamedSection.body.name, 'Spend');
      assert.equal(renamedSection.body.color, null);
      assert.equal(renamedSection.body.widgets.length, 2);

      // Faults.
      const cases: [string, string, unknown, unknown[], string][] = [
        ['POST', w, { ...widget, metric: 'nope' }, ['body', 'metric'], 'value_error'],
        ['POST', w, { ...widget, metric: 'name', aggregation: 'Average' }, ['body', 'metric'], 'value_error'],
        ['POST', w, { ...widget, aggregation: 'PercentageTrue' }, ['body', 'metric'], 'value_error'],
        ['POST', w, { ...widget, metric: 'tags', aggregation: 'Count' }, ['body', 'metric'], 'value_error'],
        ['POST', w, { ...widget, metric: 'metrics/never_seen' }, ['body', 'metric'], 'value_error'],
        ['POST', w, { ...widget, aggregation: 'Median' }, ['body', 'aggregation'], 'enum'],
        ['POST', w, { ...widget, type: 'pie' }, ['body', 'type'], 'enum'],
        ['POST', w, { ...widget, name: '' }, ['body', 'name'], 'string_too_short'],
        ['POST', w, { type: 'number', metric: 'id', aggregation: 'Count' }, ['body', 'name'], 'missing'],
        ['POST', w, { ...widget, section_id: crypto.randomUUID() }, ['body', 'section_id'], 'value_error'],
        ['POST', w, { ...widget, dataset: [{ k: [1] }] }, ['body', 'dataset', 0, 'k', 0], 'string_type'],
        [
          'POST',
          w,
          { ...widget, dataset: Array.from({ length: 51 }, () => ({})) },
          ['body', 'dataset'],
          'too_long',
        ],
        ['PUT', `${w}/${a.body.id}`, { aggregation: 'PercentageFalse' }, ['body', 'metric'], 'value_error'],
        ['PUT', `${w}/${a.body.id}`, { name: null }, ['body', 'name'], 'string_type'],
        ['POST', sec, { name: 'x'.repeat(256) }, ['body', 'name'], 'string_too_long'],
        ['POST', sec, {}, ['body', 'name'], 'missing'],
      ];
      for (const [method, url, body, loc, type] of cases) {
        const e = one(await s.call(method, url, body));
        assert.deepEqual(e.loc, loc, `${method} ${JSON.stringify(body)}`);
        assert.equal(e.type, type, `${method} ${JSON.stringify(body)}`);
      }
      // Boolean and metadata metrics.
      for (const [metric, aggregation] of [
        ['is_complete', 'PercentageTrue'],
        ['user_metadata/flag', 'PercentageFalse'],
        ['user_metadata/score', 'Average'],
        ['metrics/duration_ns', 'P99'],
        ['id', 'Count'],
      ]) {
        const r = await s.call('POST', w, { name: metric, type: 'table', metric, aggregation });
        assert.equal(r.status, 200, `${metric} ${aggregation}: ${r.text}`);
        assert.equal((await s.call('DELETE', `${w}/${r.body.id}`)).status, 200);
      }

      assert.equal((await s.call('PUT', `${w}/${crypto.randomUUID()}`, { name: 'x' })).status, 404);
      assert.equal((await s.call('DELETE', `${w}/${crypto.randomUUID()}`)).status, 404);
      assert.equal((await s.call('DELETE', `${sec}/${crypto.randomUUID()}`)).status, 404);
      assert.equal((await s.call('POST', `${base}/${crypto.randomUUID()}/widgets`, widget)).status, 404);

      // Deleting a section deletes its widgets.
      assert.equal((await s.call('DELETE', `${sec}/${s1.body.id}`)).status, 200);
      full = (await s.call('GET', `${base}/${d.id}`)).body;
      assert.deepEqual(full.widgets, []);
      assert.deepEqual(full.sections, []);
      assert.equal((await s.call('DELETE', `${w}/${a.body.id}`)).status, 404);
    });

    test('at most 50 widgets outside sections, 50 sections, 50 widgets in a section', async () => {
      const d = (await s.call('POST', base, { name: 'Full' })).body;
      const w = `${base}/${d.id}/widgets`;
      const sec = `${base}/${d.id}/sections`;
      const widget = { name: 'n', type: 'number', metric: 'id', aggregation: 'Count' };
      for (let i = 0; i < 50; i++) assert.equal((await s.call('POST', w, widget)).status, 200);
      let e = one(await s.call('POST', w, widget));
      assert.deepEqual(e.loc, ['body']);
      assert.equal(e.type, 'too_long');
      const sections: string[] = [];
      for (let i = 0; i < 50; i++) sections.push((await s.call('POST', sec, { name: `s${i}` })).body.id);
      e = one(await s.call('POST', sec, { name: 'one more' }));
      assert.deepEqual(e.loc, ['body']);
      assert.equal(e.type, 'too_long');
      for (let i = 0; i < 50; i++)
        assert.equal((await s.call('POST', w, { ...widget, section_id: sections[0] })).status, 200);
      e = one(await s.call('POST', w, { ...widget, section_id: sections[0] }));
      assert.deepEqual(e.loc, ['body', 'section_id']);
      assert.equal(e.type, 'too_long');
      // Moving a widget out of the full section into the full top level is refused too.
      const full = (await s.call('GET', `${base}/${d.id}`)).body;
      const inSection = full.sections[0].widgets[0].id;
      e = one(await s.call('PUT', `${w}/${inSection}`, { section_id: null }));
      assert.equal(e.type, 'too_long');
      assert.equal((await s.call('PUT', `${w}/${inSection}`, { section_id: sections[1] })).status, 200);
      const after = (await s.call('GET', `${base}/${d.id}`)).body;
      assert.equal(after.widgets.length, 50);
      assert.equal(after.sections.length, 50);
      assert.equal(after.sections[0].widgets.length, 49);
      assert.equal(after.sections[1].widgets.length, 1);
    });

    test('viewers may not change widgets; strangers do not see them', async () => {
      const d = (await put({ relative_time: 'last_1_day' })).body;
      const viewer = await s.user();
      await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: viewer.id, role: 'viewer' });
      const widget = { name: 'n', type: 'number', metric: 'id', aggregation: 'Count' };
      assert.equal((await s.call('POST', `${base}/${d.id}/widgets`, widget, viewer.key)).status, 403);
      assert.equal((await s.call('POST', `${base}/${d.id}/sections`, { name: 's' }, viewer.key)).status, 403);
      assert.equal((await s.call('POST', `${base}/${d.id}/query`, {}, viewer.key)).status, 200);
      const stranger = await s.user();
      assert.equal((await s.call('POST', `${base}/${d.id}/widgets`, widget, stranger.key)).status, 404);
      assert.equal((await s.call('POST', `${base}/${d.id}/query`, {}, stranger.key)).status, 404);
      assert.equal((await s.call('POST', `${base}/${d.id}/query`, {}, null)).status, 401);
    });

    test('deleting the log stream or project removes its dashboards', async () => {
      const { projectId: p2, logStreamId: l2 } = await projectWithLogStream(s);
      const d = await s.call('PUT', `/v2/projects/${p2}/log_streams/${l2}/trends`, {});
      await s.call('POST', `/v2/projects/${p2}/log_streams/${l2}/trends/${d.body.id}/sections`, {
        name: 'x',
      });
      assert.equal((await s.call('DELETE', `/v2/projects/${p2}`)).status, 200);
      const db = s.running.services.store.db;
      assert.equal(
        (await db.selectFrom('dashboards').selectAll().where('id', '=', d.body.id).execute()).length,
        0,
      );
      assert.equal(
        (
          await db
            .selectFrom('dashboard_sections')
            .selectAll()
            .where('dashboard_id', '=', d.body.id)
            .execute()
        ).length,
        0,
      );
    });
  });
}
