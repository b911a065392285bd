import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { BLOCK_ROWS, termQuery } from '../../src/domain/text-grams.ts';
import { openSqlite } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import {
  attachTextIndex,
  checkTextIndex,
  indexPending,
  textBacklog,
  textIndexFile,
  trimQueue,
} from '../../src/store/search-text.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-text-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('the text index: full blocks, changed blocks again, its own file, and the self-check that rebuilds it', async () => {
  const store = openSqlite(path.join(dir, 'x.db'));
  await migrate(store);
  const h = store.sqlite!;
  assert.equal(attachTextIndex(h), true);
  assert.equal(textIndexFile(h), path.join(dir, 'x-text.db'));
  assert.equal(checkTextIndex(h), true, "a new index file is not yet this database's: made so");
  const insert = h.prepare(
    "insert into records (id, project_id, run_id, type, created_at, updated_at, input_text, output_text) values (?, 'p', 'r', ?, 1, 1, ?, ?)",
  );
  const blocks = (group: string, column: 'input' | 'output', term: string) =>
    h
      .prepare(`select rowid from text.text_blocks_${group} where text_blocks_${group} match ?`)
      .pluck()
      .all(termQuery(column, term));
  const frontier = () =>
    Number(h.prepare("select value from text.meta where key = 'frontier'").pluck().get());
  const ids = [randomUUID(), randomUUID()];
  insert.run(ids[0], 'session', 'Hello World', null);
  insert.run(ids[1], 'trace', 'hello there', 'bye');
  // The first block is not full: nothing to index yet, and the searches check its records directly.
  for (let i = 0; i < BLOCK_ROWS - 10; i++) insert.run(randomUUID(), 'llm', `filler ${i}`, null);
  assert.equal(textBacklog(h), BLOCK_ROWS - 8, 'the queued inserts only');
  assert.ok(indexPending(h, 100) > 0);
  assert.equal(frontier(), 0);
  assert.equal(textBacklog(h), 0);
  for (let i = 0; i < 19; i++) insert.run(randomUUID(), 'tool', `second block ${i}`, null);
  insert.run(randomUUID(), 'tool', 'quokka', null);
  assert.equal(textBacklog(h), BLOCK_ROWS + 20, 'a full block is waiting, and the queue');
  indexPending(h, 100);
  assert.equal(frontier(), BLOCK_ROWS, 'the full block is indexed, the second is not yet full');
  assert.equal(textBacklog(h), 0);
  assert.deepEqual(blocks('session', 'input', 'WORLD'), [0]);
  assert.deepEqual(blocks('trace', 'input', 'hello'), [0]);
  assert.deepEqual(blocks('trace', 'output', 'bye'), [0]);
  assert.deepEqual(blocks('trace', 'input', 'bye'), [], 'columns are apart');
  assert.deepEqual(blocks('span', 'input', 'filler 7'), [0]);
  assert.deepEqual(blocks('span', 'input', 'quokka'), [], 'rowid 140: above the frontier');
  assert.equal(trimQueue(h) > 0, true, 'taken entries are trimmed but the newest');
  // A change below the frontier is queued and its block indexed again (an update; a delete).
  h.prepare("update records set input_text = 'changed', output_text = 'changed too' where id = ?").run(
    ids[1],
  );
  assert.equal(textBacklog(h), 1);
  indexPending(h, 100);
  assert.deepEqual(blocks('trace', 'input', 'hello'), []);
  assert.deepEqual(blocks('trace', 'output', 'too'), [0]);
  h.prepare('delete from records where id = ?').run(ids[0]);
  indexPending(h, 100);
  assert.deepEqual(blocks('session', 'input', 'hello'), []);
  // The index belongs to this database and its probe still names the same record: kept.
  assert.equal(checkTextIndex(h), false);
  // Rowids renumbered (as a VACUUM may do): the probe names another record, so it is rebuilt.
  h.prepare("update text.meta set value = ? where key = 'probe_id'").run(randomUUID());
  assert.equal(checkTextIndex(h), true);
  assert.equal(frontier(), 0, 'every block indexed again');
  assert.deepEqual(blocks('trace', 'output', 'too'), []);
  indexPending(h, 100);
  assert.deepEqual(blocks('trace', 'output', 'too'), [0]);
  // An index file of another database: rebuilt. An index of an older layout: its tables dropped.
  h.exec("update text.meta set value = 'other' where key = 'token'");
  assert.equal(checkTextIndex(h), true);
  h.exec("create virtual table text.records_text_trace using fts5(input, output, content = '')");
  h.exec("update text.meta set value = 'trigrams' where key = 'format'");
  assert.equal(checkTextIndex(h), true);
  const tables = h.prepare("select name from text.sqlite_master where type = 'table'").pluck().all();
  assert.ok(!tables.includes('records_text_trace'), String(tables));
  assert.ok(tables.includes('text_blocks_trace'));
  await store.close();
});
