/**
 * Differential property test of record search: random datasets and random filter trees, sorts and
 * pages; the server's answer (SQL on each store, with and without the text index) against the plain
 * TypeScript evaluator (src/query/evaluate.ts) over the same stored rows.
 *
 * A failure prints a shrunk reproduction: the records (only the fields that were set), the request
 * body, and the expected and actual ids.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { TemplateConfig, TemplateType } from '../../src/domain/annotations.ts';
import { SPAN_TYPES, annotationColumn } from '../../src/query/columns.ts';
import { type EvalRecord, evaluate, sortRecords } from '../../src/query/evaluate.ts';
import {
  type FilterTree,
  andTrees,
  validateFilterList,
  validateFilterTree,
} from '../../src/query/filters.ts';
import { validateSort } from '../../src/query/sorts.ts';
import { parseJson } from '../../src/store/db.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { BASE_TIME_US as T0, createSession, ingestTraces } from './support.ts';

const RUNS = Number(process.env.SPANBASE_PROPERTY_RUNS ?? 100);
const QUERIES_PER_RUN = 30;
const S = 1_000_000;

// Values collide often on purpose. Case folding must agree on every store whatever the database's
// locale (JavaScript's toLowerCase): É, the three sigmas (Σ folds to ς at the end of a word, to σ
// inside one), İ (to i + U+0307), ß and ẞ (both to ß, never to "ss").
const WORDS = [
  'alpha',
  'Alpha',
  'ALPHA',
  'beta',
  'été',
  'ÉTÉ',
  'straße',
  'STRASSE',
  'STRAẞE',
  'ΟΔΟΣ',
  'οδος',
  'οδοσ',
  'ΣΑΣ',
  'İstanbul',
  'i\u0307stanbul',
  'istanbul',
  'a%b',
  'a_b',
  'x\\y',
  'q"t',
  "it's",
  '',
  'zz',
];
const TEXTS = [
  'hello world',
  'Hello World',
  'HELLO there',
  'paris été',
  'Paris ÉTÉ!',
  'a%b_c',
  'quick brown fox',
  'the QUICK one',
  'ΟΔΟΣ ΣΑΣ.',
  'ἈΣ Σ σς',
  'İSTANBUL CAFÉ',
  'straẞe café',
];
const TAGS = ['red', 'Red', 'blue', 'green', 'a/b', 'x"y', 'Σ', 'σ', 'ς', 'İ', 'i\u0307', 'ß', 'ẞ'];
const META_KEYS = ['k', 'K', 'a/b', 'q"t', 'x.y', 'ü'];
const NUMBERS = [0, 1, 1.5, 2, -3, 10, 2.25, 100];

const word = fc.constantFrom(...WORDS);
const text = fc.oneof(
  fc.constantFrom(...TEXTS),
  word,
  fc.constantFrom(...TEXTS).chain((t) => word.map((w) => `${t} ${w}`)),
);
const metaValue = fc.oneof(
  { weight: 5, arbitrary: word },
  { weight: 2, arbitrary: fc.constantFrom(...NUMBERS) },
  { weight: 1, arbitrary: fc.boolean() },
);

/** Numbers ingestion takes as metrics (non-negative integers for the standard ones). */
const metricsArb = fc.record(
  {
    duration_ns: fc.constantFrom(0, 5, 100, 250, 1000),
    num_input_tokens: fc.integer({ min: 0, max: 5 }),
    latency: fc.constantFrom(...NUMBERS),
    'a/b': fc.constantFrom(...NUMBERS),
  },
  { requiredKeys: [] },
);
const at = fc.integer({ min: 0, max: 6 }).map((k) => new Date((T0 + k * S) / 1000).toISOString());
const io = fc.oneof(
  { weight: 3, arbitrary: text },
  { weight: 1, arbitrary: text.map((content) => [{ role: 'user', content }]) },
  { weight: 1, arbitrary: text.map((content) => ({ role: 'assistant', content })) },
);
/** Fields a client may set on a trace or a span. */
const common = {
  name: word,
  created_at: at,
  is_complete: fc.boolean(),
  status_code: fc.constantFrom(200, 404, 500),
  error_message: word,
  external_id: word,
  input: io,
  output: io,
  tags: fc.array(fc.constantFrom(...TAGS), { maxLength: 3 }),
  user_metadata: fc.dictionary(fc.constantFrom(...META_KEYS), metaValue, { maxKeys: 3 }),
  dataset_metadata: fc.dictionary(fc.constantFrom(...META_KEYS), metaValue, { maxKeys: 3 }),
  metrics: metricsArb,
};
const spanArb = fc.record(
  { type: fc.constantFrom(...SPAN_TYPES), model: fc.constantFrom('gpt-4o', 'GPT-4o', 'claude'), ...common },
  { requiredKeys: ['type'] },
);
const traceArb = fc.record(
  {
    ...common,
    spans: fc.array(spanArb, { maxLength: 3 }),
    session: fc.option(fc.nat(2), { nil: undefined }),
  },
  { requiredKeys: ['spans'] },
);
const sessionArb = fc.record(
  {
    name: word,
    external_id: word,
    user_metadata: fc.dictionary(fc.constantFrom(...META_KEYS), metaValue, { maxKeys: 3 }),
  },
  { requiredKeys: [] },
);

