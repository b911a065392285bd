import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { percentileIndex } from '../../src/domain/dashboards.ts';
import {
  addPairs,
  addValue,
  decodeBins,
  emptySketch,
  encodeBins,
  mergeBins,
  quantile,
  sketchCount,
  sketchPairs,
} from '../../src/domain/ddsketch.ts';

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

test('merging two stored sketches adds their bins: the merge answers as one sketch of all values', () => {
  fc.assert(
    fc.property(
      fc.array(value, { maxLength: 100 }),
      fc.array(value, { maxLength: 100 }),
      fc.constantFrom(50, 90, 95, 99),
      (xs, ys, p) => {
        const pairs = (vs: number[]) => {
          const s = emptySketch();
          for (const v of vs) addValue(s, v);
          return sketchPairs(s);
        };
        const all = pairs([...xs, ...ys]);
        // Through the blob encoding SQLite stores.
        const merged = mergeBins(decodeBins(encodeBins(pairs(xs))), decodeBins(encodeBins(pairs(ys))));
        assert.deepEqual(merged, all);
        const s = emptySketch();
        addPairs(s, merged);
        assert.equal(quantile(s, p), xs.length + ys.length ? quantile(sketchOf([...xs, ...ys]), p) : null);
        // Taking one off again leaves the other (updates subtract their old part).
        const back = emptySketch();
        addPairs(back, merged);
        addPairs(back, pairs(ys), -1);
        assert.deepEqual(sketchPairs(back), pairs(xs));
      },
    ),
    { numRuns: 200 },
  );
});

function sketchOf(vs: number[]) {
  const s = emptySketch();
  for (const v of vs) addValue(s, v);
  return s;
}

test("SQLite's blob of bins: any pairs back as they went in, the older int32 form still read, under 40% of the older form", () => {
  const pairs = fc
    .uniqueArray(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 60 })
    .chain((codes) =>
      fc
        .array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), {
          minLength: codes.length,
          maxLength: codes.length,
        })
        .map((counts) => [...codes].sort((a, b) => a - b).flatMap((c, i) => [c, counts[i]])),
    );
  fc.assert(
    fc.property(pairs, (ps) => {
      const blob = encodeBins(ps);
      assert.notEqual(blob.length % 8, 0);
      assert.deepEqual(Array.from(decodeBins(blob)), ps);
      // The older form: little-endian int32 pairs.
      const old = Buffer.alloc(ps.length * 4);
      for (const [i, v] of ps.entries()) old.writeInt32LE(v, i * 4);
      assert.deepEqual(Array.from(decodeBins(old)), ps);
    }),
    { numRuns: 300 },
  );
  // 100,000 durations in about 500 bins: consecutive codes and counts of hundreds, 3 bytes a bin.
  const s = emptySketch();
  for (let i = 0; i < 100_000; i++) addValue(s, 1e6 * Math.exp((i % 1000) / 100));
  const sketch = sketchPairs(s);
  const size = encodeBins(sketch).length;
  assert.ok(size < sketch.length * 4 * 0.4, `${size} bytes against ${sketch.length * 4} as int32 pairs`);
});
