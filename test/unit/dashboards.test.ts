import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import fc from 'fast-check';
import {
  MAX_WINDOW_SECONDS,
  applyTimeRange,
  aggregate,
  bucketLayout,
  bucketStarts,
  percentileIndex,
  relativeTimeProblem,
  relativeWindowSeconds,
  resolveRange,
  sqlitePercentileFraction,
} from '../../src/domain/dashboards.ts';
import type { ErrorItem } from '../../src/domain/errors.ts';

describe('relative time', () => {
  test('units, singular and plural, months of 30 days and weeks of 7', () => {
    assert.equal(relativeWindowSeconds('last_1_second'), 1);
    assert.equal(relativeWindowSeconds('last_2_seconds'), 2);
    assert.equal(relativeWindowSeconds('last_5_minutes'), 300);
    assert.equal(relativeWindowSeconds('last_1_hour'), 3600);
    assert.equal(relativeWindowSeconds('last_7_days'), 7 * 86_400);
    assert.equal(relativeWindowSeconds('last_2_weeks'), 14 * 86_400);
    assert.equal(relativeWindowSeconds('last_1_months'), 30 * 86_400);
    assert.equal(relativeWindowSeconds('last_007_days'), 7 * 86_400);
    assert.equal(relativeWindowSeconds('last_7_fortnights'), null);
    assert.equal(relativeWindowSeconds('last_x_days'), null);
    assert.equal(relativeWindowSeconds(`last_${'9'.repeat(40)}_days`), Number.POSITIVE_INFINITY);
  });

  test('the 5-year window is 1826 days, inclusive', () => {
    assert.equal(MAX_WINDOW_SECONDS, 1826 * 86_400);
    assert.equal(relativeTimeProblem('last_1826_days'), null);
    assert.match(relativeTimeProblem('last_1827_days')!, /5 years/);
    assert.equal(relativeTimeProblem('last_60_months'), null);
    assert.match(relativeTimeProblem('last_61_months')!, /5 years/);
    assert.equal(relativeTimeProblem(`last_${1826 * 86_400}_seconds`), null);
    assert.match(relativeTimeProblem(`last_${1826 * 86_400 + 1}_seconds`)!, /5 years/);
    assert.match(relativeTimeProblem('last_0_hours')!, /at least/);
  });

  test('a relative range ends at the next whole second; an absolute one is as stored', () => {
    assert.deepEqual(
      resolveRange({ relative_time: 'last_1_hour', start_time: null, end_time: null }, 1_000_500),
      {
        start: 1001 - 3600,
        end: 1001,
      },
    );
    assert.deepEqual(resolveRange({ relative_time: null, start_time: 10, end_time: 20 }, 1e12), {
      start: 10,
      end: 20,
    });
  });
});

describe('time range rules', () => {
  const rel = { start_time: null, end_time: null, relative_time: 'last_7_days' };
  const abs = { start_time: 100, end_time: 200, relative_time: null };
  const run = (body: object, current: typeof rel | typeof abs) => {
    const faults: ErrorItem[] = [];
    return { out: applyTimeRange(body, current, faults), faults };
  };

  test('one form clears the other; nothing given changes nothing', () => {
    assert.deepEqual(run({ start_time: 1, end_time: 2 }, rel).out, {
      start_time: 1,
      end_time: 2,
      relative_time: null,
    });
    assert.deepEqual(run({ relative_time: 'last_1_day' }, abs).out, {
      start_time: null,
      end_time: null,
      relative_time: 'last_1_day',
    });
    assert.equal(run({}, abs).out, null);
    assert.equal(run({ start_time: null, end_time: null, relative_time: null }, abs).out, null);
    assert.deepEqual(run({ end_time: 300 }, abs).out, {
      start_time: 100,
      end_time: 300,
      relative_time: null,
    });
  });

  test('both forms, a half pair on a relative range, and start ≥ end are value errors', () => {
    for (const [body, current, loc] of [
      [{ start_time: 1, end_time: 2, relative_time: 'last_1_day' }, abs, ['body']],
      [{ start_time: 1, relative_time: 'last_1_day' }, abs, ['body']],
      [{ start_time: 1 }, rel, ['body', 'end_time']],
      [{ end_time: 1 }, rel, ['body', 'start_time']],
      [{ start_time: 5, end_time: 5 }, rel, ['body']],
      [{ start_time: 250 }, abs, ['body']],
      [{ relative_time: 'last_1827_days' }, abs, ['body', 'relative_time']],
    ] as const) {
      const { out, faults } = run(body, current);
      assert.equal(out, null, JSON.stringify(body));
      assert.equal(faults.length, 1);
      assert.deepEqual(faults[0].loc, loc, JSON.stringify(body));
      assert.equal(faults[0].type, 'value_error');
    }
  });
});

