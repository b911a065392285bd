/**
 * The console's prefetch (web/src/lib/prefetch.ts): a route's loader starts a page's requests while
 * the page's code loads, and the page takes each answer once, under the same key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prefetch, settledPrefetch, takePrefetched } from '../../web/src/lib/prefetch.ts';

test('a prefetched answer is taken once, and seen as settled once it has come', async () => {
  let calls = 0;
  const request = { key: 'k1', load: async () => ({ n: ++calls }) };
  prefetch(request);
  prefetch(request); // a second loader run while the first is pending asks nothing more
  assert.equal(calls, 1);
  assert.equal(settledPrefetch('k1'), undefined, 'not settled before the answer comes');
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(settledPrefetch('k1'), { data: { n: 1 } });
  assert.deepEqual(await takePrefetched('k1'), { n: 1 });
  assert.equal(takePrefetched('k1'), undefined, 'taken once');
  assert.equal(settledPrefetch('k1'), undefined);
});

test('a failed prefetch is the taker’s to see, and nobody else’s', async () => {
  prefetch({ key: 'k2', load: async () => Promise.reject(new Error('no')) });
  await new Promise((r) => setTimeout(r, 0));
  const settled = settledPrefetch('k2');
  assert.ok(settled && 'error' in settled && settled.error.message === 'no');
  await assert.rejects(takePrefetched('k2') as Promise<unknown>, /no/);
  assert.equal(takePrefetched('missing'), undefined);
});
