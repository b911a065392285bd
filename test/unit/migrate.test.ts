import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { openSqlite } from '../../src/store/db.ts';
import { migrate, otherSchemaVanished } from '../../src/store/migrate.ts';
import { setSqlitePageSize } from '../../src/store/migrations/helpers.ts';

test('a migration is retried when another schema, or a table of one, vanished under the introspection', () => {
  assert.equal(otherSchemaVanished('schema "t_1" does not exist', 'c_2'), true);
  assert.equal(otherSchemaVanished('relation "t_1.records" does not exist', 'c_2'), true);
  assert.equal(otherSchemaVanished('schema "c_2" does not exist', 'c_2'), false);
  assert.equal(otherSchemaVanished('relation "c_2.records" does not exist', 'c_2'), false);
  assert.equal(otherSchemaVanished('relation "records" does not exist', 'c_2'), false);
  assert.equal(otherSchemaVanished('syntax error at or near "x"', 'c_2'), false);
  assert.equal(otherSchemaVanished('cache lookup failed for namespace 280383', 'c_2'), true);
  assert.equal(otherSchemaVanished('cache lookup failed for relation 99', 'c_2'), true);
  assert.equal(otherSchemaVanished('cache lookup failed for function 7', 'c_2'), false);
  // Seen in CI: Kysely's introspection calls pg_get_serial_sequence on every column of every schema.
  assert.equal(
    otherSchemaVanished('column "rows_added" of relation "dataset_versions" does not exist', 'c_2'),
    true,
  );
});

test('SQLite page size: a new store gets 16 KiB pages; a store above the size limit keeps its own', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-pages-'));
  try {
    const store = openSqlite(path.join(dir, 'x.db'));
    await migrate(store);
    const h = store.sqlite!;
    assert.equal(h.pragma('page_size', { simple: true }), 16384);
    assert.equal(h.pragma('journal_mode', { simple: true }), 'wal');
    h.exec('create table filler (x text); insert into filler values (randomblob(100000))');
    await setSqlitePageSize(store.db, 8192, 10_000);
    assert.equal(h.pragma('page_size', { simple: true }), 16384, 'too large to convert');
    await setSqlitePageSize(store.db, 8192, 10_000_000);
    assert.equal(h.pragma('page_size', { simple: true }), 8192);
    assert.equal(h.pragma('journal_mode', { simple: true }), 'wal');
    await store.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
