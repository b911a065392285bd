/**
 * A batch's rollup rows against the records summed one by one: counts, sums, min, max and sketch
 * bins of every group, with many distinct values per group (past the short list a batch keeps bins
 * in) and records taken off again (updates).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { addValue, emptySketch, mergeBins, sketchPairs } from '../../src/domain/ddsketch.ts';
import {
  ANY_VALUE,
  DimValues,
  ROLLUP_BUCKET_US,
  RollupBatch,
  type RollupRecord,
  SCALAR_METRICS,
  columnBins,
  joinBins,
  recordFacts,
  rollupDelta,
} from '../../src/domain/rollups.ts';

const record = fc.record({
  created_at: fc.integer({ min: 0, max: 3 * ROLLUP_BUCKET_US - 1 }),
  type: fc.constantFrom('llm', 'tool'),
  name: fc.constantFrom('a', 'b'),
  model: fc.constantFrom(null, 'm'),
  duration_ns: fc.oneof(
    fc.constant(null),
    fc.integer({ min: 0, max: 1e9 }),
    fc.double({ min: -5, max: 5, noNaN: true }),
  ),
  is_complete: fc.constantFrom(0, 1),
  metrics: fc.option(fc.record({ score: fc.double({ min: 0, max: 1, noNaN: true }) }), { nil: null }),
  user_metadata: fc.option(fc.record({ tier: fc.constantFrom('free', 'pro') }), { nil: null }),
});

test('a batch sums its records per group: counts, sums, min, max and bins', () => {
  fc.assert(
    fc.property(
      fc.array(record, { maxLength: 300 }),
      fc.array(fc.nat(299), { maxLength: 40 }),
      (rs, offs) => {
        const records = rs.map((r) => ({
          ...r,
          metrics: r.metrics && JSON.stringify(r.metrics),
        })) as RollupRecord[];
        const batch = new RollupBatch(new DimValues());
        for (const r of records) batch.add('run', r);
        const off = new Set(offs.filter((i) => i < records.length));
        for (const i of off) batch.add('run', records[i], -1);
        const kept = records.filter((_, i) => !off.has(i));

        // Expected: per (hour, dim, value) and column, from the kept records one by one.
        const want = new Map<
          string,
          { n: number; cols: Map<string, { c: number; s: number; values: number[] }> }
        >();
        for (const r of kept) {
          const hour = Math.floor(Number(r.created_at) / ROLLUP_BUCKET_US) * ROLLUP_BUCKET_US;
          const { parts, dims } = recordFacts(r);
          const groups = [...dims];
          for (const [dim] of dims)
            if (dim.startsWith('u:') || dim.startsWith('m:')) groups.push([dim, ANY_VALUE]);
          for (const [dim, value] of groups) {
            const key = `${hour}|${dim}|${value}`;
            const g = want.get(key) ?? { n: 0, cols: new Map() };
            want.set(key, g);
            g.n++;
            for (const [col, v] of parts) {
              const a = g.cols.get(col) ?? { c: 0, s: 0, values: [] };
              g.cols.set(col, a);
              a.c++;
              a.s += v;
              a.values.push(v);
            }
          }
        }
        const { counts, scalars, metrics } = batch.rows();
        for (const c of counts) assert.equal(c.n, want.get(`${c.hour}|${c.dim}|${c.value}`)?.n ?? 0);
        for (const [key, g] of want) {
          const [hour, dim, value] = key.split('|');
          assert.ok(
            counts.some((c) => `${c.hour}|${c.dim}|${c.value}` === key && c.n === g.n),
            key,
          );
          const row = scalars.find((x) => String(x.hour) === hour && x.dim === dim && x.value === value);
          for (const [col, a] of g.cols) {
            const i = (SCALAR_METRICS as readonly string[]).indexOf(col);
            const got =
              i >= 0
                ? row?.cols[i]
                : metrics.find(
                    (m) => String(m.hour) === hour && m.dim === dim && m.value === value && m.col === col,
                  );
            assert.ok(got, `${key} ${col}`);
            assert.equal(got.c, a.c);
            assert.ok(Math.abs(got.s - a.s) <= 1e-6 * Math.max(1, Math.abs(a.s)), `${key} ${col} sum`);
            const s = emptySketch();
            for (const v of a.values) addValue(s, v);
            assert.deepEqual(got.bins, sketchPairs(s), `${key} ${col} bins`);
            // Min and max only where nothing was taken off (an update marks its hour dirty).
            if (!off.size && value !== ANY_VALUE) {
              assert.equal(got.lo, Math.min(...a.values));
              assert.equal(got.hi, Math.max(...a.values));
            }
          }
        }
      },
    ),
    { numRuns: 150 },
  );
});

test("a scalar row's sketches joined in one list come apart column by column, and merge as one", () => {
  const pairs = fc
    .uniqueArray(fc.integer({ min: 0, max: 171_801 }), { maxLength: 20 })
    .map((codes) => codes.sort((a, b) => a - b).flatMap((c) => [c, 1 + (c % 5)]));
  const row = fc.array(fc.option(pairs, { nil: null }), {
    minLength: SCALAR_METRICS.length,
    maxLength: SCALAR_METRICS.length,
  });
  fc.assert(
    fc.property(row, row, (a, b) => {
      const agg = (bins: number[] | null) => (bins ? { c: 1, s: 0, t: 0, lo: null, hi: null, bins } : null);
      const ja = joinBins(a.map(agg));
      for (let i = 0; i < ja.length - 2; i += 2) assert.ok(ja[i] < ja[i + 2], 'ascending');
      a.forEach((bins, i) => {
        assert.deepEqual(columnBins(ja, i), bins ?? []);
      });
      const merged = mergeBins(ja, joinBins(b.map(agg)));
      a.forEach((bins, i) => {
        assert.deepEqual(columnBins(merged, i), mergeBins(bins ?? [], b[i] ?? []));
      });
    }),
    { numRuns: 200 },
  );
});

test('batches stored as deltas and folded together give the rows of one batch of all their records', () => {
  fc.assert(
    fc.property(
      fc.array(fc.array(record, { maxLength: 60 }), { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat(59), { maxLength: 10 }),
      (groups, offs) => {
        // Values on a 1/1024 grid: their sums are exact in any order (the fold adds in another order).
        const grid = (x: number) => Math.round(x * 1024) / 1024 || 0; // and no -0 (JSON has none)
        const toRecords = (rs: (typeof groups)[number]) =>
          rs.map((r) => ({
            ...r,
            duration_ns: r.duration_ns === null ? null : grid(r.duration_ns),
            metrics: r.metrics && JSON.stringify({ score: grid(r.metrics.score) }),
          })) as RollupRecord[];
        const whole = new RollupBatch(null);
        const folded = new RollupBatch(null);
        groups.forEach((rs, g) => {
          const run = g % 2 ? 'run-b' : 'run-a';
          const records = toRecords(rs);
          for (const r of records) whole.add(run, r);
          // Updates: some records replaced by themselves one hour later (dirty hours, parts taken off).
          const updates: [RollupRecord, RollupRecord][] = offs
            .filter((i) => i < records.length)
            .map((i) => [
              records[i],
              { ...records[i], created_at: Number(records[i].created_at) + ROLLUP_BUCKET_US },
            ]);
          for (const [before, after] of updates) whole.replace(run, before, after);
          folded.absorbDelta(run, rollupDelta(records, updates));
        });
        assert.deepEqual(folded.rows(), whole.rows());
        assert.deepEqual(folded.dirtyHours(), whole.dirtyHours());
      },
    ),
    { numRuns: 150 },
  );
});

test('an update that only adds values keeps its hour clean and its min and max exact; one that takes a value off marks the old hour', () => {
  fc.assert(
    fc.property(
      fc.array(record, { minLength: 1, maxLength: 80 }),
      fc.array(fc.tuple(fc.nat(79), fc.double({ min: 0, max: 1, noNaN: true })), { maxLength: 20 }),
      (rs, adds) => {
        // Values on a 1/1024 grid: sums taken off and put back are exact.
        const grid = (x: number) => Math.round(x * 1024) / 1024 || 0;
        type Rec = Omit<(typeof rs)[number], 'metrics' | 'user_metadata'> & {
          metrics: Record<string, number> | null;
          user_metadata: Record<string, string> | null;
        };
        const records: Rec[] = rs.map((r) => ({
          ...r,
          duration_ns: r.duration_ns === null ? null : grid(r.duration_ns),
          metrics: r.metrics ? { score: grid(r.metrics.score) } : null,
        }));
        const stored = (r: Rec) =>
          ({ ...r, metrics: r.metrics && JSON.stringify(r.metrics) }) as unknown as RollupRecord;
        const updated = new RollupBatch(null);
        for (const r of records) updated.add('run', stored(r));
        // A judge's score and a metadata key written into stored records.
        const final = [...records];
        for (const [j, [i, v]] of adds.entries()) {
          const at = i % records.length;
          const before = final[at];
          const after = {
            ...before,
            metrics: { ...(before.metrics ?? {}), [`judge${j}`]: grid(v) },
            user_metadata: { region: 'eu', ...(before.user_metadata ?? {}) },
          };
          updated.replace('run', stored(before), stored(after));
          final[at] = after;
        }
        assert.deepEqual(updated.dirtyHours(), []);
        const fresh = new RollupBatch(null);
        for (const r of final) fresh.add('run', stored(r));
        const key = (m: { dim: string; value: string; hour: number; col?: string }) =>
          `${m.hour}|${m.dim}|${m.value}|${m.col ?? ''}`;
        const got = updated.rows();
        const want = fresh.rows();
        assert.deepEqual(
          got.counts.filter((c) => c.n !== 0),
          want.counts,
        );
        const scalarsOf = (rows: typeof got.scalars) => new Map(rows.map((r) => [key(r), r.cols]));
        const wantScalars = scalarsOf(want.scalars);
        for (const [k, cols] of scalarsOf(got.scalars)) {
          const w = wantScalars.get(k);
          cols.forEach((c, i) => {
            if (!c || c.c === 0) assert.ok(!w?.[i] || w[i]?.c === 0, k);
            else assert.deepEqual(c, w?.[i], `${k} ${SCALAR_METRICS[i]}`);
          });
        }
        const wantMetrics = new Map(want.metrics.map((m) => [key(m), m]));
        for (const m of got.metrics) {
          if (m.c === 0) continue;
          assert.deepEqual(m, wantMetrics.get(key(m)), key(m));
        }
      },
    ),
    { numRuns: 150 },
  );
  const r = {
    created_at: 10,
    type: 'llm',
    name: 'a',
    model: null,
    duration_ns: 5,
    is_complete: 1,
    metrics: JSON.stringify({ score: 0.5 }),
    user_metadata: null,
  } as unknown as RollupRecord;
  const changed = new RollupBatch(null);
  changed.replace('run', r, { ...r, metrics: JSON.stringify({ score: 1 }) });
  assert.deepEqual(changed.dirtyHours(), [{ run_id: 'run', hour: 0 }]);
  const left = new RollupBatch(null);
  left.replace('run', r, { ...r, user_metadata: null, metrics: null });
  assert.deepEqual(left.dirtyHours(), [{ run_id: 'run', hour: 0 }]);
  // Moved an hour on: the old hour loses its values, the new one only gains.
  const moved = new RollupBatch(null);
  moved.replace('run', r, { ...r, created_at: ROLLUP_BUCKET_US + 10 });
  assert.deepEqual(moved.dirtyHours(), [{ run_id: 'run', hour: 0 }]);
});
