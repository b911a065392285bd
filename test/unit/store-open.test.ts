import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { openSqlite, openStore } from '../../src/store/db.ts';

test('a data directory that cannot be used is named, with the reason', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-open-'));
  try {
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, '');
    const open = (dir: string) => () => openStore(loadConfig({ SPANBASE_DATA_DIR: dir }));
    assert.throws(open(file), {
      message: `cannot create the data directory ${file} (SPANBASE_DATA_DIR): a file (not a directory) has that name`,
    });
    assert.throws(open(path.join(file, 'sub')), {
      message: `cannot create the data directory ${path.join(file, 'sub')} (SPANBASE_DATA_DIR): a part of the path is a file, not a directory`,
    });
    const dir = path.join(root, 'dir');
    fs.mkdirSync(path.join(dir, 'spanbase.db'), { recursive: true });
    assert.throws(open(dir), {
      message: `cannot open the database ${path.join(dir, 'spanbase.db')}: it is a directory`,
    });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('closing a SQLite store closes its connection, also when no query went through Kysely', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-open-'));
  const file = path.join(root, 'spanbase.db');
  // Descriptors open on the database file (Linux): a connection left open keeps one.
  const held = () =>
    fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`) === file;
      } catch {
        return false;
      }
    }).length;
  try {
    // Read through the handle alone, as an export's connection does (store/export-read.ts).
    const store = openSqlite(file);
    store.sqlite!.prepare('select 1').get();
    assert.equal(held(), 1);
    await store.close();
    assert.equal(store.sqlite!.open, false);
    assert.equal(held(), 0);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
