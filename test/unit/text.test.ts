import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonMayNeedCleaning, storableText, storableValue } from '../../src/domain/text.ts';

test('storable text: NUL and lone surrogates become U+FFFD, pairs and plain text stay', () => {
  assert.equal(storableText('a\0b'), 'a\uFFFDb');
  assert.equal(storableText('x\uD800y\uDC00'), 'x\uFFFDy\uFFFD');
  assert.equal(storableText('emoji \uD83D\uDE00'), 'emoji \uD83D\uDE00');
  const v = { 'k\0': ['a\uD800', { n: 1, s: 'ok' }], plain: 'text' };
  assert.deepEqual(storableValue(v), { 'k\uFFFD': ['a\uFFFD', { n: 1, s: 'ok' }], plain: 'text' });
});

test('only JSON texts with a NUL or surrogate escape are walked', () => {
  assert.equal(jsonMayNeedCleaning('{"a":"b\\u0000"}'), true);
  assert.equal(jsonMayNeedCleaning('{"a":"\\uDBFF"}'), true);
  assert.equal(jsonMayNeedCleaning('{"a":"\\u00e9 \\n"}'), false);
});
