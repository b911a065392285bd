import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const token = () => `sk-test-${crypto.randomBytes(18).toString('base64url')}`;
type Person = Awaited<ReturnType<TestServer['user']>>;

for (const store of storesUnderTest()) {
  describe(`integration kinds, models, spend and playground [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let anthropic: FakeProvider;
    const logs: string[] = [];
    const tokens: string[] = [];
    before(async () => {
      s = await startTestServer(
        store,
        {
          SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
          SPANBASE_MODEL_RETRY_BASE_MS: '2',
          SPANBASE_MODEL_MAX_ATTEMPTS: '2',
        },
        { logs },
      );
      fake = await startFakeProvider();
      anthropic = await startFakeProvider({ kind: 'anthropic' });
    });
    after(async () => {
      await fake.close();
      await anthropic.close();
      await s.close();
      // The token never appears in any log line, whatever the tests above did.
      for (const t of tokens) {
        const leaks = logs.filter((l) => l.includes(t) || l.includes(t.slice(0, 12)));
        assert.deepEqual(leaks, [], 'a token appeared in the logs');
      }
      assert.ok(logs.length > 0, 'logs were collected');
    });

    const newToken = () => {
      const t = token();
      tokens.push(t);
      return t;
    };

    async function put(who: Person, kind: string, body: Record<string, unknown>) {
      const r = await s.call('PUT', `/v2/integrations/${kind}`, { token: newToken(), ...body }, who.key);
      assert.equal(r.status, 200, r.text);
      return r.body;
    }

    async function project(owner: Person) {
      const p = await s.call('POST', '/v2/projects', { name: `pg-${crypto.randomUUID()}` }, owner.key);
      assert.equal(p.status, 200, p.text);
      return p.body.id as string;
    }

    test('the kinds are available, and each has its PUT; GET by kind shows settings, never the token', async () => {
      const avail = await s.call('GET', '/v2/integrations/available');
      assert.deepEqual(avail.body.integrations, [
        'example_gateway',
        'openai',
        'anthropic',
        'azure',
        'custom',
      ]);
      const u = await s.user();
      const openai = await put(u, 'openai', { organization_id: 'org-1' });
      assert.equal(openai.name, 'openai');
      await put(u, 'anthropic', { endpoint: anthropic.url });
      await put(u, 'azure', {
        endpoint: fake.url.replace(/\/v1$/, ''),
        deployments: { 'gpt-4o': 'my-gpt4o' },
      });
      await put(u, 'custom', { endpoint: fake.url, models: ['m1', 'm2'], default_model: 'm2' });
      const got = await s.call('GET', '/v2/integrations/openai', undefined, u.key);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.body, { id: openai.id, name: 'openai', organization_id: 'org-1', extra: null });
      const az = await s.call('GET', '/v2/integrations/azure', undefined, u.key);
      assert.equal(az.body.api_version, '2024-10-21');
      assert.deepEqual(az.body.deployments, { 'gpt-4o': 'my-gpt4o' });
      const custom = await s.call('GET', '/v2/integrations/custom', undefined, u.key);
      assert.deepEqual([custom.body.models, custom.body.default_model], [['m1', 'm2'], 'm2']);
      for (const t of tokens) assert.ok(![got.text, az.text, custom.text].some((x) => x.includes(t)));
      // By id it is still the integration record.
      assert.equal(
        (await s.call('GET', `/v2/integrations/${openai.id}`, undefined, u.key)).body.created_by,
        u.id,
      );
      // A second PUT updates the same one.
      assert.equal((await put(u, 'openai', {})).id, openai.id);
      // Another user has none.
      const other = await s.user();
      assert.equal((await s.call('GET', '/v2/integrations/openai', undefined, other.key)).status, 404);
    });

    test('bad bodies are 422 without echoing the token', async () => {
      const u = await s.user();
      const t = newToken();
      for (const [kind, body] of [
        ['custom', { token: t, endpoint: fake.url, models: [] }],
        ['custom', { token: t, endpoint: fake.url, models: ['a'], default_model: 'b' }],
        ['azure', { token: t, endpoint: 'not a url' }],
        ['anthropic', { token: t, endpoint: 'ftp://x' }],
        ['openai', { token: '   ' }],
        ['anthropic', { token: t, authentication_type: 'custom_oauth2' }],
      ] as const) {
        const r = await s.call('PUT', `/v2/integrations/${kind}`, body, u.key);
        assert.equal(r.status, 422, `${kind} ${JSON.stringify(body)}: ${r.text}`);
        assert.ok(!r.text.includes(t));
      }
    });

    test('DELETE by kind removes your integration of that kind (owners)', async () => {
      const u = await s.user();
      await put(u, 'custom', { endpoint: fake.url, models: ['m1'] });
      assert.equal((await s.call('DELETE', '/v2/integrations/custom', undefined, u.key)).status, 200);
      assert.equal((await s.call('GET', '/v2/integrations/custom', undefined, u.key)).status, 404);
      assert.equal((await s.call('DELETE', '/v2/integrations/custom', undefined, u.key)).status, 404);
    });

    test('select: a shared integration becomes yours of its kind, and is what GET by kind answers', async () => {
      const owner = await s.user();
      const u = await s.user();
      const shared = await put(owner, 'custom', { endpoint: fake.url, models: ['shared-model'] });
      const own = await put(u, 'custom', { endpoint: fake.url, models: ['own-model'] });
      assert.equal(own.is_selected, true);
      // Not shared yet: 404.
      assert.equal(
        (await s.call('PUT', `/v2/integrations/${shared.id}/select`, undefined, u.key)).status,
        404,
      );
      const share = await s.call(
        'POST',
        `/v2/integrations/${shared.id}/users`,
        [{ user_id: u.id, role: 'viewer' }],
        owner.key,
      );
      assert.equal(share.status, 200, share.text);
      const sel = await s.call('PUT', `/v2/integrations/${shared.id}/select`, undefined, u.key);
      assert.equal(sel.status, 200, sel.text);
      assert.equal(sel.body.is_selected, true);
      const list = (await s.call('GET', '/v2/integrations', undefined, u.key)).body;
      assert.deepEqual(
        list.map((i: any) => [i.id, i.is_selected]).sort(),
        [
          [own.id, false],
          [shared.id, true],
        ].sort(),
      );
      assert.deepEqual((await s.call('GET', '/v2/integrations/custom', undefined, u.key)).body.models, [
        'shared-model',
      ]);
      assert.deepEqual((await s.call('GET', '/v2/llm_integrations/custom/models', undefined, u.key)).body, [
        'shared-model',
      ]);
    });

    test('models: the provider’s list where it has one, else the configured ones, by kind', async () => {
      const u = await s.user();
      await put(u, 'example_gateway', { endpoint: fake.url, use_case: 'chat' });
      await put(u, 'anthropic', { endpoint: anthropic.url });
      await put(u, 'custom', { endpoint: fake.url, models: ['c1'] });
      await put(u, 'azure', { endpoint: 'http://127.0.0.1:9', deployments: { 'gpt-4o': 'dep' } });
      const all = await s.call('GET', '/v2/llm_integrations', undefined, u.key);
      assert.equal(all.status, 200, all.text);
      assert.deepEqual(Object.keys(all.body).sort(), ['anthropic', 'azure', 'custom', 'example_gateway']);
      assert.deepEqual(all.body.example_gateway, {
        integration_name: 'example_gateway',
        models: fake.models,
        scorer_models: fake.models,
        supports_num_judges: true,
      });
      assert.deepEqual(all.body.anthropic.models, anthropic.models);
      assert.deepEqual(all.body.custom.models, ['c1']);
      assert.deepEqual(all.body.azure.models, ['gpt-4o']);
      // Cached: asking again does not ask the provider again.
      const before = fake.requests.length;
      await s.call('GET', '/v2/llm_integrations/example_gateway/scorer_models', undefined, u.key);
      assert.equal(fake.requests.length, before);
    });

    test('status: ok with a working credential; the provider’s own error, token redacted, when not', async () => {
      const u = await s.user();
      await put(u, 'example_gateway', { endpoint: fake.url, use_case: 'chat' });
      const ok = await s.call('GET', '/v2/integrations/example_gateway/status', undefined, u.key);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.status, 'ok');
      const v = await s.user();
      const t = newToken();
      const r = await s.call(
        'PUT',
        '/v2/integrations/custom',
        { token: t, endpoint: fake.url, models: ['m'] },
        v.key,
      );
      assert.equal(r.status, 200);
      fake.queueFault({ status: 401, body: JSON.stringify({ error: { message: `Invalid key ${t}` } }) });
      const bad = await s.call('GET', '/v2/integrations/custom/status', undefined, v.key);
      assert.equal(bad.status, 200, bad.text);
      assert.equal(bad.body.status, 'error');
      assert.equal(bad.body.error_kind, 'credential');
      assert.equal(bad.body.provider_status, '401');
      assert.match(bad.body.message, /Invalid key \[redacted\]/);
      assert.ok(!bad.text.includes(t));
      // The status call went to the chat route with the default model, one token.
      const last = fake.requests.at(-1)!;
      assert.equal(last.body.model, 'm');
      assert.equal(last.body.max_tokens, 1);
      const dead = await s.user();
      await put(dead, 'anthropic', { endpoint: 'http://169.254.169.254' });
      const refused = await s.call('GET', '/v2/integrations/anthropic/status', undefined, dead.key);
      assert.equal(refused.body.error_kind, 'address_refused');
    });

    test('an Anthropic integration calls the Messages API: system apart, n fanned out, JSON schema as a tool', async () => {
      const u = await s.user();
      const a = await put(u, 'anthropic', { endpoint: anthropic.url });
      const before = anthropic.requests.length;
      const out = await s.running.services.modelCalls.call({
        integrationId: a.id,
        model: 'claude-sonnet-4-5',
        messages: [
          { role: 'system', content: 'judge well' },
          { role: 'user', content: 'is this good' },
        ],
        n: 2,
        purpose: 'scorer',
        projectId: null,
      });
      assert.equal(out.choices.length, 2);
      assert.equal(out.choices[0].text, 'is this good');
      assert.equal(out.tokensIn, 2 * 5);
      assert.equal(anthropic.requests.length - before, 2);
      const req = anthropic.requests[before];
      assert.equal(req.path, '/v1/messages');
      assert.equal(req.body.system, 'judge well');
      assert.deepEqual(req.body.messages, [{ role: 'user', content: 'is this good' }]);
      assert.match(req.headers.authorization, /^Bearer sk-test-/);
      assert.ok(req.headers['anthropic-version']);
      const pieces: string[] = [];
      const streamed = await s.running.services.modelCalls.call({
        integrationId: a.id,
        model: 'claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'stream me please' }],
        purpose: 'playground',
        projectId: null,
        onDelta: (t) => pieces.push(t),
      });
      assert.equal(pieces.join(''), 'stream me please');
      assert.equal(streamed.tokensOut, 3);
      anthropic.reply = () => 'ignored';
      try {
        const before2 = anthropic.requests.length;
        await s.running.services.modelCalls
          .call({
            integrationId: a.id,
            model: 'claude-sonnet-4-5',
            messages: [{ role: 'user', content: 'json please' }],
            responseFormat: { type: 'json_schema', name: 'verdict', schema: { type: 'object' } },
            purpose: 'scorer',
            projectId: null,
          })
          .catch(() => {});
        const body = anthropic.requests[before2].body;
        assert.deepEqual(body.tool_choice, { type: 'tool', name: 'verdict' });
      } finally {
        anthropic.reply = (b) => b.messages.at(-1).content;
      }
    });

    test('an Azure integration calls the deployment of the model with the API version', async () => {
      const u = await s.user();
      const az = await put(u, 'azure', {
        endpoint: fake.url.replace(/\/v1$/, ''),
        deployments: { 'gpt-4o': 'my-dep' },
      });
      const before = fake.requests.length;
      const out = await s.running.services.modelCalls.call({
        integrationId: az.id,
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hi azure' }],
        purpose: 'experiment',
        projectId: null,
      });
      assert.equal(out.choices[0].text, 'hi azure');
      const req = fake.requests[before];
      assert.equal(req.path, '/openai/deployments/my-dep/chat/completions');
      assert.ok(req.headers['api-key']?.startsWith('sk-test-'));
    });

    test('playground: viewers may not spend, editors may; variables rendered; raw exchange without the token', async () => {
      const owner = await s.user();
      const viewer = await s.user();
      const p = await project(owner);
      const share = await s.call(
        'POST',
        `/v2/projects/${p}/collaborators`,
        { user_id: viewer.id, role: 'viewer' },
        owner.key,
      );
      assert.equal(share.status, 200, share.text);
      const gw = await put(owner, 'example_gateway', { endpoint: fake.url, use_case: 'chat' });
      const body = {
        integration_id: gw.id,
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You answer about {{topic}}.' },
          { role: 'user', content: 'Tell me about {{topic}} in {{style.tone}} words' },
        ],
        variables: { topic: 'owls', style: { tone: 'few' } },
      };
      const url = `/v2/projects/${p}/playground/runs`;
      assert.equal((await s.call('POST', url, body, viewer.key)).status, 403);
      const r = await s.call('POST', url, body, owner.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.text, 'Tell me about owls in few words');
      assert.equal(r.body.messages[0].content, 'You answer about owls.');
      assert.equal(r.body.error, null);
      assert.equal(r.body.tokens_out, 7);
      assert.ok(r.body.cost_usd > 0);
      assert.equal(r.body.request.method, 'POST');
      assert.match(r.body.request.url, /\/v1\/chat\/completions$/);
      assert.equal(JSON.parse(r.body.request.body).model, 'gpt-4o-mini');
      assert.equal(r.body.response.status, 200);
      assert.equal(
        JSON.parse(r.body.response.body).choices[0].message.content,
        'Tell me about owls in few words',
      );
      for (const t of tokens) assert.ok(!r.text.includes(t));
      // A missing variable is a 422 naming it, and nothing is called.
      const before = fake.requests.length;
      const missing = await s.call('POST', url, { ...body, variables: { topic: 'owls' } }, owner.key);
      assert.equal(missing.status, 422, missing.text);
      assert.match(missing.text, /\{\{style\.tone\}\}/);
      assert.equal(fake.requests.length, before);
      // An integration the caller cannot see is 404.
      const stranger = await s.user();
      const theirs = await put(stranger, 'example_gateway', { endpoint: fake.url, use_case: 'chat' });
      assert.equal(
        (await s.call('POST', url, { ...body, integration_id: theirs.id }, owner.key)).status,
        404,
      );
      // A model error is in the answer.
      fake.queueFault({ status: 401 });
      const failed = await s.call('POST', url, body, owner.key);
      assert.equal(failed.status, 200);
      assert.equal(failed.body.error.kind, 'credential');
      assert.equal(failed.body.response.status, 401);
    });

    test('playground streams NDJSON: deltas, then the result', async () => {
      const owner = await s.user();
      const p = await project(owner);
      const gw = await put(owner, 'example_gateway', { endpoint: fake.url, use_case: 'chat' });
      const r = await s.call(
        'POST',
        `/v2/projects/${p}/playground/runs`,
        {
          integration_id: gw.id,
          model: 'fake-model',
          messages: [{ role: 'user', content: 'one two three four' }],
          stream: true,
        },
        owner.key,
      );
      assert.equal(r.status, 200, r.text);
      assert.match(String(r.headers['content-type']), /application\/x-ndjson/);
      const lines = r.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const deltas = lines.filter((l) => l.type === 'delta');
      assert.ok(deltas.length > 1);
      assert.equal(deltas.map((d) => d.text).join(''), 'one two three four');
      const result = lines.at(-1);
      assert.equal(result.type, 'result');
      assert.equal(result.text, 'one two three four');
      assert.equal(result.cost_usd, null, 'fake-model has no price');
    });

    test('spend: calls and spend per day and purpose; unpriced calls counted apart, not as $0', async () => {
      const owner = await s.user();
      const viewer = await s.user();
      const outsider = await s.user();
      const p = await project(owner);
      await s.call(
        'POST',
        `/v2/projects/${p}/collaborators`,
        { user_id: viewer.id, role: 'viewer' },
        owner.key,
      );
      const gw = await put(owner, 'example_gateway', { endpoint: fake.url, use_case: 'chat' });
      const calls = s.running.services.modelCalls;
      const msg = [{ role: 'user' as const, content: 'a b c' }];
      const priced = await calls.call({
        integrationId: gw.id,
        model: 'gpt-4o-mini',
        messages: msg,
        purpose: 'scorer',
        projectId: p,
      });
      await calls.call({
        integrationId: gw.id,
        model: 'gpt-4o-mini',
        messages: msg,
        purpose: 'scorer',
        projectId: p,
      });
      await calls.call({
        integrationId: gw.id,
        model: 'fake-model',
        messages: msg,
        purpose: 'signals',
        projectId: p,
      });
      fake.queueFault({ status: 401 });
      await calls
        .call({
          integrationId: gw.id,
          model: 'gpt-4o-mini',
          messages: msg,
          purpose: 'experiment',
          projectId: p,
          runId: 'r1',
        })
        .catch(() => {});
      const spend = await s.call('GET', `/v2/projects/${p}/model_calls/spend?days=7`, undefined, viewer.key);
      assert.equal(spend.status, 200, spend.text);
      const today = new Date().toISOString().slice(0, 10);
      const by = Object.fromEntries(spend.body.days.map((d: any) => [d.purpose, d]));
      assert.deepEqual(Object.keys(by).sort(), ['experiment', 'scorer', 'signals']);
      assert.equal(by.scorer.day, today);
      assert.equal(by.scorer.calls, 2);
      assert.equal(by.scorer.tokens_in, 6);
      assert.ok(Math.abs(by.scorer.cost_usd - 2 * priced.costUsd!) < 1e-12);
      assert.deepEqual([by.signals.calls, by.signals.cost_usd, by.signals.unpriced_calls], [1, 0, 1]);
      assert.deepEqual([by.experiment.calls, by.experiment.errors], [1, 1]);
      assert.equal(spend.body.total.calls, 4);
      assert.equal(spend.body.total.unpriced_calls, 1);
      const list = await s.call('GET', `/v2/projects/${p}/model_calls?limit=2`, undefined, viewer.key);
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.calls.length, 2);
      assert.equal(list.body.next_starting_token, 2);
      const first = list.body.calls[0];
      assert.deepEqual(
        [first.purpose, first.status, first.error_kind, first.run_id, first.attempts, first.priced],
        ['experiment', 'error', 'credential', 'r1', 1, false],
      );
      const signals = await s.call(
        'GET',
        `/v2/projects/${p}/model_calls?purpose=signals`,
        undefined,
        viewer.key,
      );
      assert.deepEqual(
        signals.body.calls.map((c: any) => [c.model, c.cost_usd, c.priced]),
        [['fake-model', null, false]],
      );
      assert.equal(
        (await s.call('GET', `/v2/projects/${p}/model_calls/spend`, undefined, outsider.key)).status,
        404,
      );
      assert.equal(
        (await s.call('GET', `/v2/projects/${p}/model_calls/spend?days=0`, undefined, owner.key)).status,
        422,
      );
    });
  });
}
