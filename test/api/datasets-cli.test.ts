/** `spanbase datasets import` and `datasets export`, run as a user runs them (bin/spanbase.js in a child process). */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { storesUnderTest } from '../helpers/server.ts';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'spanbase.js');

function cli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), SPANBASE_SCRYPT_COST: '1024', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

for (const store of storesUnderTest()) {
  describe(`spanbase datasets import / export [${store}]`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-datasets-cli-'));
    const schema = `dscli_${process.pid}_${Date.now().toString(36)}`;
    const url = process.env.SPANBASE_TEST_DATABASE_URL;
    const env: Record<string, string> = {
      SPANBASE_DATA_DIR: path.join(dir, 'data'),
      ...(store === 'postgres'
        ? { SPANBASE_DATABASE_URL: url!, SPANBASE_PG_SCHEMA: schema, SPANBASE_SECRET_KEY: '22'.repeat(32) }
        : {}),
    };
    const admin = async (sql: string) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(sql);
      await c.end();
    };
    before(async () => {
      if (store === 'postgres') await admin(`create schema ${schema}`);
    });
    after(async () => {
      fs.rmSync(dir, { recursive: true, force: true });
      if (store === 'postgres') await admin(`drop schema ${schema} cascade`);
    });

    test('import a CSV, export it as JSONL and CSV; a bad file names its line and leaves nothing', () => {
      const csv = path.join(dir, 'questions.csv');
      fs.writeFileSync(csv, 'input,output\n"What is 2+2?",4\n"Capital of France, please",Paris\n');
      const imported = cli(['datasets', 'import', csv, '--name', 'questions'], env);
      assert.equal(imported.status, 0, imported.stderr);
      const ds = JSON.parse(imported.stdout);
      assert.equal(ds.num_rows, 2);
      assert.match(imported.stderr, /imported 2 rows into dataset questions/);

      const jsonl = cli(['datasets', 'export', 'questions'], env);
      assert.equal(jsonl.status, 0, jsonl.stderr);
      assert.deepEqual(
        jsonl.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
        [
          { input: 'What is 2+2?', output: '4' },
          { input: 'Capital of France, please', output: 'Paris' },
        ],
      );
      const out = path.join(dir, 'out.csv');
      const asCsv = cli(
        ['datasets', 'export', ds.id, '--format', 'csv', '--version', '1', '--output', out],
        env,
      );
      assert.equal(asCsv.status, 0, asCsv.stderr);
      assert.equal(
        fs.readFileSync(out, 'utf8'),
        'input,output\nWhat is 2+2?,4\n"Capital of France, please",Paris\n',
      );

      const bad = path.join(dir, 'bad.jsonl');
      fs.writeFileSync(bad, '{"input":"a"}\n42\n');
      const refused = cli(['datasets', 'import', bad, '--name', 'bad'], env);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /Line 2: a JSONL line must be a JSON object/);
      const missing = cli(['datasets', 'export', 'bad'], env);
      assert.notEqual(missing.status, 0);
      assert.match(missing.stderr, /Dataset not found/);
    });
  });
}
