/** What a prompt template version changed, and the variables an input or a dataset row gives. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  missingWarning,
  variablesOfInput,
  variablesOfRow,
  versionChanges,
} from '../../src/domain/prompt-templates.ts';
import { renderTemplate } from '../../src/domain/templates.ts';

const counts = (c: ReturnType<typeof versionChanges>) => [c.lines_added, c.lines_edited, c.lines_removed];

test('the first version changes nothing', () => {
  const c = versionChanges(null, { content: 'a', settings: { model_alias: 'm' } });
  assert.deepEqual(c, {
    content_changed: false,
    settings_changed: false,
    model_changed: false,
    lines_added: 0,
    lines_edited: 0,
    lines_removed: 0,
  });
});

test('lines added, edited and removed: a line replaced in place is one edit', () => {
  const v = (content: string) => ({ content, settings: {} });
  assert.deepEqual(counts(versionChanges(v('a\nb\nc'), v('a\nB\nc'))), [0, 1, 0]);
  assert.deepEqual(counts(versionChanges(v('a\nb'), v('a\nb\nc\nd'))), [2, 0, 0]);
  assert.deepEqual(counts(versionChanges(v('a\nb\nc'), v('c'))), [0, 0, 2]);
  assert.deepEqual(counts(versionChanges(v('a\nb'), v('x\ny\nz'))), [1, 2, 0]);
  assert.deepEqual(counts(versionChanges(v('a\nb'), v('a\nb\n'))), [0, 0, 0], 'a final newline is no line');
  assert.equal(versionChanges(v('a'), v('a')).content_changed, false);
});

test('chat messages compare as role: content lines; settings apart from the model', () => {
  const before = {
    content: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: '{{q}}' },
    ],
    settings: { model_alias: 'gpt-4o', temperature: 0.1 },
  };
  const roleOnly = versionChanges(before, {
    content: [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: '{{q}}' },
    ],
    settings: { temperature: 0.1, model_alias: 'gpt-4o' },
  });
  assert.deepEqual(
    [roleOnly.content_changed, roleOnly.settings_changed, roleOnly.model_changed],
    [true, false, false],
  );
  assert.deepEqual(counts(roleOnly), [0, 1, 0]);
  const model = versionChanges(before, { ...before, settings: { model_alias: 'other', temperature: 0.1 } });
  assert.deepEqual(
    [model.content_changed, model.settings_changed, model.model_changed],
    [false, false, true],
  );
  const dropped = versionChanges(before, { ...before, settings: { temperature: 0.1 } });
  assert.equal(dropped.model_changed, true, 'removing the model is a model change');
  assert.equal(
    versionChanges(before, { ...before, settings: { model_alias: 'gpt-4o' } }).settings_changed,
    true,
  );
});

test('an input string: a JSON object gives its keys, anything else is {{input}}', () => {
  assert.deepEqual(variablesOfInput('{"a": {"b": 1}}'), { a: { b: 1 } });
  assert.deepEqual(variablesOfInput('[1, 2]'), { input: '[1, 2]' });
  assert.deepEqual(variablesOfInput('plain'), { input: 'plain' });
  assert.deepEqual(variablesOfInput('"quoted"'), { input: '"quoted"' });
});

test("a dataset row: its columns, and its input's keys at the top level", () => {
  const vars = variablesOfRow({ input: '{"topic": "tea", "who": {"name": "Ada"}}', output: 'ok' });
  assert.equal(
    renderTemplate('{{topic}} {{who.name}} {{input.topic}} {{output}}', vars).text,
    'tea Ada tea ok',
  );
  assert.deepEqual(variablesOfRow({ input: 'plain', output: null }), { input: 'plain', output: null });
  assert.deepEqual(variablesOfRow({ input: { x: 1 } }), { input: { x: 1 }, x: 1 });
});

test('one warning names each missing variable', () => {
  assert.equal(missingWarning([]), null);
  assert.equal(missingWarning(['a', 'b.c']), "Variable 'a' has no value; Variable 'b.c' has no value");
});
