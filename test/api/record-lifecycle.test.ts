/**
 * Counting, deleting and exporting records by filter, on each store.
 *
 * - Counts equal the number of records a search with the same body pages through.
 * - A delete leaves the store as if the deleted records had never been sent: the log stream is
 *   compared, row by row (records with their aggregates, run counts, token-usage days, column
 *   catalogue), with a reference store that was sent only what should be left. Another log stream is
 *   untouched, and deleted text is never a search hit again.
 *   Costs are sums of binary fractions, exact in any order: sums recomputed after a delete equal the
 *   reference's.
 * - The annotations, aggregates and queue places of deleted records go; those of others stay.
 * - Ingestion goes on during a large delete without an error or a lost record.
 * - Export: JSON lines nest what lies below each root and load again through ingestion; CSV rows.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { RollupsRepo } from '../../src/store/rollups.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

interface SpanSpec {
  id: string;
  step: number;
  type: string;
  name: string;
  input: string;
  metrics?: Record<string, number>;
  user_metadata?: Record<string, unknown>;
  spans: SpanSpec[];
}
interface TraceSpec {
  id: string;
  session: string;
  created_at: string;
  name: string;
  input: string;
  output: string;
  user_metadata: Record<string, unknown>;
  metrics?: Record<string, number>;
  spans: SpanSpec[];
}
interface SessionSpec {
  id: string;
  external_id: string;
  created_at: string;
}
interface Dataset {
  sessions: SessionSpec[];
  traces: TraceSpec[];
}

const BASE = Date.UTC(2024, 2, 1);
const at = (minutes: number) => new Date(BASE + minutes * 60_000).toISOString();

/** Sessions of traces of spans, with metadata, custom metrics and tokens varied enough to matter. */
function dataset(sessions = 6, tracesPer = 5): Dataset {
  const ds: Dataset = { sessions: [], traces: [] };
  let minute = 0;
  for (let s = 0; s < sessions; s++) {
    const sid = crypto.randomUUID();
    ds.sessions.push({ id: sid, external_id: `ext-${s}`, created_at: at(minute++) });
    for (let t = 0; t < tracesPer; t++) {
      const n = s * tracesPer + t;
      const group = n % 3 === 0 ? 'a' : 'b';
      const llm: SpanSpec = {
        id: crypto.randomUUID(),
        step: 2,
        type: 'llm',
        name: 'llm',
        input: `llm question ${n}`,
        metrics: {
          num_input_tokens: 10 + n,
          num_output_tokens: 3,
          duration_ns: 1000 * n + 1,
          // Some llm spans have no cost; a cost sent by the client is kept as sent.
          ...(n % 3 === 1 ? {} : { cost: 0.125 * (1 + (n % 4)) }),
        },
        user_metadata: n % 4 === 0 ? { flag: true } : {},
        spans: [],
      };
      const tool: SpanSpec = {
        id: crypto.randomUUID(),
        step: 3,
        type: 'tool',
        name: 'tool',
        input: `tool ${n}`,
        spans: [],
      };
      ds.traces.push({
        id: crypto.randomUUID(),
        session: sid,
        created_at: at(minute++),
        name: `trace-${n}`,
        input: `trace input ${n} zq${group}marker <${group}-${n}>`,
        output: `trace output ${n}`,
        user_metadata: {
          group,
          tier: s % 2 === 0 ? 'gold' : 'silver',
          ...(group === 'a' ? { only_a: `x${n}` } : {}),
        },
        // A trace's own cost (sent by the client) is not the sum of its spans'.
        metrics: n % 5 === 0 ? { score: n + 0.5, ...(n % 10 === 0 ? { cost: 2 } : {}) } : undefined,
        spans: [
          {
            id: crypto.randomUUID(),
            step: 1,
            type: 'workflow',
            name: 'wf',
            input: `wf ${n}`,
            spans: [llm, tool],
          },
          { id: crypto.randomUUID(), step: 4, type: 'retriever', name: 'ret', input: `find ${n}`, spans: [] },
        ],
      });
    }
  }
  return ds;
}

function spanBody(sp: SpanSpec, created: string): any {
  // Steps given: positions in the request would change with the spans a reference leaves out.
  const base: any = {
    id: sp.id,
    type: sp.type,
    name: sp.name,
    created_at: created,
    step_number: sp.step,
    spans: [],
  };
  if (sp.type === 'llm') {
    base.input = [{ role: 'user', content: sp.input }];
    base.output = { role: 'assistant', content: 'ok' };
    base.model = 'gpt-test';
  } else {
    base.input = sp.input;
    base.output = 'done';
  }
  if (sp.metrics) base.metrics = sp.metrics;
  if (sp.user_metadata) base.user_metadata = sp.user_metadata;
  base.spans = sp.spans.map((c) => spanBody(c, created));
  return base;
}

