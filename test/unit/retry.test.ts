import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryTransient } from '../../src/store/retry.ts';

const failing = (code: string) => Object.assign(new Error(code), { code });

test('a lost deadlock or serialization failure runs again; other errors and the sixth failure do not', async () => {
  let calls = 0;
  const value = await retryTransient(async () => {
    calls++;
    if (calls <= 2) throw failing(calls === 1 ? '40P01' : '40001');
    return 'done';
  });
  assert.equal(value, 'done');
  assert.equal(calls, 3);

  calls = 0;
  await assert.rejects(
    retryTransient(async () => {
      calls++;
      throw failing('23503');
    }),
    /23503/,
  );
  assert.equal(calls, 1, 'a foreign key violation is not retried');

  calls = 0;
  await assert.rejects(
    retryTransient(async () => {
      calls++;
      throw failing('40P01');
    }),
    /40P01/,
  );
  assert.equal(calls, 6, 'five retries, then the error');
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

  calls = 0;
  await assert.rejects(
    retryTransient(async () => {
      calls++;
      throw failing('23505');
    }),
    /23505/,
  );
  assert.equal(calls, 1, 'without uniqueRace a unique violation is final');
});
