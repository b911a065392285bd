import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  type AggregateSpec,
  GroupScan,
  aggregateCells,
  PercentilePlan,
  numbers,
  select,
  valueBin,
} from '../../src/domain/cell-aggregates.ts';
import { compareGroupValues, rankGroups } from '../../src/domain/cell-columns.ts';
import { type Aggregation, aggregate } from '../../src/domain/dashboards.ts';

/** Every aggregate over metric 0 (any numbers), and a count of metric 1 (never null). */
const SPECS: AggregateSpec[] = [
  { name: 'n', op: 'n', metric: -1 },
  { name: 'm0_n', op: 'count', metric: 0 },
  { name: 'm0_sum', op: 'sum', metric: 0 },
  { name: 'm0_min', op: 'min', metric: 0 },
  { name: 'm0_max', op: 'max', metric: 0 },
  { name: 'm0_true', op: 'true', metric: 0 },
  { name: 'm0_p50', op: 'percentile', metric: 0, percent: 50 },
  { name: 'm0_p95', op: 'percentile', metric: 0, percent: 95 },
  { name: 'm1_n', op: 'count', metric: 1 },
];

const AS: Record<string, Aggregation> = {
  m0_n: 'Count',
  m0_sum: 'Sum',
  m0_min: 'Min',
  m0_max: 'Max',
  m0_p50: 'P50',
  m0_p95: 'P95',
};

const record = fc.record({
  bucket: fc.integer({ min: 0, max: 4 }),
  group: fc.constantFrom<unknown>('a', 'b', 'c', null, 1, 2.5),
  value: fc.oneof(
    fc.constant(null),
    fc.integer({ min: -5, max: 5 }),
    fc.double({ noNaN: true, min: -1e6, max: 1e6 }),
  ),
});

type Rec = { bucket: number; group: unknown; value: number | null };

/** The cells as the plain definitions (domain/dashboards.ts `aggregate`) compute them. */
function expected(records: Rec[]): Map<string, Record<string, number | null>> {
  const out = new Map<string, Record<string, number | null>>();
  const keys = new Set(records.map((r) => JSON.stringify([r.bucket, r.group])));
  for (const key of keys) {
    const mine = records.filter((r) => JSON.stringify([r.bucket, r.group]) === key);
    const values = mine.map((r) => r.value);
    const cell: Record<string, number | null> = { n: mine.length, m1_n: mine.length };
    for (const [name, agg] of Object.entries(AS)) cell[name] = aggregate(agg, values);
    cell.m0_true = values.filter((v) => v === 1).length;
    out.set(key, cell);
  }
  return out;
}

function check(got: { b: number[]; g: unknown[]; values: Float64Array[] }, records: Rec[]) {
  const want = expected(records);
  assert.equal(got.b.length, want.size);
  got.b.forEach((b, c) => {
    const cell = want.get(JSON.stringify([b, got.g[c]]));
    assert.ok(cell, `unexpected cell ${b} ${String(got.g[c])}`);
    SPECS.forEach((spec, k) => {
      // -0 and 0 are one number to a client (JSON writes both as 0); Min and Max may pick either.
      const v = got.values[k][c] + 0;
      const actual = Number.isNaN(v) ? null : v;
      const w = cell[spec.name];
      const wanted = w === null ? null : w + 0;
      if (spec.name === 'm0_sum' && actual !== null && wanted !== null)
        assert.ok(Math.abs(actual - wanted) <= 1e-9 * Math.max(1, Math.abs(wanted)), `${spec.name}`);
      // A sum over no values is 0 (SQLite's total()); the answer shows null when the count is 0.
      else if (spec.name !== 'm0_sum' || cell.m0_n !== 0) assert.equal(actual, wanted, spec.name);
    });
  });
}

const input = (records: Rec[]) => ({
  bucket: records.map((r) => r.bucket),
  groups: records.map((r) => r.group),
  metrics: [numbers(records.map((r) => r.value)), null],
});

/** Each shown group's whole-range P50 and P95, from scans over parts of `records`, as the definitions. */
function checkTotals(scans: GroupScan[], shown: unknown[], records: Rec[]) {
  const plan = new PercentilePlan(
    SPECS,
    shown,
    scans.map((s) => s.binCounts(shown)),
  );
  const rows = plan.rows(scans.map((s) => s.binValues(shown, plan.asks)));
  shown.forEach((g, k) => {
    const values = records.filter((r) => r.group === g).map((r) => r.value);
    for (const name of ['m0_p50', 'm0_p95']) {
      const want = aggregate(AS[name], values);
      const got = rows[k][name] as number | null;
      // -0 and 0 alike (+ 0), as in `check`.
      assert.equal(got === null ? null : got + 0, want === null ? null : want + 0, `${name} of ${String(g)}`);
    }
  });
}

