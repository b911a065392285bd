/**
 * Signals runs on both stores, with time injected: a cron slot runs once with two processes, a
 * restart after missed slots runs once, a run reports model-free findings (errors, outliers) with
 * occurrences, a repeated finding merges, the severity filter decides what is notified, webhook
 * signatures verify and failed deliveries retry, an alert fires and recovers once each.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../../src/domain/clock.ts';
import { SIGNATURE_HEADER, verifyBody } from '../../src/domain/webhooks.ts';
import { startServices } from '../../src/server.ts';
import { ScorersRepo } from '../../src/store/scorers.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { insertRecords } from '../property/support.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';

const HOUR = 3_600_000;
const MIN = 60_000;

/** A local receiver of webhooks that answers the queued statuses, then 200. */
async function receiver() {
  const got: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const statuses: number[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { got, statuses, url, close: () => new Promise((r) => server.close(r)) };
}

for (const store of storesUnderTest()) {
  describe(`signals runs and alerts [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    // A whole hour plus a little: slots are on the hour.
    const clock = new ManualClock(Math.ceil(Date.now() / HOUR) * HOUR + 5 * MIN);
    before(async () => {
      s = await startTestServer(
        store,
        {
          SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
          SPANBASE_WEBHOOK_RETRY_BASE_MS: '1',
          SPANBASE_MODEL_RETRY_BASE_MS: '1',
          SPANBASE_MODEL_MAX_ATTEMPTS: '2',
        },
        { clock },
      );
      fake = await startFakeProvider();
      // Deliveries and alert evaluations are driven by the tests, not raced by the background passes.
      await Promise.all([s.running.services.notifications.job.stop(), s.running.services.alerts.job.stop()]);
    });
    after(async () => {
      await fake.close();
      await s.close();
    });
    const services = () => s.running.services;

    async function scheduled(projectId: string, logStreamId: string, extra: Record<string, unknown> = {}) {
      const r = await s.call('PUT', `/v2/projects/${projectId}/runs/${logStreamId}/signals/configuration`, {
        run_mode: 'SCHEDULED',
        scheduled_runs_enabled: true,
        schedule: { type: 'CRON', cron: '0 * * * *', timezone: 'Europe/Paris' },
        ...extra,
      });
      assert.equal(r.status, 200, r.text);
    }

    /** Every queued or running Signals run of the log stream finished. */
    async function settle(projectId: string, logStreamId: string) {
      for (;;) {
        await services().signalRuns.drain();
        const r = await s.call('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
        assert.equal(r.status, 200, r.text);
        if (r.body.runs.every((x: any) => x.finished_at !== null)) return r.body.runs;
        await new Promise((res) => setTimeout(res, 10));
      }
    }

    test('a cron slot runs once with two processes sharing the store', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      clock.set(clock.now() + 0); // the configuration is saved before the next slot
      await scheduled(projectId, logStreamId);
      clock.advance(HOUR);
      const second = await startServices(s.config, { logger: false, clock });
      try {
        const outcomes = await Promise.all([
          services().signalRuns.job.runOnce(),
          second.services.signalRuns.job.runOnce(),
        ]);
        assert.equal(outcomes.filter((o) => o === 'done').length, 1, String(outcomes));
        // Even with the lease overlapping (both ticking), the slot is one row.
        await Promise.all([services().signalRuns.tick(), second.services.signalRuns.tick()]);
      } finally {
        await second.close();
      }
      const runs = await settle(projectId, logStreamId);
      assert.equal(runs.length, 1);
      assert.equal(runs[0].trigger, 'scheduled');
      assert.equal(runs[0].status, 'succeeded', JSON.stringify(runs[0]));
      assert.equal(new Date(runs[0].slot_time).getTime() % HOUR, 0);
    });

    test('a restart after missed slots runs the latest once', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await scheduled(projectId, logStreamId);
      const before = clock.now();
      clock.advance(3 * HOUR); // three slots pass while no process runs
      const restarted = await startServices(s.config, { logger: false, clock });
      try {
        await restarted.services.signalRuns.tick();
        await restarted.services.signalRuns.tick();
      } finally {
        await restarted.close();
      }
      let runs = await settle(projectId, logStreamId);
      assert.equal(runs.length, 1);
      assert.equal(new Date(runs[0].slot_time).getTime(), Math.floor(clock.now() / HOUR) * HOUR);
      assert.ok(new Date(runs[0].slot_time).getTime() > before);
      clock.advance(HOUR);
      await services().signalRuns.tick();
      runs = await settle(projectId, logStreamId);
      assert.equal(runs.length, 2);
      // The second window starts where the first ended.
      assert.equal(runs[0].window_start, runs[1].window_end);
    });

    test('no run outside the start and end dates, nor with scheduled runs off', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await scheduled(projectId, logStreamId, { start_date: '2999-01-01' });
      clock.advance(HOUR);
      await services().signalRuns.tick();
      await scheduled(projectId, logStreamId, { start_date: null, scheduled_runs_enabled: false });
      clock.advance(HOUR);
      await services().signalRuns.tick();
      const r = await s.call('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
      assert.deepEqual(r.body.runs, []);
    });

    test('a run on demand reports model-free findings; a repeat merges; severities decide what is notified', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const hook = await receiver();
      try {
        const w = await s.call('POST', `/v2/projects/${projectId}/webhooks`, { url: hook.url });
        assert.equal(w.status, 200, w.text);
        assert.match(w.body.secret, /^whsec_/);
        const cfg = `/v2/projects/${projectId}/runs/${logStreamId}/signals/configuration`;
        assert.equal((await s.call('PUT', cfg, { notification_severities: ['HIGH'] })).status, 200);
        const now = clock.now() * 1000;
        const traces = Array.from({ length: 20 }, (_, i) => ({
          type: 'trace',
          name: 'chat',
          created_at: now - (30 - i) * 60e6,
          duration_ns: i < 2 ? 9e9 : 1e8,
          input_text: `question ${i}`,
          output_text: `answer ${i}`,
        }));
        const ids = await insertRecords(services().store, projectId, logStreamId, [
          ...traces,
          ...Array.from({ length: 4 }, (_, i) => ({
            type: 'tool',
            name: 'search-tool',
            created_at: now - (10 - i) * 60e6,
            status_code: 500,
          })),
        ]);
        const start = await s.call('POST', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
        assert.equal(start.status, 202, start.text);
        assert.equal(start.body.data.trigger, 'on_demand');
        let runs = await settle(projectId, logStreamId);
        assert.equal(runs[0].status, 'succeeded');
        assert.equal(runs[0].records_read, 24);
        assert.match(runs[0].skipped_reason, /No integration/);
        const list = await s.call('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals`);
        assert.equal(list.status, 200, list.text);
        const titles = list.body.signals.map((x: any) => `${x.severity} ${x.title}`).sort();
        assert.deepEqual(titles, ["HIGH Errors 500 in 'search-tool'", 'HIGH Latency outliers']);
        const errors = list.body.signals.find((x: any) => x.source === 'errors');
        assert.equal(errors.occurrence_count, 4);
        assert.deepEqual(errors.all_occurrences.map((o: any) => o.record_id).sort(), ids.slice(20).sort());
        const latency = list.body.signals.find((x: any) => x.source === 'latency');
        assert.deepEqual(latency.all_occurrences.map((o: any) => o.trace_id).sort(), ids.slice(0, 2).sort());
        const high = await s.call(
          'GET',
          `/v2/projects/${projectId}/runs/${logStreamId}/signals?severity=LOW`,
        );
        assert.deepEqual(high.body.signals, []);

        // Both HIGH: notified, signed.
        await services().notifications.deliverDue();
        assert.equal(hook.got.length, 2);
        for (const g of hook.got) {
          assert.ok(verifyBody(w.body.secret, g.body, String(g.headers[SIGNATURE_HEADER])));
          assert.equal(JSON.parse(g.body).event, 'signal');
        }

        // A second run sees the errors again: merged, not notified again (same severity).
        clock.advance(5 * MIN);
        await insertRecords(services().store, projectId, logStreamId, [
          { type: 'tool', name: 'search-tool', created_at: clock.now() * 1000 - 60e6, status_code: 500 },
        ]);
        await s.call('POST', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
        runs = await settle(projectId, logStreamId);
        assert.equal(runs.length, 2);
        assert.equal(runs[0].records_read, 1);
        const again = await s.call(
          'GET',
          `/v2/projects/${projectId}/runs/${logStreamId}/signals/${errors.id}`,
        );
        assert.equal(again.body.occurrence_count, 5);
        assert.equal(again.body.runs_seen, 2);
        assert.equal(again.body.last_signal_run_id, runs[0].id);
        assert.equal(again.body.all_occurrences.length, 5);
        await services().notifications.deliverDue();
        assert.equal(hook.got.length, 2);

        // Resolved: filtered out of the open list.
        const patched = await s.call(
          'PATCH',
          `/v2/projects/${projectId}/runs/${logStreamId}/signals/${errors.id}`,
          { status: 'resolved' },
        );
        assert.equal(patched.status, 200, patched.text);
        const open = await s.call('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals?status=open`);
        assert.deepEqual(
          open.body.signals.map((x: any) => x.id),
          [latency.id],
        );
      } finally {
        await hook.close();
      }
    });

    test("low scores of the run's scorers are selected and reported: a failed boolean, a number below the threshold", async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      await new ScorersRepo(services().store.db, services().store.dialect).saveSettings(
        {
          run_id: logStreamId,
          project_id: projectId,
          scorers: [{ name: 'correctness' }, { name: 'is_safe' }],
          segment_filters: [],
          integration_id: null,
          updated_at: clock.now() * 1000,
        },
        null,
      );
      const now = clock.now() * 1000;
      const ids = await insertRecords(services().store, projectId, logStreamId, [
        { type: 'trace', name: 'chat', created_at: now - 9 * 60e6, metrics: { correctness: 0.2 } },
        { type: 'llm', name: 'gen', created_at: now - 8 * 60e6, metrics: { is_safe: false } },
        {
          type: 'trace',
          name: 'chat',
          created_at: now - 7 * 60e6,
          metrics: { correctness: 0.9, is_safe: true },
        },
        { type: 'trace', name: 'chat', created_at: now - 6 * 60e6, metrics: { other: 0 } },
      ]);
      await s.call('POST', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
      const [run] = await settle(projectId, logStreamId);
      assert.equal(run.status, 'succeeded', JSON.stringify(run));
      const list = await s.call('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals`);
      const byTitle = Object.fromEntries(list.body.signals.map((x: any) => [x.title, x]));
      assert.deepEqual(Object.keys(byTitle).sort(), [
        "Low scores of 'correctness'",
        "Low scores of 'is_safe'",
      ]);
      assert.deepEqual(
        byTitle["Low scores of 'correctness'"].all_occurrences.map((o: any) => o.record_id),
        [ids[0]],
      );
      assert.deepEqual(
        byTitle["Low scores of 'is_safe'"].all_occurrences.map((o: any) => o.record_id),
        [ids[1]],
      );
      assert.equal(byTitle["Low scores of 'is_safe'"].source, 'scores');
    });

    test('with an integration: the model sees a sample and memory; a cited id it was not shown is dropped; a repeat merges', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const integ = await s.call('PUT', '/v2/integrations/example_gateway', {
        endpoint: fake.url,
        use_case: 'signals',
        token: 'sk-fake-signals-token',
      });
      assert.equal(integ.status, 200, integ.text);
      const cfg = `/v2/projects/${projectId}/runs/${logStreamId}/signals/configuration`;
      const put = await s.call('PUT', cfg, {
        integration_id: integ.body.id,
        model: 'fake-model',
        user_preferences: { focus_on: 'refunds', dont_focus_on: 'greetings' },
        notification_severities: ['CRITICAL'],
      });
      assert.equal(put.status, 200, put.text);
      const now = clock.now() * 1000;
      const ids = await insertRecords(
        services().store,
        projectId,
        logStreamId,
        Array.from({ length: 6 }, (_, i) => ({
          type: 'trace',
          name: 'chat',
          created_at: now - (20 - i) * 60e6,
          duration_ns: 1e8,
          input_text: `refund request ${i}`,
          output_text: i < 3 ? 'I cannot help with refunds.' : 'Done.',
        })),
      );
      let sameAs: string | null = null;
      fake.reply = (body) => {
        const user = body.messages.find((m: any) => m.role === 'user').content as string;
        const shown = [...user.matchAll(/id=([0-9a-f-]{36})/g)].map((m) => m[1]);
        const refused = shown.filter((id) => ids.indexOf(id) < 3 || ids.indexOf(id) === 5);
        return JSON.stringify({
          signals: [
            {
              title: 'Refund requests refused',
              observation: 'The assistant refuses refunds it should process.',
              details: 'Seen in several traces.',
              suggested_action: 'Give the assistant the refund tool.',
              severity: 'CRITICAL',
              same_as: sameAs,
              record_ids: [...refused, '11111111-1111-4111-8111-111111111111'],
              examples: [
                { record_id: refused[0], narrative: 'The user asked for a refund and was refused.' },
              ],
            },
          ],
        });
      };
      await s.call('POST', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
      let runs = await settle(projectId, logStreamId);
      assert.equal(runs[0].status, 'succeeded', JSON.stringify(runs[0]));
      assert.equal(runs[0].skipped_reason, null);
      assert.equal(runs[0].records_sampled, 6);
      assert.ok(runs[0].tokens_in > 0 && runs[0].tokens_out > 0, JSON.stringify(runs[0]));
      assert.match(runs[0].error, /Not believed: the model cited 1 record id/);
      const request = fake.requests.at(-1)!;
      assert.equal(request.body.model, 'fake-model');
      const prompt = request.body.messages.map((m: any) => m.content).join('\n');
      assert.match(prompt, /Focus on: refunds/);
      assert.match(prompt, /Do not focus on: greetings/);
      const list = await s.call(
        'GET',
        `/v2/projects/${projectId}/runs/${logStreamId}/signals?severity=CRITICAL`,
      );
      assert.equal(list.body.signals.length, 1);
      const signal = list.body.signals[0];
      assert.equal(signal.source, 'model');
      assert.deepEqual(
        signal.all_occurrences.map((o: any) => o.record_id).sort(),
        [ids[0], ids[1], ids[2], ids[5]].sort(),
      );
      assert.equal(signal.example_occurrences.length, 1);

      // The next run remembers it (the open signal is in the prompt) and the model repeats it.
      sameAs = signal.id;
      clock.advance(MIN);
      await insertRecords(services().store, projectId, logStreamId, [
        {
          type: 'trace',
          name: 'chat',
          created_at: clock.now() * 1000 - 1000,
          input_text: 'refund?',
          output_text: 'no',
        },
      ]);
      await s.call('POST', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
      runs = await settle(projectId, logStreamId);
      assert.match(
        fake.requests.at(-1)!.body.messages[1].content,
        new RegExp(`${signal.id}: Refund requests refused`),
      );
      const merged = await s.call(
        'GET',
        `/v2/projects/${projectId}/runs/${logStreamId}/signals/${signal.id}`,
      );
      assert.equal(merged.body.runs_seen, 2);
      const all = await s.call('GET', `/v2/projects/${projectId}/runs/${logStreamId}/signals`);
      assert.equal(all.body.signals.filter((x: any) => x.source === 'model').length, 1);

      // A provider failure: the run keeps its model-free findings and says why.
      fake.queueFault({ status: 401, body: '{"error":{"message":"bad key"}}' });
      clock.advance(MIN);
      await insertRecords(services().store, projectId, logStreamId, [
        { type: 'trace', name: 'chat', created_at: clock.now() * 1000 - 1000, status_code: 500 },
      ]);
      await s.call('POST', `/v2/projects/${projectId}/runs/${logStreamId}/signals/runs`);
      runs = await settle(projectId, logStreamId);
      assert.equal(runs[0].status, 'partial');
      assert.match(runs[0].error, /The model step failed/);
      assert.equal(runs[0].signals_found, 1); // the error, found without the model
    });

    test('a viewer reads runs and signals but cannot start a run; bad input is a 4xx', async () => {
      const owner = await s.user();
      const viewer = await s.user();
      const { projectId, logStreamId } = await projectWithLogStream(s, owner.key);
      await s.call(
        'POST',
        `/v2/projects/${projectId}/collaborators`,
        { user_id: viewer.id, role: 'viewer' },
        owner.key,
      );
      const base = `/v2/projects/${projectId}/runs/${logStreamId}/signals`;
      assert.equal((await s.call('GET', `${base}/runs`, undefined, viewer.key)).status, 200);
      assert.equal((await s.call('POST', `${base}/runs`, undefined, viewer.key)).status, 403);
      assert.equal((await s.call('GET', base, undefined, (await s.user()).key)).status, 404);
      assert.equal((await s.call('GET', `${base}?severity=BAD`, undefined, owner.key)).status, 422);
      const missing = await s.call(
        'GET',
        `${base}/00000000-0000-4000-8000-000000000000`,
        undefined,
        owner.key,
      );
      assert.equal(missing.status, 404);
    });

    test('failed deliveries retry with backoff and are recorded; refused addresses fail', async () => {
      const { projectId } = await projectWithLogStream(s);
      const hook = await receiver();
      try {
        hook.statuses.push(500, 503);
        const w = await s.call('POST', `/v2/projects/${projectId}/webhooks`, {
          url: hook.url,
          format: 'slack',
        });
        const bad = await s.call('POST', `/v2/projects/${projectId}/webhooks`, {
          url: 'http://169.254.169.254/x',
        });
        assert.equal(bad.status, 200, bad.text); // the address is judged when connecting
        await services().notifications.notify(projectId, 'alert', {
          event: 'alert',
          alert: { name: 'n', state: 'firing', value: 3, comparison: 'gt', threshold: 1 },
        });
        for (let i = 0; i < 3; i++) {
          await services().notifications.deliverDue();
          clock.advance(1000);
        }
        assert.equal(hook.got.length, 3);
        assert.match(JSON.parse(hook.got[2].body).text, /Alert firing: n/);
        assert.ok(verifyBody(w.body.secret, hook.got[2].body, String(hook.got[2].headers[SIGNATURE_HEADER])));
        const d = await s.call('GET', `/v2/projects/${projectId}/webhooks/${w.body.id}/deliveries`);
        assert.equal(d.body.deliveries[0].status, 'delivered');
        assert.equal(d.body.deliveries[0].attempts, 3);
        for (let i = 0; i < 6; i++) {
          await services().notifications.deliverDue();
          clock.advance(HOUR);
        }
        const refused = await s.call('GET', `/v2/projects/${projectId}/webhooks/${bad.body.id}/deliveries`);
        assert.equal(refused.body.deliveries[0].status, 'failed');
        assert.match(refused.body.deliveries[0].error, /link-local, metadata/);
        const invalid = await s.call('POST', `/v2/projects/${projectId}/webhooks`, { url: 'ftp://x' });
        assert.equal(invalid.status, 422);
      } finally {
        await hook.close();
      }
    });

    test('an alert fires once and recovers once, with its history and notifications', async () => {
      const { projectId, logStreamId } = await projectWithLogStream(s);
      const hook = await receiver();
      try {
        await s.call('POST', `/v2/projects/${projectId}/webhooks`, { url: hook.url });
        const base = `/v2/projects/${projectId}/log_streams/${logStreamId}/alerts`;
        const bad = await s.call('POST', base, {
          name: 'x',
          metric: 'no_such_column',
          aggregation: 'Max',
          window_minutes: 5,
          comparison: 'gt',
          threshold: 1,
        });
        assert.equal(bad.status, 422, bad.text);
        const rule = await s.call('POST', base, {
          name: 'slow traces',
          metric: 'duration_ns',
          aggregation: 'Max',
          filter_tree: { filter: { column_id: 'type', operator: 'eq', value: 'trace', type: 'text' } },
          window_minutes: 5,
          comparison: 'gt',
          threshold: 1e9,
        });
        assert.equal(rule.status, 200, rule.text);
        // A rule of the same window and filter is computed in the same query, each its own value.
        const count = await s.call('POST', base, {
          name: 'traces',
          metric: 'duration_ns',
          aggregation: 'Count',
          filter_tree: { filter: { column_id: 'type', operator: 'eq', value: 'trace', type: 'text' } },
          window_minutes: 5,
          comparison: 'gt',
          threshold: 100,
        });
        assert.equal(count.status, 200, count.text);
        const evaluate = () => services().alerts.evaluateAll();
        await evaluate();
        await insertRecords(services().store, projectId, logStreamId, [
          { type: 'trace', name: 'chat', created_at: (clock.now() - MIN) * 1000, duration_ns: 5e9 },
          { type: 'trace', name: 'chat', created_at: (clock.now() - 2 * MIN) * 1000, duration_ns: 1e8 },
        ]);
        await evaluate();
        await evaluate();
        const firing = await s.call('GET', `${base}/${rule.body.id}`);
        assert.equal(firing.body.state, 'firing');
        assert.equal(firing.body.last_value, 5e9);
        const counted = await s.call('GET', `${base}/${count.body.id}`);
        assert.deepEqual([counted.body.state, counted.body.last_value], ['ok', 2]);
        clock.advance(10 * MIN);
        await evaluate();
        await evaluate();
        const history = await s.call('GET', `${base}/${rule.body.id}/history`);
        assert.deepEqual(
          history.body.events.map((e: any) => [e.kind, e.value]),
          [
            ['recovered', null],
            ['fired', 5e9],
          ],
        );
        const preview = await s.call('POST', `${base}/preview`, {
          metric: 'duration_ns',
          aggregation: 'Max',
          window_minutes: 60,
          comparison: 'gt',
          threshold: 1e9,
        });
        assert.equal(preview.status, 200, preview.text);
        assert.equal(preview.body.points.length, 24);
        assert.equal(preview.body.points.filter((p: any) => p.holds).length, 1);
        await services().notifications.deliverDue();
        assert.deepEqual(
          hook.got.map((g) => JSON.parse(g.body).alert.state),
          ['firing', 'ok'],
        );
      } finally {
        await hook.close();
      }
    });
  });
}
