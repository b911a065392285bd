import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { openSqlite } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { SqliteSearch } from '../../src/store/search-sqlite.ts';

test('a reader thread starts ahead of the first search when there are records, not on an empty store', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-readers-'));
  const store = openSqlite(path.join(dir, 'db.sqlite'));
  t.after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await migrate(store);

  const empty = new SqliteSearch(store);
  t.after(() => empty.close());
  empty.warmReaders();
  assert.equal(empty.readerThreads, 0, 'an empty store starts no reader');

  store
    .sqlite!.prepare(
      "insert into records (id, project_id, run_id, type, created_at, updated_at) values (?, 'p', 'r', 'session', 1, 1)",
    )
    .run(randomUUID());
  const used = new SqliteSearch(store);
  t.after(() => used.close());
  used.warmReaders();
  used.warmReaders();
  assert.equal(used.readerThreads, 1, 'one reader, started once');
});
