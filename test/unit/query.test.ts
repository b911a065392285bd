import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lookupColumn } from '../../src/query/columns.ts';
import { compileFilterTree, compileSort } from '../../src/query/compile.ts';
import { type EvalRecord, evaluate, sortRecords } from '../../src/query/evaluate.ts';
import {
  MAX_DEPTH,
  andTrees,
  columnLeaves,
  unknownMetricFaults,
  validateFilterList,
  validateFilterTree,
} from '../../src/query/filters.ts';
import { validateSort } from '../../src/query/sorts.ts';
import { ValidationError } from '../../src/domain/errors.ts';
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  DummyDriver,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';

const faultsOf = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof ValidationError, String(err));
    return err.items;
  }
  assert.fail('expected a ValidationError');
};

function dbFor(dialect: 'sqlite' | 'postgres') {
  return new Kysely<any>({
    dialect: {
      createAdapter: () => (dialect === 'sqlite' ? new SqliteAdapter() : new PostgresAdapter()),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) =>
        dialect === 'sqlite' ? new SqliteIntrospector(db) : new PostgresIntrospector(db),
      createQueryCompiler: () =>
        dialect === 'sqlite' ? new SqliteQueryCompiler() : new PostgresQueryCompiler(),
    },
  });
}

describe('column registry', () => {
  test('standard columns, namespaced keys with any characters, unknowns', () => {
    assert.equal(lookupColumn('input').ok, true);
    const m = lookupColumn('metrics/duration_ns');
    assert.ok(m.ok && m.column.source.kind === 'scalar' && !m.needsCatalogue);
    const k = lookupColumn('user_metadata/a/b"c');
    assert.ok(
      k.ok && k.column.source.kind === 'json' && k.column.source.key === 'a/b"c' && !k.needsCatalogue,
    );
    const x = lookupColumn('metrics/custom');
    assert.ok(x.ok && x.needsCatalogue);
    for (const bad of ['nope', 'user_metadata/', 'other/x', '/x', ''])
      assert.equal(lookupColumn(bad).ok, false, bad);
  });
});

describe('filter validation', () => {
  test('locs point at the fault inside trees', () => {
    const items = faultsOf(() =>
      validateFilterTree(
        {
          or: [
            { filter: { column_id: 'name', operator: 'eq', value: 'x' } },
            { not: { filter: { column_id: 'name', operator: 'zz', value: 'x' } } },
          ],
        },
        ['body', 'filter_tree'],
      ),
    );
    assert.deepEqual(items[0].loc, ['body', 'filter_tree', 'or', 1, 'not', 'filter', 'operator']);
    assert.equal(items[0].type, 'enum');
  });

  test('depth limit', () => {
    let t: any = { filter: { column_id: 'name', operator: 'eq', value: 'x' } };
    for (let i = 0; i < MAX_DEPTH; i++) t = { and: [t] };
    validateFilterTree(t, ['x']);
    const items = faultsOf(() => validateFilterTree({ not: t }, ['x']));
    assert.equal(items[0].type, 'value_error');
    // The 17th and/or/not on the path is the fault: ['x', 'not'] then 15 × ['and', 0].
    assert.equal(items[0].loc.length, 2 + 2 * (MAX_DEPTH - 1));
  });

  test('kinds inferred from the column; defaults', () => {
    const tree = validateFilterList(
      [
        { column_id: 'id', value: 'a' },
        { column_id: 'is_complete', value: true },
        { name: 'tags', operator: 'contains', value: 'x' },
      ],
      ['body', 'filters'],
    );
    const leaves = columnLeaves(tree).map((l) => [l.filter.kind, l.filter.operator]);
    assert.deepEqual(leaves, [
      ['id', 'eq'],
      ['boolean', 'eq'],
      ['collection', 'contains'],
    ]);
  });

  test('unknown metrics need the catalogue', () => {
    const tree = validateFilterList([{ column_id: 'metrics/x', operator: 'gt', value: 1 }], ['f']);
    assert.equal(unknownMetricFaults(tree, new Set())[0].loc.join('.'), 'f.0.column_id');
    assert.equal(unknownMetricFaults(tree, new Set(['metrics/x'])).length, 0);
  });

  test('sorts', () => {
    assert.equal(validateSort(null, ['s']), null);
    const s = validateSort({ column_id: 'updated_at' }, ['s']);
    assert.equal(s?.ascending, true);
    assert.equal(faultsOf(() => validateSort({ name: 'tags' }, ['s']))[0].loc.join('.'), 's.name');
  });
});

describe('compiled SQL', () => {
  test('keys and values are parameters, never spliced', () => {
    const key = "x'); drop table records; --";
    const tree = validateFilterList(
      [
        { column_id: `user_metadata/${key}`, operator: 'eq', value: "o'brien", type: 'text' },
        { column_id: 'name', operator: 'one_of', value: ["a'b", 'c'] },
      ],
      ['f'],
    );
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const db = dbFor(dialect);
      const q = db.selectFrom('records').selectAll().where(compileFilterTree(tree, { dialect }));
      const sort = validateSort({ name: `user_metadata/${key}` }, ['s']);
      let qq = q;
      for (const o of compileSort(sort, { dialect })) qq = qq.orderBy(o.expr as any, o.direction);
      const c = qq.compile();
      assert.ok(!c.sql.includes('drop table'), c.sql);
      assert.ok(!c.sql.includes("o'brien"), c.sql);
      assert.ok(c.parameters.some((p) => String(p).includes('drop table')));
    }
  });
});

describe('evaluator', () => {
  const rec = (over: Partial<EvalRecord>): EvalRecord => ({ id: 'x', created_at: 0, ...over }) as EvalRecord;
  test('missing values: positive false, ne and not_in true, also under not', () => {
    const tree = (op: string, value: unknown) =>
      validateFilterTree({ filter: { column_id: 'user_metadata/k', operator: op, value, type: 'text' } }, [
        't',
      ]);
    const r = rec({ user_metadata: {} });
    assert.equal(evaluate(tree('eq', 'a'), r), false);
    assert.equal(evaluate(tree('ne', 'a'), r), true);
    assert.equal(evaluate(tree('not_in', ['a']), r), true);
    assert.equal(evaluate({ op: 'not', child: tree('eq', 'a') }, r), true);
    assert.equal(evaluate(andTrees(), r), true);
  });

  test('sort: missing last both ways, ties by id in the same direction', () => {
    const rows = [
      rec({ id: 'b', duration_ns: 5 }),
      rec({ id: 'a', duration_ns: 5 }),
      rec({ id: 'c', duration_ns: null }),
      rec({ id: 'd', duration_ns: 1 }),
    ];
    const s = (ascending: boolean) =>
      sortRecords(rows, validateSort({ name: 'metrics/duration_ns', ascending }, ['s'])).map((r) => r.id);
    assert.deepEqual(s(true), ['d', 'a', 'b', 'c']);
    assert.deepEqual(s(false), ['b', 'a', 'd', 'c']);
  });
});