/** How the text index stands when the queries run (SQLite). */
type IndexMode = 'none' | 'all' | 'stale';
const datasetArb = fc.record({
  sessions: fc.array(sessionArb, { maxLength: 3 }),
  traces: fc.array(traceArb, { minLength: 0, maxLength: 12, size: 'max' }),
  /** Traces without a session: one request each (a session each) or all in one. */
  loneTracesTogether: fc.boolean(),
  index: fc.constantFrom<IndexMode>('none', 'all', 'stale'),
  /** Small candidate caps make common terms fall back to scanning. */
  candidateCap: fc.constantFrom(2, 20_000),
});

// ---- filters

type Json = Record<string, unknown>;
const textColumns = ['name', 'input', 'output', 'external_id', 'error_message', 'model', 'type'];
const metaColumns = META_KEYS.flatMap((k) => [`user_metadata/${k}`, `dataset_metadata/${k}`]);
const numberColumns = [
  'metrics/duration_ns',
  'metrics/num_input_tokens',
  'metrics/latency',
  'metrics/a/b',
  'status_code',
  'num_traces',
];
const dateIso = fc.integer({ min: -1, max: 7 }).map((k) => new Date((T0 + k * S) / 1000).toISOString());
const termArb = fc.oneof(
  word,
  fc.constantFrom(
    'hello',
    'HELLO',
    'llo w',
    'été',
    'ÉTÉ',
    'quick',
    'QUICK ONE',
    'a%b',
    '_',
    'ris',
    'xyz',
    'o',
    'ΟΣ',
    'ος',
    'οσ',
    'Σ Σ',
    'σς',
    'ΑΣ',
    'i\u0307s',
    'İS',
    'İ',
    'is',
    'ẞE',
    'sse',
    'CAFÉ',
  ),
);
const cs = fc.boolean();

