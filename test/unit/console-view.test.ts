/**
 * The console's pure pieces: a record list's view ↔ its URL and the search it sends
 * (web/src/lib/list-view.ts), the span tree's rows and time line (span-tree.ts), and how input and
 * output are shown (messages.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { TreeRecord } from '../../web/src/lib/api-types.ts';
import {
  type ListView,
  RELATIVE_RANGES,
  emptyView,
  parseView,
  quickSearchTree,
  searchBody,
  viewToParams,
} from '../../web/src/lib/list-view.ts';
import { classify, preview } from '../../web/src/lib/messages.ts';
import { ancestorsOf, indexTree, timelineOf, visibleRows } from '../../web/src/lib/span-tree.ts';

/** Plain objects, as parseView makes them (deepEqual compares prototypes). */
const PLAIN = { noNullPrototype: true };

const viewArb: fc.Arbitrary<ListView> = fc.record(
  {
    filter: fc.option(
      fc.constantFrom(
        {
          filter: {
            column_id: 'name',
            type: 'text' as const,
            operator: 'eq',
            value: 'a&b=c',
            case_sensitive: true,
          },
        },
        {
          or: [
            {
              not: {
                filter: { column_id: 'is_complete', type: 'boolean' as const, operator: 'eq', value: true },
              },
            },
          ],
        },
      ),
      { nil: null },
    ),
    q: fc.string({ maxLength: 10 }),
    sort: fc.option(
      fc.record(
        {
          name: fc.constantFrom('name', 'user_metadata/a:b', 'metrics/duration_ns'),
          ascending: fc.boolean(),
        },
        PLAIN,
      ),
      { nil: null },
    ),
    columns: fc.option(
      fc.array(fc.constantFrom('name', 'input', 'metrics/duration_ns'), { minLength: 1, maxLength: 3 }),
      {
        nil: null,
      },
    ),
    range: fc.oneof(
      fc.constant({ kind: 'all' as const }),
      fc.constantFrom(...Object.keys(RELATIVE_RANGES)).map((last) => ({ kind: 'relative' as const, last })),
      fc.record(
        {
          kind: fc.constant('absolute' as const),
          from: fc.option(fc.constant('2026-01-01T00:00:00.000Z'), { nil: null }),
          to: fc.constant('2026-02-01T00:00:00.000Z'),
        },
        PLAIN,
      ),
    ),
    start: fc.nat({ max: 5000 }),
    limit: fc.constantFrom(25, 50, 100, 200),
  },
  PLAIN,
);

describe('console list view', () => {
  test('a view survives its URL (what a copied link rebuilds)', () => {
    fc.assert(
      fc.property(viewArb, (view) => {
        const url = `?${viewToParams(view).toString()}`;
        assert.deepEqual(parseView(new URLSearchParams(url)), view);
      }),
      { numRuns: 300 },
    );
  });

  test('a plain view has a plain URL; junk in the URL falls back to defaults', () => {
    assert.equal(viewToParams(emptyView()).toString(), '');
    assert.deepEqual(
      parseView(new URLSearchParams('filter=%7Bnope&start=-4&limit=abc&last=9y')),
      emptyView(),
    );
  });

  test('the search body: run, tree with the quick search, time bounds, sort, page, counts', () => {
    const view: ListView = {
      ...emptyView(),
      filter: {
        filter: { column_id: 'name', type: 'text', operator: 'eq', value: 'x', case_sensitive: true },
      },
      q: 'refund',
      sort: { name: 'created_at', ascending: true },
      range: { kind: 'relative', last: '1h' },
      start: 100,
      limit: 25,
    };
    const now = Date.UTC(2026, 0, 1, 12);
    assert.deepEqual(searchBody(view, { log_stream_id: 'ls' }, ['name', 'num_spans'], now), {
      log_stream_id: 'ls',
      filter_tree: { and: [view.filter, quickSearchTree('refund')] },
      filters: [
        { column_id: 'created_at', type: 'date', operator: 'gte', value: '2026-01-01T11:00:00.000Z' },
      ],
      sort: { name: 'created_at', ascending: true },
      pagination: { starting_token: 100, limit: 25 },
      include_counts: true,
    });
    assert.deepEqual(searchBody(emptyView(), { experiment_id: 'ex' }, ['name'], now), {
      experiment_id: 'ex',
      pagination: { starting_token: 0, limit: 50 },
    });
  });
});

