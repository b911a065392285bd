/**
 * No secret leaks: a representative session (password logins, Basic, API keys created, used,
 * exchanged and revoked, bad credentials, ingestion, a provider integration with its token) runs
 * against a server whose logs are captured at level trace — in-process (pino) and as a real child
 * process (every stdout and stderr line). Every API key, password, bearer token and provider token
 * of the session is then searched for, raw and encoded, in every response body (except the one
 * answer that hands it out) and every log line; and passwords, keys and provider tokens must not be
 * stored in clear either.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { startChildServer } from '../helpers/child-server.ts';
import { type Operation, operations } from '../helpers/openapi.ts';
import { type Reply, type StoreKind, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { knownBatch } from '../helpers/world.ts';

type Call = (
  method: string,
  url: string,
  body?: unknown,
  auth?: string | Record<string, string> | null,
) => Promise<Reply>;

interface Secret {
  kind: string;
  value: string;
  /** Labels of the responses allowed to carry it (the one that hands it out). */
  allowedIn: Set<string>;
  /** Extra forms to search for (Basic credentials, the key without its prefix). */
  forms: string[];
}

interface Seen {
  label: string;
  text: string;
}

const rand = (n = 12) => crypto.randomBytes(n).toString('base64url');

/** Every form in which a secret could show up: raw, JSON-escaped, URL-encoded, base64. */
function formsOf(s: Secret): string[] {
  const out = new Set<string>([s.value, ...s.forms]);
  for (const v of [s.value, ...s.forms]) {
    out.add(JSON.stringify(v).slice(1, -1));
    out.add(encodeURIComponent(v));
    out.add(Buffer.from(v).toString('base64'));
  }
  return [...out].filter((f) => f.length >= 6);
}

export function findLeaks(secrets: Secret[], responses: Seen[], logLines: string[]): string[] {
  const leaks: string[] = [];
  for (const s of secrets) {
    const forms = formsOf(s);
    for (const r of responses) {
      if (s.allowedIn.has(r.label)) continue;
      const hit = forms.find((f) => r.text.includes(f));
      if (hit) leaks.push(`${s.kind} in the response to ${r.label}`);
    }
    for (const line of logLines) {
      const hit = forms.find((f) => line.includes(f));
      if (hit) leaks.push(`${s.kind} in a log line: ${line.slice(0, 300)}`);
    }
  }
  return leaks;
}

