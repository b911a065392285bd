import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryTransient } from '../../src/store/retry.ts';

const failing = (code: string) => Object.assign(new Error(code), { code });

/** Runs work that always fails with `code` through retryTransient: how many times it ran. */
async function callsUntilFinal(code: string, opts?: { uniqueRace?: boolean }): Promise<number> {
  let calls = 0;
  await assert.rejects(
    retryTransient(async () => {
      calls++;
      throw failing(code);
    }, opts),
    new RegExp(code),
  );
  return calls;
}

test('a lost deadlock or serialization failure runs again; other errors and the sixth failure do not', async () => {
  let calls = 0;
  const value = await retryTransient(async () => {
    calls++;
    if (calls <= 2) throw failing(calls === 1 ? '40P01' : '40001');
    return 'done';
  });
  assert.equal(value, 'done');
  assert.equal(calls, 3);

  assert.equal(await callsUntilFinal('23503'), 1, 'a foreign key violation is not retried');
  assert.equal(await callsUntilFinal('40P01'), 6, 'five retries, then the error');
});

test('a unique violation runs again only where the work reads what a racing insert won', async () => {
  let calls = 0;
  const dup = () =>
    retryTransient(
      async () => {
        calls++;
        if (calls === 1) throw failing('23505');
        return 'done';
      },
      { uniqueRace: true },
    );
  assert.equal(await dup(), 'done');
  assert.equal(calls, 2);

  assert.equal(await callsUntilFinal('23505'), 1, 'without uniqueRace a unique violation is final');
});
