import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  type CheckpointerOptions,
  WRITER_JOURNAL_SIZE_LIMIT,
  writerAutocheckpointPages,
} from '../../src/store/checkpointer.ts';
import { ingestWriterPragmas, openSqlite } from '../../src/store/db.ts';
import { attachTextIndex, textIndexFile } from '../../src/store/search-text.ts';

/** Polls `check` every 10 ms until it is true or `ms` have passed; answers whether it became true. */
async function within(ms: number, check: () => boolean): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

/** A writer connection on a new database file, its checkpoint thread started, with a table `t (v blob)`. */
function writer(t: { after(fn: () => unknown): void }, checkpointer: true | CheckpointerOptions) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-checkpointer-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'db.sqlite');
  const store = openSqlite(file, { checkpointer });
  t.after(() => store.close());
  store.migrated?.();
  const h = store.sqlite!;
  h.exec('create table t (v blob)');
  return { file, h };
}

test('the checkpoint thread copies committed pages into the database file, off the writer', async (t) => {
  const { file, h } = writer(t, true);
  // The main connection never checkpoints itself: a checkpoint in its commit would stop every request.
  assert.equal(h.pragma('wal_autocheckpoint', { simple: true }), 0);
  // The ingest writer's own checkpoint is only a safety net far above what this test writes.
  assert.ok(
    ingestWriterPragmas(h).includes(
      `wal_autocheckpoint = ${writerAutocheckpointPages(Number(h.pragma('page_size', { simple: true })))}`,
    ),
  );
  const before = fs.statSync(file).size;
  // About 4 MiB in a few commits: far below the safety net, so only the thread can move it.
  const insert = h.prepare('insert into t (v) values (randomblob(4096))');
  for (let i = 0; i < 4; i++)
    h.transaction(() => {
      for (let j = 0; j < 256; j++) insert.run();
    })();
  assert.ok(fs.statSync(`${file}-wal`).size > 4 * 1024 * 1024, 'the commits are in the WAL');
  assert.ok(
    await within(5000, () => fs.statSync(file).size >= before + 4 * 1024 * 1024),
    'the database file grew by what was committed, with no checkpoint run by the writer',
  );
});

test('the WAL keeps its file while writes go on and is truncated once they stop', async (t) => {
  const { file, h } = writer(t, { idleMs: 300 });
  assert.equal(h.pragma('journal_size_limit', { simple: true }), WRITER_JOURNAL_SIZE_LIMIT);
  const insert = h.prepare('insert into t (v) values (randomblob(4096))');
  const wal = `${file}-wal`;
  const write = () =>
    h.transaction(() => {
      for (let j = 0; j < 64; j++) insert.run();
    })();
  // Writes every 50 ms for a second: never quiet for 300 ms, so the file is never cut.
  let smallest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 20; i++) {
    write();
    await new Promise((resolve) => setTimeout(resolve, 50));
    smallest = Math.min(smallest, fs.statSync(wal).size);
  }
  assert.ok(smallest > 0, 'the WAL file was not truncated while writes went on');
  assert.ok(
    await within(5000, () => fs.statSync(wal).size === 0),
    'the WAL file is truncated once writes stop',
  );
  assert.equal(h.prepare('select count(*) from t').pluck().get(), 20 * 64);
  write();
  assert.equal(h.prepare('select count(*) from t').pluck().get(), 21 * 64, 'writes go on after');
});

test('a large WAL is truncated once only small writes come, though they never stop', async (t) => {
  const { file, h } = writer(t, { idleMs: 300, cutAboveBytes: 2 * 1024 * 1024 });
  const wal = `${file}-wal`;
  const insert = h.prepare('insert into t (v) values (randomblob(4096))');
  // A burst of about 8 MiB in one commit, then a small write every 50 ms (as leases are renewed).
  h.transaction(() => {
    for (let j = 0; j < 2048; j++) insert.run();
  })();
  assert.ok(fs.statSync(wal).size > 4 * 1024 * 1024, 'the burst is in the WAL');
  let cut = false;
  for (let i = 0; i < 60 && !cut; i++) {
    h.prepare('insert into t (v) values (1)').run();
    await new Promise((resolve) => setTimeout(resolve, 50));
    cut = fs.statSync(wal).size < 2 * 1024 * 1024;
  }
  assert.ok(cut, 'the WAL file was cut back while small writes went on');
  assert.equal(h.prepare('select count(*) from t where length(v) = 4096').pluck().get(), 2048);
});

test("the text index's file gets the same checkpoints, though it appears after the thread started", async (t) => {
  const { h } = writer(t, { idleMs: 300 });
  assert.ok(attachTextIndex(h));
  const text = textIndexFile(h) as string;
  const insert = h.prepare('insert into text.meta (key, value) values (?, randomblob(4096))');
  h.transaction(() => {
    for (let j = 0; j < 256; j++) insert.run(`k${j}`);
  })();
  assert.ok(fs.statSync(`${text}-wal`).size > 1024 * 1024, "the writes are in the index's WAL");
  assert.ok(
    await within(5000, () => fs.statSync(`${text}-wal`).size === 0),
    'its WAL is truncated once idle',
  );
  assert.equal(h.prepare('select count(*) from text.meta').pluck().get(), 256);
});

test('truncating the WAL never holds a write back while a reader keeps an older snapshot', async (t) => {
  const { file, h } = writer(t, { idleMs: 100 });
  h.prepare('insert into t (v) values (randomblob(4096))').run();
  // A reader holds a snapshot that needs the WAL: the truncation cannot finish while it is open.
  const reader = openSqlite(file);
  t.after(() => reader.close());
  reader.sqlite!.exec('begin');
  reader.sqlite!.prepare('select count(*) from t').pluck().get();
  h.prepare('insert into t (v) values (randomblob(4096))').run();
  await new Promise((resolve) => setTimeout(resolve, 600)); // idle: truncation attempts go on
  const started = Date.now();
  h.prepare('insert into t (v) values (randomblob(4096))').run();
  assert.ok(Date.now() - started < 1000, `the write waited ${Date.now() - started} ms`);
  reader.sqlite!.exec('commit');
});