/** Runs the session; returns the secrets it used and every response it saw. */
async function session(call: Call, ops: Operation[], adminPassword: string) {
  const secrets: Secret[] = [];
  const seen: Seen[] = [];
  const secret = (kind: string, value: string, allowedIn: string[] = [], forms: string[] = []) => {
    // Two logins of one user within a second get the same token: each answer may carry it.
    const known = secrets.find((x) => x.value === value);
    if (known) for (const l of allowedIn) known.allowedIn.add(l);
    else secrets.push({ kind, value, allowedIn: new Set(allowedIn), forms });
    return value;
  };
  const has = (key: string) => ops.some((o) => o.key === key);
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const req = async (
    label: string,
    method: string,
    url: string,
    body?: unknown,
    auth?: Parameters<Call>[3],
  ) => {
    const r = await call(method, url, body, auth);
    seen.push({ label, text: r.text });
    return r;
  };
  const expectStatus = (r: Reply, status: number, what: string) =>
    assert.equal(r.status, status, `${what}: ${r.text}`);

  secret('admin password', adminPassword, [], [`admin@localhost:${adminPassword}`]);
  // Password logins, good and bad.
  const adminLogin = await req(
    'admin /login',
    'POST',
    '/login',
    new URLSearchParams({ username: 'admin@localhost', password: adminPassword }).toString(),
    form,
  );
  expectStatus(adminLogin, 200, 'admin login');
  secret('bearer token', adminLogin.body.access_token, ['admin /login']);
  const wrongPw = secret('a wrong password', `wrong-${rand()}`);
  expectStatus(
    await req(
      'bad /login',
      'POST',
      '/login',
      new URLSearchParams({ username: 'admin@localhost', password: wrongPw }).toString(),
      form,
    ),
    401,
    'wrong password',
  );
  const basic = Buffer.from(`admin@localhost:${adminPassword}`).toString('base64');
  expectStatus(
    await req('basic', 'GET', '/v2/current_user', undefined, { authorization: `Basic ${basic}` }),
    200,
    'basic',
  );
  const bearerAdmin = { authorization: `Bearer ${adminLogin.body.access_token}` };

  // A user with a password; a 422 that must not echo a (too short) password.
  const email = `leak-${rand(4).toLowerCase()}@example.com`;
  const pw = `pw-${rand()}-Secret!`;
  const userPw = secret('user password', pw, [], [`${email}:${pw}`]);
  const short = secret('a rejected password', `S${rand(6)}`.slice(0, 7));
  expectStatus(
    await req('short pw', 'POST', '/v2/users', { email, password: short }, bearerAdmin),
    422,
    'short password',
  );
  const user = await req('create user', 'POST', '/v2/users', { email, password: userPw }, bearerAdmin);
  expectStatus(user, 200, 'create user');
  const userLogin = await req(
    'user /v2/login',
    'POST',
    '/v2/login',
    new URLSearchParams({ username: email, password: userPw }).toString(),
    form,
  );
  expectStatus(userLogin, 200, 'user login');
  secret('bearer token', userLogin.body.access_token, ['user /v2/login']);
  const asUser = { authorization: `Bearer ${userLogin.body.access_token}` };

  // API keys: created (the one answer allowed to show it), listed, used three ways, exchanged, revoked.
  const k1 = await req('create key 1', 'POST', '/v2/users/api_keys', { description: 'leak test' }, asUser);
  expectStatus(k1, 200, 'create key');
  secret('API key', k1.body.api_key, ['create key 1'], [k1.body.api_key.replace(/^sb_/, '')]);
  expectStatus(await req('list keys', 'GET', '/v2/users/api_keys', undefined, asUser), 200, 'list keys');
  expectStatus(await req('use key', 'GET', '/v2/current_user', undefined, k1.body.api_key), 200, 'use key');
  expectStatus(
    await req('use key ao', 'GET', '/v2/current_user', undefined, { 'platform-ao-api-key': k1.body.api_key }),
    200,
    'use key',
  );
  const exchanged = await req('key login', 'POST', '/v2/login/api_key', { api_key: k1.body.api_key }, null);
  expectStatus(exchanged, 200, 'key login');
  secret('bearer token', exchanged.body.access_token, ['key login']);
  const badKey = secret('a wrong API key', `sb_${rand(32)}`);
  expectStatus(
    await req('bad key login', 'POST', '/v2/login/api_key', { api_key: badKey }, null),
    401,
    'bad key',
  );
  expectStatus(await req('bad key use', 'GET', '/v2/current_user', undefined, badKey), 401, 'bad key');
  expectStatus(
    await req('bad key 422', 'POST', '/v2/login/api_key', { api_key: badKey, extra: [badKey] }, null),
    401,
    'bad key (extra fields are ignored)',
  );
  expectStatus(
    await req('bad bearer', 'GET', '/v2/current_user', undefined, { authorization: `Bearer ${badKey}` }),
    401,
    'bad bearer',
  );
  expectStatus(
    await req('revoke key', 'DELETE', `/v2/users/api_keys/${k1.body.id}`, undefined, asUser),
    200,
    'revoke',
  );
  expectStatus(
    await req('use revoked', 'GET', '/v2/current_user', undefined, k1.body.api_key),
    401,
    'revoked',
  );

  // Work with a second key: a project, a log stream, records.
  const k2 = await req('create key 2', 'POST', '/v2/users/api_keys', { description: 'work' }, asUser);
  const key = secret('API key', k2.body.api_key, ['create key 2'], [k2.body.api_key.replace(/^sb_/, '')]);
  const project = await req('project', 'POST', '/v2/projects', { name: `leaks-${rand(4)}` }, key);
  expectStatus(project, 200, 'project');
  const ls = await req(
    'log stream',
    'POST',
    `/v2/projects/${project.body.id}/log_streams`,
    { name: 'prod' },
    key,
  );
  expectStatus(ls, 200, 'log stream');
  if (has('POST /v2/projects/{project_id}/traces')) {
    const ingest = await req(
      'ingest',
      'POST',
      `/v2/projects/${project.body.id}/traces`,
      knownBatch(ls.body.id, 2),
      key,
    );
    expectStatus(ingest, 200, 'ingest');
    for (const kind of ['traces', 'sessions']) {
      if (has(`POST /v2/projects/{project_id}/${kind}/search`))
        await req(
          `${kind} search`,
          'POST',
          `/v2/projects/${project.body.id}/${kind}/search`,
          { log_stream_id: ls.body.id },
          key,
        );
    }
  }

  // A provider integration: its token goes in, never comes out.
  if (has('PUT /v2/integrations/example_gateway')) {
    const t1 = secret('provider token', `ptok-${rand(16)}`);
    const t2 = secret('provider token', `ptok-${rand(16)}`);
    const t3 = secret('provider token', `ptok-${rand(16)}`);
    const gw = { endpoint: 'https://gateway.example.com/v1', use_case: 'chat' };
    const i1 = await req('integration', 'PUT', '/v2/integrations/example_gateway', { ...gw, token: t1 }, key);
    expectStatus(i1, 200, 'integration');
    expectStatus(
      await req('integration update', 'PUT', '/v2/integrations/example_gateway', { ...gw, token: t2 }, key),
      200,
      'integration update',
    );
    const bad = await req(
      'integration 422',
      'PUT',
      '/v2/integrations/example_gateway',
      { endpoint: 'not a url', use_case: 5, token: t3, multi_modal_config: { max_files: 0 } },
      key,
    );
    expectStatus(bad, 422, 'integration 422');
    await req(
      'integration token type',
      'PUT',
      '/v2/integrations/example_gateway',
      { ...gw, token: [t3] },
      key,
    );
    if (has('GET /v2/integrations')) await req('integrations', 'GET', '/v2/integrations', undefined, key);
    if (has('GET /v2/integrations/{integration_id}'))
      await req('integration get', 'GET', `/v2/integrations/${i1.body.id}`, undefined, key);
    if (has('PUT /v2/projects/{project_id}/runs/{run_id}/signals/configuration')) {
      const url = `/v2/projects/${project.body.id}/runs/${ls.body.id}/signals/configuration`;
      await req('signals put', 'PUT', url, { integration_id: i1.body.id, model: 'gpt-test' }, key);
      await req('signals get', 'GET', url, undefined, key);
    }
  }
  return { secrets, seen };
}

