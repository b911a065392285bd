/**
 * A session-level LLM judge waits for its session to go quiet (SPANBASE_SCORER_QUIET_MS, the default
 * 60 s here) and then scores it, on both stores, against the fake provider. Time is injected: the
 * clock (`Date`) is mocked, frozen and moved by hand, so the test waits for nothing but the job
 * queue's real polling (20 ms). A trace written into the session while it waits starts the quiet
 * period again.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, mock, test } from 'node:test';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

type Json = Record<string, any>;
const QUIET_MS = 60_000;

for (const store of storesUnderTest()) {
  describe(`session scorers wait for quiet [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let P: string;
    const ok = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.equal(r.status, 200, `${method} ${url}: ${r.text}`);
      return r.body;
    };
    const proj = (path: string) => `/v2/projects/${P}${path}`;

    before(async () => {
      s = await startTestServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_JOB_POLL_MS: '20',
        SPANBASE_SCORER_QUIET_MS: String(QUIET_MS),
      });
      await s.running.app.ready();
      fake = await startFakeProvider();
      fake.reply = () => '{"explanation": "The customer got an answer.", "rating": true}';
      await ok('PUT', '/v2/integrations/example_gateway', {
        endpoint: fake.url,
        use_case: 'chat',
        token: 'sk-session-test-token-0123456789',
      });
      P = (await ok('POST', '/v2/projects', { name: `sessions-${store}` })).id;
    });
    after(async () => {
      mock.timers.reset();
      await fake?.close();
      await s?.close();
    });

    /** The session's state for the judge (polled: the job queue works in real time). */
    async function stateOf(id: string, name: string, want: (i: Json | undefined) => boolean) {
      // (The mocked clock does not move by itself: the polls are counted instead.)
      let info: Json | undefined;
      for (let i = 0; i < 300; i++) {
        info = (await ok('GET', proj(`/sessions/${id}`))).metric_info?.[name];
        if (want(info)) return info as Json;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.fail(`the session's ${name} never reached the state wanted: ${JSON.stringify(info)}`);
    }

    /** Lets the queue poll a few times in real time (nothing should change meanwhile). */
    const settle = () => new Promise((r) => setTimeout(r, 300));

    test('a session-level judge scores only after the session has been quiet', async () => {
      mock.timers.enable({ apis: ['Date'], now: Date.now() });
      const sc = await ok('POST', '/v2/scorers', { name: `session_resolved_${store}`, scorer_type: 'llm' });
      await ok('POST', `/v2/scorers/${sc.id}/version/llm`, {
        model_name: 'fake-model',
        num_judges: 1,
        scoreable_node_types: ['session'],
        chain_poll_template: { template: 'Was the session {{name}} resolved?' },
      });
      const ls = (await ok('POST', proj('/log_streams'), { name: 'support' })).id;
      await ok('POST', proj(`/runs/${ls}/scorer-settings`), { scorers: [{ id: sc.id, scorer_type: 'llm' }] });
      const calls = fake.requests.length;

      // A session made by POST /sessions, empty, is queued for its judge at once (not "written before
      // the scorer was enabled"); like any session it is judged once quiet.
      const session = await ok('POST', proj('/sessions'), { log_stream_id: ls, name: 'refund chat' });
      const made = (await ok('GET', proj(`/sessions/${session.id}`))).metric_info?.[sc.name];
      assert.equal(made?.status_type, 'pending', JSON.stringify(made));
      const turn = (input: string, output: string) =>
        ok('POST', proj('/traces'), {
          log_stream_id: ls,
          session_id: session.id,
          traces: [{ id: crypto.randomUUID(), name: 'turn', input, output, spans: [] }],
        });
      await turn('Where is my refund?', 'Let me look.');
      const waiting = await stateOf(
        session.id,
        sc.name,
        (i) => i?.status_type === 'pending' && /quiet/.test(i?.message ?? ''),
      );
      assert.match(waiting.message, /waiting for the session to be quiet/);
      const status = await ok('GET', proj(`/runs/${ls}/scorer-settings/status`));
      assert.deepEqual(
        status.scorers[0].counts.map((c: Json) => [c.status, c.reason, c.count]),
        [['pending', 'waiting for the session to be quiet', 1]],
      );

      // 40 s on, a second turn is written into the session: it is not quiet, its quiet starts again.
      mock.timers.tick(40_000);
      await turn('It has been a week.', 'It was sent today.');
      // 70 s after the first turn (past the first wait), 30 s after its last write: still waiting.
      mock.timers.tick(30_000);
      await settle();
      const still = (await ok('GET', proj(`/sessions/${session.id}`))).metric_info?.[sc.name];
      assert.equal(still?.status_type, 'pending', JSON.stringify(still));
      assert.equal(fake.requests.length, calls, 'no judge was called before the session went quiet');

      // 61 s after the last write: quiet, so judged.
      mock.timers.tick(31_000);
      const scored = await stateOf(session.id, sc.name, (i) => i?.status_type === 'success');
      assert.equal(scored.explanation, 'The customer got an answer.');
      const record = await ok('GET', proj(`/sessions/${session.id}`));
      assert.equal(record.metrics[sc.name], 1);
      assert.equal(fake.requests.length, calls + 1);
      assert.match(JSON.stringify(fake.requests.at(-1)), /Was the session refund chat resolved\?/);
      mock.timers.reset();
    });
  });
}
