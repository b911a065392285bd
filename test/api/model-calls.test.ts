import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import v8 from 'node:v8';
import vm from 'node:vm';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ModelCallError, type ModelCallInput, ModelCallsService } from '../../src/services/model-calls.ts';
import { ModelCallsRepo } from '../../src/store/model-calls.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const token = () => `sk-test-${crypto.randomBytes(18).toString('base64url')}`;

/** The error a call rejects with (the test fails when it resolves). */
async function failure(p: Promise<unknown>): Promise<ModelCallError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ModelCallError, String(err));
    return err;
  }
  assert.fail('the call succeeded');
}

for (const store of storesUnderTest()) {
  describe(`model calls [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let projectId: string;
    before(async () => {
      s = await startTestServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_MODEL_RETRY_BASE_MS: '2',
        SPANBASE_MODEL_MAX_ATTEMPTS: '3',
        SPANBASE_MODEL_CONCURRENCY: '2',
      });
      fake = await startFakeProvider();
      projectId = (await s.call('POST', '/v2/projects', { name: `mc-${Date.now()}` })).body.id;
    });
    after(async () => {
      await fake.close();
      await s.close();
    });

    const calls = () => s.running.services.modelCalls;

    /** A new user's gateway integration pointing at `endpoint` (default the fake provider). */
    async function integration(endpoint = fake.url, t = token()) {
      const u = await s.user();
      const r = await s.call(
        'PUT',
        '/v2/integrations/example_gateway',
        { endpoint, use_case: 'chat', token: t },
        u.key,
      );
      assert.equal(r.status, 200, r.text);
      return { id: r.body.id as string, token: t };
    }

    const input = (integrationId: string, extra: Partial<ModelCallInput> = {}): ModelCallInput => ({
      integrationId,
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there model' },
      ],
      purpose: 'scorer',
      projectId,
      ...extra,
    });

    /** A service like the server's, with some settings changed. */
    function serviceWith(changes: Partial<TestServer['config']>) {
      const { services } = s.running;
      return new ModelCallsService(
        new ModelCallsRepo(services.store.db),
        services.integrations,
        services.prices,
        {
          ...s.config,
          ...changes,
        },
      );
    }

    const recorded = async (id: string) =>
      (await sql<any>`select * from model_calls where id = ${id}`.execute(s.running.services.store.db))
        .rows[0];

    const attemptLog = (row: any) =>
      typeof row.attempt_log === 'string' ? JSON.parse(row.attempt_log) : row.attempt_log;

    test('a call answers the choices, tokens, cost and one attempt, and is recorded', async () => {
      const { id, token: t } = await integration();
      const before = fake.requests.length;
      const out = await calls().call(
        input(id, { model: 'gpt-4o-mini', temperature: 0.2, maxTokens: 50, runId: null }),
      );
      assert.equal(out.choices[0].text, 'hello there model');
      assert.equal(out.attempts, 1);
      assert.equal(out.tokensIn, 5);
      assert.equal(out.tokensOut, 3);
      assert.ok(out.costUsd !== null && out.costUsd > 0, 'gpt-4o-mini has a catalogue price');
      const req = fake.requests[before];
      assert.equal(req.path, '/v1/chat/completions');
      assert.equal(req.headers.authorization, `Bearer ${t}`);
      assert.equal(req.body.temperature, 0.2);
      assert.equal(req.body.max_tokens, 50);
      const row = await recorded(out.callId);
      assert.equal(row.status, 'ok');
      assert.equal(row.purpose, 'scorer');
      assert.equal(row.project_id, projectId);
      assert.equal(row.integration_id, id);
      assert.equal(row.integration_name, 'example_gateway');
      assert.equal(Number(row.tokens_in), 5);
      assert.equal(Number(row.attempts), 1);
      assert.equal(row.cost_usd, out.costUsd);
    });

    test('a model without a price costs null, not $0', async () => {
      const { id } = await integration();
      const out = await calls().call(input(id));
      assert.equal(out.costUsd, null);
      assert.equal((await recorded(out.callId)).cost_usd, null);
    });

    test('n choices, JSON format and tools reach the provider', async () => {
      const { id } = await integration();
      const before = fake.requests.length;
      const out = await calls().call(
        input(id, {
          n: 3,
          responseFormat: { type: 'json_schema', name: 'verdict', schema: { type: 'object' } },
          tools: [{ name: 'lookup', parameters: { type: 'object' } }],
        }),
      );
      assert.equal(out.choices.length, 3);
      const body = fake.requests[before].body;
      assert.equal(body.n, 3);
      assert.equal(body.response_format.type, 'json_schema');
      assert.equal(body.tools[0].function.name, 'lookup');
    });

    test('429 with Retry-After and a 500 are retried, then the call succeeds; each attempt is recorded', async () => {
      const { id } = await integration();
      fake.queueFault({ status: 429, retryAfter: 0 });
      fake.queueFault({ status: 500 });
      const out = await calls().call(input(id));
      assert.equal(out.attempts, 3);
      const log = attemptLog(await recorded(out.callId));
      assert.deepEqual(
        log.map((a: any) => [a.status, a.kind]),
        [
          [429, 'rate_limited'],
          [500, 'server'],
          [200, null],
        ],
      );
    });

    test('Retry-After is honoured: the wait before the next attempt is at least what the provider asked', async () => {
      const { id } = await integration();
      fake.queueFault({ status: 503, retryAfter: 1 });
      const out = await calls().call(input(id));
      const log = attemptLog(await recorded(out.callId));
      assert.ok(log[0].wait_ms >= 1000, JSON.stringify(log));
    });

    test('retries exhausted: the error is final only after the last attempt', async () => {
      const { id } = await integration();
      const before = fake.requests.length;
      for (let i = 0; i < 3; i++) fake.queueFault({ status: 502 });
      const err = await failure(calls().call(input(id)));
      assert.equal(err.kind, 'server');
      assert.equal(err.pauses, false);
      assert.equal(err.attempts, 3);
      assert.equal(err.providerStatus, 502);
      assert.equal(fake.requests.length - before, 3);
      const row = await recorded(err.callId!);
      assert.equal(row.status, 'error');
      assert.equal(row.error_kind, 'server');
      assert.equal(Number(row.attempts), 3);
    });

    test('a retry that would pass the total time limit is not made', async () => {
      const { id } = await integration();
      fake.queueFault({ status: 429, retryAfter: 3600 });
      const err = await failure(serviceWith({ modelRetryMaxTotalMs: 60_000 }).call(input(id)));
      assert.equal(err.kind, 'rate_limited');
      assert.equal(err.attempts, 1);
      assert.match(err.message, /SPANBASE_MODEL_RETRY_MAX_TOTAL_MS/);
    });

    test('a provider that hangs times out, and the timeout is retried', async () => {
      const { id } = await integration();
      const before = fake.requests.length;
      for (let i = 0; i < 3; i++) fake.queueFault('hang');
      const err = await failure(serviceWith({ modelTimeoutMs: 100 }).call(input(id)));
      assert.equal(err.kind, 'timeout');
      assert.equal(err.attempts, 3);
      assert.equal(fake.requests.length - before, 3);
    });

    test('401 is a credential error: not retried, pauses, the provider text kept without the token', async () => {
      const { id, token: t } = await integration();
      const before = fake.requests.length;
      fake.queueFault({
        status: 401,
        body: JSON.stringify({
          error: { message: `Incorrect API key provided: ${t}`, type: 'invalid_request_error' },
        }),
      });
      const err = await failure(calls().call(input(id)));
      assert.equal(err.kind, 'credential');
      assert.equal(err.pauses, true);
      assert.equal(err.attempts, 1);
      assert.equal(fake.requests.length - before, 1);
      assert.match(err.message, /Incorrect API key provided/);
      assert.ok(!err.message.includes(t) && !err.message.includes(t.slice(0, 12)), err.message);
      assert.ok(!JSON.stringify(await recorded(err.callId!)).includes(t.slice(0, 12)));
    });

    test('billing and unknown-model answers are classified and not retried', async () => {
      const { id } = await integration();
      fake.queueFault({
        status: 429,
        body: JSON.stringify({
          error: { message: 'You exceeded your current quota', code: 'insufficient_quota' },
        }),
      });
      const billing = await failure(calls().call(input(id)));
      assert.deepEqual([billing.kind, billing.attempts, billing.pauses], ['billing', 1, true]);
      fake.queueFault({
        status: 404,
        body: JSON.stringify({
          error: { message: 'The model `nope` does not exist', code: 'model_not_found' },
        }),
      });
      const model = await failure(calls().call(input(id, { model: 'nope' })));
      assert.deepEqual([model.kind, model.attempts, model.pauses], ['unknown_model', 1, true]);
    });

    test('an answer that is not JSON, or has no choices, is a bad response', async () => {
      const { id } = await integration();
      fake.queueFault('not_json');
      const a = await failure(calls().call(input(id)));
      assert.equal(a.kind, 'bad_response');
      fake.queueFault('no_choices');
      const b = await failure(calls().call(input(id)));
      assert.equal(b.kind, 'bad_response');
      assert.match(b.message, /no choices/);
    });

    test('the concurrency limit of an integration is held', async () => {
      const slow = await startFakeProvider({ delayMs: 20 });
      try {
        const { id } = await integration(slow.url);
        const outs = await Promise.all(Array.from({ length: 10 }, () => calls().call(input(id))));
        assert.equal(outs.length, 10);
        assert.equal(slow.requests.length, 10);
        assert.ok(slow.maxInFlight <= 2, `at most 2 at once, saw ${slow.maxInFlight}`);
      } finally {
        await slow.close();
      }
    });

    test('a busy integration does not hold up another integration’s calls', async () => {
      const busy = await startFakeProvider();
      try {
        const a = await integration(busy.url);
        const b = await integration();
        busy.queueFault('hang');
        busy.queueFault('hang');
        const stop = new AbortController();
        const held = [0, 1].map(() =>
          calls()
            .call(input(a.id, { signal: stop.signal }))
            .catch((e) => e),
        );
        while (busy.inFlight < 2) await new Promise((r) => setTimeout(r, 5));
        assert.equal(calls().limiter.state(a.id).inFlight, 2);
        const out = await calls().call(input(b.id));
        assert.equal(out.choices[0].text, 'hello there model');
        stop.abort();
        for (const e of await Promise.all(held)) assert.ok(e instanceof ModelCallError);
      } finally {
        await busy.close();
      }
    });

    test('calls under one long-lived signal (a job’s) leave no signal behind', async () => {
      const { id } = await integration();
      v8.setFlagsFromString('--expose-gc');
      const gc = vm.runInNewContext('gc') as () => void;
      const live = async () => {
        for (let i = 0; i < 3; i++) {
          await new Promise((r) => setImmediate(r));
          gc();
        }
        return v8.queryObjects(AbortSignal, { format: 'count' }) as number;
      };
      const job = new AbortController();
      await calls().call(input(id, { signal: job.signal }));
      const before = await live();
      for (let i = 0; i < 200; i++) await calls().call(input(id, { signal: job.signal }));
      const grown = (await live()) - before;
      assert.ok(grown < 50, `${grown} more signals alive after 200 calls`);
    });

    test('a 429 halves the integration’s limit; successes raise it again', async () => {
      const service = serviceWith({ modelConcurrency: 8 });
      const { id } = await integration();
      const before = fake.requests.length;
      fake.queueFault({ status: 429, retryAfter: 0 });
      fake.queueFault({ status: 429, retryAfter: 0 });
      fake.queueFault('hang');
      const stop = new AbortController();
      const pending = service.call(input(id, { signal: stop.signal })).catch((e) => e);
      while (fake.requests.length < before + 3) await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(service.limiter.state(id), { limit: 2, inFlight: 1 }, 'two 429s: 8 -> 4 -> 2');
      stop.abort();
      assert.equal((await pending).kind, 'network');
      await service.call(input(id));
      assert.equal(service.limiter.state(id).limit, 3);
      for (let i = 0; i < 5; i++) await service.call(input(id));
      assert.equal(service.limiter.state(id).limit, 8);
    });

    test('SSRF: loopback refused unless allowed; link-local and metadata always; nothing is sent', async () => {
      const strict = serviceWith({ allowPrivateProviders: false });
      const before = fake.requests.length;
      const loop = await integration();
      const e1 = await failure(strict.call(input(loop.id)));
      assert.equal(e1.kind, 'address_refused');
      assert.equal(e1.pauses, true);
      assert.equal(e1.attempts, 1);
      const port = new URL(fake.url).port;
      const named = await integration(`http://localhost:${port}/v1`);
      assert.equal((await failure(strict.call(input(named.id)))).kind, 'address_refused');
      assert.equal(fake.requests.length, before, 'the fake provider saw no request');
      for (const endpoint of [
        'http://169.254.169.254/latest',
        'http://[::ffff:169.254.169.254]/v1',
        'http://[fe80::1]/v1',
        'http://metadata.google.internal/v1',
        'http://0.0.0.0:1/v1',
      ]) {
        const it = await integration(endpoint);
        const err = await failure(calls().call(input(it.id)));
        assert.equal(err.kind, 'address_refused', `${endpoint}: ${err.message}`);
      }
    });

    test('a redirect is not followed, to another host or not', async () => {
      const { id } = await integration();
      const before = fake.requests.length;
      fake.queueFault({ status: 302, headers: { location: 'http://example.com/v1/chat/completions' } });
      const err = await failure(calls().call(input(id)));
      assert.equal(err.kind, 'config');
      assert.match(err.message, /another host \(example\.com\)/);
      assert.equal(fake.requests.length - before, 1);
    });

    test('a response larger than the bound fails the call', async () => {
      const { id } = await integration();
      const big = serviceWith({ modelMaxResponseBytes: 2048 });
      const saved = fake.reply;
      fake.reply = () => 'x'.repeat(10_000);
      try {
        const err = await failure(big.call(input(id)));
        assert.equal(err.kind, 'bad_response');
        assert.match(err.message, /larger than 2048 bytes/);
      } finally {
        fake.reply = saved;
      }
    });

    test('streaming delivers the reply in pieces and counts its tokens', async () => {
      const { id } = await integration();
      const pieces: string[] = [];
      const out = await calls().call(input(id, { purpose: 'playground', onDelta: (t) => pieces.push(t) }));
      assert.ok(pieces.length > 1);
      assert.equal(pieces.join(''), 'hello there model');
      assert.equal(out.choices[0].text, 'hello there model');
      assert.equal(out.tokensOut, 3);
      assert.equal(out.tokensIn, 5);
    });

    test('an unknown integration is a config error', async () => {
      const err = await failure(calls().call(input(crypto.randomUUID())));
      assert.equal(err.kind, 'config');
    });
  });
}
