/**
 * A store migrated only up to (not including) one migration, to test what that migration does to
 * data written before it: `up()` then applies the rest. PostgreSQL gets a schema of its own, dropped
 * by `close()`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { type Store, openStore } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { migrations } from '../../src/store/migrations/index.ts';

export async function storeBefore(
  store: 'sqlite' | 'postgres',
  migration: string,
): Promise<{ store: Store; up: () => Promise<void>; close: () => Promise<void> }> {
  const url = process.env.SPANBASE_TEST_DATABASE_URL;
  const schema = `t_${process.pid}_${Date.now().toString(36)}_m${migration}`;
  if (store === 'postgres') await pgQuery(url!, `create schema ${schema}`);
  const opened = openStore(
    loadConfig({
      SPANBASE_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-test-')),
      ...(store === 'postgres' ? { SPANBASE_DATABASE_URL: url!, SPANBASE_PG_SCHEMA: schema } : {}),
    }),
  );
  // Through migrate(): its retry when another store's schema vanishes under the introspection.
  await migrate(opened, Object.fromEntries(Object.entries(migrations).filter(([name]) => name < migration)));
  return {
    store: opened,
    up: () => migrate(opened),
    close: async () => {
      await opened.close();
      if (store === 'postgres') await pgQuery(url!, `drop schema ${schema} cascade`);
    },
  };
}

async function pgQuery(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}