const textLeaf = fc.oneof(
  fc.record({
    column_id: fc.constantFrom(...textColumns, ...metaColumns),
    type: fc.constant('text'),
    operator: fc.constantFrom('eq', 'ne', 'contains'),
    value: termArb,
    case_sensitive: cs,
  }),
  fc.record({
    column_id: fc.constantFrom(...textColumns, ...metaColumns),
    type: fc.constant('text'),
    operator: fc.constantFrom('one_of', 'not_in'),
    value: fc.array(termArb, { maxLength: 3 }),
    case_sensitive: cs,
  }),
  fc.record({
    name: fc.constantFrom('input', 'output'),
    type: fc.constant('text'),
    operator: fc.constant('contains'),
    value: termArb,
    case_sensitive: cs,
  }),
);
const numberLeaf = fc.oneof(
  fc.record({
    column_id: fc.constantFrom(...numberColumns, ...metaColumns),
    type: fc.constant('number'),
    operator: fc.constantFrom('eq', 'ne', 'gt', 'gte', 'lt', 'lte'),
    value: fc.constantFrom(...NUMBERS, 3, 250),
  }),
  fc.record({
    column_id: fc.constantFrom(...numberColumns, ...metaColumns),
    type: fc.constant('number'),
    operator: fc.constant('between'),
    value: fc
      .tuple(fc.constantFrom(...NUMBERS), fc.constantFrom(...NUMBERS))
      .map(([a, b]) => (a <= b ? [a, b] : [b, a])),
  }),
);
const boolLeaf = fc.record({
  column_id: fc.constantFrom('is_complete', ...metaColumns),
  type: fc.constant('boolean'),
  operator: fc.constantFrom('eq', 'ne'),
  value: fc.boolean(),
});
const dateLeaf = fc.record({
  column_id: fc.constantFrom('created_at', 'updated_at'),
  type: fc.constant('date'),
  operator: fc.constantFrom('eq', 'ne', 'gt', 'gte', 'lt', 'lte'),
  value: dateIso,
});
const tagsLeaf = fc.oneof(
  fc.record({
    column_id: fc.constant('tags'),
    type: fc.constant('collection'),
    operator: fc.constant('contains'),
    value: fc.constantFrom(...TAGS, 'RED'),
    case_sensitive: cs,
  }),
  fc.record({
    column_id: fc.constant('tags'),
    type: fc.constant('collection'),
    operator: fc.constantFrom('one_of', 'not_in', 'eq'),
    value: fc.array(fc.constantFrom(...TAGS, 'RED'), { maxLength: 3 }),
    case_sensitive: cs,
  }),
  fc.record({
    column_id: fc.constant('tags'),
    type: fc.constant('collection'),
    operator: fc.constant('eq'),
    value: fc.constantFrom(...TAGS),
    case_sensitive: cs,
  }),
);
/** Id filters refer to records by position; `ref` is resolved against the dataset's ids. */
const idLeaf = fc.record({
  column_id: fc.constantFrom('id', 'session_id', 'trace_id'),
  type: fc.constant('id'),
  operator: fc.constantFrom('eq', 'ne', 'one_of', 'not_in'),
  ref: fc.array(fc.nat(30), { minLength: 1, maxLength: 3 }),
});

const leafArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: textLeaf },
  { weight: 2, arbitrary: numberLeaf },
  { weight: 1, arbitrary: boolLeaf },
  { weight: 1, arbitrary: dateLeaf },
  { weight: 2, arbitrary: tagsLeaf },
  { weight: 1, arbitrary: idLeaf },
) as fc.Arbitrary<Json>;

const treeArb: fc.Arbitrary<Json> = fc.letrec<{ node: Json }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: leafArb.map((filter) => ({ filter })) },
    { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 3 }).map((and) => ({ and })) },
    { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 3 }).map((or) => ({ or })) },
    { weight: 1, arbitrary: tie('node').map((not) => ({ not })) },
  ),
})).node;

const sortColumns = [
  'name',
  'created_at',
  'updated_at',
  'id',
  'external_id',
  'status_code',
  'metrics/duration_ns',
  'metrics/latency',
  'user_metadata/k',
  'user_metadata/a/b',
  'dataset_metadata/q"t',
  'num_traces',
  'is_complete',
  'type',
];
const queryArb = fc.record({
  target: fc.constantFrom('sessions', 'traces', 'spans'),
  filters: fc.option(fc.array(leafArb, { maxLength: 2 }), { nil: undefined }),
  filter_tree: fc.option(treeArb, { nil: undefined }),
  sort: fc.option(fc.record({ name: fc.constantFrom(...sortColumns), ascending: fc.boolean() }), {
    nil: undefined,
  }),
  starting_token: fc.constantFrom(0, 0, 0, 1, 2, 5),
  limit: fc.constantFrom(100, 100, 1, 2, 3, 7),
});

// ---- the run

