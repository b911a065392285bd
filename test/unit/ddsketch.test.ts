import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { percentileIndex } from '../../src/domain/dashboards.ts';
import { addValue, emptySketch, quantile, sketchCount } from '../../src/domain/ddsketch.ts';
import { mergeData, recordPart, rollupMergeText } from '../../src/domain/rollups.ts';

const value = fc.oneof(
  fc.double({ min: -1e12, max: 1e12, noNaN: true }),
  fc.integer({ min: 0, max: 5000 }),
  fc.constantFrom(0, 1, 1e-12, 0.5, 2 ** 40),
);

test('DDSketch percentiles are within 1% of the exact lower percentile', () => {
  fc.assert(
    fc.property(
      fc.array(value, { minLength: 1, maxLength: 300 }),
      fc.constantFrom(50, 90, 95, 99),
      (xs, p) => {
        const s = emptySketch();
        for (const x of xs) addValue(s, x);
        assert.equal(sketchCount(s), xs.length);
        const exact = [...xs].sort((a, b) => a - b)[percentileIndex(xs.length, p)];
        const got = quantile(s, p)!;
        // Magnitudes below 1e-9 count as zero.
        assert.ok(Math.abs(got - exact) <= 0.01 * Math.abs(exact) + 1e-9, `${got} vs ${exact}`);
      },
    ),
    { numRuns: 500 },
  );
});

test('an empty sketch has no percentile', () => {
  assert.equal(quantile(emptySketch(), 50), null);
});

test('merging two sketches adds their bins: the merge answers as one sketch of all values', () => {
  fc.assert(
    fc.property(fc.array(value, { maxLength: 100 }), fc.array(value, { maxLength: 100 }), (xs, ys) => {
      const part = (vs: number[]) =>
        vs.reduce(
          (acc, v) =>
            mergeData(
              acc,
              recordPart({
                created_at: 0,
                type: 'llm',
                name: '',
                model: null,
                metrics: null,
                user_metadata: null,
                duration_ns: v,
              }).data,
            ),
          {} as Record<string, number>,
        );
      const all = part([...xs, ...ys]);
      const merged = JSON.parse(rollupMergeText(JSON.stringify(part(xs)), JSON.stringify(part(ys))));
      for (const k of new Set([...Object.keys(all), ...Object.keys(merged)])) {
        if (k.endsWith('|s'))
          assert.ok(Math.abs(all[k] - merged[k]) <= 1e-6 * Math.max(1, Math.abs(all[k])), k);
        else assert.equal(merged[k], all[k], k);
      }
    }),
    { numRuns: 200 },
  );
});
