/**
 * Provider tokens never leave the service: a session over every integration and Signals route, with
 * good and bad requests carrying tokens in every way a client might send them, runs against a server
 * that logs at level trace into a captured stream. Every response (status line, headers, body) and
 * every log line is then searched for every token, raw, encoded, and by fragments.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { startTestServer, storesUnderTest } from '../helpers/server.ts';

const GW = '/v2/integrations/example_gateway';

/**
 * 32 random capital letters: long runs of capitals are rare in logs and responses, so even a short
 * fragment of one (a JSON parser quotes about 10 characters around a fault) is found, not mistaken.
 */
const randomPart = () =>
  Array.from({ length: 32 }, () => String.fromCharCode(65 + crypto.randomInt(26))).join('');
const FRAGMENT = 6;

/** Every form in which a token could show up, and short fragments of its random part. */
function formsOf(token: string, random: string): string[] {
  const forms = new Set<string>([
    token,
    JSON.stringify(token).slice(1, -1),
    encodeURIComponent(token),
    Buffer.from(token).toString('base64'),
    Buffer.from(token).toString('base64url'),
    Buffer.from(token).toString('hex'),
  ]);
  for (let i = 0; i + FRAGMENT <= random.length; i++) forms.add(random.slice(i, i + FRAGMENT));
  return [...forms];
}

/** The texts that hold a form of one of the tokens, with the form found. */
function leaks(texts: string[], tokens: { token: string; random: string }[]): string[] {
  const found: string[] = [];
  for (const { token, random } of tokens) {
    const forms = formsOf(token, random);
    for (const text of texts) {
      const hit = forms.find((f) => text.includes(f));
      if (hit) found.push(`${JSON.stringify(hit)} in: ${text.slice(0, 300)}`);
    }
  }
  return found;
}