const TARGET_TYPES: Record<string, string[]> = {
  sessions: ['session'],
  traces: ['trace'],
  spans: SPAN_TYPES,
};
let runCounter = 0;

/** Id filters refer to records by position in the run's rows (ordered by id); `ref` becomes the ids. */
function resolveIds(node: unknown, ids: string[]): unknown {
  if (Array.isArray(node)) return node.map((n) => resolveIds(n, ids));
  if (node === null || typeof node !== 'object') return node;
  const o = node as Json;
  if ('ref' in o) {
    const refs = (o.ref as number[]).map(
      (r) => ids[r] ?? `00000000-0000-4000-8000-${String(r).padStart(12, '0')}`,
    );
    const { ref: _ref, ...rest } = o;
    return { ...rest, value: rest.operator === 'one_of' || rest.operator === 'not_in' ? refs : refs[0] };
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolveIds(v, ids)]));
}

function toEval(row: Record<string, unknown>): EvalRecord {
  return {
    ...row,
    metrics: parseJson(row.metrics),
    user_metadata: parseJson(row.user_metadata),
    dataset_metadata: parseJson(row.dataset_metadata),
    tags: parseJson(row.tags),
  } as EvalRecord;
}

/** A stored row reduced to the fields that are set, for readable failures. */
function brief(r: EvalRecord) {
  const skip = new Set(['project_id', 'run_id', 'body', 'updated_at']);
  return Object.fromEntries(
    Object.entries(r).filter(
      ([k, v]) =>
        !skip.has(k) &&
        v !== null &&
        v !== undefined &&
        !(typeof v === 'object' && Object.keys(v as object).length === 0),
    ),
  );
}

