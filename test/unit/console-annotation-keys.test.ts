/**
 * The queue page's keyboard without a browser (web/src/lib/annotation-keys.ts): what each key does
 * to each template type's annotation, and the caller's own values read from a record.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyEffect, keyHint, moveOf, ownValues } from '../../web/src/lib/annotation-keys.ts';
import type { AnnotationTemplate } from '../../web/src/lib/api-types.ts';

const t = (type: string, extra: Partial<AnnotationTemplate> = {}) =>
  ({
    id: type,
    name: type,
    type,
    min: null,
    max: null,
    options: null,
    multiple: null,
    ...extra,
  }) as AnnotationTemplate;
const set = (value: unknown) => ({ kind: 'set', value });

test('thumbs: y and 1 up, n and 0 down; other keys nothing', () => {
  assert.deepEqual(keyEffect(t('thumbs'), 'y', undefined), set(true));
  assert.deepEqual(keyEffect(t('thumbs'), '1', undefined), set(true));
  assert.deepEqual(keyEffect(t('thumbs'), 'n', true), set(false));
  assert.deepEqual(keyEffect(t('thumbs'), '0', true), set(false));
  assert.equal(keyEffect(t('thumbs'), '3', undefined), null);
});

test('stars 1–5; a score takes the digits within its range', () => {
  assert.deepEqual(keyEffect(t('stars'), '4', undefined), set(4));
  assert.equal(keyEffect(t('stars'), '0', undefined), null);
  assert.equal(keyEffect(t('stars'), '6', undefined), null);
  const score = t('score', { min: -1, max: 3 });
  assert.deepEqual(keyEffect(score, '0', undefined), set(0));
  assert.deepEqual(keyEffect(score, '3', undefined), set(3));
  assert.equal(keyEffect(score, '4', undefined), null);
  assert.equal(keyHint(score), '0–3, or Enter to type');
  assert.equal(keyHint(t('score', { min: 10, max: 100 })), 'Enter to type');
});

test('categorical: a digit picks the option; with several choices it toggles, the last one off clears', () => {
  const one = t('categorical', { options: ['good', 'bad', 'ugly'] });
  assert.deepEqual(keyEffect(one, '2', undefined), set('bad'));
  assert.equal(keyEffect(one, '4', undefined), null);
  assert.equal(keyEffect(one, '0', undefined), null);
  const many = t('categorical', { options: ['a', 'b', 'c'], multiple: true });
  assert.deepEqual(keyEffect(many, '1', undefined), set(['a']));
  assert.deepEqual(keyEffect(many, '3', ['a']), set(['a', 'c']));
  assert.deepEqual(keyEffect(many, '1', ['a', 'c']), set(['c']));
  assert.deepEqual(keyEffect(many, '3', ['c']), { kind: 'clear' });
});

test('Delete and Backspace clear a value there is; text and tags take no digit', () => {
  assert.deepEqual(keyEffect(t('stars'), 'Delete', 3), { kind: 'clear' });
  assert.deepEqual(keyEffect(t('text'), 'Backspace', 'x'), { kind: 'clear' });
  assert.equal(keyEffect(t('stars'), 'Delete', undefined), null);
  assert.equal(keyEffect(t('text'), '1', undefined), null);
  assert.equal(keyEffect(t('tags'), 'y', undefined), null);
});

test('moves: j / → next, k / ← previous, ↓ / ↑ between templates', () => {
  assert.deepEqual(['j', 'ArrowRight', 'k', 'ArrowLeft', 'ArrowDown', 'ArrowUp', 'x'].map(moveOf), [
    'next',
    'next',
    'previous',
    'previous',
    'down',
    'up',
    null,
  ]);
});

test("ownValues: the caller's values by template, not other reviewers' or end users'", () => {
  const annotations = {
    t1: { me: { value: true }, other: { value: false } },
    t2: { other: { value: 3 } },
    t3: { 'end_user:me': { value: 'x' }, me: { value: ['a'] } },
  };
  assert.deepEqual(ownValues(annotations, 'me'), { t1: true, t3: ['a'] });
  assert.deepEqual(ownValues(undefined, 'me'), {});
});