for (const store of storesUnderTest()) {
  describe(`provider tokens never leak [${store}]`, () => {
    test('the search finds a planted token (so the real check can fail)', () => {
      const random = randomPart();
      const t = { token: `pt-${random}`, random };
      assert.equal(leaks(['nothing here'], [t]).length, 0);
      assert.equal(leaks([`{"msg":"${t.token}"}`], [t]).length, 1);
      assert.equal(leaks([Buffer.from(t.token).toString('base64')], [t]).length, 1);
      assert.equal(leaks([`..."token":pt-${random.slice(0, 7)}" is not valid JSON`], [t]).length, 1);
      assert.equal(leaks([`..."${random.slice(-7)}", ]" is not valid JSON`], [t]).length, 1);
    });

    test('no response and no log line of a whole session holds a provider token', async () => {
      const logs: string[] = [];
      const s = await startTestServer(store, { SPANBASE_BODY_LIMIT_BYTES: '65536' }, { logs });
      const seen: string[] = [];
      const tokens: { token: string; random: string }[] = [];
      const tok = (shape: 'plain' | 'odd' = 'plain') => {
        const random = randomPart();
        const token = shape === 'plain' ? `pt-${random}` : `p"t\\é ${random}`;
        tokens.push({ token, random });
        return token;
      };
      const call = async (
        method: string,
        url: string,
        body?: unknown,
        auth?: string | Record<string, string> | null,
      ) => {
        const r = await s.call(method, url, body, auth);
        seen.push(`${method} ${url} → ${r.status} ${JSON.stringify(r.headers)}\n${r.text}`);
        return r;
      };
      try {
        const a = await s.user();
        const b = await s.user();
        const gw = (token: unknown, extra: object = {}) => ({
          endpoint: 'https://gateway.example.com/v1',
          use_case: 'chat',
          token,
          ...extra,
        });

        // Good requests.
        const created = await call('PUT', GW, gw(tok(), { multi_modal_config: { max_files: 2 } }), a.key);
        assert.equal(created.status, 200, created.text);
        const id = created.body.id;
        const latest = tok('odd');
        assert.equal((await call('PUT', GW, gw(latest), a.key)).status, 200);
        assert.equal(await s.running.services.integrations.tokenFor(id), latest, 'the token did go in');
        assert.equal((await call('PUT', GW, gw(tok()), b.key)).status, 200);
        await call('GET', '/v2/integrations', undefined, a.key);
        await call('GET', `/v2/integrations/${id}`, undefined, a.key);
        await call('POST', `/v2/integrations/${id}/users`, [{ user_id: b.id, role: 'viewer' }], a.key);
        await call('PATCH', `/v2/integrations/${id}/users/${b.id}`, { role: 'editor' }, a.key);
        await call('GET', `/v2/integrations/${id}/users`, undefined, b.key);
        const g = await call('POST', '/v2/groups', { name: `g-${crypto.randomUUID()}` });
        await call('POST', `/v2/groups/${g.body.id}/members`, [{ user_id: b.id }]);
        await call('POST', `/v2/integrations/${id}/groups`, [{ group_id: g.body.id, role: 'viewer' }], a.key);
        await call('PATCH', `/v2/integrations/${id}/groups/${g.body.id}`, { role: 'owner' }, a.key);
        await call('GET', `/v2/integrations/${id}/groups`, undefined, b.key);
        await call('GET', '/v2/integrations', undefined, b.key);
        // The editor updates their own (a new one), with a token.
        await call('PUT', GW, gw(tok()), b.key);

        // Signals, with the integration, and with a stray `token` field that must be ignored.
        const { projectId, logStreamId } = await projectWithLogStream(s, a.key);
        const url = `/v2/projects/${projectId}/runs/${logStreamId}/signals/configuration`;
        assert.equal(
          (await call('PUT', url, { integration_id: id, model: 'm', token: tok() }, a.key)).status,
          200,
        );
        await call('GET', url, undefined, a.key);
        await call('PUT', url, { integration_id: crypto.randomUUID(), token: tok() }, a.key);

        // Bad requests that carry a token.
        const bad = async (body: unknown, auth: string | Record<string, string> | null = a.key) => {
          const r = await call('PUT', GW, body, auth);
          assert.ok(r.status >= 400 && r.status < 500, `${r.status} ${r.text}`);
          return r;
        };
        await bad(gw(tok(), { endpoint: 'ftp://gateway.example.com' }));
        await bad(gw(tok(), { endpoint: 'not a url' }));
        await bad(gw(tok(), { use_case: 5 }));
        await bad(gw(tok(), { multi_modal_config: { max_files: 0, max_file_size_bytes: 'big' } }));
        await bad(gw(tok(), { multi_modal_config: [1, 2] }));
        await bad(gw(`${tok()}${'x'.repeat(16400)}`));
        await bad(gw({ value: tok() }));
        await bad(gw([tok()]));
        await bad({ token: tok() });
        await bad(JSON.stringify(tok()));
        await bad([tok()]);
        await bad(gw(tok()), null);
        await bad(gw(tok()), 'sb_wrong_key');
        await bad(gw(tok()), { 'service-api-key': a.key, 'content-type': 'text/plain' });
        await bad(gw(`${tok()}${'y'.repeat(70_000)}`));
        // Malformed JSON around a token, in every place a parser may quote.
        const t1 = tok();
        await bad(`{"endpoint":"https://gateway.example.com","use_case":"c","token":${t1}}`);
        await bad(`{"token":"${tok()}" "use_case":"c"}`);
        await bad(`{"token":"${tok()}\\q"}`);
        await bad(`{"token":"${tok()}`);
        await bad(`{"token":"${tok()}"}}`);
        await bad(`{"use_case":"c", "x": nope, "token":"${tok()}"}`);
        await bad(`{"token":"${tok()}", "x": tru}`);
        await bad(`["${tok()}", ]`);
        await bad(`{"token":"${tok()}\u0001"}`);

        // Deleting answers nothing secret either.
        await call('DELETE', `/v2/integrations/${id}/groups/${g.body.id}`, undefined, a.key);
        await call('DELETE', `/v2/integrations/${id}`, undefined, a.key);

        // The capture really captured: request lines of the session are in the log.
        assert.ok(logs.length > 50, `only ${logs.length} log lines`);
        assert.ok(logs.some((l) => l.includes('/v2/integrations/example_gateway')));
        assert.ok(logs.some((l) => l.includes('"statusCode":422')));
        assert.ok(seen.some((t) => t.includes('json_invalid')));

        const found = leaks([...seen, ...logs], tokens);
        assert.deepEqual(found, [], 'a provider token left the service');

        // Nor is any stored in clear.
        const db = s.running.services.store.db;
        for (const table of ['integrations', 'integration_collaborators', 'signals_configurations']) {
          const rows = await sql<any>`select * from ${sql.table(table)}`.execute(db);
          assert.deepEqual(leaks([JSON.stringify(rows.rows)], tokens), [], table);
        }
      } finally {
        await s.close();
      }
    });
  });
}