/** Whether a secret is stored in clear anywhere in the store's files (SQLite) or rows (PostgreSQL). */
async function storedInClear(
  store: StoreKind,
  where: { dataDir: string; pool?: import('pg').Pool | null },
  secrets: Secret[],
): Promise<string[]> {
  let haystack = '';
  if (store === 'sqlite') {
    for (const f of fs.readdirSync(where.dataDir)) {
      if (f.startsWith('spanbase.db'))
        haystack += fs.readFileSync(path.join(where.dataDir, f)).toString('latin1');
    }
  } else if (where.pool) {
    const { rows } = await where.pool.query(
      `select table_name from information_schema.tables where table_schema = current_schema()`,
    );
    for (const { table_name } of rows) {
      const r = await where.pool.query(`select * from "${table_name}"`);
      haystack += JSON.stringify(r.rows);
    }
  }
  return secrets
    .filter((s) => s.kind !== 'bearer token')
    .filter((s) => haystack.includes(s.value))
    .map((s) => `${s.kind} stored in clear`);
}

const summary: string[] = [];

for (const store of storesUnderTest()) {
  describe(`no secret leaks [${store}]`, () => {
    test('the leak scanner finds a planted secret in every form', () => {
      const s: Secret = {
        kind: 'k',
        value: 'sb_plantedSecretValue1234',
        allowedIn: new Set(['ok']),
        forms: [],
      };
      assert.equal(findLeaks([s], [{ label: 'ok', text: s.value }], []).length, 0);
      assert.equal(findLeaks([s], [{ label: 'x', text: `{"a":"${s.value}"}` }], []).length, 1);
      assert.equal(findLeaks([s], [], [`"url":"/x?k=${encodeURIComponent(s.value)}"`]).length, 1);
      assert.equal(findLeaks([s], [], [Buffer.from(s.value).toString('base64')]).length, 1);
    });

    test('in-process, pino at trace: no secret in any response or log line, none stored in clear', async () => {
      const logs: string[] = [];
      const adminPassword = `admin-${rand()}-Pw!`;
      const s = await startTestServer(store, { SPANBASE_ADMIN_PASSWORD: adminPassword }, { logs });
      try {
        const ops = operations((await s.call('GET', '/openapi.json', undefined, null)).body);
        const { secrets, seen } = await session(s.call, ops, adminPassword);
        assert.ok(
          logs.some(
            (l) => l.includes('"level":10') || l.includes('"level":20') || l.includes('incoming request'),
          ),
          'logs were captured at a verbose level',
        );
        const leaks = findLeaks(secrets, seen, logs);
        const stored = await storedInClear(
          store,
          { dataDir: s.config.dataDir, pool: s.running.services.store.pool },
          secrets,
        );
        summary.push(
          `secrets[${store}, in-process]: ${secrets.length} secrets, ${seen.length} responses, ${logs.length} log lines, ${leaks.length + stored.length} leaks`,
        );
        assert.deepEqual([...leaks, ...stored], []);
      } finally {
        await s.close();
      }
    });

    test('child process at trace: no secret in any response or in anything it prints', async () => {
      const adminPassword = `admin-${rand()}-Pw!`;
      const c = await startChildServer(store, {
        captureOutput: true,
        env: { SPANBASE_LOG_LEVEL: 'trace', SPANBASE_ADMIN_PASSWORD: adminPassword },
      });
      try {
        const ops = operations((await c.call('GET', '/openapi.json', undefined, null)).body);
        const { secrets, seen } = await session(c.call, ops, adminPassword);
        secrets.push({ kind: 'initial admin key', value: c.adminKey, allowedIn: new Set(), forms: [] });
        await c.kill('SIGTERM');
        assert.ok(c.lines.length > seen.length, `the child logged (${c.lines.length} lines)`);
        const leaks = findLeaks(secrets, seen, c.lines);
        summary.push(
          `secrets[${store}, child]: ${secrets.length} secrets, ${seen.length} responses, ${c.lines.length} output lines, ${leaks.length} leaks`,
        );
        assert.deepEqual(leaks, []);
      } finally {
        await c.close();
      }
    });
  });
}

after(() => {
  if (summary.length) process.stdout.write(`${summary.join('\n')}\n`);
});
