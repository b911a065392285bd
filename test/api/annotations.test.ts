/**
 * Human feedback over the API, on every store: annotation templates and the values each type takes,
 * annotations set, replaced and removed with their aggregates, end users' feedback kept apart,
 * queues (members, records by id and by search, queue search with fully_annotated), annotation
 * columns in searches, and who may do what.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { storeBefore } from '../helpers/older-store.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { BASE_TIME_US, iso } from '../property/support.ts';

type Json = Record<string, any>;

for (const store of storesUnderTest()) {
  describe(`annotations [${store}]`, () => {
    let s: TestServer;
    let P: string;
    let LS: string;
    /** Trace ids, oldest first. */
    let traces: string[];
    let annotator: { id: string; key: string };
    let viewer: { id: string; key: string };
    let editor: { id: string; key: string };
    const url = (path: string) => `/v2/projects/${P}${path}`;
    const ok = async (method: string, path: string, body?: unknown, key?: string) => {
      const r = await s.call(method, url(path), body, key);
      assert.ok(r.status < 300, `${method} ${path} → ${r.status} ${r.text}`);
      return r.body;
    };
    const template = async (body: Json) => (await ok('POST', '/annotation_templates', body)).id as string;
    const annotate = (record: string, tpl: string, body: Json, key?: string) =>
      s.call('PUT', url(`/records/${record}/annotations/${tpl}`), body, key);
    const trace = async (id: string) => (await ok('GET', `/traces/${id}`)) as Json;

    before(async () => {
      s = await startTestServer(store);
      P = (await s.call('POST', '/v2/projects', { name: `ann-${Date.now()}` })).body.id;
      LS = (await ok('POST', '/log_streams', { name: 'ls' })).id;
      traces = Array.from({ length: 6 }, () => crypto.randomUUID());
      await ok('POST', '/traces', {
        log_stream_id: LS,
        traces: traces.map((id, i) => ({
          id,
          name: `t${i}`,
          created_at: iso(BASE_TIME_US + i * 1_000_000),
          input: `question ${i}`,
          output: `answer ${i}`,
          tags: i % 2 ? ['odd'] : ['even'],
          spans: [{ type: 'llm', name: `llm${i}`, input: 'q', output: 'a' }],
        })),
      });
      const share = async (role: string) => {
        const u = await s.user();
        await ok('POST', '/collaborators', { user_id: u.id, role });
        return u;
      };
      annotator = await share('annotator');
      viewer = await share('viewer');
      editor = await share('editor');
    });
    after(() => s?.close());

    test('templates: each type checks its settings; names are unique in a project', async () => {
      const bad = async (body: Json, loc: (string | number)[]) => {
        const r = await s.call('POST', url('/annotation_templates'), body);
        assert.equal(r.status, 422, r.text);
        assert.ok(
          r.body.detail.some((d: Json) => JSON.stringify(d.loc) === JSON.stringify(loc)),
          `${JSON.stringify(body)}: ${r.text}`,
        );
      };
      await bad({ name: 'x', type: 'likert' }, ['body', 'type']);
      await bad({ name: 'x', type: 'score' }, ['body', 'min']);
      await bad({ name: 'x', type: 'score', min: 5, max: 1 }, ['body', 'max']);
      await bad({ name: 'x', type: 'categorical' }, ['body', 'options']);
      await bad({ name: 'x', type: 'categorical', options: ['a', 'a'] }, ['body', 'options', 1]);
      await bad({ name: 'x', type: 'thumbs', options: ['a'] }, ['body', 'options']);
      await bad({ name: 'x', type: 'stars', min: 1 }, ['body', 'min']);
      await bad({ name: '', type: 'text' }, ['body', 'name']);
      const id = await template({ name: 'unique-name', type: 'text', description: 'free text' });
      const again = await s.call('POST', url('/annotation_templates'), { name: 'unique-name', type: 'tags' });
      assert.equal(again.status, 409);
      const other = await template({ name: 'other-name', type: 'tags' });
      assert.equal(
        (await s.call('PATCH', url(`/annotation_templates/${other}`), { name: 'unique-name' })).status,
        409,
      );
      const renamed = await ok('PATCH', `/annotation_templates/${id}`, {
        name: 'renamed',
        description: null,
      });
      assert.equal(renamed.name, 'renamed');
      assert.equal(renamed.description, null);
      assert.equal(renamed.type, 'text');
      const listed = (await ok('GET', '/annotation_templates')) as Json[];
      assert.ok(
        listed.some((t) => t.id === id && t.name === 'renamed' && t.column_id === `annotation/${id}`),
      );
    });

    test('annotations: every type takes its values and answers 422 at the value otherwise', async () => {
      const cases: { tpl: Json; good: unknown[]; bad: unknown[] }[] = [
        { tpl: { type: 'thumbs' }, good: [true, false], bad: [1, 'up', null] },
        { tpl: { type: 'stars' }, good: [1, 5], bad: [0, 6, 2.5, '3'] },
        { tpl: { type: 'score', min: -1, max: 1 }, good: [-1, 0.25, 1], bad: [1.5, -2, 'x', true] },
        {
          tpl: { type: 'categorical', options: ['good', 'bad', 'ugly'] },
          good: ['good', 'ugly'],
          bad: ['nice', ['good'], 3],
        },
        {
          tpl: { type: 'categorical', options: ['a', 'b', 'c'], multiple: true },
          good: [['a'], ['c', 'a']],
          bad: ['a', [], ['a', 'a'], ['d'], [1]],
        },
        {
          tpl: { type: 'text' },
          good: ['', 'fine answer'],
          bad: [5, ['x'], 'x'.repeat(10_001), 'nul\u0000'],
        },
        { tpl: { type: 'tags' }, good: [[], ['a', 'b']], bad: ['a', [''], ['a', 'a'], [1]] },
      ];
      for (const c of cases) {
        const id = await template({ name: `values-${c.tpl.type}-${Math.random()}`, ...c.tpl });
        for (const value of c.good) {
          const r = await annotate(traces[0], id, { value });
          assert.equal(r.status, 200, `${c.tpl.type} ${JSON.stringify(value)}: ${r.text}`);
          assert.deepEqual(r.body.value, value);
        }
        for (const value of c.bad) {
          const r = await annotate(traces[0], id, { value });
          assert.equal(r.status, 422, `${c.tpl.type} ${JSON.stringify(value)}: ${r.text}`);
          assert.deepEqual(r.body.detail[0].loc.slice(0, 2), ['body', 'value'], r.text);
        }
      }
      const missing = await annotate(traces[0], crypto.randomUUID(), { value: true });
      assert.equal(missing.status, 404);
      const thumbs = await template({ name: `thumbs-${Math.random()}`, type: 'thumbs' });
      assert.equal((await annotate(crypto.randomUUID(), thumbs, { value: true })).status, 404);
      const noValue = await annotate(traces[0], thumbs, {});
      assert.equal(noValue.status, 422);
      assert.deepEqual(noValue.body.detail[0].loc, ['body', 'value']);
    });

    test('one annotation per user: sending again replaces it, delete removes it; aggregates follow', async () => {
      const stars = await template({ name: 'quality', type: 'stars' });
      const [rec] = traces;
      const first = await annotate(rec, stars, { value: 2, explanation: 'meh' });
      const second = await annotate(rec, stars, { value: 4 });
      assert.equal(second.body.created_at, first.body.created_at);
      await annotate(rec, stars, { value: 5 }, annotator.key);
      let t = await trace(rec);
      assert.deepEqual(Object.keys(t.annotations[stars]).sort(), [annotator.id, s.adminId].sort());
      assert.equal(t.annotations[stars][s.adminId].value, 4);
      assert.equal(t.annotations[stars][s.adminId].explanation, null);
      assert.deepEqual(t.annotation_aggregates[stars], {
        type: 'stars',
        reviewer: { count: 2, average: 4.5, min: 4, max: 5 },
      });
      // A span carries its own.
      const span = t.spans[0];
      await annotate(span.id, stars, { value: 1 });
      assert.equal((await ok('GET', `/spans/${span.id}`)).annotation_aggregates[stars].reviewer.count, 1);

      await ok('DELETE', `/records/${rec}/annotations/${stars}`);
      assert.equal((await s.call('DELETE', url(`/records/${rec}/annotations/${stars}`))).status, 404);
      t = await trace(rec);
      assert.deepEqual(Object.keys(t.annotations[stars]), [annotator.id]);
      assert.deepEqual(t.annotation_aggregates[stars].reviewer, { count: 1, average: 5, min: 5, max: 5 });
      await ok('DELETE', `/records/${rec}/annotations/${stars}`, undefined, annotator.key);
      t = await trace(rec);
      assert.equal(t.annotations[stars], undefined);
      assert.equal(t.annotation_aggregates[stars], undefined);
    });

    test('aggregates count every one of concurrent annotations by several users', async () => {
      const thumbs = await template({ name: 'helpful', type: 'thumbs' });
      const tags = await template({ name: 'topics', type: 'tags' });
      const rec = traces[1];
      const users = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const u = await s.user();
          await ok('POST', '/collaborators', { user_id: u.id, role: 'annotator' });
          return u;
        }),
      );
      const writes = users.flatMap((u, i) => [
        annotate(rec, thumbs, { value: i % 3 !== 0 }, u.key),
        annotate(rec, tags, { value: i % 2 ? ['billing', 'urgent'] : ['billing'] }, u.key),
      ]);
      for (const r of await Promise.all(writes)) assert.equal(r.status, 200, r.text);
      // Then every user changes their vote at once.
      const flips = users.map((u, i) => annotate(rec, thumbs, { value: i % 3 === 0 }, u.key));
      for (const r of await Promise.all(flips)) assert.equal(r.status, 200, r.text);
      const t = await trace(rec);
      const up = users.filter((_, i) => i % 3 === 0).length;
      assert.deepEqual(t.annotation_aggregates[thumbs].reviewer, { count: 8, up, down: 8 - up });
      assert.deepEqual(t.annotation_aggregates[tags].reviewer, {
        count: 8,
        counts: { billing: 8, urgent: 4 },
      });
      assert.equal(Object.keys(t.annotations[thumbs]).length, 8);
    });

    test("end users' feedback goes through the same route with the application's key, apart from reviewers'", async () => {
      const thumbs = await template({ name: 'end-user-rating', type: 'thumbs' });
      const rec = traces[2];
      await annotate(rec, thumbs, { value: true }, annotator.key);
      const fb = (user: string, value: boolean, key?: string) =>
        annotate(rec, thumbs, { value, source: 'end_user', external_user_id: user }, key);
      assert.equal((await fb('customer-1', false)).status, 200);
      assert.equal((await fb('customer-2', false, editor.key)).status, 200);
      assert.equal((await fb('customer-2', true, editor.key)).status, 200);
      // Forging an end user's feedback needs what ingestion needs (editor); a reviewer's, annotator.
      assert.equal((await fb('customer-3', true, annotator.key)).status, 403);
      assert.equal((await annotate(rec, thumbs, { value: true }, viewer.key)).status, 403);
      const noUser = await annotate(rec, thumbs, { value: true, source: 'end_user' });
      assert.equal(noUser.status, 422);
      assert.deepEqual(noUser.body.detail[0].loc, ['body', 'external_user_id']);
      const stray = await annotate(rec, thumbs, { value: true, external_user_id: 'x' });
      assert.equal(stray.status, 422);
      const t = await trace(rec);
      assert.deepEqual(t.annotation_aggregates[thumbs], {
        type: 'thumbs',
        end_user: { count: 2, up: 1, down: 1 },
        reviewer: { count: 1, up: 1, down: 0 },
      });
      assert.equal(t.annotations[thumbs]['end_user:customer-2'].source, 'end_user');
      assert.equal(t.annotations[thumbs]['end_user:customer-2'].external_user_id, 'customer-2');
      const del = await s.call(
        'DELETE',
        url(`/records/${rec}/annotations/${thumbs}?source=end_user&external_user_id=customer-1`),
      );
      assert.equal(del.status, 200, del.text);
      assert.deepEqual((await trace(rec)).annotation_aggregates[thumbs].end_user, {
        count: 1,
        up: 1,
        down: 0,
      });
    });

    test('annotation columns filter and sort every search, with the template name as label', async () => {
      const good = await template({ name: 'col-good', type: 'thumbs' });
      const stars = await template({ name: 'col-stars', type: 'stars' });
      const cat = await template({
        name: 'col-cat',
        type: 'categorical',
        options: ['x', 'y'],
        multiple: true,
      });
      const note = await template({ name: 'col-note', type: 'text' });
      const [t0, t1, t2, t3] = traces;
      await annotate(t0, good, { value: true });
      await annotate(t0, good, { value: false }, annotator.key);
      await annotate(t1, good, { value: true });
      await annotate(t2, good, { value: false });
      await annotate(t0, stars, { value: 3 });
      await annotate(t1, stars, { value: 5 });
      await annotate(t2, stars, { value: 1 });
      await annotate(t2, stars, { value: 3 }, annotator.key);
      await annotate(t1, cat, { value: ['x', 'y'] });
      await annotate(t3, cat, { value: ['y'] });
      await annotate(t3, note, { value: 'Needs a Citation' });
      // End users' feedback is not what the columns read.
      await annotate(t3, good, { value: true, source: 'end_user', external_user_id: 'c' });
      const search = async (body: Json) => {
        const r = await s.call('POST', url('/traces/search'), { log_stream_id: LS, ...body });
        assert.equal(r.status, 200, r.text);
        return r.body.records.map((x: Json) => traces.indexOf(x.id));
      };
      const f = (column: string, rest: Json) => ({
        filters: [{ column_id: `annotation/${column}`, ...rest }],
      });
      assert.deepEqual((await search(f(good, { value: true }))).sort(), [0, 1]);
      assert.deepEqual((await search(f(good, { value: false }))).sort(), [0, 2]);
      assert.deepEqual((await search(f(good, { operator: 'ne', value: true }))).sort(), [2, 3, 4, 5]);
      assert.deepEqual((await search(f(stars, { operator: 'gte', value: 3 }))).sort(), [0, 1, 2]);
      assert.deepEqual((await search(f(stars, { operator: 'between', value: [4, 5] }))).sort(), [1]);
      assert.deepEqual((await search(f(cat, { operator: 'contains', value: 'y' }))).sort(), [1, 3]);
      assert.deepEqual((await search(f(cat, { operator: 'not_in', value: ['x'] }))).sort(), [0, 2, 3, 4, 5]);
      assert.deepEqual(
        await search(f(note, { operator: 'contains', value: 'citation', case_sensitive: false })),
        [3],
      );
      assert.deepEqual(
        await search({
          filter_tree: {
            or: [
              { filter: { column_id: `annotation/${good}`, value: false } },
              { not: { filter: { column_id: `annotation/${stars}`, operator: 'lt', value: 4 } } },
            ],
          },
        }).then((x: number[]) => x.sort()),
        [0, 1, 2, 3, 4, 5],
      );
      // Sorts read the average of reviewers' values; records without come last either way.
      const sorted = async (ascending: boolean) => {
        const order: number[] = await search({ sort: { name: `annotation/${stars}`, ascending } });
        assert.deepEqual(order.slice(3).sort(), [3, 4, 5]);
        return order.slice(0, 3);
      };
      assert.deepEqual(await sorted(false), [1, 0, 2]);
      assert.deepEqual(await sorted(true), [2, 0, 1]);
      assert.deepEqual(
        (await search({ sort: { name: `annotation/${good}`, ascending: false } })).slice(0, 3),
        [1, 0, 2],
      );
      const wrong = async (body: Json, loc: (string | number)[]) => {
        const r = await s.call('POST', url('/traces/search'), { log_stream_id: LS, ...body });
        assert.equal(r.status, 422, r.text);
        assert.deepEqual(r.body.detail[0].loc, loc, r.text);
      };
      await wrong(f(good, { type: 'number', operator: 'eq', value: 1 }), ['body', 'filters', 0, 'type']);
      await wrong(f(crypto.randomUUID(), { value: true }), ['body', 'filters', 0, 'column_id']);
      await wrong({ sort: { name: `annotation/${cat}` } }, ['body', 'sort', 'name']);
      await wrong({ filters: [{ type: 'fully_annotated' }] }, ['body', 'filters', 0]);
      const cols = await ok('POST', '/traces/available_columns', { log_stream_id: LS });
      const col = cols.columns.find((c: Json) => c.id === `annotation/${cat}`);
      assert.equal(col.label, 'col-cat');
      assert.equal(col.data_type, 'string_list');
      assert.deepEqual(col.allowed_values, ['x', 'y']);
      assert.equal(col.is_empty, false);
    });

    test('annotation columns as dashboard metrics aggregate the annotations; filters work there too', async () => {
      const LS2 = (await ok('POST', '/log_streams', { name: 'dash' })).id;
      const ids = Array.from({ length: 4 }, () => crypto.randomUUID());
      await ok('POST', '/traces', {
        log_stream_id: LS2,
        traces: ids.map((id, i) => ({
          id,
          name: i < 2 ? 'alpha' : 'beta',
          created_at: iso(BASE_TIME_US + i * 1_000_000),
          input: 'q',
          output: 'a',
          spans: [],
        })),
      });
      const thumbs = await template({ name: 'dash-thumbs', type: 'thumbs' });
      const stars = await template({ name: 'dash-stars', type: 'stars' });
      const note = await template({ name: 'dash-note', type: 'text' });
      await annotate(ids[0], thumbs, { value: true });
      await annotate(ids[0], thumbs, { value: true }, annotator.key);
      await annotate(ids[0], thumbs, { value: false }, editor.key);
      await annotate(ids[2], thumbs, { value: false });
      await annotate(ids[2], thumbs, { value: true, source: 'end_user', external_user_id: 'e' });
      await annotate(ids[0], stars, { value: 4 });
      await annotate(ids[0], stars, { value: 2 }, annotator.key);
      await annotate(ids[3], stars, { value: 5 });
      await annotate(ids[1], note, { value: 'x' });
      const start = Math.floor(BASE_TIME_US / 1e6) - 3600;
      const base = `/log_streams/${LS2}/trends`;
      const bodyOf = (extra: Json) => ({
        start_time: start,
        end_time: start + 86_400,
        interval_mins: 1440,
        ...extra,
      });
      const dash = await ok('POST', base, { name: 'feedback', ...bodyOf({}) });
      const widget = async (metric: string, aggregation: string) => {
        const r = await s.call('POST', url(`${base}/${dash.id}/widgets`), {
          name: `${aggregation} ${metric}`,
          type: 'number',
          metric: `annotation/${metric}`,
          aggregation,
        });
        return r;
      };
      // Per widget: the total over every record, then over groups alpha and beta (sessions, named '',
      // have no annotations: Count 0, the rest null).
      const wanted: [string, string, [number, number, number | null]][] = [
        [thumbs, 'Count', [4, 3, 1]],
        [thumbs, 'PercentageTrue', [50, 200 / 3, 0]],
        [thumbs, 'PercentageFalse', [50, 100 / 3, 100]],
        [stars, 'Average', [11 / 3, 3, 5]],
        [stars, 'Sum', [11, 6, 5]],
        [stars, 'Min', [2, 2, 5]],
        [stars, 'Max', [5, 4, 5]],
        [note, 'Count', [1, 1, 0]],
      ];
      const expectedOf = (agg: string, values: (number | null)[], group: string | null) =>
        group === null
          ? values[0]
          : group === 'alpha'
            ? values[1]
            : group === 'beta'
              ? values[2]
              : agg === 'Count'
                ? 0
                : null;
      const widgetIds: string[] = [];
      for (const [metric, agg] of wanted) {
        const r = await widget(metric, agg);
        assert.equal(r.status, 200, r.text);
        widgetIds.push(r.body.id);
      }
      for (const [metric, agg, loc] of [
        [stars, 'P50', 'metric'],
        [thumbs, 'Average', 'metric'],
      ] as const) {
        const r = await widget(metric, agg);
        assert.equal(r.status, 422, r.text);
        assert.deepEqual(r.body.detail[0].loc, ['body', loc]);
      }
      const check = async (group: boolean) => {
        const data = await ok('POST', `${base}/${dash.id}/query`, {});
        wanted.forEach(([, agg, values], i) => {
          const w = data.widgets.find((x: Json) => x.id === widgetIds[i]);
          assert.equal(w.series.length, group ? 3 : 1);
          for (const series of w.series) {
            const want = expectedOf(agg, values, group ? series.group : null);
            const got = series.total;
            if (want === null || got === null) assert.equal(got, want, `${agg} ${series.group}`);
            else assert.ok(Math.abs(got - want) < 1e-9, `${agg} ${series.group}: ${got} ≠ ${want}`);
          }
        });
      };
      await check(false);
      await ok('PUT', `${base}?trends_dashboard_id=${dash.id}`, { group_by: 'name' });
      await check(true);
      const byAnnotation = await s.call('PUT', url(`${base}?trends_dashboard_id=${dash.id}`), {
        group_by: `annotation/${thumbs}`,
      });
      assert.equal(byAnnotation.status, 422, byAnnotation.text);
      // A filter on an annotation column narrows the records whose annotations are aggregated.
      await ok('PUT', `${base}?trends_dashboard_id=${dash.id}`, {
        group_by: null,
        filter_tree: { filter: { column_id: `annotation/${stars}`, operator: 'gte', value: 5 } },
      });
      const data = await ok('POST', `${base}/${dash.id}/query`, {});
      const total = (i: number) => data.widgets.find((x: Json) => x.id === widgetIds[i]).series[0].total;
      assert.equal(total(0), 0);
      assert.equal(total(3), 5);
    });

    test('queues: members, records by id and by search, records show their queues', async () => {
      const q1 = await template({ name: 'q-accurate', type: 'thumbs' });
      const q2 = await template({ name: 'q-stars', type: 'stars' });
      const badMember = await s.user();
      const refused = await s.call('POST', url('/annotation_queues'), {
        name: 'q',
        template_ids: [q1, crypto.randomUUID()],
        user_ids: [annotator.id, badMember.id, annotator.id],
      });
      assert.equal(refused.status, 422);
      assert.deepEqual(
        refused.body.detail.map((d: Json) => d.loc),
        [
          ['body', 'template_ids', 1],
          ['body', 'user_ids', 1],
          ['body', 'user_ids', 2],
        ],
      );
      const q = await ok('POST', '/annotation_queues', {
        name: 'review',
        template_ids: [q1, q2],
        user_ids: [annotator.id, s.adminId],
      });
      assert.deepEqual(q.template_ids, [q1, q2]);
      // Every odd trace (a search with filters), then one more by id, twice.
      const added = await ok('POST', `/annotation_queues/${q.id}/records`, {
        log_stream_id: LS,
        filter_tree: {
          and: [
            { filter: { column_id: 'type', operator: 'eq', value: 'trace' } },
            { filter: { column_id: 'tags', operator: 'contains', value: 'odd' } },
          ],
        },
      });
      assert.deepEqual(added, { added: 3, num_records: 3 });
      assert.deepEqual(
        await ok('POST', `/annotation_queues/${q.id}/records`, { record_ids: [traces[0], traces[1]] }),
        {
          added: 1,
          num_records: 4,
        },
      );
      const both = await s.call('POST', url(`/annotation_queues/${q.id}/records`), {
        record_ids: [traces[0]],
        log_stream_id: LS,
      });
      assert.equal(both.status, 422);
      assert.deepEqual((await trace(traces[1])).annotation_queue_ids, [q.id]);
      assert.deepEqual((await trace(traces[2])).annotation_queue_ids, []);

      const page = async (body: Json, key?: string) => {
        const r = await s.call('POST', url(`/annotation_queues/${q.id}/records/search`), body, key);
        assert.equal(r.status, 200, r.text);
        return r.body.records.map((x: Json) => traces.indexOf(x.id));
      };
      assert.deepEqual(await page({}), [5, 3, 1, 0]);
      const fully = (user_ids?: string[]) => ({
        filters: [{ type: 'fully_annotated', ...(user_ids ? { user_ids } : {}) }],
      });
      assert.deepEqual(await page(fully()), []);
      for (const r of [traces[1], traces[3]]) {
        await annotate(r, q1, { value: true });
        await annotate(r, q2, { value: 4 });
      }
      await annotate(traces[1], q1, { value: false }, annotator.key);
      assert.deepEqual(await page(fully([s.adminId])), [3, 1]);
      assert.deepEqual(await page(fully()), []);
      await annotate(traces[1], q2, { value: 2 }, annotator.key);
      assert.deepEqual(await page(fully(), annotator.key), [1]);
      assert.deepEqual(
        await page({ filter_tree: { not: { filter: { type: 'fully_annotated' } } } }),
        [5, 3, 0],
      );
      const badUsers = await s.call('POST', url(`/annotation_queues/${q.id}/records/search`), {
        filter_tree: { and: [{ filter: { type: 'fully_annotated', user_ids: [] } }] },
      });
      assert.equal(badUsers.status, 422);
      assert.deepEqual(badUsers.body.detail[0].loc, ['body', 'filter_tree', 'and', 0, 'filter', 'user_ids']);

      // Annotators see the queues they are members of; viewers none.
      const other = await ok('POST', '/annotation_queues', { name: 'not theirs' });
      const theirs = (await ok('GET', '/annotation_queues', undefined, annotator.key)) as Json[];
      assert.deepEqual(
        theirs.map((x) => x.id),
        [q.id],
      );
      assert.equal(
        (await s.call('GET', url(`/annotation_queues/${other.id}`), undefined, annotator.key)).status,
        404,
      );
      assert.equal((await s.call('GET', url('/annotation_queues'), undefined, viewer.key)).status, 403);
      assert.equal(
        (
          await s.call(
            'POST',
            url(`/annotation_queues/${q.id}/records`),
            { record_ids: [traces[2]] },
            annotator.key,
          )
        ).status,
        403,
      );

      // Changing members and templates; removing records; deleting a template takes it out of the queue.
      const changed = await ok('PATCH', `/annotation_queues/${q.id}`, {
        user_ids: [s.adminId],
        description: 'd',
      });
      assert.deepEqual(changed.user_ids, [s.adminId]);
      assert.deepEqual(changed.template_ids, [q1, q2]);
      assert.equal(
        (await s.call('GET', url(`/annotation_queues/${q.id}`), undefined, annotator.key)).status,
        404,
      );
      assert.deepEqual(
        await ok('DELETE', `/annotation_queues/${q.id}/records`, { record_ids: [traces[5], traces[2]] }),
        {
          removed: 1,
          num_records: 3,
        },
      );
      await ok('DELETE', `/annotation_templates/${q2}`);
      assert.deepEqual((await ok('GET', `/annotation_queues/${q.id}`)).template_ids, [q1]);
      assert.equal((await trace(traces[1])).annotations[q2], undefined);
      assert.deepEqual(await page(fully()), [3, 1]);
      await ok('DELETE', `/annotation_queues/${q.id}`);
      assert.deepEqual((await trace(traces[1])).annotation_queue_ids, []);
    });

    test('search pages show each record its feedback as reading it alone does, on a deep page too', async () => {
      // 600 traces, newest first in a search: the oldest lie past offset 500, where the page reads
      // feedback without its per-row flag (PostgreSQL), the newest on the first page.
      const LS3 = (await ok('POST', '/log_streams', { name: 'feedback-pages' })).id;
      const ids = Array.from({ length: 600 }, () => crypto.randomUUID());
      await ok('POST', '/traces', {
        log_stream_id: LS3,
        traces: ids.map((id, i) => ({
          id,
          name: `f${i}`,
          created_at: iso(BASE_TIME_US + i * 1000),
          input: 'q',
        })),
      });
      const stars = await template({ name: `page-stars-${Math.random()}`, type: 'stars' });
      const q = await ok('POST', '/annotation_queues', { name: `page-queue-${Math.random()}` });
      const [oldest, newest, plain] = [ids[0], ids[599], ids[598]];
      for (const id of [oldest, newest]) assert.equal((await annotate(id, stars, { value: 4 })).status, 200);
      await ok('POST', `/annotation_queues/${q.id}/records`, { record_ids: [oldest, newest] });
      const feedback = (r: Json) => ({
        annotations: r.annotations,
        annotation_aggregates: r.annotation_aggregates,
        annotation_queue_ids: r.annotation_queue_ids,
      });
      const page = async (starting_token: number) => {
        const r = await s.call('POST', url('/traces/search'), {
          log_stream_id: LS3,
          pagination: { starting_token, limit: 100 },
        });
        assert.equal(r.status, 200, r.text);
        return new Map<string, Json>(r.body.records.map((x: Json) => [x.id, x]));
      };
      const first = await page(0);
      const deep = await page(550);
      for (const [id, shown] of [
        [newest, first.get(newest)],
        [plain, first.get(plain)],
        [oldest, deep.get(oldest)],
      ] as const) {
        assert.ok(shown, id);
        assert.deepEqual(feedback(shown), feedback(await trace(id)));
      }
      assert.equal(first.get(newest)?.annotations[stars][s.adminId].value, 4);
      assert.deepEqual(deep.get(oldest)?.annotation_queue_ids, [q.id]);
      assert.deepEqual(feedback(first.get(plain) as Json), {
        annotations: {},
        annotation_aggregates: {},
        annotation_queue_ids: [],
      });
    });

    test('queue progress: per member the records annotated on every template, as fully_annotated counts them', async () => {
      const up = await template({ name: 'p-up', type: 'thumbs' });
      const tag = await template({ name: 'p-tags', type: 'tags' });
      const q = await ok('POST', '/annotation_queues', {
        name: 'progress',
        template_ids: [up, tag],
        user_ids: [annotator.id, s.adminId],
      });
      await ok('POST', `/annotation_queues/${q.id}/records`, { record_ids: traces.slice(0, 4) });
      const progress = async (key?: string) =>
        ok('GET', `/annotation_queues/${q.id}/progress`, undefined, key);
      /** What the queue search's fully_annotated finds for these users (all members when left out). */
      const fullyCount = async (user_ids?: string[]) =>
        (
          await ok('POST', `/annotation_queues/${q.id}/records/search`, {
            filters: [{ type: 'fully_annotated', ...(user_ids ? { user_ids } : {}) }],
            pagination: { limit: 100 },
          })
        ).records.length as number;
      const counted = (p: Json) =>
        Object.fromEntries(p.users.map((u: Json) => [u.user_id, [u.num_annotated, u.member]]));

      let p = await progress();
      assert.deepEqual(
        { records: p.num_records, templates: p.num_templates, complete: p.num_complete },
        { records: 4, templates: 2, complete: 0 },
      );
      assert.deepEqual(
        p.users.map((u: Json) => u.user_id),
        [annotator.id, s.adminId],
      );
      assert.equal(p.users[0].email, (await s.call('GET', `/v2/users/${annotator.id}`)).body.email);

      // Admin: both templates on three records, one on the fourth. Annotator: both on one record,
      // which the admin also finished. The editor (no member) and an end user annotate too.
      for (const r of traces.slice(0, 3)) {
        await annotate(r, up, { value: true });
        await annotate(r, tag, { value: ['ok'] });
      }
      await annotate(traces[3], up, { value: false });
      await annotate(traces[1], up, { value: true }, annotator.key);
      await annotate(traces[1], tag, { value: [] }, annotator.key);
      await annotate(traces[2], up, { value: true }, annotator.key);
      await annotate(traces[0], up, { value: true }, editor.key);
      await annotate(traces[0], tag, { value: ['e'] }, editor.key);
      await annotate(traces[3], up, { value: true, source: 'end_user', external_user_id: s.adminId });
      await annotate(traces[3], tag, { value: ['x'], source: 'end_user', external_user_id: s.adminId });
      // A record outside the queue does not count.
      await annotate(traces[5], up, { value: true }, annotator.key);
      await annotate(traces[5], tag, { value: [] }, annotator.key);

      p = await progress();
      assert.deepEqual(counted(p), { [annotator.id]: [1, true], [s.adminId]: [3, true] });
      assert.equal(p.num_complete, 1);
      assert.equal(
        p.users.find((u: Json) => u.user_id === annotator.id).num_annotated,
        await fullyCount([annotator.id]),
      );
      assert.equal(
        p.users.find((u: Json) => u.user_id === s.adminId).num_annotated,
        await fullyCount([s.adminId]),
      );
      assert.equal(p.num_complete, await fullyCount());

      // An editor who is not a member sees their own count last; the annotator sees the same numbers.
      const byEditor = await progress(editor.key);
      assert.deepEqual(counted(byEditor), { ...counted(p), [editor.id]: [1, false] });
      assert.equal(byEditor.users.at(-1).user_id, editor.id);
      assert.equal(byEditor.num_complete, 1);
      assert.deepEqual(counted(await progress(annotator.key)), counted(p));

      // Replacing a value keeps the count; removing one annotation takes the record out.
      await annotate(traces[1], tag, { value: ['again'] }, annotator.key);
      assert.deepEqual(counted(await progress()), counted(p));
      await s.call('DELETE', url(`/records/${traces[1]}/annotations/${tag}`), undefined);
      p = await progress();
      assert.deepEqual(counted(p), { [annotator.id]: [1, true], [s.adminId]: [2, true] });
      assert.equal(p.num_complete, 0);
      assert.equal(p.num_complete, await fullyCount());

      // A queue without templates asks nothing: every record is done.
      const empty = await ok('POST', '/annotation_queues', {
        name: 'no templates',
        user_ids: [annotator.id],
      });
      await ok('POST', `/annotation_queues/${empty.id}/records`, { record_ids: traces.slice(0, 2) });
      const none = await ok('GET', `/annotation_queues/${empty.id}/progress`);
      assert.deepEqual(
        { complete: none.num_complete, users: counted(none) },
        { complete: 2, users: { [annotator.id]: [2, true], [s.adminId]: [2, false] } },
      );

      // Who may read it: viewers no (403); annotators only their queues (404 otherwise).
      assert.equal(
        (await s.call('GET', url(`/annotation_queues/${q.id}/progress`), undefined, viewer.key)).status,
        403,
      );
      await ok('PATCH', `/annotation_queues/${q.id}`, { user_ids: [s.adminId] });
      assert.equal(
        (await s.call('GET', url(`/annotation_queues/${q.id}/progress`), undefined, annotator.key)).status,
        404,
      );
      assert.equal(
        (await s.call('GET', url(`/annotation_queues/${crypto.randomUUID()}/progress`))).status,
        404,
      );
      assert.equal((await s.call('GET', url('/annotation_queues/nope/progress'))).status, 422);
      await ok('DELETE', `/annotation_queues/${q.id}`);
      await ok('DELETE', `/annotation_queues/${empty.id}`);
    });

    test('queue names are unique in a project: 409 on create and on rename', async () => {
      const first = await ok('POST', '/annotation_queues', { name: 'review' });
      const again = await s.call('POST', url('/annotation_queues'), { name: 'review' });
      assert.equal(again.status, 409, again.text);
      assert.equal(again.body.detail, "An annotation queue named 'review' already exists in this project");
      const other = await ok('POST', '/annotation_queues', { name: 'review later' });
      const renamed = await s.call('PATCH', url(`/annotation_queues/${other.id}`), { name: 'review' });
      assert.equal(renamed.status, 409, renamed.text);
      // Keeping its own name, or another project's queue of that name, is fine.
      await ok('PATCH', `/annotation_queues/${first.id}`, { name: 'review', description: 'same name' });
      const P2 = (await s.call('POST', '/v2/projects', { name: `ann2-${Date.now()}` })).body.id;
      const elsewhere = await s.call('POST', `/v2/projects/${P2}/annotation_queues`, { name: 'review' });
      assert.equal(elsewhere.status, 200, elsewhere.text);
      const names = ((await ok('GET', '/annotation_queues')) as Json[]).map((q) => q.name);
      assert.equal(names.filter((n) => n === 'review').length, 1, 'nothing half-written');
      await ok('DELETE', `/annotation_queues/${first.id}`);
      await ok('DELETE', `/annotation_queues/${other.id}`);
    });
  });

  test(`queues that shared a name before migration 024 are renamed, oldest keeps it [${store}]`, async () => {
    const older = await storeBefore(store, '024');
    const { db } = older.store;
    try {
      const project = (id: string) => ({
        id,
        name: id,
        type: 'gen_ai',
        created_by: 'u',
        created_at: 1,
        updated_at: 1,
      });
      await db
        .insertInto('projects')
        .values([project('p1'), project('p2')])
        .execute();
      const queue = (id: string, project_id: string, name: string, created_at: number) => ({
        id,
        project_id,
        name,
        created_at,
        updated_at: created_at,
      });
      await db
        .insertInto('annotation_queues')
        .values([
          queue('q3', 'p1', 'review', 3),
          queue('q1', 'p1', 'review', 1),
          queue('q2', 'p1', 'review', 2),
          queue('q4', 'p1', 'review (2)', 4),
          queue('q5', 'p2', 'review', 5),
        ])
        .execute();
      await older.up();
      const rows = await db.selectFrom('annotation_queues').select(['id', 'name']).orderBy('id').execute();
      assert.deepEqual(
        rows.map((r) => `${r.id} ${r.name}`),
        ['q1 review', 'q2 review (3)', 'q3 review (4)', 'q4 review (2)', 'q5 review'],
      );
      await assert.rejects(
        db
          .insertInto('annotation_queues')
          .values(queue('q6', 'p1', 'review', 6))
          .execute(),
      );
    } finally {
      await older.close();
    }
  });
}