for (const store of storesUnderTest()) {
  describe(`search property [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    before(async () => {
      s = await startTestServer(store);
      const p = await s.call('POST', '/v2/projects', { name: `prop-${Date.now()}` });
      projectId = p.body.id;
      // The custom metrics the queries use are known to the project (an unknown one answers 422).
      const seed = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'seed' });
      await ingestTraces(s, projectId, seed.body.id, [{ name: 'seed', metrics: { latency: 1, 'a/b': 1 } }]);
    });
    after(() => s.close());

    test(`server answers equal the evaluator (${RUNS} datasets × ${QUERIES_PER_RUN} queries)`, async (t) => {
      const st = s.running.services.store;
      const search = s.running.services.search;
      let compared = 0;
      let nonEmpty = 0;
      let narrowed = 0;
      await fc.assert(
        fc.asyncProperty(
          datasetArb,
          fc.array(queryArb, { minLength: 10, maxLength: QUERIES_PER_RUN }),
          async (dataset, queries) => {
            const run = ++runCounter;
            const ls = await s.call('POST', `/v2/projects/${projectId}/log_streams`, {
              name: `run-${run}-${Math.random()}`,
            });
            const logStreamId = ls.body.id as string;
            // Sessions (external ids are unique in a run), then traces: those of a session in one
            // request, the others alone or together.
            const sessionIds: string[] = [];
            const external = new Set<string>();
            for (const spec of dataset.sessions) {
              const body: Json = { ...spec };
              if (typeof body.external_id === 'string') {
                if (external.has(body.external_id)) delete body.external_id;
                else external.add(body.external_id);
              }
              sessionIds.push(await createSession(s, projectId, logStreamId, body));
            }
            const groups = new Map<string, Json[]>();
            dataset.traces.forEach((t, i) => {
              const { session, ...trace } = t;
              const sid = session !== undefined ? sessionIds[session] : undefined;
              const key = sid ?? (dataset.loneTracesTogether ? 'together' : `alone-${i}`);
              groups.set(key, [...(groups.get(key) ?? []), trace]);
            });
            for (const [key, batch] of groups) {
              const sid = sessionIds.includes(key) ? key : undefined;
              await ingestTraces(s, projectId, logStreamId, batch, sid ? { session_id: sid } : {});
            }
            search.repo.text.cap = dataset.candidateCap;
            if (dataset.index !== 'none') await search.indexer.drain();
            const readRows = async () =>
              (
                await st.db
                  .selectFrom('records')
                  .selectAll()
                  .where('run_id', '=', logStreamId)
                  .orderBy('id')
                  .execute()
              ).map((r) => toEval(r as any));
            if (dataset.index === 'stale') {
              // Change some inputs after indexing: the index is stale for them until the indexer runs.
              const traceRows = (await readRows()).filter((r) => r.type === 'trace');
              for (const r of traceRows.filter((_, i) => i % 2 === 0)) {
                const patch = await s.call('PATCH', `/v2/projects/${projectId}/traces/${r.id}`, {
                  log_stream_id: logStreamId,
                  input: `${(r.output_text as string | null) ?? 'hello'} again`,
                });
                assert.equal(patch.status, 200, patch.text);
              }
            }
            const rows = await readRows();
            const ids = rows.map((r) => r.id);
            for (const q of queries) {
              const body: Json = {
                log_stream_id: logStreamId,
                starting_token: q.starting_token,
                limit: q.limit,
              };
              if (q.filters) body.filters = resolveIds(q.filters, ids);
              if (q.filter_tree) body.filter_tree = resolveIds(q.filter_tree, ids);
              if (q.sort) body.sort = q.sort;
              const res = await s.call('POST', `/v2/projects/${projectId}/${q.target}/search`, body);
              const fail = (why: string, extra: Json = {}) => {
                throw new Error(
                  `${why}\nrecords: ${JSON.stringify(rows.map(brief))}\nindex: ${dataset.index}, candidateCap: ${dataset.candidateCap}\n` +
                    `POST ${q.target}/search ${JSON.stringify(body)}\n→ ${res.status} ${res.text.slice(0, 2000)}\n${JSON.stringify(extra)}`,
                );
              };
              if (res.status !== 200) fail('search did not answer 200');
              let tree: FilterTree | null;
              try {
                tree = andTrees(
                  body.filters ? validateFilterList(body.filters, ['body', 'filters']) : null,
                  body.filter_tree ? validateFilterTree(body.filter_tree, ['body', 'filter_tree']) : null,
                );
              } catch (err) {
                return fail(`the evaluator could not read the request: ${(err as Error).message}`);
              }
              const sort = validateSort(body.sort, ['body', 'sort']);
              const matching = sortRecords(
                rows.filter((r) => TARGET_TYPES[q.target].includes(r.type as string) && evaluate(tree, r)),
                sort,
              );
              const expected = matching.slice(q.starting_token, q.starting_token + q.limit).map((r) => r.id);
              const actual = res.body.records.map((r: any) => r.id);
              if (JSON.stringify(actual) !== JSON.stringify(expected))
                fail('ids differ', { expected, actual, all_matching: matching.map((r) => r.id) });
              const next = q.starting_token + q.limit < matching.length ? q.starting_token + q.limit : null;
              if (res.body.next_starting_token !== next)
                fail('next_starting_token differs', { expected: next });
              compared++;
              if (expected.length) nonEmpty++;
              const candidates = rows.filter((r) => TARGET_TYPES[q.target].includes(r.type as string)).length;
              if (matching.length > 0 && matching.length < candidates) narrowed++;
            }
          },
        ),
        {
          numRuns: RUNS,
          includeErrorInReport: true,
          interruptAfterTimeLimit: 240_000,
          ...(process.env.SPANBASE_PROPERTY_SEED
            ? { seed: Number(process.env.SPANBASE_PROPERTY_SEED), path: process.env.SPANBASE_PROPERTY_PATH }
            : {}),
        },
      );
      assert.ok(compared >= RUNS * 5, `compared ${compared}`);
      t.diagnostic(
        `compared ${compared} answers; ${nonEmpty} non-empty; ${narrowed} where the filters kept some records but not all`,
      );
    });
  });
}

// ---- queue searches: fully_annotated and annotation columns inside random trees

/** The templates every queue property run annotates on (created once per store). */
const TEMPLATE_SPECS = [
  { name: 'p-thumbs', type: 'thumbs' },
  { name: 'p-stars', type: 'stars' },
  { name: 'p-cat', type: 'categorical', options: ['a', 'b', 'c'], multiple: true },
  { name: 'p-text', type: 'text' },
] as const;
const ANNOTATION_VALUES: fc.Arbitrary<unknown>[] = [
  fc.boolean(),
  fc.integer({ min: 1, max: 5 }),
  fc.subarray(['a', 'b', 'c'], { minLength: 1 }),
  fc.constantFrom('good', 'Good answer', 'bad', ''),
];
/** Users by position: 0 the admin, then annotators; position 3 never annotates (not a user). */
const USERS = 4;

const queueRunArb = fc.record({
  traces: fc.array(traceArb, { minLength: 1, maxLength: 6 }),
  /** Which records (by position) the queue holds: three in four. */
  inQueue: fc.array(
    fc.nat(3).map((n) => n > 0),
    { minLength: 30, maxLength: 30 },
  ),
  templates: fc.subarray([0, 1, 2, 3]),
  members: fc.subarray([0, 1, 2]),
  annotations: fc.array(
    fc.record({
      record: fc.nat(29),
      template: fc.nat(3),
      user: fc.nat(2),
      endUser: fc.boolean(),
      value: fc.nat(1000),
    }),
    { minLength: 5, maxLength: 60 },
  ),
});

/** `{ ref }` placeholders for annotation leaves: template by position. */
const annotationLeafArb: fc.Arbitrary<Json> = fc.oneof(
  fc.record({
    tpl: fc.constant(0),
    type: fc.constant('boolean'),
    operator: fc.constantFrom('eq', 'ne'),
    value: fc.boolean(),
  }),
  fc.record({
    tpl: fc.constant(1),
    type: fc.constant('number'),
    operator: fc.constantFrom('eq', 'ne', 'gt', 'gte', 'lt', 'lte'),
    value: fc.integer({ min: 0, max: 6 }),
  }),
  fc
    .record({
      tpl: fc.constant(2),
      type: fc.constant('collection'),
      operator: fc.constantFrom('contains', 'one_of', 'not_in', 'eq'),
      value: fc.oneof(fc.constantFrom('a', 'b', 'A'), fc.subarray(['a', 'b', 'c'])),
      case_sensitive: cs,
    })
    .filter((l) =>
      l.operator === 'contains' ? typeof l.value === 'string' : l.operator === 'eq' || Array.isArray(l.value),
    ),
  fc.record({
    tpl: fc.constant(3),
    type: fc.constant('text'),
    operator: fc.constantFrom('eq', 'ne', 'contains'),
    value: fc.constantFrom('good', 'GOOD', 'answer', ''),
    case_sensitive: cs,
  }),
);
const fullyAnnotatedArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constant({ type: 'fully_annotated' }),
  fc.constant({ type: 'fully_annotated', user_ids: null }),
  fc.record({ type: fc.constant('fully_annotated'), users: fc.subarray([0, 1, 2, 3], { minLength: 1 }) }),
);
const queueLeafArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: fullyAnnotatedArb },
  { weight: 3, arbitrary: annotationLeafArb },
  { weight: 2, arbitrary: leafArb },
);
const queueTreeArb: fc.Arbitrary<Json> = fc.letrec<{ node: Json }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: queueLeafArb.map((filter) => ({ filter })) },
    { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 3 }).map((and) => ({ and })) },
    { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 3 }).map((or) => ({ or })) },
    { weight: 1, arbitrary: tie('node').map((not) => ({ not })) },
  ),
})).node;
const queueQueryArb = fc.record({
  filters: fc.option(fc.array(queueLeafArb, { maxLength: 2 }), { nil: undefined }),
  filter_tree: fc.option(queueTreeArb, { nil: undefined }),
  sort: fc.option(
    fc.record({
      name: fc.constantFrom('created_at', 'name', 'metrics/duration_ns', '@0', '@1'),
      ascending: fc.boolean(),
    }),
    { nil: undefined },
  ),
  starting_token: fc.constantFrom(0, 0, 0, 1, 3),
  limit: fc.constantFrom(100, 100, 1, 2, 5),
});

for (const store of storesUnderTest()) {
  describe(`queue search property [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let templates: { id: string; name: string; type: TemplateType; config: TemplateConfig }[];
    /** Users by position: keys (null: not a user) and ids. */
    let users: { id: string; key: string | null }[];
    before(async () => {
      s = await startTestServer(store);
      const p = await s.call('POST', '/v2/projects', { name: `qprop-${Date.now()}` });
      projectId = p.body.id;
      const seed = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'seed' });
      await ingestTraces(s, projectId, seed.body.id, [{ name: 'seed', metrics: { latency: 1, 'a/b': 1 } }]);
      templates = [];
      for (const spec of TEMPLATE_SPECS) {
        const r = await s.call('POST', `/v2/projects/${projectId}/annotation_templates`, spec);
        assert.equal(r.status, 200, r.text);
        templates.push({
          id: r.body.id,
          name: r.body.name,
          type: r.body.type,
          config: spec as TemplateConfig,
        });
      }
      users = [{ id: s.adminId, key: s.adminKey }];
      for (let i = 1; i < USERS - 1; i++) {
        const u = await s.user();
        // Editors: they also send end users' feedback.
        await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: u.id, role: 'editor' });
        users.push({ id: u.id, key: u.key });
      }
      users.push({ id: crypto.randomUUID(), key: null });
    });
    after(() => s.close());

    test('queue searches equal the evaluator, fully_annotated and annotation columns included', async (t) => {
      const st = s.running.services.store;
      const columns = new Map(templates.map((tpl) => [`annotation/${tpl.id}`, annotationColumn(tpl)]));
      let compared = 0;
      let nonEmpty = 0;
      let narrowed = 0;
      await fc.assert(
        fc.asyncProperty(
          queueRunArb,
          fc.array(queueQueryArb, { minLength: 5, maxLength: 15 }),
          async (run, queries) => {
            const ls = await s.call('POST', `/v2/projects/${projectId}/log_streams`, {
              name: `qrun-${++runCounter}-${Math.random()}`,
            });
            const logStreamId = ls.body.id as string;
            await ingestTraces(
              s,
              projectId,
              logStreamId,
              run.traces.map(({ session: _session, ...trace }) => trace),
            );
            const all = await st.db
              .selectFrom('records')
              .selectAll()
              .where('run_id', '=', logStreamId)
              .orderBy('id')
              .execute();
            const queued = all.filter((_, i) => run.inQueue[i % run.inQueue.length]);
            const queue = await s.call('POST', `/v2/projects/${projectId}/annotation_queues`, {
              name: `q-${runCounter}`,
              template_ids: run.templates.map((i) => templates[i].id),
              user_ids: run.members.map((i) => users[i].id),
            });
            assert.equal(queue.status, 200, queue.text);
            const queueId = queue.body.id as string;
            if (queued.length) {
              const r = await s.call(
                'POST',
                `/v2/projects/${projectId}/annotation_queues/${queueId}/records`,
                {
                  record_ids: queued.map((r) => r.id),
                },
              );
              assert.equal(r.status, 200, r.text);
            }
            // Annotations on any record of the run (in the queue or not), by reviewers and end users.
            for (const a of run.annotations) {
              const rec = all[a.record % all.length];
              const tpl = templates[a.template];
              const value = fc.sample(ANNOTATION_VALUES[a.template], { numRuns: 1, seed: a.value })[0];
              const body = a.endUser
                ? { value, source: 'end_user', external_user_id: `eu-${a.user}` }
                : { value };
              const r = await s.call(
                'PUT',
                `/v2/projects/${projectId}/records/${rec.id}/annotations/${tpl.id}`,
                body,
                users[a.user].key!,
              );
              assert.equal(r.status, 200, r.text);
            }
            const annotations = await st.db
              .selectFrom('annotations')
              .selectAll()
              .where(
                'record_id',
                'in',
                all.map((r) => r.id),
              )
              .execute();
            const rows = queued.map((row) => ({
              ...toEval(row as any),
              annotations: annotations
                .filter((a) => a.record_id === row.id)
                .map((a) => ({
                  ...a,
                  num_value: a.num_value === null ? null : Number(a.num_value),
                  items: parseJson<string[]>(a.items),
                })),
            }));
            const ids = all.map((r) => r.id);
            const resolve = (node: unknown): unknown => {
              if (Array.isArray(node)) return node.map(resolve);
              if (node === null || typeof node !== 'object') return node;
              const o = node as Json;
              if ('tpl' in o) {
                const { tpl, ...rest } = o;
                return { ...rest, column_id: `annotation/${templates[tpl as number].id}` };
              }
              if ('users' in o) {
                const { users: at, ...rest } = o;
                return { ...rest, user_ids: (at as number[]).map((i) => users[i].id) };
              }
              return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolve(v)]));
            };
            const ctx = {
              annotations: columns,
              queue: {
                templateIds: run.templates.map((i) => templates[i].id),
                memberIds: run.members.map((i) => users[i].id),
              },
            };
            for (const q of queries) {
              const body: Json = { starting_token: q.starting_token, limit: q.limit };
              if (q.filters) body.filters = resolve(resolveIds(q.filters, ids));
              if (q.filter_tree) body.filter_tree = resolve(resolveIds(q.filter_tree, ids));
              if (q.sort)
                body.sort = {
                  ...q.sort,
                  name: q.sort.name.startsWith('@')
                    ? `annotation/${templates[Number(q.sort.name.slice(1))].id}`
                    : q.sort.name,
                };
              const res = await s.call(
                'POST',
                `/v2/projects/${projectId}/annotation_queues/${queueId}/records/search`,
                body,
              );
              const fail = (why: string, extra: Json = {}) => {
                throw new Error(
                  `${why}\nrecords: ${JSON.stringify(rows.map(brief))}\nqueue: ${JSON.stringify(ctx.queue)}\n` +
                    `POST queue search ${JSON.stringify(body)}\n→ ${res.status} ${res.text.slice(0, 2000)}\n${JSON.stringify(extra)}`,
                );
              };
              if (res.status !== 200) fail('search did not answer 200');
              let tree: FilterTree | null;
              try {
                tree = andTrees(
                  body.filters ? validateFilterList(body.filters, ['body', 'filters'], ctx) : null,
                  body.filter_tree
                    ? validateFilterTree(body.filter_tree, ['body', 'filter_tree'], ctx)
                    : null,
                );
              } catch (err) {
                return fail(`the evaluator could not read the request: ${(err as Error).message}`);
              }
              const sort = validateSort(body.sort, ['body', 'sort'], ctx);
              const matching = sortRecords(
                rows.filter((r) => evaluate(tree, r)),
                sort,
              );
              const expected = matching.slice(q.starting_token, q.starting_token + q.limit).map((r) => r.id);
              const actual = res.body.records.map((r: any) => r.id);
              if (JSON.stringify(actual) !== JSON.stringify(expected))
                fail('ids differ', { expected, actual, all_matching: matching.map((r) => r.id) });
              compared++;
              if (expected.length) nonEmpty++;
              if (matching.length > 0 && matching.length < rows.length) narrowed++;
            }
          },
        ),
        {
          numRuns: Math.max(10, Math.round(RUNS / 5)),
          includeErrorInReport: true,
          interruptAfterTimeLimit: 180_000,
          ...(process.env.SPANBASE_PROPERTY_SEED
            ? { seed: Number(process.env.SPANBASE_PROPERTY_SEED), path: process.env.SPANBASE_PROPERTY_PATH }
            : {}),
        },
      );
      assert.ok(compared >= 30, `compared ${compared}`);
      t.diagnostic(
        `queue searches: compared ${compared} answers; ${nonEmpty} non-empty; ${narrowed} where the filters kept some records but not all`,
      );
    });
  });
}