describe('widget cells grouped in JavaScript', () => {
  test('aggregateCells agrees with the plain definitions', () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 200 }), (records) => {
        check(aggregateCells(SPECS, input(records)), records);
      }),
      { numRuns: 300 },
    );
  });

  test('a grouped scan read in parts (each read whole or in pieces) counts every group and gives the shown groups the same cells and values', () => {
    fc.assert(
      fc.property(
        // Lengths up to the maximum: buckets of many records and few groups are aggregated as read.
        fc.array(record, { maxLength: 200, size: 'max' }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 6 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        (generated, pieces, limit, coded, oneBucketReads, split) => {
          // Codes stand only for groups whose values are all text.
          const records = coded
            ? generated.map((r) => ({ ...r, group: typeof r.group === 'number' ? String(r.group) : r.group }))
            : generated;
          const scan = new GroupScan(SPECS, [0]);
          // Reads as the reader thread makes them: each holds every record of its buckets, either
          // one bucket (its number given once) or several (a number per record).
          const reads: { bucket: number | number[]; groups: unknown[]; metrics: (Float64Array | null)[] }[] =
            [];
          const buckets = [...new Set(records.map((r) => r.bucket))];
          const of = (b: number) => records.filter((r) => r.bucket === b);
          if (oneBucketReads) for (const b of buckets) reads.push({ ...input(of(b)), bucket: b });
          else
            for (let k = 0; k < pieces; k++)
              reads.push(input(buckets.filter((_, i) => i % pieces === k).flatMap(of)));
          // A read may come in `split` pieces of its records, as a large bucket does (the last
          // one says so).
          const pieceList = reads.flatMap((read) =>
            Array.from({ length: split }, (_, k) => {
              const from = Math.floor((k * read.groups.length) / split);
              const to = Math.floor(((k + 1) * read.groups.length) / split);
              return {
                last: k === split - 1,
                read: {
                  bucket: typeof read.bucket === 'number' ? read.bucket : read.bucket.slice(from, to),
                  groups: read.groups.slice(from, to),
                  metrics: read.metrics.map((m) => (m ? m.slice(from, to) : null)),
                },
              };
            }),
          );
          // After the first piece, text values met at least twice come as their dictionary place.
          let dictionary: string[] | null = null;
          for (const { read: piece, last } of pieceList) {
            if (dictionary) {
              const codes = dictionary;
              piece.groups = piece.groups.map((g) =>
                typeof g === 'string' && codes.includes(g) ? codes.indexOf(g) : g,
              );
            }
            scan.add(piece, last);
            if (!dictionary && coded) {
              dictionary = scan.frequent(2, 2);
              scan.useCodes(dictionary);
            }
          }
          const { groups, counts } = scan.groupCounts();
          const byGroup = new Map(groups.map((g, i) => [g, counts[i]]));
          for (const g of new Set(records.map((r) => r.group)))
            assert.equal(byGroup.get(g), records.filter((r) => r.group === g).length);
          const { shown, count } = rankGroups(byGroup, limit);
          assert.equal(count, byGroup.size);
          const ranked = [...byGroup].sort((x, y) => y[1] - x[1] || compareGroupValues(x[0], y[0]));
          assert.deepEqual(
            shown,
            ranked.slice(0, limit).map(([g]) => g),
          );
          check(
            scan.cells(shown),
            records.filter((r) => shown.includes(r.group)),
          );
          // Whole-range percentiles from the scan's bin counts and values in the asked bins.
          checkTotals([scan], shown, records);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('whole-range percentiles over several threads', () => {
  test('the bins and the values in the asked bins give the exact percentile', () => {
    const value = fc.oneof(
      fc.constant(null),
      fc.constantFrom(0, -0, 1, 7, -3),
      fc.integer({ min: -1000, max: 1000 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.double({ noNaN: true, min: 0.999, max: 1.001 }),
    );
    const rec = fc.record({
      bucket: fc.integer({ min: 0, max: 3 }),
      group: fc.constantFrom<unknown>('a', 'b', 2),
      value,
    });
    fc.assert(
      fc.property(fc.array(rec, { maxLength: 300 }), fc.integer({ min: 1, max: 4 }), (records, threads) => {
        // Each thread reads whole buckets, as the reader threads do.
        const scans = Array.from({ length: threads }, () => new GroupScan(SPECS, [0]));
        for (const b of new Set(records.map((r) => r.bucket)))
          scans[b % threads].add({ ...input(records.filter((r) => r.bucket === b)), bucket: b });
        checkTotals(scans, ['a', 'b', 2, 'unseen'], records);
      }),
      { numRuns: 500 },
    );
  });

  test('bins are ordered as their values, and about 2% wide', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), fc.double({ noNaN: true }), (x, y) => {
        if (x < y) assert.ok(valueBin(x) <= valueBin(y));
        if (x === y) assert.equal(valueBin(x), valueBin(y));
      }),
      { numRuns: 2000 },
    );
    assert.notEqual(valueBin(100), valueBin(103));
    assert.equal(valueBin(0), valueBin(-0));
    assert.ok(valueBin(-1) < valueBin(0) && valueBin(0) < valueBin(Number.MIN_VALUE));
  });
});

describe('select', () => {
  test('finds the value a sort puts at k, in any range', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ noNaN: true })), {
          minLength: 1,
          maxLength: 80,
        }),
        fc.nat(),
        fc.nat(),
        (list, x, y) => {
          const lo = x % list.length;
          const hi = lo + (y % (list.length - lo));
          const a = Float64Array.from(list);
          const sorted = [...list.slice(lo, hi + 1)].sort((p, q) => p - q);
          // === rather than Object.is: a sort does not order -0 and 0.
          for (let k = lo; k <= hi; k++) assert.ok(select(a, lo, hi, k) === sorted[k - lo], `k = ${k}`);
          // Outside the range nothing moved.
          list.forEach((v, i) => {
            if (i < lo || i > hi) assert.ok(a[i] === v);
          });
        },
      ),
      { numRuns: 500 },
    );
  });
});
