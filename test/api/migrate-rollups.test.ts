/**
 * Migration 030 (dashboard rollups) came to main after 031: a store already at 031 without 030 gets
 * it at the next start, the readiness check sees it migrated, and a further start applies nothing.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Migrator, sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/db.ts';
import { latestMigration, migrate, migratedTo } from '../../src/store/migrate.ts';
import { migrations } from '../../src/store/migrations/index.ts';
import { storesUnderTest } from '../helpers/server.ts';

async function pgQuery(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

for (const kind of storesUnderTest()) {
  describe(`migration 030 after 031 [${kind}]`, () => {
    test('a store at 031 without 030 gets 030 at the next start', async () => {
      const url = process.env.SPANBASE_TEST_DATABASE_URL;
      const schema = `t_${process.pid}_${Date.now().toString(36)}_m030`;
      if (kind === 'postgres') await pgQuery(url!, `create schema ${schema}`);
      const store = openStore(
        loadConfig({
          SPANBASE_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-test-')),
          ...(kind === 'postgres' ? { SPANBASE_DATABASE_URL: url!, SPANBASE_PG_SCHEMA: schema } : {}),
        }),
      );
      try {
        assert.ok('031_signal_cost_order' in migrations && '030_rollups' in migrations);
        const without = Object.fromEntries(Object.entries(migrations).filter(([n]) => n !== '030_rollups'));
        const { error } = await new Migrator({
          db: store.db,
          provider: { getMigrations: async () => without },
          ...(store.pgSchema ? { migrationTableSchema: store.pgSchema } : {}),
        }).migrateToLatest();
        assert.equal(error, undefined);
        assert.equal(await migratedTo(store), latestMigration());
        const tables = async () =>
          kind === 'postgres'
            ? (
                await sql<{
                  n: string;
                }>`select count(*) as n from information_schema.tables where table_schema = ${schema} and table_name in ('rollups', 'rollup_counts')`.execute(
                  store.db,
                )
              ).rows[0].n
            : (
                await sql<{
                  n: number;
                }>`select count(*) as n from sqlite_master where type = 'table' and name in ('rollups', 'rollup_counts')`.execute(
                  store.db,
                )
              ).rows[0].n;
        assert.equal(Number(await tables()), 0);

        await migrate(store);
        assert.equal(Number(await tables()), 2);
        const applied = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(
          store.db,
        );
        assert.deepEqual(
          applied.rows.map((r) => r.name),
          Object.keys(migrations).sort(),
        );
        await migrate(store); // nothing left to apply
        assert.equal(await migratedTo(store), latestMigration());
      } finally {
        await store.close();
        if (kind === 'postgres') await pgQuery(url!, `drop schema ${schema} cascade`);
      }
    });
  });
}
