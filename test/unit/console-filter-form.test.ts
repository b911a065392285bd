/**
 * The console's filter builder model (web/src/lib/filter-form.ts): every filter tree the builder
 * makes survives tree → form → tree unchanged, forms survive form → tree → form, edits keep the tree
 * valid, and inputs that do not parse are reported instead of sent.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { OPERATORS } from '../../src/query/filter-kinds.ts';
import { validateFilterTree } from '../../src/query/filters.ts';
import {
  type FilterJson,
  type FilterTreeJson,
  type FormNode,
  UnsupportedFilter,
  addNode,
  countConditions,
  formToTree,
  newCondition,
  removeNode,
  toggleNot,
  treeToForm,
  withOperator,
  withType,
} from '../../web/src/lib/filter-form.ts';

const text = fc.string({ maxLength: 12 });
const number = fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n));
const date = fc
  .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
  .map((d) => d.toISOString());
const list = fc.array(text, { minLength: 1, maxLength: 4 });
/** Columns of each kind (a filter must fit its column, or the API refuses it). */
const COLUMNS = {
  text: ['name', 'input', 'output', 'user_metadata/customer'],
  id: ['id', 'trace_id', 'session_id'],
  collection: ['tags'],
  number: ['metrics/duration_ns', 'status_code', 'metrics/num_total_tokens'],
  date: ['created_at', 'updated_at'],
  boolean: ['is_complete'],
} as const;
const columnOf = (type: keyof typeof COLUMNS) => fc.constantFrom(...COLUMNS[type]);

/** A filter exactly as the builder writes one (type, operator and case_sensitive always present). */
const filterArb: fc.Arbitrary<FilterJson> = fc.oneof(
  ...(['text', 'id', 'collection'] as const).map((type) =>
    fc
      .record({
        column_id: columnOf(type),
        operator: fc.constantFrom(...OPERATORS[type]),
        cs: fc.boolean(),
        one: text,
        many: list,
      })
      .map(({ column_id, operator, cs, one, many }) => ({
        column_id,
        type,
        operator,
        value: operator === 'one_of' || operator === 'not_in' ? many : one,
        ...(type === 'id' ? {} : { case_sensitive: cs }),
      })),
  ),
  fc
    .record({
      column_id: columnOf('number'),
      operator: fc.constantFrom(...OPERATORS.number),
      a: number,
      b: number,
    })
    .map(({ column_id, operator, a, b }) => {
      // Durations are whole nanoseconds (the builder takes them in milliseconds).
      const fit = (n: number) => (column_id === 'metrics/duration_ns' ? Math.round(Math.abs(n) % 1e15) : n);
      return {
        column_id,
        type: 'number' as const,
        operator,
        value:
          operator === 'between' ? [fit(Math.min(a, b)), fit(Math.max(a, b))].sort((x, y) => x - y) : fit(a),
      };
    }),
  fc
    .record({ column_id: columnOf('date'), operator: fc.constantFrom(...OPERATORS.date), value: date })
    .map((f) => ({ ...f, type: 'date' as const })),
  fc
    .record({
      column_id: columnOf('boolean'),
      operator: fc.constantFrom(...OPERATORS.boolean),
      value: fc.boolean(),
    })
    .map((f) => ({ ...f, type: 'boolean' as const })),
  fc
    .option(fc.array(fc.uuid(), { minLength: 1, maxLength: 3 }), { nil: undefined })
    .map((user_ids) => ({ type: 'fully_annotated' as const, ...(user_ids ? { user_ids } : {}) })),
);

const treeArb: fc.Arbitrary<FilterTreeJson> = fc.letrec<{ tree: FilterTreeJson }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    filterArb.map((filter) => ({ filter })),
    fc.array(tie('tree'), { maxLength: 3 }).map((and) => ({ and })),
    fc.array(tie('tree'), { maxLength: 3 }).map((or) => ({ or })),
    tie('tree').map((not) => ({ not })),
  ),
})).tree;

/** The form without its generated ids (they differ between two conversions of one tree). */
function shape(node: FormNode): unknown {
  const { id: _id, ...rest } = node as FormNode & Record<string, unknown>;
  if (node.kind === 'group') return { ...rest, children: node.children.map(shape) };
  if (node.kind === 'not') return { ...rest, child: shape(node.child) };
  return rest;
}

