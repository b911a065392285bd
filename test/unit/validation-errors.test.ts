/**
 * The 422 items of a body with union faults: one item per failed union, described by its own
 * branch's fault, and a body with thousands of faults answered at once (the fuzz test once found a
 * 20-filter body with 1,000 values each that took minutes).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { checkBody } from '../../src/http/validation.ts';

const Filter = Type.Union([
  Type.Object({ name: Type.Literal('name'), value: Type.String() }),
  Type.Object({ name: Type.Literal('id'), value: Type.Array(Type.String(), { maxItems: 1000 }) }),
]);
const Body = Type.Object({ filters: Type.Array(Filter, { maxItems: 20 }) });

function errorsOf(value: unknown): any[] {
  try {
    checkBody(Body, value);
  } catch (err) {
    return (err as { items?: any[]; detail?: any[] }).items ?? (err as any).detail;
  }
  assert.fail('the body was accepted');
}

test('each failed union in an array is one item at its own index', () => {
  const items = errorsOf({
    filters: [{ name: 'name', value: 'ok' }, { name: 'id', value: 3 }, { name: 'x' }],
  });
  assert.deepEqual(
    items.map((i) => i.loc),
    [
      ['body', 'filters', 1],
      ['body', 'filters', 2],
    ],
  );
});

test('thousands of faults inside unions are reported without quadratic work', () => {
  const filters = Array.from({ length: 21 }, () => ({
    name: 'id',
    value: Array.from({ length: 1001 }, () => 7),
  }));
  const started = performance.now();
  const items = errorsOf({ filters });
  const ms = performance.now() - started;
  assert.ok(items.length >= 1);
  assert.ok(ms < 5000, `took ${ms.toFixed(0)} ms`);
});
