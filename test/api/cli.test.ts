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

  test('no arguments prints the list of commands on stdout and exits 0, starting no server', () => {
    const r = cli([], env);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /usage: spanbase <command>/);
    assert.match(r.stdout, /serve {2,}serve the HTTP API/);
    assert.match(r.stdout, /import {2,}load JSON lines/);
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

    /** JSON lines of `n` traces (each with one llm span) in one session. */
    const traceLines = (n: number) => {
      const session = crypto.randomUUID();
      return Array.from({ length: n }, (_, i) =>
        JSON.stringify({
          id: crypto.randomUUID(),
          session_id: session,
          name: `t${i}`,
          input: `question ${i}`,
          output: `answer ${i}`,
          spans: [{ id: crypto.randomUUID(), type: 'llm', name: 'llm', input: 'q', output: 'a' }],
        }),
      ).join('\n');
    };

    test('import counts the records it added; an export loads into another project with --new-ids', () => {
      const file = path.join(dataDir, 'traces.jsonl');
      fs.writeFileSync(file, traceLines(3));
      const first = cli(['import', file, '--project', 'src-app', '--log-stream', 'prod'], env);
      assert.equal(first.status, 0, first.stderr);
      // 3 traces, 3 spans and their session.
      assert.equal(first.stderr, 'spanbase: added 7 records from 3 lines\n');
      const again = cli(['import', file, '--project', 'src-app', '--log-stream', 'prod'], env);
      assert.equal(again.status, 0, again.stderr);
      assert.equal(
        again.stderr,
        'spanbase: added 0 records from 3 lines (7 records already stored, updated)\n',
      );

      const exported = path.join(dataDir, 'sessions.jsonl');
      const e = cli(
        [
          'export',
          '--project',
          'src-app',
          '--log-stream',
          'prod',
          '--root-type',
          'session',
          '--output',
          exported,
        ],
        env,
      );
      assert.equal(e.status, 0, e.stderr);
      assert.equal(e.stderr, 'spanbase: exported 1 session\n');

      // Into another project, the ids are taken: refused, naming the option, and nothing is left.
      const clash = cli(['import', exported, '--project', 'copy-app', '--log-stream', 'copy'], env);
      assert.equal(clash.status, 1);
      assert.match(clash.stderr, /already used by another record/);
      assert.match(clash.stderr, /--new-ids/);
      assert.match(
        cli(['export', '--project', 'copy-app', '--log-stream', 'copy'], env).stderr,
        /no project copy-app/,
        'the project the import made is gone',
      );
      // Into a new log stream of the same project: the log stream goes, the project stays.
      const stream = cli(['import', exported, '--project', 'src-app', '--log-stream', 'other'], env);
      assert.equal(stream.status, 1);
      assert.match(
        cli(['export', '--project', 'src-app', '--log-stream', 'other'], env).stderr,
        /no log stream other in project src-app/,
      );

      const copy = cli(
        ['import', exported, '--project', 'copy-app', '--log-stream', 'copy', '--new-ids'],
        env,
      );
      assert.equal(copy.status, 0, copy.stderr);
      assert.equal(copy.stderr, 'spanbase: added 7 records from 1 line\n');
      const out = cli(
        ['export', '--project', 'copy-app', '--log-stream', 'copy', '--root-type', 'session'],
        env,
      );
      const [session] = out.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const [original] = fs
        .readFileSync(exported, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.notEqual(session.id, original.id);
      assert.equal(session.traces.length, 3);
      for (const t of session.traces) {
        assert.equal(t.session_id, session.id, 'links follow the new ids');
        assert.equal(t.spans[0].trace_id, t.id);
        assert.equal(t.spans[0].parent_id, t.id);
      }
      assert.deepEqual(
        session.traces.map((t: any) => t.name).sort(),
        original.traces.map((t: any) => t.name).sort(),
      );
    });

    test('a failed import into a log stream that was there removes the records its batches added', () => {
      const traces = () =>
        cli(['export', '--project', 'src-app', '--log-stream', 'prod', '--root-type', 'trace'], env)
          .stdout.trim()
          .split('\n')
          .map((l) => JSON.parse(l).id)
          .sort();
      const before = traces();
      assert.equal(before.length, 3);
      // 1000 traces with a span each fill the first batch (IMPORT_BATCH_RECORDS), written before the
      // bad last line is read.
      const file = path.join(dataDir, 'late-failure.jsonl');
      fs.writeFileSync(file, `${traceLines(1000)}\nnot json\n`);
      const r = cli(['import', file, '--project', 'src-app', '--log-stream', 'prod'], env);
      assert.equal(r.status, 1);
      assert.match(r.stderr, /line 1001: not JSON/);
      assert.deepEqual(traces(), before, 'the traces that were there stay, no others');
      const sessions = cli(
        ['export', '--project', 'src-app', '--log-stream', 'prod', '--root-type', 'session'],
        env,
      ).stdout.trim();
      assert.equal(sessions.split('\n').length, 1, 'the session the file brought is gone too');
    });

    test('export --format csv --columns keeps id and type first', () => {
      const r = cli(
        [
          'export',
          '--project',
          'src-app',
          '--log-stream',
          'prod',
          '--format',
          'csv',
          '--columns',
          'name,input',
        ],
        env,
      );
      assert.equal(r.status, 0, r.stderr);
      const rows = r.stdout.trimEnd().split('\r\n');
      assert.equal(rows[0], 'id,type,name,input');
      assert.match(rows[1], /^[0-9a-f-]{36},trace,t\d,question \d$/);
      assert.equal(r.stderr, 'spanbase: exported 3 traces\n');
    });

    if (store === 'sqlite') {
      test('backup writes the copy readable by its owner only (0600)', () => {
        const file = path.join(dataDir, 'copy.db');
        const r = cli(['backup', file], env);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(fs.statSync(file).mode & 0o777, 0o600);
        const twice = cli(['backup', file], env);
        assert.equal(twice.status, 1);
        assert.match(twice.stderr, /exists; give a new file name/);
        assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      });
    }
  });
}
