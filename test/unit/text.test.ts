import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { test } from 'node:test';
import fc from 'fast-check';
import { invalidUtf8At, jsonMayNeedCleaning, storableText, storableValue } from '../../src/domain/text.ts';

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

test('invalidUtf8At finds where the first ill-formed sequence starts, as the WHATWG decoder does', () => {
  const cases: [number[], number][] = [
    [[0x61, 0x62], -1],
    [[0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x99, 0x82], -1],
    [[0x61, 0x80], 1],
    [[0xc1, 0xbf], 0],
    [[0xe0, 0x9f, 0xbf], 0],
    [[0xed, 0xa0, 0x80], 0],
    [[0xf4, 0x90, 0x80, 0x80], 0],
    [[0xf5], 0],
    [[0x61, 0xe2, 0x82], 1],
    [[0xc3, 0xa9, 0xc3, 0x41], 2],
  ];
  for (const [bytes, at] of cases) assert.equal(invalidUtf8At(Uint8Array.from(bytes)), at, String(bytes));
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0xc3, 0xa9, 0xe2, 0x82, 0xf0, 0x9f)),
        {
          maxLength: 24,
        },
      ),
      (list) => {
        const bytes = Uint8Array.from(list);
        const at = invalidUtf8At(bytes);
        assert.equal(at === -1, isUtf8(bytes));
        if (at === -1) return;
        // Everything before the offset decodes cleanly; the decoder's first U+FFFD falls there.
        assert.ok(isUtf8(bytes.subarray(0, at)));
        const decoded = new TextDecoder().decode(bytes);
        const firstBad = decoded.indexOf('\uFFFD', Buffer.from(bytes.subarray(0, at)).toString().length);
        assert.equal(Buffer.byteLength(decoded.slice(0, firstBad)), at);
      },
    ),
    { numRuns: 2000 },
  );
});
