import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, test } from 'node:test';
import { SecretBox, SecretBoxError } from '../../src/domain/secretbox.ts';

describe('SecretBox (AES-256-GCM)', () => {
  const key = crypto.randomBytes(32);
  const box = new SecretBox(key);

  test('round trip, and the sealed text does not hold the secret', () => {
    const secret = 'sk-live-0123456789abcdef';
    const sealed = box.seal(secret, 'aad-1');
    assert.match(sealed, /^v1\.[A-Za-z0-9_-]+$/);
    assert.ok(!sealed.includes(secret));
    assert.ok(!sealed.includes(Buffer.from(secret).toString('base64')));
    assert.ok(!sealed.includes(Buffer.from(secret).toString('hex')));
    assert.equal(box.open(sealed, 'aad-1'), secret);
    assert.equal(box.open(box.seal('', 'x'), 'x'), '');
    assert.equal(box.open(box.seal('ünïcødé 🔑', 'x'), 'x'), 'ünïcødé 🔑');
  });

  test('a fresh nonce each time: the same secret seals differently', () => {
    assert.notEqual(box.seal('same', 'a'), box.seal('same', 'a'));
  });

  test('wrong associated data, wrong key or altered bytes do not open', () => {
    const sealed = box.seal('secret', 'row-1');
    assert.throws(() => box.open(sealed, 'row-2'), SecretBoxError);
    assert.throws(() => new SecretBox(crypto.randomBytes(32)).open(sealed, 'row-1'), SecretBoxError);
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    for (const at of [0, 12, raw.length - 1]) {
      const bent = Buffer.from(raw);
      bent[at] ^= 1;
      assert.throws(() => box.open(`v1.${bent.toString('base64url')}`, 'row-1'), SecretBoxError);
    }
    assert.throws(() => box.open('v2.abc', 'row-1'), SecretBoxError);
    assert.throws(() => box.open('v1.abc', 'row-1'), SecretBoxError);
    assert.throws(() => box.open('nonsense', 'row-1'), SecretBoxError);
  });

  test('keyId identifies the key without revealing it', () => {
    assert.equal(new SecretBox(key).keyId, box.keyId);
    assert.notEqual(new SecretBox(crypto.randomBytes(32)).keyId, box.keyId);
    assert.ok(!key.toString('hex').includes(box.keyId));
    assert.throws(() => new SecretBox(crypto.randomBytes(16)));
  });
});
