import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ingestWriterPragmas, openSqlite } from '../../src/store/db.ts';
import { ingestStore } from '../../src/store/ingest.ts';
import { SqliteWriter } from '../../src/store/sqlite-writer.ts';

/** A database file with a table `t (id integer primary key, v text)`, and a writer thread on it. */
function setup(t: { after(fn: () => unknown): void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-writer-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'db.sqlite');
  const store = openSqlite(file);
  const h = store.sqlite!;
  h.exec('create table t (id integer primary key, v text)');
  const writer = new SqliteWriter(file, ingestWriterPragmas(h));
  t.after(async () => {
    await writer.close();
    await store.close();
  });
  const rows = () => h.prepare('select id, v from t order by id').all();
  return { writer, rows };
}

const INSERT = 'insert into t (id, v) values (?, ?)';

test('the writer thread commits a transaction sent without waiting for its steps', async (t) => {
  const { writer, rows } = setup(t);
  void writer.begin();
  void writer.run([
    [INSERT, [1, 'a']],
    [INSERT, [2, 'b']],
  ]);
  // Reads inside the transaction see its writes; one call answers the rows of several argument lists.
  const seen = await writer.all<{ v: string }>('select v from t where id = ?', [[2], [1], [9]]);
  assert.deepEqual(
    seen.map((r) => r.v),
    ['b', 'a'],
  );
  assert.deepEqual(rows(), [], 'nothing is visible before the commit');
  await writer.commit();
  assert.deepEqual(rows(), [
    { id: 1, v: 'a' },
    { id: 2, v: 'b' },
  ]);
});

test('a failed step ends its transaction: later steps are refused and the commit reports the failure', async (t) => {
  const { writer, rows } = setup(t);
  void writer.begin();
  const first = writer.run([[INSERT, [1, 'a']]]);
  const clash = writer.run([[INSERT, [1, 'again']]]);
  const after = writer.run([[INSERT, [2, 'b']]]);
  await first;
  await assert.rejects(clash, /UNIQUE constraint failed/);
  // Sent after the failure: not written, not even outside the transaction.
  await assert.rejects(after, /UNIQUE constraint failed/);
  await assert.rejects(writer.commit(), /UNIQUE constraint failed/);
  await writer.rollback();
  assert.deepEqual(rows(), []);

  // The next transaction starts clean.
  void writer.begin();
  void writer.run([[INSERT, [3, 'c']]]);
  await writer.commit();
  assert.deepEqual(rows(), [{ id: 3, v: 'c' }]);
});

test('a call whose arguments cannot be sent fails at once, and the writer goes on', async (t) => {
  const { writer, rows } = setup(t);
  await assert.rejects(writer.run([[INSERT, [1, () => 'not data']]]), /could not be cloned/);
  void writer.begin();
  void writer.run([[INSERT, [2, 'b']]]);
  await writer.commit();
  assert.deepEqual(rows(), [{ id: 2, v: 'b' }]);
});

test('a rollback leaves nothing of the transaction', async (t) => {
  const { writer, rows } = setup(t);
  void writer.begin();
  await writer.run([[INSERT, [1, 'a']]]);
  await writer.rollback();
  assert.deepEqual(rows(), []);
});

test('ingestion into an in-memory SQLite database is refused, not left waiting', async () => {
  const store = openSqlite(':memory:');
  const ingest = ingestStore(store);
  try {
    await assert.rejects(
      ingest.run(function* () {
        yield { op: 'ids', ids: ['x'] };
        return { plan: null, runId: 'r', result: null };
      }),
      /needs a database file/,
    );
  } finally {
    await ingest.close();
    await store.close();
  }
});
