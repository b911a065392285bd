import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openSqlite } from '../../src/store/db.ts';

function tempStore(t: { after(fn: () => unknown): void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-statements-'));
  const store = openSqlite(path.join(dir, 'db.sqlite'));
  t.after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

/** Counts the statements the handle prepares from now on. */
function countPrepares(h: NonNullable<ReturnType<typeof openSqlite>['sqlite']>): () => number {
  let n = 0;
  const prepare = h.prepare.bind(h);
  h.prepare = ((text: string) => {
    n++;
    return prepare(text);
  }) as typeof h.prepare;
  return () => n;
}

test("Kysely's queries on SQLite prepare each statement once", async (t) => {
  const store = tempStore(t);
  await sql`create table t (id integer primary key, v text)`.execute(store.db);
  const prepared = countPrepares(store.sqlite!);
  for (let i = 0; i < 5; i++) {
    await sql`insert into t (v) values (${`v${i}`})`.execute(store.db);
    const { rows } = await sql<{ n: number }>`select count(*) as n from t where v like ${'v%'}`.execute(
      store.db,
    );
    assert.equal(rows[0].n, i + 1);
  }
  assert.equal(prepared(), 2);
});

test('a kept statement sees a schema change, and the cache stays bounded and correct', async (t) => {
  const store = tempStore(t);
  await sql`create table t (id integer primary key)`.execute(store.db);
  await sql`insert into t (id) values (1)`.execute(store.db);
  const all = () => sql<Record<string, unknown>>`select * from t`.execute(store.db);
  assert.deepEqual((await all()).rows, [{ id: 1 }]);
  await sql`alter table t add column v text default 'x'`.execute(store.db);
  assert.deepEqual((await all()).rows, [{ id: 1, v: 'x' }]);
  // More distinct statements than the cache keeps: each still answers its own query.
  for (let i = 0; i < 600; i++) {
    const { rows } = await sql<{ k: number }>`select ${sql.lit(i)} as k from t`.execute(store.db);
    assert.equal(rows[0].k, i);
  }
  assert.deepEqual((await all()).rows, [{ id: 1, v: 'x' }]);
});
