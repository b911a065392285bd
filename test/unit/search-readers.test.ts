import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { openSqlite } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { RecordSelection } from '../../src/store/record-selection.ts';
import { SqliteSearch } from '../../src/store/search-sqlite.ts';

/** A migrated SQLite file store with at most `readers` reader threads, removed after the test. */
async function migratedStore(t: TestContext, readers: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-readers-'));
  const store = openSqlite(path.join(dir, 'db.sqlite'), { readers });
  t.after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await migrate(store);
  return store;
}

test('a reader thread starts ahead of the first search when there are records, not on an empty store', async (t) => {
  const store = await migratedStore(t, 2);

  const empty = new SqliteSearch(store);
  empty.warmReaders();
  assert.equal(empty.readerThreads, 0, 'an empty store starts no reader');

  store
    .sqlite!.prepare(
      "insert into records (id, project_id, run_id, type, created_at, updated_at) values (?, 'p', 'r', 'session', 1, 1)",
    )
    .run(randomUUID());
  const used = new SqliteSearch(store);
  used.warmReaders();
  used.warmReaders();
  assert.equal(used.readerThreads, 1, 'one reader, started once');
});

test("searches and exports share the store's reader threads, no more than its size", async (t) => {
  const store = await migratedStore(t, 1);
  const ids = [randomUUID(), randomUUID()];
  for (const [i, id] of ids.entries())
    store
      .sqlite!.prepare(
        "insert into records (id, project_id, run_id, type, created_at, updated_at) values (?, 'p', 'r', 'session', ?, ?)",
      )
      .run(id, i + 1, i + 1);
  const search = new SqliteSearch(store);
  const selection = new RecordSelection(store, search);
  const q = { projectId: 'p', runId: 'r', types: ['session'], tree: null, sort: null };

  // An export held open on the one thread, and a search beside it: both answered by that thread.
  const exported = selection.exportText(q, null, { format: 'jsonl', columns: null, redact: false }, 1);
  const first = await exported.next();
  const page = JSON.parse(
    (
      await search.searchPage(
        { ...q, offset: 0, limit: 10 },
        { startingToken: 0, limit: 10, includeCounts: false },
      )
    ).toString(),
  );
  const rest: string[] = [];
  for await (const part of exported) rest.push(part.toString());
  assert.deepEqual(page.records.map((r: { id: string }) => r.id).sort(), [...ids].sort());
  const lines = (first.value!.toString() + rest.join('')).trim().split('\n');
  assert.deepEqual(lines.map((l) => JSON.parse(l).id).sort(), [...ids].sort());
  assert.equal(store.readers!.running, 1, 'one thread for both');
  assert.equal(search.readerThreads, 1);
});

test('an export holds no snapshot between its chunks: the WAL starts over while it is open', async (t) => {
  const store = await migratedStore(t, 1);
  const h = store.sqlite!;
  const insert = h.prepare(
    "insert into records (id, project_id, run_id, type, created_at, updated_at) values (?, 'p', 'r', 'session', ?, ?)",
  );
  for (let i = 0; i < 5; i++) insert.run(randomUUID(), i + 1, i + 1);
  const selection = new RecordSelection(store, new SqliteSearch(store));
  const q = { projectId: 'p', runId: 'r', types: ['session'], tree: null, sort: null };
  const exported = selection.exportText(q, null, { format: 'jsonl', columns: null, redact: false }, 2);
  const lines = [String((await exported.next()).value)];
  // Written while the export is open; a snapshot held by it would keep these frames in the WAL.
  insert.run(randomUUID(), 10, 10);
  const [cp] = h.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
  assert.equal(cp.busy, 0, 'no reader holds the WAL');
  assert.equal(fs.statSync(`${h.name}-wal`).size, 0);
  for await (const chunk of exported) lines.push(String(chunk));
  // The roots listed when it began, newest first: the one written meanwhile is not among them.
  assert.equal(lines.join('').trim().split('\n').length, 5);
});

test("a selection's count and batches are read on a reader thread, not on the main connection", async (t) => {
  const store = await migratedStore(t, 1);
  const insert = store.sqlite!.prepare(
    "insert into records (id, project_id, run_id, type, created_at, updated_at) values (?, 'p', 'r', 'session', ?, ?)",
  );
  for (let i = 0; i < 3; i++) insert.run(randomUUID(), i + 1, i + 1);
  const selection = new RecordSelection(store, new SqliteSearch(store));
  const q = { projectId: 'p', runId: 'r', types: ['session'], tree: null, sort: null };
  assert.equal(store.readers?.running, 0);
  assert.equal(await selection.count(q), 3);
  assert.equal(store.readers?.running, 1, 'the count started the reader thread');
  const first = await selection.nextBatch(q, null, 2);
  assert.deepEqual(
    first.map((p) => p.created_at),
    [3, 2],
  );
  assert.deepEqual(
    (await selection.nextBatch(q, first[1], 2)).map((p) => p.created_at),
    [1],
  );
});
