import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { type Config, loadConfig } from '../../src/config.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { type Running, startServices } from '../../src/server.ts';

export type StoreKind = 'sqlite' | 'postgres';

const PG_SKIPPED =
  'not run on PostgreSQL: set SPANBASE_TEST_DATABASE_URL to run this file on PostgreSQL as well, ' +
  'e.g. SPANBASE_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm test';
let pgSkipShown = false;

/**
 * SQLite always; PostgreSQL too when SPANBASE_TEST_DATABASE_URL is set. Without it, each test file
 * shows a skipped test saying how to run it on PostgreSQL; with SPANBASE_REQUIRE_POSTGRES=1 (as
 * .ci/run sets) it fails instead.
 */
export function storesUnderTest(): StoreKind[] {
  if (process.env.SPANBASE_TEST_DATABASE_URL) return ['sqlite', 'postgres'];
  if (process.env.SPANBASE_REQUIRE_POSTGRES === '1')
    throw new Error('SPANBASE_REQUIRE_POSTGRES=1 but SPANBASE_TEST_DATABASE_URL is not set');
  if (!pgSkipShown) {
    pgSkipShown = true;
    test('[postgres]', { skip: PG_SKIPPED }, () => {});
  }
  return ['sqlite'];
}

export interface Reply {
  status: number;
  body: any;
  headers: Record<string, any>;
  text: string;
}

export interface TestServer {
  store: StoreKind;
  running: Running;
  config: Config;
  adminKey: string;
  adminId: string;
  /** Sends a request; `auth` is an API key (default the admin's), a header object, or null for none. */
  call(
    method: string,
    url: string,
    body?: unknown,
    auth?: string | Record<string, string> | null,
  ): Promise<Reply>;
  /** A new user with the given system role and an API key of their own. */
  user(role?: 'admin' | 'user'): Promise<{ id: string; email: string; key: string; password: string }>;
  close(): Promise<void>;
}

let counter = 0;

export interface TestServerOptions {
  /** Collect every log line the app writes (pino JSON) into this array. */
  logs?: string[];
  /** Level of the collected logs (default trace: everything). */
  logLevel?: string;
  /** PostgreSQL database to work in (default SPANBASE_TEST_DATABASE_URL). */
  databaseUrl?: string;
  /** The clock background jobs read (default the system's). */
  clock?: Clock;
}

/** A server on a fresh store: a temporary SQLite directory, or a new PostgreSQL schema. */
export async function startTestServer(
  store: StoreKind,
  env: Record<string, string> = {},
  opts: TestServerOptions = {},
): Promise<TestServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-test-'));
  const schema = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const url = opts.databaseUrl ?? process.env.SPANBASE_TEST_DATABASE_URL;
  if (store === 'postgres') {
    if (!url) throw new Error('SPANBASE_TEST_DATABASE_URL is not set');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.end();
  }
  const config = loadConfig({
    SPANBASE_DATA_DIR: dataDir,
    SPANBASE_SCRYPT_COST: '1024',
    SPANBASE_LOG_LEVEL: 'silent',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    ...(store === 'postgres' ? { SPANBASE_DATABASE_URL: url, SPANBASE_PG_SCHEMA: schema } : {}),
    ...env,
  });
  const logs = opts.logs;
  const logLevel = opts.logLevel ?? 'trace';
  const running = await startServices(
    logs ? { ...config, logLevel } : config,
    logs
      ? {
          clock: opts.clock,
          logger: {
            level: logLevel,
            stream: {
              write(line: string) {
                logs.push(line.replace(/\n$/, ''));
              },
            },
          },
        }
      : { logger: false, clock: opts.clock },
  );
  const adminKey = running.bootstrap!.apiKey;
  const app = running.app;

  const call: TestServer['call'] = async (method, url, body, auth = adminKey) => {
    const headers: Record<string, string> = {};
    if (typeof auth === 'string') headers['service-api-key'] = auth;
    else if (auth) Object.assign(headers, auth);
    const res = await app.inject({
      method: method as any,
      url,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    let parsed: any = null;
    try {
      parsed = res.body ? JSON.parse(res.body) : null;
    } catch {
      parsed = res.body;
    }
    return { status: res.statusCode, body: parsed, headers: res.headers, text: res.body };
  };

  const admin = await call('GET', '/v2/current_user');
  const server: TestServer = {
    store,
    running,
    config,
    adminKey,
    adminId: admin.body.id,
    call,
    async user(role = 'user') {
      const n = counter++;
      const email = `user${n}_${Date.now().toString(36)}@example.com`;
      const password = `pw-${n}-secret-pass`;
      const u = await call('POST', '/v2/users', { email, password, role });
      if (u.status !== 200) throw new Error(`user create failed: ${u.text}`);
      const k = await call(
        'POST',
        '/v2/users/api_keys',
        { description: 'test' },
        await keyFor(email, password),
      );
      return { id: u.body.id, email, key: k.body.api_key, password };
    },
    async close() {
      await running.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (store === 'postgres') {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA ${schema} CASCADE`);
        await client.end();
      }
    },
  };

  async function keyFor(email: string, password: string): Promise<Record<string, string>> {
    const res = await app.inject({
      method: 'POST',
      url: '/login',
      payload: new URLSearchParams({ username: email, password }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    return { authorization: `Bearer ${JSON.parse(res.body).access_token}` };
  }

  return server;
}
