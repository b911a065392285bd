/**
 * Cost in the console (web/src/lib/format.ts, cells.ts): dollars written for people, small amounts
 * with their significant digits, and "—" for a record whose model has no price (never $0).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Column } from '../../web/src/lib/api-types.ts';
import { cellText, columnTitle } from '../../web/src/lib/cells.ts';
import { costOf, formatCost } from '../../web/src/lib/format.ts';

test('formatCost: cents from a dollar up, three significant digits below, never fewer than two decimals', () => {
  const cases: [unknown, string][] = [
    [0.000123456, '$0.000123'],
    [0.0045, '$0.0045'],
    [0.0101, '$0.0101'],
    [0.1, '$0.10'],
    [0.5, '$0.50'],
    [0.999999, '$1.00'],
    [1, '$1.00'],
    [1.005, '$1.01'],
    [12_345.678, '$12,345.68'],
    [0, '$0.00'],
    [1e-9, '$0.000000001'],
  ];
  for (const [usd, want] of cases) assert.equal(formatCost(usd), want, String(usd));
});

test('formatCost: no cost is "—", not $0', () => {
  for (const none of [undefined, null, Number.NaN, Number.POSITIVE_INFINITY, '0.1'])
    assert.equal(formatCost(none), '—', String(none));
  assert.equal(costOf(undefined), null);
  assert.equal(costOf({ num_input_tokens: 10 }), null);
  assert.equal(costOf({ cost: 0 }), 0);
});

test('the metrics/cost column reads as dollars, its header without the unit', () => {
  const column = { id: 'metrics/cost', label: 'Cost (USD)', data_type: 'floating_point' } as Column;
  assert.equal(cellText(0.00042, 'metrics/cost', column), '$0.00042');
  assert.equal(cellText(undefined, 'metrics/cost', column), '—');
  assert.equal(columnTitle(column, 'metrics/cost'), 'Cost');
  // Other float metrics keep their number.
  assert.equal(cellText(0.5, 'metrics/score', { ...column, id: 'metrics/score', label: 'score' }), '0.5');
});
