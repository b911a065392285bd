import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderTemplate, TemplateSyntaxError, templateVariables } from '../../src/domain/templates.ts';

test('variables render without HTML escaping, nested paths resolve', () => {
  const r = renderTemplate('Q: {{question}} <{{a.b}}> {{{raw}}}', {
    question: 'a & b',
    a: { b: 'x"y' },
    raw: '<p>',
  });
  assert.equal(r.text, 'Q: a & b <x"y> <p>');
  assert.deepEqual(r.missing, []);
});

test('objects and arrays render as JSON, numbers and booleans as text', () => {
  const r = renderTemplate('{{o}} {{l}} {{n}} {{t}}', { o: { k: 1 }, l: [1, 'a'], n: 0, t: false });
  assert.equal(r.text, '{"k":1} [1,"a"] 0 false');
});

test('a missing or null variable is reported by its path, once', () => {
  const r = renderTemplate('{{a}} {{b.c}} {{a}} {{d}}', { b: {}, d: null });
  assert.equal(r.text, '   ');
  assert.deepEqual(r.missing, ['a', 'b.c', 'd']);
});

test('sections iterate and their inner names resolve against the item', () => {
  const r = renderTemplate('{{#items}}[{{name}}]{{/items}}', { items: [{ name: 'x' }, { name: 'y' }] });
  assert.equal(r.text, '[x][y]');
  assert.deepEqual(templateVariables('{{#items}}{{name}}{{/items}} {{q.r}}'), ['items', 'name', 'q.r']);
});

test('a broken template is a TemplateSyntaxError', () => {
  assert.throws(() => renderTemplate('{{#open}} never closed', {}), TemplateSyntaxError);
  assert.throws(() => templateVariables('{{#open}}'), TemplateSyntaxError);
});