function record(id: string, parent: string | null, at: number, durationMs: number, spans: TreeRecord[] = []) {
  return {
    id,
    parent_id: parent,
    type: parent ? 'llm' : 'trace',
    name: id,
    created_at: new Date(at).toISOString(),
    metrics: { duration_ns: durationMs * 1e6 },
    spans,
  } as unknown as TreeRecord;
}

describe('console span tree', () => {
  const t0 = Date.UTC(2026, 0, 1);
  const tree = record('t', null, t0, 100, [
    record('a', 't', t0 + 10, 50, [record('a1', 'a', t0 + 20, 10)]),
    record('b', 't', t0 + 70, 60),
  ]);

  test('rows come depth first with their place on the time line; collapsed children are left out', () => {
    const timeline = timelineOf(tree);
    assert.deepEqual(timeline, { startMs: t0, totalMs: 130 });
    const rows = visibleRows(tree, new Set(), timeline);
    assert.deepEqual(
      rows.map((r) => [r.record.id, r.depth, r.childCount, r.offsetMs, r.durationMs]),
      [
        ['t', 0, 2, 0, 100],
        ['a', 1, 1, 10, 50],
        ['a1', 2, 0, 20, 10],
        ['b', 1, 0, 70, 60],
      ],
    );
    assert.deepEqual(
      visibleRows(tree, new Set(['a']), timeline).map((r) => r.record.id),
      ['t', 'a', 'b'],
    );
  });

  test('ancestors of a deep span, and a 5,000-deep chain without recursion', () => {
    assert.deepEqual(ancestorsOf(indexTree(tree), 'a1'), ['a', 't']);
    let deep = record('s4999', 's4998', t0, 1);
    for (let i = 4998; i >= 0; i--) deep = record(`s${i}`, i ? `s${i - 1}` : null, t0, 1, [deep]);
    const rows = visibleRows(deep, new Set(), timelineOf(deep));
    assert.equal(rows.length, 5000);
    assert.equal(rows[4999].depth, 4999);
  });
});

describe('console input and output', () => {
  test('messages, documents, text and JSON are told apart', () => {
    assert.equal(classify([{ role: 'user', content: 'hi' }]).kind, 'messages');
    assert.equal(classify({ role: 'assistant', content: null, tool_calls: [{ id: 'c' }] }).kind, 'messages');
    assert.equal(classify([{ content: 'doc', metadata: { a: 1 } }]).kind, 'documents');
    assert.equal(classify([{ page_content: 'doc' }]).kind, 'documents');
    assert.equal(classify('plain').kind, 'text');
    assert.equal(classify({ any: 'thing' }).kind, 'json');
    assert.equal(classify([{ role: 5 }]).kind, 'json');
    assert.equal(classify(null).kind, 'empty');
  });

  test('a preview is one line from the last message, cut to length', () => {
    assert.equal(
      preview([
        { role: 'user', content: 'a\n\nb' },
        { role: 'assistant', content: 'answer  here' },
      ]),
      'answer here',
    );
    assert.equal(
      preview({
        role: 'assistant',
        content: null,
        tool_calls: [{ function: { name: 'f', arguments: '{}' } }],
      }),
      'f({})',
    );
    assert.equal(preview('x'.repeat(300), 10), `${'x'.repeat(9)}…`);
    const llmInput = [
      { role: 'user', content: 'where is it?' },
      { role: 'tool', content: '{"status":"shipped"}' },
    ];
    assert.equal(preview(llmInput, 50, 'user'), 'where is it?');
    assert.equal(preview(llmInput, 50), '{"status":"shipped"}');
  });
});