/** The ingestion body of a dataset, without the spans (and their subtrees) in `dropSpans`. */
function body(logStreamId: string, ds: Dataset, dropSpans = new Set<string>()): any {
  const prune = (spans: SpanSpec[]): SpanSpec[] =>
    spans.filter((s) => !dropSpans.has(s.id)).map((s) => ({ ...s, spans: prune(s.spans) }));
  return {
    log_stream_id: logStreamId,
    sessions: ds.sessions.map((s) => ({
      id: s.id,
      name: s.external_id,
      external_id: s.external_id,
      created_at: s.created_at,
    })),
    traces: ds.traces.map((t) => ({
      id: t.id,
      session_id: t.session,
      name: t.name,
      created_at: t.created_at,
      input: t.input,
      output: t.output,
      user_metadata: t.user_metadata,
      ...(t.metrics ? { metrics: t.metrics } : {}),
      spans: prune(t.spans).map((sp) => spanBody(sp, t.created_at)),
    })),
  };
}

interface Place {
  s: TestServer;
  project: string;
  ls: string;
}

async function place(s: TestServer, name: string): Promise<Place> {
  const p = await s.call('POST', '/v2/projects', { name: `${name}-${crypto.randomUUID()}` });
  assert.equal(p.status, 200, p.text);
  const ls = await s.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'ls' });
  assert.equal(ls.status, 200, ls.text);
  return { s, project: p.body.id, ls: ls.body.id };
}

async function ingest(pl: Place, b: any): Promise<void> {
  const r = await pl.s.call('POST', `/v2/projects/${pl.project}/traces`, b);
  assert.equal(r.status, 200, r.text);
}

/** Every record id a search finds, paging to the end. */
async function searchIds(pl: Place, target: string, filters: any): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; ; start += 1000) {
    const r = await pl.s.call('POST', `/v2/projects/${pl.project}/${target}/search`, {
      log_stream_id: pl.ls,
      ...filters,
      pagination: { starting_token: start, limit: 1000 },
    });
    assert.equal(r.status, 200, r.text);
    ids.push(...r.body.records.map((x: any) => x.id));
    if (r.body.next_starting_token === null) return ids;
  }
}

/** Everything a log stream holds and derives, without the fields a write time stamps. */
async function state(pl: Place) {
  const db = pl.s.running.services.store.db;
  const json = (v: unknown) => (typeof v === 'string' && /^[[{]/.test(v) ? JSON.parse(v) : v);
  const records = (
    await db.selectFrom('records').selectAll().where('run_id', '=', pl.ls).orderBy('id').execute()
  ).map((r: any) => {
    const o: any = {};
    for (const k of Object.keys(r).sort()) {
      if (['updated_at', 'project_id', 'run_id'].includes(k)) continue;
      o[k] = typeof r[k] === 'bigint' ? Number(r[k]) : json(r[k]);
    }
    return o;
  });
  const run = await db
    .selectFrom('runs')
    .select(['num_traces', 'num_spans'])
    .where('id', '=', pl.ls)
    .executeTakeFirstOrThrow();
  const tokens = await db
    .selectFrom('token_usage')
    .select([
      'day',
      'input_tokens',
      'output_tokens',
      'cache_read_input_tokens',
      'cache_creation_input_tokens',
      'cost',
    ])
    .where('log_stream_id', '=', pl.ls)
    .orderBy('day')
    .execute();
  const catalogue = await db
    .selectFrom('column_catalogue')
    .select(['column_id', 'record_type', 'data_type', 'first_seen', 'last_seen'])
    .where('run_id', '=', pl.ls)
    .orderBy('column_id')
    .orderBy('record_type')
    .orderBy('data_type')
    .execute();
  const num = (rows: any[]) =>
    rows.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [k, typeof v === 'string' || v === null ? v : Number(v)]),
      ),
    );
  return {
    records,
    run: { num_traces: Number(run.num_traces), num_spans: Number(run.num_spans) },
    tokens: num(tokens),
    catalogue: num(catalogue),
  };
}

/** The ids of a trace's spans. */
function subtreeOf(t: TraceSpec): Set<string> {
  const out = new Set<string>();
  subtreeIds(t.spans, out);
  return out;
}

function subtreeIds(spans: SpanSpec[], out: Set<string>): void {
  for (const s of spans) {
    out.add(s.id);
    subtreeIds(s.spans, out);
  }
}

