import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BlockGrams, blockOf, termGrams, termQuery } from '../../src/domain/text-grams.ts';

/** The tokens of a block document, as a set. */
const tokens = (doc: string) => new Set(doc.split(' ').filter(Boolean));
/** Whether a document holds every token the query asks for (the query is "a AND b AND ..."). */
const matches = (doc: string, query: string) => query.split(' AND ').every((t) => tokens(doc).has(t));

describe('trigram block documents', () => {
  test('a block holds every trigram of its texts once, per column, case-folded', () => {
    const g = new BlockGrams();
    g.add('input', 'Hello World');
    g.add('input', 'hello again, world');
    g.add('output', 'bye');
    const doc = g.take();
    const t = tokens(doc);
    assert.equal(t.size, doc.split(' ').length, 'no token twice');
    assert.ok(matches(doc, termQuery('input', 'hello')!));
    assert.ok(matches(doc, termQuery('input', 'WORLD')!));
    assert.ok(matches(doc, termQuery('output', 'bye')!));
    assert.ok(!matches(doc, termQuery('output', 'hello')!), 'columns are apart');
    assert.ok(!matches(doc, termQuery('input', 'goodbye')!));
  });

  test('take starts the next block empty', () => {
    const g = new BlockGrams();
    g.add('input', 'first block');
    g.take();
    assert.equal(g.empty, true);
    g.add('input', 'second');
    const doc = g.take();
    assert.ok(matches(doc, termQuery('input', 'second')!));
    assert.ok(!matches(doc, termQuery('input', 'first')!));
  });

  test('every substring of an indexed text is found (random texts, non-ASCII included)', () => {
    const alphabet = 'abcXYZ éß漢字😀 -"';
    let seed = 1;
    const r = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let n = 0; n < 200; n++) {
      const text = Array.from(
        { length: 5 + Math.floor(r() * 60) },
        () => alphabet[Math.floor(r() * alphabet.length)],
      ).join('');
      const g = new BlockGrams();
      g.add('output', text);
      const doc = g.take();
      const i = Math.floor(r() * (text.length - 3));
      const term = text.slice(i, i + 3 + Math.floor(r() * 10));
      const q = termQuery('output', term);
      if (q) assert.ok(matches(doc, q), `${JSON.stringify(term)} in ${JSON.stringify(text)}`);
    }
  });

  test('terms: too short to narrow, capped at eight trigrams; blocks by arithmetic', () => {
    assert.equal(termQuery('input', 'ab'), null);
    assert.equal(termQuery('input', 'abc')!.split(' AND ').length, 1);
    assert.equal(termQuery('input', 'abcdefghijklmnopqrstuvwxyz')!.split(' AND ').length, 8);
    assert.match(termQuery('output', 'abc')!, /^o[0-9a-z]+$/);
    assert.equal(blockOf(127), 0);
    assert.equal(blockOf(128), 1);
    assert.equal(blockOf(2 ** 33 + 5), 2 ** 26);
  });

  test('the numbers (PostgreSQL) are the tokens (SQLite): takeGrams and termGrams', () => {
    const a = new BlockGrams();
    const b = new BlockGrams();
    for (const g of [a, b]) {
      g.add('input', 'Ünïcode ΣΑΣ text');
      g.add('output', 'other words');
    }
    const grams = a.takeGrams();
    const doc = b.take();
    assert.equal(
      doc,
      [
        ...grams.input.map((g) => `i${g.toString(36)}`),
        ...grams.output.map((g) => `o${g.toString(36)}`),
      ].join(' '),
    );
    assert.equal(a.empty, true);
    assert.equal(
      termQuery('output', 'WORDS'),
      termGrams('WORDS')!
        .map((g) => `o${g.toString(36)}`)
        .join(' AND '),
    );
    assert.ok(termGrams('words')!.every((g) => grams.output.includes(g)));
    assert.equal(termGrams('ab'), null);
    assert.equal(termGrams('abcdefghijklmnopqrstuvwxyz')!.length, 8);
  });
});
