/** The `spanbase` command, run as a user runs it (bin/spanbase.js in a child process). */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { storesUnderTest } from '../helpers/server.ts';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'spanbase.js');

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string>): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), SPANBASE_SCRYPT_COST: '1024', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the spanbase command: usage and help', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-cli-'));
  const env = { SPANBASE_DATA_DIR: dataDir };
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test('no arguments prints the usage and exits 2 instead of starting a server', () => {
    const r = cli([], env);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /usage: spanbase <command>/);
    assert.match(r.stderr, /serve {2,}serve the HTTP API/);
    assert.deepEqual(fs.readdirSync(dataDir), [], 'no store was opened');
  });

  test('-h, --help and help print the usage on stdout', () => {
    for (const flag of ['-h', '--help', 'help']) {
      const r = cli([flag], env);
      assert.equal(r.status, 0, flag);
      assert.match(r.stdout, /usage: spanbase <command>/);
      assert.match(r.stdout, /users create/);
    }
  });

  test("each command's --help says what it does, with an example", () => {
    for (const name of ['serve', 'users create', 'users list', 'keys create', 'secrets rotate']) {
      const r = cli([...name.split(' '), '--help'], env);
      assert.equal(r.status, 0, name);
      assert.match(r.stdout, new RegExp(`^usage: spanbase ${name}`), name);
      assert.match(
        r.stdout,
        new RegExp(`\\nexample:\\n {2}(\\S+=\\S+ |export \\S+=\\$\\()?spanbase ${name}`),
        name,
      );
    }
    assert.equal(cli(['help', 'keys', 'create'], env).stdout, cli(['keys', 'create', '-h'], env).stdout);
  });

  test('a mistyped flag or command answers in words, with a guess and the usage', () => {
    const flag = cli(['users', 'create', '--emial', 'a@example.com'], env);
    assert.equal(flag.status, 2);
    assert.equal(
      flag.stderr.split('\n')[0],
      'spanbase users create: unknown option --emial (did you mean --email?)',
    );
    assert.doesNotMatch(flag.stderr, /ERR_PARSE_ARGS|positional/);
    const value = cli(['users', 'create', '--email'], env);
    assert.equal(value.stderr.split('\n')[0], 'spanbase users create: --email needs a value');
    const command = cli(['serv'], env);
    assert.equal(command.status, 2);
    assert.equal(command.stderr.split('\n')[0], "spanbase: unknown command 'serv' (did you mean 'serve'?)");
    const verb = cli(['users', 'delete'], env);
    assert.match(verb.stderr, /unknown command 'users delete' \(users create, users list\)/);
  });
});

for (const store of storesUnderTest()) {
  describe(`the spanbase command on the store [${store}]`, () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-cli-'));
    const schema = `cli_${process.pid}_${Date.now().toString(36)}`;
    const url = process.env.SPANBASE_TEST_DATABASE_URL;
    const env: Record<string, string> = {
      SPANBASE_DATA_DIR: dataDir,
      ...(store === 'postgres'
        ? {
            SPANBASE_DATABASE_URL: url!,
            SPANBASE_PG_SCHEMA: schema,
            SPANBASE_SECRET_KEY: '11'.repeat(32),
          }
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
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (store === 'postgres') await admin(`drop schema ${schema} cascade`);
    });

    test('users create refuses what POST /v2/users refuses, naming each option', () => {
      const r = cli(['users', 'create', '--email', 'not-an-email', '--password', 'x'], env);
      assert.equal(r.status, 2);
      const lines = r.stderr.split('\n');
      assert.equal(lines[0], 'spanbase users create: --email: Input should be a valid email');
      assert.match(lines[1], /^spanbase users create: --password: .*8 characters/);
      assert.match(lines[2], /^usage: spanbase users create --email EMAIL/);
    });

    test('users create, users list and keys create work on the store', () => {
      const created = cli(
        ['users', 'create', '--email', 'Ann@Example.com', '--password', 'long enough', '--admin'],
        env,
      );
      assert.equal(created.status, 0, created.stderr);
      const ann = JSON.parse(created.stdout);
      assert.equal(ann.email, 'ann@example.com');
      assert.equal(ann.role, 'admin');
      const again = cli(['users', 'create', '--email', 'ann@example.com'], env);
      assert.equal(again.status, 1);
      assert.equal(again.stderr, 'spanbase: A user with this email already exists\n');
      const list = cli(['users', 'list'], env);
      assert.equal(list.status, 0, list.stderr);
      const emails = list.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).email);
      assert.ok(emails.includes('ann@example.com'), emails.join());
      const key = cli(['keys', 'create', '--email', 'ann@example.com'], env);
      assert.equal(key.status, 0, key.stderr);
      assert.match(key.stdout, /^\S{20,}\n$/);
      const nobody = cli(['keys', 'create', '--email', 'nobody@example.com'], env);
      assert.equal(nobody.status, 1);
      assert.match(nobody.stderr, /no user with email nobody@example.com/);
    });
  });
}
