import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { openSqlite } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import {
  attachTextIndex,
  checkTextIndex,
  indexQueued,
  indexedSeq,
  textIndexFile,
  trimQueue,
} from '../../src/store/search-text.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-text-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('the text index: queue, indexing, its own file, and the self-check that rebuilds it', async () => {
  const store = openSqlite(path.join(dir, 'x.db'));
  await migrate(store);
  const h = store.sqlite!;
  assert.equal(attachTextIndex(h), true);
  assert.equal(textIndexFile(h), path.join(dir, 'x-text.db'));
  assert.equal(checkTextIndex(h), true, "a new index file is not yet this database's: made so");
  const insert = h.prepare(
    "insert into records (id, project_id, run_id, type, created_at, updated_at, input_text, output_text) values (?, 'p', 'r', ?, 1, 1, ?, ?)",
  );
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  insert.run(ids[0], 'session', 'Hello World', null);
  insert.run(ids[1], 'trace', 'hello there', 'bye');
  insert.run(ids[2], 'llm', null, null); // no text: not queued
  const queued = () =>
    h.prepare('select count(*) from records_text_queue where seq > ?').pluck().get(indexedSeq(h));
  const hits = (table: string, q: string) =>
    h.prepare(`select rowid from text.${table} where ${table} match ?`).pluck().all(q);
  assert.equal(queued(), 2);
  assert.equal(indexQueued(h, 100), 2);
  assert.equal(queued(), 0);
  assert.equal(trimQueue(h), 1, 'taken entries are trimmed but the newest');
  const extra = randomUUID();
  insert.run(extra, 'trace', 'late arrival', null);
  assert.equal(queued(), 1, 'an entry after a trim is above the position');
  indexQueued(h, 100);
  h.prepare('delete from records where id = ?').run(extra);
  indexQueued(h, 100);
  assert.deepEqual(hits('records_text_session', 'input : ("hel" AND "wor")'), [1]);
  assert.deepEqual(hits('records_text_trace', 'input : ("hel")'), [2]);
  // A change is queued again (twice if it changes twice) and re-indexed.
  h.prepare("update records set input_text = 'changed' where id = ?").run(ids[1]);
  h.prepare("update records set output_text = 'changed too' where id = ?").run(ids[1]);
  assert.equal(queued(), 2);
  indexQueued(h, 100);
  assert.deepEqual(hits('records_text_trace', 'input : ("hel")'), []);
  assert.deepEqual(hits('records_text_trace', 'output : ("too")'), [2]);
  // Deleted: gone from the index.
  h.prepare('delete from records where id = ?').run(ids[0]);
  indexQueued(h, 100);
  assert.deepEqual(hits('records_text_session', 'input : ("hel")'), []);
  // The index belongs to this database and its probe still names the same record: kept.
  assert.equal(checkTextIndex(h), false);
  // Rowids renumbered (as a VACUUM may do): the probe names another record, so it is rebuilt.
  h.prepare("update text.meta set value = ? where key = 'probe_id'").run(randomUUID());
  assert.equal(checkTextIndex(h), true);
  assert.equal(queued(), 1, 'every record with text queued again');
  assert.deepEqual(hits('records_text_trace', 'output : ("too")'), []);
  indexQueued(h, 100);
  assert.deepEqual(hits('records_text_trace', 'output : ("too")'), [2]);
  // An index file of another database (or none: deleted): rebuilt.
  h.exec("update text.meta set value = 'other' where key = 'token'");
  assert.equal(checkTextIndex(h), true);
  await store.close();
});
