/**
 * Cost in the console (web/src/lib/format.ts, cells.ts): dollars written for people, small amounts
 * with their significant digits, and "—" for a record whose model has no price (never $0).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Column } from '../../web/src/lib/api-types.ts';
import { cellText, columnTitle } from '../../web/src/lib/cells.ts';
import { compactCounts, formatTicks, formatValue } from '../../web/src/lib/dashboard-view.ts';
import { costOf, formatCost, formatCostTicks } from '../../web/src/lib/format.ts';

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

test('one money formatter: a widget summing metrics/cost shows $0.00021, not $0', () => {
  assert.equal(formatValue('metrics/cost', 'Sum', 0.00021), '$0.00021');
  assert.equal(formatValue('metrics/cost', 'Average', 12.5), '$12.50');
  assert.equal(formatValue('metrics/cost', 'Count', 3), '3');
});

test('cost axis ticks stay distinct, with one number of decimals', () => {
  assert.deepEqual(formatCostTicks([0, 0.00005, 0.0001, 0.00015]), [
    '$0.00000',
    '$0.00005',
    '$0.00010',
    '$0.00015',
  ]);
  assert.deepEqual(formatCostTicks([0, 0.5, 1, 1.5]), ['$0.00', '$0.50', '$1.00', '$1.50']);
  assert.deepEqual(formatCostTicks([0, 1000, 2000]), ['$0.00', '$1,000.00', '$2,000.00']);
  assert.deepEqual(formatTicks('metrics/cost', 'Sum', [0.0001, 0.00012]), ['$0.00010', '$0.00012']);
  // Other axes too: 1.5K and 1.55K, not 1.5K twice.
  assert.deepEqual(compactCounts([1500, 1550, 1600]), ['1.5K', '1.55K', '1.6K']);
  assert.deepEqual(formatTicks('duration_ns', 'Average', [1e6, 2e6]), ['1 ms', '2 ms']);
});

test("a scorer's column (metrics/<name>) shows its value with three decimals at most", () => {
  const column = {
    id: 'metrics/right_city',
    label: 'right_city',
    data_type: 'floating_point',
    scorer_id: '0d8a5f5e-8d3b-4a31-9a55-0f6e1f0b6c11',
  } as Column;
  assert.equal(cellText(2 / 3, 'metrics/right_city', column), '0.667');
  assert.equal(cellText(0.5, 'metrics/right_city', column), '0.5');
  assert.equal(cellText(1, 'metrics/right_city', column), '1');
  assert.equal(cellText(0, 'metrics/right_city', column), '0');
  assert.equal(cellText(undefined, 'metrics/right_city', column), '');
  // Other float columns keep their digits.
  const plain = { id: 'metrics/x', label: 'x', data_type: 'floating_point' } as Column;
  assert.equal(cellText(2 / 3, 'metrics/x', plain), String(2 / 3));
});
