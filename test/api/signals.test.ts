import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const cfgUrl = (p: string, r: string) => `/v2/projects/${p}/runs/${r}/signals/configuration`;
const gatewayBody = () => ({
  endpoint: 'https://gateway.example.com/v1',
  use_case: 'signals',
  token: `sk-${crypto.randomBytes(12).toString('hex')}`,
});

for (const store of storesUnderTest()) {
  describe(`signals configuration [${store}]`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(() => s.close());

    /** A project owned by a fresh user, with a log stream and an experiment. */
    async function world() {
      const owner = await s.user();
      const { projectId, logStreamId } = await projectWithLogStream(s, owner.key);
      const exp = await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: 'exp' }, owner.key);
      assert.equal(exp.status, 200, exp.text);
      return { owner, projectId, logStreamId, experimentId: exp.body.id as string };
    }

    async function shareProject(projectId: string, userId: string, role: string, key: string) {
      const r = await s.call(
        'POST',
        `/v2/projects/${projectId}/collaborators`,
        { user_id: userId, role },
        key,
      );
      assert.equal(r.status, 200, r.text);
    }

    test('GET answers the defaults with id null for a log stream and an experiment', async () => {
      const w = await world();
      for (const runId of [w.logStreamId, w.experimentId]) {
        const r = await s.call('GET', cfgUrl(w.projectId, runId), undefined, w.owner.key);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body, {
          data: {
            id: null,
            project_id: w.projectId,
            run_id: runId,
            run_mode: 'ON_DEMAND',
            schedule: { cron: '0 0 * * *', type: 'CRON', timezone: 'UTC' },
            start_date: null,
            end_date: null,
            scheduled_runs_enabled: false,
            model: null,
            integration_id: null,
            user_preferences: { focus_on: '', dont_focus_on: '' },
            notification_severities: ['LOW'],
            created_at: null,
            updated_at: null,
          },
        });
      }
    });

    test('PUT saves (fields at the top level); GET answers it; a later PUT keeps what it omits', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.experimentId);
      const integration = await s.call('PUT', '/v2/integrations/example_gateway', gatewayBody(), w.owner.key);
      const full = {
        run_mode: 'SCHEDULED',
        schedule: { type: 'CRON', cron: '*/15 9-17 * * MON-FRI', timezone: 'America/Argentina/Buenos_Aires' },
        start_date: '2024-02-29',
        end_date: '2024-12-31',
        scheduled_runs_enabled: true,
        model: 'gpt-4o-mini',
        integration_id: integration.body.id,
        user_preferences: { focus_on: 'tool errors', dont_focus_on: 'latency' },
        notification_severities: ['HIGH', 'CRITICAL'],
      };
      let r = await s.call('PUT', url, full, w.owner.key);
      assert.equal(r.status, 200, r.text);
      const saved = r.body.data;
      assert.match(saved.id, UUID);
      assert.equal(saved.project_id, w.projectId);
      assert.equal(saved.run_id, w.experimentId);
      assert.match(saved.created_at, /Z$/);
      for (const [k, v] of Object.entries(full)) assert.deepEqual(saved[k], v, k);
      r = await s.call('GET', url, undefined, w.owner.key);
      assert.deepEqual(r.body.data, saved);

      r = await s.call(
        'PUT',
        url,
        { model: 'other-model', schedule: { timezone: 'Europe/Paris' } },
        w.owner.key,
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.id, saved.id);
      assert.equal(r.body.data.created_at, saved.created_at);
      assert.ok(r.body.data.updated_at >= saved.updated_at);
      assert.equal(r.body.data.model, 'other-model');
      assert.deepEqual(r.body.data.schedule, { ...full.schedule, timezone: 'Europe/Paris' });
      assert.equal(r.body.data.run_mode, 'SCHEDULED');
      assert.deepEqual(r.body.data.notification_severities, ['HIGH', 'CRITICAL']);

      // null clears the nullable fields; duplicates in severities collapse; the log stream is untouched.
      r = await s.call(
        'PUT',
        url,
        { model: null, integration_id: null, start_date: null, notification_severities: ['LOW', 'LOW'] },
        w.owner.key,
      );
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.model, null);
      assert.equal(r.body.data.integration_id, null);
      assert.equal(r.body.data.start_date, null);
      assert.equal(r.body.data.end_date, '2024-12-31');
      assert.deepEqual(r.body.data.notification_severities, ['LOW']);
      r = await s.call('PUT', url, { notification_severities: [] }, w.owner.key);
      assert.deepEqual(r.body.data.notification_severities, []);
      r = await s.call('GET', cfgUrl(w.projectId, w.logStreamId), undefined, w.owner.key);
      assert.equal(r.body.data.id, null);
      // An empty body saves the defaults.
      r = await s.call('PUT', cfgUrl(w.projectId, w.logStreamId), {}, w.owner.key);
      assert.equal(r.status, 200);
      assert.match(r.body.data.id, UUID);
      assert.equal(r.body.data.run_mode, 'ON_DEMAND');
    });

    test('run_mode, schedule type and severities take only their values', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      for (const [b, loc, type] of [
        [{ run_mode: 'HOURLY' }, ['body', 'run_mode'], 'enum'],
        [{ run_mode: 'on_demand' }, ['body', 'run_mode'], 'enum'],
        [{ run_mode: null }, ['body', 'run_mode'], 'string_type'],
        [{ schedule: { type: 'INTERVAL' } }, ['body', 'schedule', 'type'], 'enum'],
        [{ schedule: 'daily' }, ['body', 'schedule'], 'dict_type'],
        [{ notification_severities: ['LOW', 'SEVERE'] }, ['body', 'notification_severities', 1], 'enum'],
        [{ notification_severities: 'LOW' }, ['body', 'notification_severities'], 'list_type'],
        [{ scheduled_runs_enabled: 'yes' }, ['body', 'scheduled_runs_enabled'], 'bool_type'],
        [{ model: 5 }, ['body', 'model'], 'string_type'],
      ] as const) {
        const r = await s.call('PUT', url, b, w.owner.key);
        assert.equal(r.status, 422, JSON.stringify(b));
        assert.deepEqual(r.body.detail[0].loc, loc, JSON.stringify(b));
        assert.equal(r.body.detail[0].type, type, JSON.stringify(b));
      }
      const r = await s.call(
        'PUT',
        url,
        { run_mode: 'SCHEDULED', notification_severities: ['MEDIUM'] },
        w.owner.key,
      );
      assert.equal(r.status, 200);
    });

    test('cron: five fields that cron-parser accepts; anything else 422', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      for (const cron of [
        '61 * * * *',
        '* 24 * * *',
        '* * 32 * *',
        '* * * 13 *',
        '* * * * 8',
        '* * * * * *',
        '* * * *',
        '@daily',
        'a b c d e',
        '*/0 * * * *',
        '5-1 * * * *',
        '0 0 30 2 *',
        'H * * * *',
        '   ',
        '0 0 * * *\u0000',
      ]) {
        const r = await s.call('PUT', url, { schedule: { cron } }, w.owner.key);
        assert.equal(r.status, 422, `${JSON.stringify(cron)}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'schedule', 'cron'], JSON.stringify(cron));
      }
      let r = await s.call('PUT', url, { schedule: { cron: '' } }, w.owner.key);
      assert.equal(r.status, 422);
      for (const cron of [
        '0 0 * * *',
        '*/5 * * * *',
        '0 9 * * MON-FRI',
        '30 2 1,15 * *',
        '0 0 L * *',
        '0 0 * * 7',
      ]) {
        r = await s.call('PUT', url, { schedule: { cron } }, w.owner.key);
        assert.equal(r.status, 200, `${cron}: ${r.text}`);
        assert.equal(r.body.data.schedule.cron, cron);
      }
      r = await s.call('PUT', url, { schedule: { cron: '  0   12 * * *  ' } }, w.owner.key);
      assert.equal(r.body.data.schedule.cron, '0 12 * * *');
      // Nothing saved by the faulty requests.
      r = await s.call('GET', url, undefined, w.owner.key);
      assert.equal(r.body.data.schedule.cron, '0 12 * * *');
    });

    test('time zone: an IANA name the runtime knows', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      for (const timezone of [
        'Mars/Olympus_Mons',
        'UTC+2',
        '+02:00',
        'Europe/',
        'Europe//Paris',
        ' UTC',
        'Not a zone',
        '',
      ]) {
        const r = await s.call('PUT', url, { schedule: { timezone } }, w.owner.key);
        assert.equal(r.status, 422, `${timezone}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'schedule', 'timezone']);
      }
      for (const timezone of [
        'UTC',
        'Etc/UTC',
        'Europe/Paris',
        'Asia/Kolkata',
        'America/Indiana/Knox',
        'Etc/GMT+5',
      ]) {
        const r = await s.call('PUT', url, { schedule: { timezone } }, w.owner.key);
        assert.equal(r.status, 200, `${timezone}: ${r.text}`);
        assert.equal(r.body.data.schedule.timezone, timezone);
      }
      // Every fault at once: a bad zone and a bad cron in one request.
      const r = await s.call(
        'PUT',
        url,
        { schedule: { cron: '99 * * * *', timezone: 'Nowhere/City' } },
        w.owner.key,
      );
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail.map((d: any) => d.loc.join('.')).sort(), [
        'body.schedule.cron',
        'body.schedule.timezone',
      ]);
    });

    test('dates: real YYYY-MM-DD dates, start on or before end', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      for (const [field, value] of [
        ['start_date', '2023-02-29'],
        ['start_date', '2024-02-30'],
        ['start_date', '2024-13-01'],
        ['end_date', '2024-04-31'],
        ['end_date', '24-01-01'],
        ['end_date', '2024-1-1'],
        ['end_date', '2024-01-01T00:00:00Z'],
        ['end_date', 20240101],
      ] as const) {
        const r = await s.call('PUT', url, { [field]: value }, w.owner.key);
        assert.equal(r.status, 422, `${field}=${value}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['body', field]);
      }
      let r = await s.call('PUT', url, { start_date: '2024-05-02', end_date: '2024-05-01' }, w.owner.key);
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'value_error');
      assert.deepEqual(r.body.detail[0].loc, ['body', 'end_date']);
      r = await s.call('PUT', url, { start_date: '2024-05-01', end_date: '2024-05-01' }, w.owner.key);
      assert.equal(r.status, 200, 'start equal to end is allowed');
      // Checked against the saved value too.
      r = await s.call('PUT', url, { start_date: '2024-06-01' }, w.owner.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'start_date']);
      r = await s.call('PUT', url, { end_date: '2024-04-30' }, w.owner.key);
      assert.equal(r.status, 422);
      r = await s.call('PUT', url, { start_date: '2000-02-29', end_date: '9999-12-31' }, w.owner.key);
      assert.equal(r.status, 200, r.text);
    });

    test('user_preferences: strings of at most 2000 characters', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      let r = await s.call('PUT', url, { user_preferences: { focus_on: 'x'.repeat(2001) } }, w.owner.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'user_preferences', 'focus_on']);
      assert.equal(r.body.detail[0].type, 'string_too_long');
      r = await s.call('PUT', url, { user_preferences: { dont_focus_on: 3 } }, w.owner.key);
      assert.equal(r.status, 422);
      for (const bad of ['bad\u0000', 'bad\ud800', '\udfffbad']) {
        r = await s.call('PUT', url, { user_preferences: { focus_on: bad }, model: bad }, w.owner.key);
        assert.equal(r.status, 422, r.text);
        assert.deepEqual(r.body.detail.map((d: any) => d.loc.join('.')).sort(), [
          'body.model',
          'body.user_preferences.focus_on',
        ]);
      }
      const long = 'é'.repeat(2000);
      r = await s.call('PUT', url, { user_preferences: { focus_on: long } }, w.owner.key);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.data.user_preferences, { focus_on: long, dont_focus_on: '' });
      r = await s.call('PUT', url, { user_preferences: { dont_focus_on: 'cost' } }, w.owner.key);
      assert.deepEqual(r.body.data.user_preferences, { focus_on: long, dont_focus_on: 'cost' });
    });

    test('integration_id must name an integration the caller can see (else 422 at body.integration_id)', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      const stranger = await s.user();
      const theirs = await s.call('PUT', '/v2/integrations/example_gateway', gatewayBody(), stranger.key);
      const unseen = async (integration_id: unknown, type = 'value_error') => {
        const r = await s.call('PUT', url, { integration_id }, w.owner.key);
        assert.equal(r.status, 422, r.text);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'integration_id']);
        assert.equal(r.body.detail[0].type, type);
      };
      await unseen(crypto.randomUUID());
      await unseen(theirs.body.id);
      await unseen('not-a-uuid', 'uuid_parsing');
      // Shared with the caller (or their group): accepted.
      await s.call(
        'POST',
        `/v2/integrations/${theirs.body.id}/users`,
        [{ user_id: w.owner.id, role: 'viewer' }],
        stranger.key,
      );
      let r = await s.call('PUT', url, { integration_id: theirs.body.id }, w.owner.key);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.integration_id, theirs.body.id);
      // A deleted integration leaves the configuration without one.
      r = await s.call('DELETE', `/v2/integrations/${theirs.body.id}`, undefined, stranger.key);
      assert.equal(r.status, 200);
      r = await s.call('GET', url, undefined, w.owner.key);
      assert.equal(r.body.data.integration_id, null);
    });

    test('access: viewers read, editors and owners save, others get 404', async () => {
      const w = await world();
      const url = cfgUrl(w.projectId, w.logStreamId);
      const viewer = await s.user();
      const editor = await s.user();
      const stranger = await s.user();
      await shareProject(w.projectId, viewer.id, 'viewer', w.owner.key);
      await shareProject(w.projectId, editor.id, 'editor', w.owner.key);
      assert.equal((await s.call('GET', url, undefined, viewer.key)).status, 200);
      let r = await s.call('PUT', url, { model: 'm' }, viewer.key);
      assert.equal(r.status, 403);
      r = await s.call('PUT', url, { model: 'by-editor' }, editor.key);
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', url, undefined, viewer.key)).body.data.model, 'by-editor');
      assert.equal((await s.call('GET', url, undefined, stranger.key)).status, 404);
      assert.equal((await s.call('PUT', url, { model: 'x' }, stranger.key)).status, 404);
      // Admins see every project.
      assert.equal((await s.call('GET', url)).status, 200);
      assert.equal((await s.call('GET', url, undefined, null)).status, 401);
      // Unknown run, a run of another project, bad ids.
      r = await s.call('GET', cfgUrl(w.projectId, crypto.randomUUID()), undefined, w.owner.key);
      assert.equal(r.status, 404);
      const other = await projectWithLogStream(s, w.owner.key);
      r = await s.call('GET', cfgUrl(w.projectId, other.logStreamId), undefined, w.owner.key);
      assert.equal(r.status, 404);
      r = await s.call('PUT', cfgUrl(w.projectId, other.logStreamId), {}, w.owner.key);
      assert.equal(r.status, 404);
      r = await s.call('GET', cfgUrl('nope', w.logStreamId), undefined, w.owner.key);
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'project_id']);
      r = await s.call('GET', cfgUrl(w.projectId, 'nope'), undefined, w.owner.key);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'run_id']);
      r = await s.call('PUT', url, '[1,', w.owner.key);
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'json_invalid');
      r = await s.call('PUT', url, [], w.owner.key);
      assert.equal(r.status, 422);
      // The configuration goes with its project.
      await s.call('PUT', url, { model: 'doomed' }, w.owner.key);
      assert.equal(
        (await s.call('DELETE', `/v2/projects/${w.projectId}`, undefined, w.owner.key)).status,
        200,
      );
      const rows = await s.running.services.store.db
        .selectFrom('signals_configurations')
        .select('id')
        .where('project_id', '=', w.projectId)
        .execute();
      assert.equal(rows.length, 0);
    });
  });
}