describe('buckets', () => {
  test('aligned on multiples of the interval since the epoch, clipped to the range', () => {
    assert.deepEqual(bucketLayout(3600 * 10 + 5, 3600 * 13, 60), { first: 36_000, size: 3600, count: 3 });
    assert.deepEqual(bucketLayout(3600 * 10, 3600 * 13 + 1, 60), { first: 36_000, size: 3600, count: 4 });
    assert.deepEqual(bucketStarts(0, 7200, 60), [0, 3600]);
    assert.equal(bucketLayout(100, 100, 60).count, 0);
    // An interval that does not divide a day still aligns on the epoch.
    assert.deepEqual(bucketStarts(1000, 4000, 47), [0, 2820]);
  });

  test('every instant of the range falls in exactly one bucket', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2e9 }),
        fc.integer({ min: 1, max: 1e6 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (start, length, interval, where) => {
          const end = start + length;
          const { first, size, count } = bucketLayout(start, end, interval);
          const t = Math.min(end - 1, start + Math.floor(where * length));
          const b = Math.floor((t - first) / size);
          return b >= 0 && b < count && first <= start && first + count * size >= end;
        },
      ),
    );
  });
});

describe('aggregations', () => {
  test('the percentile definition: position floor(p·(N−1)/100) of the sorted values', () => {
    assert.equal(aggregate('P50', [4, 1, 3, 2]), 2);
    assert.equal(aggregate('P99', [1, 2]), 1);
    assert.equal(aggregate('P90', [1, 2, 3]), 2);
    assert.equal(
      aggregate(
        'P95',
        Array.from({ length: 20 }, (_, i) => i + 1),
      ),
      19,
    );
    assert.equal(aggregate('P50', [7]), 7);
    assert.equal(aggregate('P50', []), null);
    assert.equal(percentileIndex(101, 99), 99);
  });

  test('SQLite percentile_disc with the nudged fraction lands on the same position for every N', () => {
    const db = new SQLite(':memory:');
    db.exec('create table v (n integer, x integer)');
    const ins = db.prepare('insert into v values (?, ?)');
    db.transaction(() => {
      for (let n = 1; n <= 400; n++) for (let i = 0; i < n; i++) ins.run(n, i);
      for (const n of [999, 1000, 1001, 2001, 4001, 10_001, 20_001])
        for (let i = 0; i < n; i++) ins.run(n, i);
    })();
    for (const p of [50, 90, 95, 99]) {
      const rows = db
        .prepare('select n, percentile_disc(x, ?) as v from v group by n')
        .all(sqlitePercentileFraction(p)) as { n: number; v: number }[];
      for (const r of rows) assert.equal(r.v, percentileIndex(r.n, p), `P${p} of ${r.n}`);
    }
    db.close();
  });

  test('every aggregation over arbitrary values matches its plain definition', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.integer({ min: -1e6, max: 1e6 }), { nil: null }), { maxLength: 60 }),
        (xs) => {
          const present = xs.filter((x): x is number => x !== null);
          const sorted = [...present].sort((a, b) => a - b);
          const sum = present.reduce((a, b) => a + b, 0);
          assert.equal(aggregate('Count', xs), present.length);
          if (!present.length) {
            for (const a of ['Sum', 'Average', 'Min', 'Max', 'P50', 'P99', 'PercentageTrue'] as const)
              assert.equal(aggregate(a, xs), null);
            return;
          }
          assert.equal(aggregate('Sum', xs), sum);
          assert.equal(aggregate('Average', xs), sum / present.length);
          assert.equal(aggregate('Min', xs), sorted[0]);
          assert.equal(aggregate('Max', xs), sorted[sorted.length - 1]);
          for (const p of [50, 90, 95, 99] as const)
            assert.equal(aggregate(`P${p}`, xs), sorted[Math.floor((p * (sorted.length - 1)) / 100)]);
        },
      ),
    );
    assert.equal(aggregate('PercentageTrue', [true, false, null, 1, 0]), 50);
    assert.equal(aggregate('PercentageFalse', [true, false, false, null]), (100 * 2) / 3);
  });
});
