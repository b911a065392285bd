import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { toIso } from '../../src/domain/time.ts';

/** The definition: Date.toISOString, with the microseconds appended when there are any. */
function reference(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString();
  const micros = us - ms * 1000;
  return micros === 0 ? iso : `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
}

test('toIso writes what toISOString writes, microseconds kept, for every representable instant', () => {
  // ±8.64e15 ms is the range of a Date; beyond it both throw.
  const max = 8.64e15 * 1000;
  fc.assert(
    fc.property(fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), (us) => {
      if (Math.abs(us) > max) return;
      assert.equal(toIso(us), reference(us));
    }),
    { numRuns: 20_000 },
  );
  for (const us of [0, -1, 999, 1000, -1000, 86_400_000_000, -86_400_000_001, 1_700_000_000_123_456])
    assert.equal(toIso(us), reference(us));
});