for (const store of storesUnderTest()) {
  describe(`records by filter (${store})`, () => {
    let s: TestServer;
    let ref: TestServer;
    before(async () => {
      s = await startTestServer(store);
      ref = await startTestServer(store);
    });
    after(async () => {
      await s?.close();
      await ref?.close();
    });

    test('counts equal the records a search finds', async () => {
      const pl = await place(s, 'count');
      await ingest(pl, body(pl.ls, dataset()));
      const cases: [string, any][] = [
        ['traces', {}],
        [
          'traces',
          { filters: [{ column_id: 'user_metadata/group', operator: 'eq', value: 'a', type: 'text' }] },
        ],
        [
          'traces',
          {
            filters: [
              { column_id: 'input', operator: 'contains', value: 'ZQA', case_sensitive: false, type: 'text' },
            ],
          },
        ],
        [
          'spans',
          {
            filter_tree: {
              or: [
                { filter: { column_id: 'type', operator: 'eq', value: 'llm' } },
                { filter: { column_id: 'name', operator: 'eq', value: 'ret' } },
              ],
            },
          },
        ],
        [
          'spans',
          {
            filter_tree: {
              not: {
                filter: { column_id: 'metrics/num_input_tokens', operator: 'gt', value: 20, type: 'number' },
              },
            },
          },
        ],
        ['sessions', { filters: [{ column_id: 'num_traces', operator: 'gte', value: 5, type: 'number' }] }],
        [
          'sessions',
          {
            filters: [
              { column_id: 'external_id', operator: 'one_of', value: ['ext-1', 'ext-2'], type: 'text' },
            ],
          },
        ],
      ];
      for (const [target, filters] of cases) {
        const found = await searchIds(pl, target, filters);
        const r = await s.call('POST', `/v2/projects/${pl.project}/${target}/count`, {
          log_stream_id: pl.ls,
          ...filters,
        });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body, { total_count: found.length }, `${target} ${JSON.stringify(filters)}`);
      }
      const bad = await s.call('POST', `/v2/projects/${pl.project}/traces/count`, {
        log_stream_id: pl.ls,
        filters: [{ column_id: 'nope', operator: 'eq', value: 'x' }],
      });
      assert.equal(bad.status, 422, bad.text);
      assert.deepEqual(bad.body.detail[0].loc, ['body', 'filters', 0, 'column_id']);
    });

    /**
     * Deletes `filters` of `target` in a copy of the dataset and compares with a reference store sent
     * what should be left.
     */
    async function againstReference(
      target: 'traces' | 'spans' | 'sessions',
      filters: any,
      left: (ds: Dataset, matched: Set<string>) => { ds: Dataset; dropSpans: Set<string> },
    ) {
      const ds = dataset();
      const pl = await place(s, `del-${target}`);
      const other = await place(s, `other-${target}`);
      await ingest(pl, body(pl.ls, ds));
      const otherDs = dataset(2, 3);
      await ingest(other, body(other.ls, otherDs));
      await s.running.services.search.indexer.drain();
      const otherBefore = await state(other);
      const matched = new Set(await searchIds(pl, target, filters));
      assert.ok(matched.size > 0 && matched.size < (target === 'sessions' ? ds.sessions.length : 1000));
      const r = await s.call('POST', `/v2/projects/${pl.project}/${target}/delete`, {
        log_stream_id: pl.ls,
        ...filters,
      });
      assert.equal(r.status, 200, r.text);
      assert.match(r.body.message, new RegExp(`^Deleted ${matched.size} ${target} `));
      assert.deepEqual(await searchIds(pl, target, filters), [], 'nothing matches any more');

      const want = left(ds, matched);
      const rp = await place(ref, `ref-${target}`);
      await ingest(rp, body(rp.ls, want.ds, want.dropSpans));
      assert.deepEqual(
        await state(pl),
        await state(rp),
        'the log stream as if the deleted records were never sent',
      );
      assert.deepEqual(await state(other), otherBefore, 'another log stream is untouched');
      return { pl, ds, matched };
    }

    test('deleting traces: spans, session aggregates, rollups, catalogue and text index follow', async () => {
      const filters = {
        filters: [{ column_id: 'user_metadata/group', operator: 'eq', value: 'a', type: 'text' }],
      };
      const { pl, ds } = await againstReference('traces', filters, (d, m) => ({
        ds: { ...d, traces: d.traces.filter((t) => !m.has(t.id)) },
        dropSpans: new Set(),
      }));
      // Text of a deleted trace is never found again, before and after the index catches up.
      const gone = ds.traces.find((t) => t.user_metadata.group === 'a') as TraceSpec;
      const term = gone.input.split(' ').at(-1) as string; // `<a-N>`: no other trace holds it
      const textFilter = {
        filters: [{ column_id: 'input', operator: 'contains', value: term, type: 'text' }],
      };
      assert.deepEqual(await searchIds(pl, 'traces', textFilter), []);
      await s.running.services.search.indexer.drain();
      assert.deepEqual(await searchIds(pl, 'traces', textFilter), []);
      const kept = ds.traces.find((t) => t.user_metadata.group === 'b') as TraceSpec;
      const keptTerm = kept.input.split(' ').at(-1) as string;
      assert.deepEqual(
        await searchIds(pl, 'traces', {
          filters: [{ column_id: 'input', operator: 'contains', value: keptTerm, type: 'text' }],
        }),
        [kept.id],
      );
    });

    test('deleting spans takes their subtrees; traces and sessions are recomputed', async () => {
      const filters = { filters: [{ column_id: 'name', operator: 'one_of', value: ['wf'], type: 'text' }] };
      await againstReference('spans', filters, (d, m) => {
        const drop = new Set<string>();
        for (const t of d.traces) for (const sp of t.spans) if (m.has(sp.id)) subtreeIds([sp], drop);
        return { ds: d, dropSpans: drop };
      });
    });

    test('deleting llm spans only: token sums fall back to none', async () => {
      const filters = { filters: [{ column_id: 'type', operator: 'eq', value: 'llm' }] };
      await againstReference('spans', filters, (_d, m) => ({ ds: _d, dropSpans: new Set(m) }));
    });

    test('deleting some priced llm spans: trace, session and day costs are the sums of what is left', async () => {
      const filters = {
        filters: [{ column_id: 'metrics/cost', operator: 'gte', value: 0.375, type: 'number' }],
      };
      await againstReference('spans', filters, (_d, m) => ({ ds: _d, dropSpans: new Set(m) }));
    });

    test('deleting every priced llm span: costs fall back to none, tokens stay', async () => {
      const filters = {
        filters: [{ column_id: 'metrics/cost', operator: 'gt', value: 0, type: 'number' }],
      };
      const { pl } = await againstReference('spans', filters, (_d, m) => ({ ds: _d, dropSpans: new Set(m) }));
      const [day] = (await state(pl)).tokens;
      assert.equal(day.cost, null);
      assert.ok(Number(day.input_tokens) > 0);
    });

    test('deleting sessions takes their traces and spans', async () => {
      const filters = {
        filters: [{ column_id: 'external_id', operator: 'one_of', value: ['ext-0', 'ext-3'], type: 'text' }],
      };
      await againstReference('sessions', filters, (d, m) => ({
        ds: {
          sessions: d.sessions.filter((x) => !m.has(x.id)),
          traces: d.traces.filter((t) => !m.has(t.session)),
        },
        dropSpans: new Set(),
      }));
    });

    test("deleting traces takes their records' annotations, aggregates and queue places", async () => {
      const pl = await place(s, 'feedback');
      const ds = dataset(2, 3);
      await ingest(pl, body(pl.ls, ds));
      const base = `/v2/projects/${pl.project}`;
      const ok = async (method: string, path: string, b?: unknown) => {
        const r = await s.call(method, `${base}${path}`, b);
        assert.ok(r.status < 300, `${method} ${path} → ${r.status} ${r.text}`);
        return r.body;
      };
      const thumbs = (await ok('POST', '/annotation_templates', { name: 'ok', type: 'thumbs' })).id;
      const stars = (await ok('POST', '/annotation_templates', { name: 'stars', type: 'stars' })).id;
      const gone = ds.traces.filter((t) => t.user_metadata.group === 'a');
      const kept = ds.traces.filter((t) => t.user_metadata.group === 'b');
      assert.ok(gone.length && kept.length);
      // Each trace and its llm span annotated on both templates; a session too.
      const llmOf = (t: TraceSpec) => t.spans[0].spans[0].id;
      const annotated = [...ds.traces.flatMap((t) => [t.id, llmOf(t)]), ds.sessions[0].id];
      for (const id of annotated) {
        await ok('PUT', `/records/${id}/annotations/${thumbs}`, { value: true });
        await ok('PUT', `/records/${id}/annotations/${stars}`, { value: 3 });
      }
      const q = await ok('POST', '/annotation_queues', { name: 'review', template_ids: [thumbs] });
      await ok('POST', `/annotation_queues/${q.id}/records`, { record_ids: annotated });
      const other = await place(s, 'feedback-other');
      await ingest(other, body(other.ls, dataset(1, 2)));
      const db = s.running.services.store.db;
      const rows = async (table: 'annotations' | 'annotation_aggregates' | 'annotation_queue_records') =>
        (await db.selectFrom(table).select('record_id').execute()).map((r: any) => r.record_id as string);
      const goneIds = new Set(gone.flatMap((t) => [t.id, ...[...subtreeOf(t)]]));
      const before = {
        annotations: await rows('annotations'),
        aggregates: await rows('annotation_aggregates'),
        queue: await rows('annotation_queue_records'),
      };
      assert.ok(before.annotations.some((id) => goneIds.has(id)));

      const r = await s.call('POST', `${base}/traces/delete`, {
        log_stream_id: pl.ls,
        filters: [{ column_id: 'user_metadata/group', operator: 'eq', value: 'a', type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      const left = (xs: string[]) => xs.filter((id) => !goneIds.has(id)).sort();
      assert.deepEqual((await rows('annotations')).sort(), left(before.annotations));
      assert.deepEqual((await rows('annotation_aggregates')).sort(), left(before.aggregates));
      assert.deepEqual((await rows('annotation_queue_records')).sort(), left(before.queue));
      // The queue lists and finds only the records left; those keep their annotations.
      const keptIds = [...kept.flatMap((t) => [t.id, llmOf(t)]), ds.sessions[0].id];
      assert.equal((await ok('GET', `/annotation_queues/${q.id}`)).num_records, keptIds.length);
      const page = await ok('POST', `/annotation_queues/${q.id}/records/search`, {
        pagination: { starting_token: 0, limit: 100 },
      });
      assert.deepEqual(page.records.map((x: any) => x.id).sort(), [...keptIds].sort());
      const t = await ok('GET', `/traces/${kept[0].id}`);
      assert.deepEqual(Object.keys(t.annotations).sort(), [thumbs, stars].sort());
      assert.equal(t.annotation_aggregates[stars].reviewer.count, 1);
      assert.deepEqual(t.annotation_queue_ids, [q.id]);
    });

    test('annotations and queue places written while their records are deleted do not outlive them', async () => {
      const pl = await place(s, 'feedback-race');
      const ds = dataset(3, 4);
      await ingest(pl, body(pl.ls, ds));
      const base = `/v2/projects/${pl.project}`;
      const thumbs = (await s.call('POST', `${base}/annotation_templates`, { name: 'ok', type: 'thumbs' }))
        .body.id;
      const q = (await s.call('POST', `${base}/annotation_queues`, { name: 'race', template_ids: [thumbs] }))
        .body;
      const ids = ds.traces.flatMap((t) => [t.id, ...subtreeOf(t)]);
      // Writes of feedback spread before, during and after the delete (each succeeds or gets a 404).
      const writes = ids.flatMap((id, i) => [
        new Promise((r) => setTimeout(r, i % 7)).then(() =>
          s.call('PUT', `${base}/records/${id}/annotations/${thumbs}`, { value: true }),
        ),
        new Promise((r) => setTimeout(r, i % 5)).then(() =>
          s.call('POST', `${base}/annotation_queues/${q.id}/records`, { record_ids: [id] }),
        ),
      ]);
      const del = s.call('POST', `${base}/traces/delete`, { log_stream_id: pl.ls });
      for (const r of await Promise.all(writes))
        assert.ok([200, 404].includes(r.status), `${r.status} ${r.text}`);
      assert.equal((await del).status, 200);
      const db = s.running.services.store.db;
      const existing = new Set(
        (await db.selectFrom('records').select('id').where('project_id', '=', pl.project).execute()).map(
          (r: any) => r.id as string,
        ),
      );
      for (const table of ['annotations', 'annotation_aggregates', 'annotation_queue_records'] as const) {
        const rows = await db
          .selectFrom(table)
          .select('record_id')
          .where('project_id', '=', pl.project)
          .execute();
        const orphans = rows.map((r: any) => r.record_id as string).filter((id) => !existing.has(id));
        assert.deepEqual(orphans, [], `${table} rows of deleted records`);
      }
      assert.ok(!ids.some((id) => existing.has(id)), 'every trace and span deleted');
      assert.equal((await s.call('GET', `${base}/annotation_queues/${q.id}`)).body.num_records, 0);
    });

    test('a catalogue entry wider than the records left (a key dropped by a PATCH) goes', async () => {
      const pl = await place(s, 'stale-catalogue');
      const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
      await ingest(pl, {
        log_stream_id: pl.ls,
        traces: [
          { id: a, name: 'a', input: 'i', output: 'o', created_at: at(1), user_metadata: { k: 'x' } },
          { id: b, name: 'b', input: 'i', output: 'o', created_at: at(2), user_metadata: { k: 'y' } },
        ],
      });
      const patched = await s.call('PATCH', `/v2/projects/${pl.project}/traces/${a}`, {
        log_stream_id: pl.ls,
        user_metadata: {},
      });
      assert.equal(patched.status, 200, patched.text);
      const r = await s.call('POST', `/v2/projects/${pl.project}/traces/delete`, {
        log_stream_id: pl.ls,
        filters: [{ column_id: 'id', operator: 'eq', value: b }],
      });
      assert.equal(r.status, 200, r.text);
      const columns = await s.call('POST', `/v2/projects/${pl.project}/traces/available_columns`, {
        log_stream_id: pl.ls,
      });
      assert.ok(!columns.body.columns.some((c: any) => c.id === 'user_metadata/k'));
    });

    test("deleting a key's first and last records moves its hours to the records left", async () => {
      const pl = await place(s, 'catalogue-hours');
      // Records at 0:10, 3:10 and 5:10 past BASE's hour; the first and the last go.
      const ids = [10, 190, 310].map(() => crypto.randomUUID());
      await ingest(pl, {
        log_stream_id: pl.ls,
        traces: [10, 190, 310].map((m, i) => ({
          id: ids[i],
          name: 't',
          input: 'i',
          output: 'o',
          created_at: at(m),
          user_metadata: { k: 'x' },
        })),
      });
      const hours = async () => {
        const row: any = (await state(pl)).catalogue.find((c: any) => c.column_id === 'user_metadata/k');
        const hour = (us: number) => (us / 1000 - Date.parse(at(0))) / 3_600_000;
        return [hour(row.first_seen), hour(row.last_seen)];
      };
      assert.deepEqual(await hours(), [0, 6]);
      for (const id of [ids[0], ids[2]]) {
        const r = await s.call('POST', `/v2/projects/${pl.project}/traces/delete`, {
          log_stream_id: pl.ls,
          filters: [{ column_id: 'id', operator: 'eq', value: id }],
        });
        assert.equal(r.status, 200, r.text);
      }
      assert.deepEqual(await hours(), [3, 4]);
    });

    test('a delete needs a run and the editor role; nothing is deleted otherwise', async () => {
      const pl = await place(s, 'needs-run');
      await ingest(pl, body(pl.ls, dataset(2, 2)));
      const before = await state(pl);
      const noRun = await s.call('POST', `/v2/projects/${pl.project}/traces/delete`, {});
      assert.equal(noRun.status, 422, noRun.text);
      assert.deepEqual(noRun.body.detail[0].loc, ['body']);
      const viewer = await s.user();
      const share = await s.call('POST', `/v2/projects/${pl.project}/collaborators`, {
        user_id: viewer.id,
        role: 'viewer',
      });
      assert.equal(share.status, 200, share.text);
      const denied = await s.call(
        'POST',
        `/v2/projects/${pl.project}/traces/delete`,
        { log_stream_id: pl.ls },
        viewer.key,
      );
      assert.equal(denied.status, 403, denied.text);
      assert.deepEqual(await state(pl), before);
    });

    test('ingestion goes on while a large delete runs: no error, nothing lost', async () => {
      const pl = await place(s, 'concurrent');
      const old = dataset(20, 20);
      await ingest(pl, body(pl.ls, old));
      const del = s.call('POST', `/v2/projects/${pl.project}/traces/delete`, {
        log_stream_id: pl.ls,
        filters: [{ column_id: 'created_at', operator: 'lt', value: at(100_000), type: 'date' }],
      });
      const fresh: string[] = [];
      const writes = Array.from({ length: 10 }, async (_, w) => {
        for (let i = 0; i < 5; i++) {
          const id = crypto.randomUUID();
          fresh.push(id);
          const r = await s.call('POST', `/v2/projects/${pl.project}/traces`, {
            log_stream_id: pl.ls,
            traces: [
              {
                id,
                name: `fresh-${w}-${i}`,
                input: 'new',
                output: 'new',
                created_at: at(200_000 + w * 10 + i),
                spans: [{ type: 'llm', input: 'q', output: 'a', metrics: { num_input_tokens: 1 } }],
              },
            ],
          });
          assert.equal(r.status, 200, r.text);
        }
      });
      const [d] = await Promise.all([del, ...writes]);
      assert.equal(d.status, 200, d.text);
      assert.match(d.body.message, /^Deleted 400 traces /);
      const left = await searchIds(pl, 'traces', {});
      assert.deepEqual(left.sort(), fresh.sort());
      const run = await s.call('GET', `/v2/projects/${pl.project}/log_streams/${pl.ls}`);
      assert.equal(run.body.num_traces, fresh.length);
      assert.equal(run.body.num_spans, fresh.length);
    });

    test('export: JSON lines nest what is below each root and load again; CSV has a row per root', async () => {
      const pl = await place(s, 'export');
      const ds = dataset(3, 3);
      await ingest(pl, body(pl.ls, ds));
      const exp = await s.call('POST', `/v2/projects/${pl.project}/export_records`, {
        log_stream_id: pl.ls,
        root_type: 'trace',
        sort: { column_id: 'created_at', ascending: true },
      });
      assert.equal(exp.status, 200, exp.text);
      assert.match(String(exp.headers['content-type']), /^application\/x-ndjson/);
      const lines = exp.text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.map((l) => l.id),
        ds.traces.map((t) => t.id),
      );
      assert.equal(lines[0].spans.length, 2);
      assert.equal(lines[0].spans[0].spans.length, 2, 'the workflow span with its two children');

      // Loaded into another store through ingestion, the traces read back alike.
      const target = await place(ref, 'import');
      const sessions = ds.sessions.map((x) => ({
        id: x.id,
        name: x.external_id,
        external_id: x.external_id,
        created_at: x.created_at,
      }));
      const r = await ref.call('POST', `/v2/projects/${target.project}/traces`, {
        log_stream_id: target.ls,
        sessions,
        traces: lines,
      });
      assert.equal(r.status, 200, r.text);
      for (const t of ds.traces) {
        const a = await s.call('GET', `/v2/projects/${pl.project}/traces/${t.id}`);
        const b = await ref.call('GET', `/v2/projects/${target.project}/traces/${t.id}`);
        const strip = (x: any): any => {
          const { updated_at: _u, project_id: _p, run_id: _r, ...rest } = x;
          return { ...rest, spans: (x.spans ?? []).map(strip) };
        };
        assert.deepEqual(strip(b.body), strip(a.body));
      }

      const sessionsExp = await s.call('POST', `/v2/projects/${pl.project}/export_records`, {
        log_stream_id: pl.ls,
        root_type: 'session',
        column_ids: ['name'],
      });
      const sl = sessionsExp.text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(sl.length, 3);
      assert.deepEqual(Object.keys(sl[0]).sort(), ['id', 'name', 'traces', 'type']);
      assert.equal(sl[0].traces.length, 3);
      assert.equal(sl[0].traces[0].spans.length, 2);

      const csv = await s.call('POST', `/v2/projects/${pl.project}/export_records`, {
        log_stream_id: pl.ls,
        root_type: 'span',
        export_format: 'csv',
        column_ids: ['id', 'type', 'input', 'metrics/num_input_tokens'],
        filters: [{ column_id: 'type', operator: 'eq', value: 'llm' }],
      });
      assert.equal(csv.status, 200, csv.text);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const rows = csv.text.trimEnd().split('\r\n');
      assert.equal(rows[0], 'id,type,input,metrics/num_input_tokens');
      assert.equal(rows.length, 1 + ds.traces.length);
      assert.match(
        rows[1],
        /^[0-9a-f-]{36},llm,"\[{""role"":""user"",""content"":""llm question \d+""}\]",\d+$/,
      );
    });

    test('export: a client that goes away stops the read', async () => {
      const pl = await place(s, 'export-abort');
      // 16,000 spans (about 20 MB of JSON lines): more than socket buffers hold.
      await ingest(pl, body(pl.ls, dataset(100, 40)));
      const selection = (s.running.services.lifecycle as any).selection;
      const original = selection.exportText;
      let pulled = 0;
      let finished = false;
      selection.exportText = async function* (...args: unknown[]) {
        try {
          for await (const chunk of original.apply(selection, args)) {
            pulled++;
            yield chunk;
          }
        } finally {
          finished = true;
        }
      };
      // On SQLite the read runs on an export thread: the export must be closed there too.
      const pool = selection.readers;
      const sent: string[] = [];
      const send = pool?.send;
      if (pool)
        pool.send = (...a: any[]) => {
          sent.push(a[1]);
          return send.apply(pool, a);
        };
      const address = await s.running.app.listen({ port: 0, host: '127.0.0.1' });
      try {
        // node:http, not fetch: a fetch aborted mid-body left its socket open, and the server's
        // close then waited out its keep-alive (70 s).
        const req = http.request(`${address}/v2/projects/${pl.project}/export_records`, {
          method: 'POST',
          headers: { 'service-api-key': s.adminKey, 'content-type': 'application/json' },
        });
        req.end(JSON.stringify({ log_stream_id: pl.ls, root_type: 'span', export_format: 'jsonl' }));
        const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
          req.on('response', resolve);
          req.on('error', reject);
        });
        assert.equal(res.statusCode, 200);
        await new Promise((resolve) => res.once('data', resolve));
        req.destroy();
        const end = Date.now() + 5000;
        while (!finished && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
        assert.ok(finished, 'the read ended');
        // 16,000 spans are 250 chunks of 64: the read stopped long before.
        assert.ok(pulled < 125, `${pulled} chunks read`);
        if (store === 'sqlite') {
          assert.equal(sent.at(-1), 'exportClose', 'the thread-side export was closed');
          for (const r of pool.readers) assert.equal(r.held, 0);
        }
      } finally {
        selection.exportText = original;
        if (pool) pool.send = send;
      }
    });

    test('export: read and rendered on an export thread, not the main thread (SQLite file)', async (t) => {
      if (store !== 'sqlite') return t.skip('PostgreSQL reads through a cursor on the main thread');
      const pl = await place(s, 'export-thread');
      // 1,000 traces of 4 spans.
      await ingest(pl, body(pl.ls, dataset(100, 10)));
      const selection = (s.running.services.lifecycle as any).selection;
      const mainReads = selection.stream;
      let readHere = 0;
      selection.stream = (...args: unknown[]) => {
        readHere++;
        return mainReads.apply(selection, args);
      };
      const exportAll = async () => {
        const exp = await s.call('POST', `/v2/projects/${pl.project}/export_records`, {
          log_stream_id: pl.ls,
          root_type: 'trace',
          export_format: 'jsonl',
        });
        assert.equal(exp.status, 200);
        assert.equal(exp.text.trim().split('\n').length, 1000);
      };
      // The first export starts a thread (its start-up is not the export's work); the second is measured.
      await exportAll();
      // The dashboard rollups' fold of earlier tests' records runs on the main thread: done first.
      const rollups = new RollupsRepo(s.running.services.store);
      while ((await rollups.fold()) > 0);
      const active = (r: any) => r.worker.performance.eventLoopUtilization().active as number;
      const before = new Map(selection.readers.readers.map((r: any) => [r, active(r)]));
      const idle = performance.eventLoopUtilization();
      try {
        await exportAll();
      } finally {
        selection.stream = mainReads;
      }
      const main = performance.eventLoopUtilization(idle);
      assert.equal(readHere, 0, 'nothing was read on the main thread');
      const threads = selection.readers.readers;
      assert.ok(threads.length >= 1 && threads.length <= 2, `${threads.length} export threads`);
      // The work was the threads': they were busier than the main thread, which only passed bytes on.
      const worker = threads.reduce(
        (sum: number, r: any) => sum + active(r) - ((before.get(r) as number) ?? 0),
        0,
      );
      assert.ok(worker > main.active, `export threads ${worker} ms active, main ${main.active} ms`);
      t.diagnostic(`export threads ${worker.toFixed(0)} ms active, main ${main.active.toFixed(0)} ms`);
    });

    test('export: a thread that dies mid-export ends the response with an error', async (t) => {
      if (store !== 'sqlite') return t.skip('SQLite export threads only');
      const pl = await place(s, 'export-dies');
      await ingest(pl, body(pl.ls, dataset(100, 40)));
      const selection = (s.running.services.lifecycle as any).selection;
      const server = s.running.app.server;
      const address = server.listening
        ? `http://127.0.0.1:${(server.address() as { port: number }).port}`
        : await s.running.app.listen({ port: 0, host: '127.0.0.1' });
      const res = await fetch(`${address}/v2/projects/${pl.project}/export_records`, {
        method: 'POST',
        headers: { 'service-api-key': s.adminKey, 'content-type': 'application/json' },
        body: JSON.stringify({ log_stream_id: pl.ls, root_type: 'span', export_format: 'jsonl' }),
      });
      assert.equal(res.status, 200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      const held = selection.readers.readers.filter((r: any) => r.held > 0);
      assert.equal(held.length, 1, 'one thread holds the export');
      await held[0].worker.terminate();
      const outcome = await Promise.race([
        (async () => {
          for (;;) if ((await reader.read()).done) return 'ended cleanly';
        })().catch(() => 'error'),
        new Promise((r) => setTimeout(() => r('hung'), 10_000)),
      ]);
      assert.equal(outcome, 'error');
      // The next export starts a new thread.
      const again = await s.call('POST', `/v2/projects/${pl.project}/export_records`, {
        log_stream_id: pl.ls,
        root_type: 'trace',
        export_format: 'csv',
      });
      assert.equal(again.status, 200);
      assert.equal(again.text.trim().split('\r\n').length, 1 + 4000);
    });
  });
}