describe('console filter builder: tree ↔ form', () => {
  test('tree → form → tree gives back the same tree, for every kind, operator and nesting', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        const out = formToTree(treeToForm(tree));
        assert.deepEqual(out.problems, []);
        assert.deepEqual(out.tree, tree);
      }),
      { numRuns: 500 },
    );
  });

  test('form → tree → form gives back the same form', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        const form = treeToForm(tree);
        assert.deepEqual(shape(treeToForm(formToTree(form).tree)), shape(form));
      }),
      { numRuns: 300 },
    );
  });

  test('the trees the builder makes are ones the search API accepts', () => {
    fc.assert(
      fc.property(treeArb, (tree) => {
        // fully_annotated is only for annotation queues: the API refuses it in a record search, as it should.
        if (JSON.stringify(tree).includes('fully_annotated')) return;
        assert.doesNotThrow(() =>
          validateFilterTree(formToTree(treeToForm(tree)).tree, ['body', 'filter_tree']),
        );
      }),
      { numRuns: 300 },
    );
  });

  test('a filter without type or operator takes the column kind and the default operator', () => {
    const form = treeToForm({ filter: { column_id: 'id', value: 'abc' } }, () => 'id');
    assert.deepEqual(formToTree(form).tree, {
      filter: { column_id: 'id', type: 'id', operator: 'eq', value: 'abc' },
    });
    const named = treeToForm({ filter: { name: 'is_complete', value: true } }, () => 'boolean');
    assert.deepEqual(formToTree(named).tree, {
      filter: { column_id: 'is_complete', type: 'boolean', operator: 'eq', value: true },
    });
  });

  test('shapes the builder cannot show are refused, for the JSON editor to take', () => {
    const bad: FilterTreeJson[] = [
      { filter: { column_id: 'tags', type: 'collection', operator: 'eq', value: ['a', 'b'] } },
      { filter: { column_id: 'name', type: 'text', operator: 'gt', value: 'a' } },
      { filter: { column_id: 'metrics/duration_ns', type: 'number', operator: 'eq', value: '5' } },
      { and: 'nope' } as unknown as FilterTreeJson,
      { xor: [] } as unknown as FilterTreeJson,
    ];
    for (const tree of bad) assert.throws(() => treeToForm(tree), UnsupportedFilter, JSON.stringify(tree));
  });

  test('inputs that do not parse are reported by condition, not sent', () => {
    const n = withOperator(newCondition('metrics/duration_ns', 'number'), 'between');
    const bad = { ...n, values: ['12', 'lots'] };
    assert.deepEqual(formToTree(bad).problems, [{ id: n.id, message: "'lots' is not a number" }]);
    const reversed = { ...n, values: ['5', '1'] };
    assert.equal(formToTree(reversed).problems[0].message, 'The range must go from low to high');
    const d = { ...newCondition('created_at', 'date'), values: ['yesterday-ish'] };
    assert.equal(formToTree(d).problems[0].message, 'Enter a date and time');
    const l = withOperator(newCondition('name', 'text'), 'one_of');
    assert.equal(formToTree(l).problems[0].message, 'Add at least one value');
    const noColumn = { ...newCondition('', 'text'), values: ['x'] };
    assert.equal(formToTree(noColumn).problems[0].message, 'Choose a column');
  });

  test('durations are typed in milliseconds (as shown) and sent in whole nanoseconds', () => {
    const c = { ...newCondition('metrics/duration_ns', 'number'), operator: 'gt', values: ['250'] };
    assert.deepEqual(formToTree(c).tree, {
      filter: { column_id: 'metrics/duration_ns', type: 'number', operator: 'gt', value: 250_000_000 },
    });
    const back = treeToForm({
      filter: {
        column_id: 'metrics/duration_ns',
        type: 'number',
        operator: 'between',
        value: [1_500_000, 2e9],
      },
    });
    assert.deepEqual((back as { values: string[] }).values, ['1.5', '2000']);
    // Other numbers keep their unit.
    const tokens = { ...newCondition('metrics/num_total_tokens', 'number'), operator: 'gt', values: ['250'] };
    assert.equal((formToTree(tokens).tree as { filter: { value: number } }).filter.value, 250);
  });

  test('a new text condition does not match case (as a search box)', () => {
    assert.equal(newCondition('name', 'text').caseSensitive, false);
    const tree = formToTree({ ...newCondition('name', 'text'), values: ['Refund'] }).tree;
    assert.equal((tree as { filter: FilterJson }).filter.case_sensitive, false);
  });

  test('changing the kind or operator keeps the values that still fit', () => {
    const c = { ...newCondition('name', 'text'), values: ['refund'] };
    assert.deepEqual(withOperator(c, 'one_of').values, ['refund']);
    assert.deepEqual(withOperator(withOperator(c, 'one_of'), 'eq').values, ['refund']);
    const asId = withType(c, 'id');
    assert.equal(asId.operator, 'contains', 'contains is an id operator too');
    const asBool = withType(c, 'boolean');
    assert.deepEqual([asBool.operator, asBool.values], ['eq', ['true']]);
    const asNumber = withType(c, 'number');
    assert.equal(asNumber.operator, 'gte');
  });

  test('edits: add beside a single condition, NOT wraps and unwraps, removing empties the filter', () => {
    const a = { ...newCondition('name', 'text'), values: ['a'] };
    const b = { ...newCondition('input', 'text'), values: ['b'] };
    let root = addNode(null, null, a);
    assert.equal(root, a);
    root = addNode(root, null, b);
    assert.equal(root.kind, 'group');
    assert.equal(countConditions(root), 2);
    root = toggleNot(root, a.id);
    assert.deepEqual(formToTree(root).tree, {
      and: [{ not: formToTree(a).tree }, formToTree(b).tree],
    });
    const notId = root.kind === 'group' ? root.children[0].id : '';
    root = toggleNot(root, notId);
    assert.deepEqual(formToTree(root).tree, { and: [formToTree(a).tree, formToTree(b).tree] });
    const inner = { ...newCondition('output', 'text'), values: ['c'] };
    root = addNode(root, root.id, { kind: 'group', id: 'g2', op: 'or', children: [inner] });
    assert.equal(countConditions(root), 3);
    root = removeNode(root, inner.id)!;
    assert.deepEqual(formToTree(root).tree, { and: [formToTree(a).tree, formToTree(b).tree, { or: [] }] });
    assert.equal(removeNode(root, root.id), null);
  });
});
