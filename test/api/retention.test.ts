/**
 * Retention, on each store: `retention_days` set by PATCH on a project and a log stream (the log
 * stream's wins; null inherits), records dated in the past deleted by the background job with
 * everything derived, newer ones kept; and, on PostgreSQL, two servers on one database run the job
 * (and the text indexer) once, by whichever holds its lease.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type Running, startServices } from '../../src/server.ts';
import { leasesOf } from '../../src/store/leases.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const DAY = 86_400_000;

function trace(daysAgo: number, label: string) {
  return {
    id: crypto.randomUUID(),
    name: label,
    created_at: new Date(Date.now() - daysAgo * DAY).toISOString(),
    input: `input ${label}`,
    output: 'out',
    user_metadata: { label },
    spans: [{ type: 'llm', input: 'q', output: 'a', metrics: { num_input_tokens: 5, cost: 0.25 } }],
  };
}

for (const store of storesUnderTest()) {
  describe(`retention (${store})`, () => {
    let s: TestServer;
    before(async () => {
      s = await startTestServer(store);
    });
    after(async () => s?.close());

    async function stream(project: string, name: string) {
      const r = await s.call('POST', `/v2/projects/${project}/log_streams`, { name });
      assert.equal(r.status, 200, r.text);
      return r.body.id as string;
    }

    test('PATCH sets it; the job deletes what is older, with what it derives, and keeps the rest', async () => {
      const p = await s.call('POST', '/v2/projects', { name: `ret-${crypto.randomUUID()}` });
      const project = p.body.id;
      const own = await stream(project, 'own');
      const inherits = await stream(project, 'inherits');
      const forever = await stream(project, 'forever');
      const old = [trace(40, 'old-1'), trace(35, 'old-2')];
      const recent = [trace(10, 'recent'), trace(0, 'today')];
      const sent = new Map<string, { id: string }[]>();
      for (const ls of [own, inherits, forever]) {
        const traces = [...old, ...recent].map((t) => ({ ...t, id: crypto.randomUUID() }));
        sent.set(ls, traces);
        const r = await s.call('POST', `/v2/projects/${project}/traces`, { log_stream_id: ls, traces });
        assert.equal(r.status, 200, r.text);
      }
      // An old and a recent trace annotated and queued.
      const [oldTrace, , recentTrace] = sent.get(inherits) as { id: string }[];
      const tpl = await s.call('POST', `/v2/projects/${project}/annotation_templates`, {
        name: 'ok',
        type: 'thumbs',
      });
      assert.equal(tpl.status, 200, tpl.text);
      for (const t of [oldTrace, recentTrace]) {
        const a = await s.call('PUT', `/v2/projects/${project}/records/${t.id}/annotations/${tpl.body.id}`, {
          value: true,
        });
        assert.equal(a.status, 200, a.text);
      }
      const q = await s.call('POST', `/v2/projects/${project}/annotation_queues`, {
        name: 'q',
        template_ids: [tpl.body.id],
      });
      const added = await s.call('POST', `/v2/projects/${project}/annotation_queues/${q.body.id}/records`, {
        record_ids: [oldTrace.id, recentTrace.id],
      });
      assert.equal(added.status, 200, added.text);

      // The log streams' rules before the project's: the job may run between two PATCHes, and the
      // project's rule alone would rightly take the 'forever' stream's old records.
      const lo = await s.call('PATCH', `/v2/projects/${project}/log_streams/${own}`, { retention_days: 20 });
      assert.equal(lo.body.retention_days, 20);
      const lf = await s.call('PATCH', `/v2/projects/${project}/log_streams/${forever}`, {
        retention_days: 36500,
      });
      assert.equal(lf.body.retention_days, 36500);
      const pp = await s.call('PATCH', `/v2/projects/${project}`, { retention_days: 30 });
      assert.equal(pp.status, 200, pp.text);
      assert.equal(pp.body.retention_days, 30);
      const bad = await s.call('PATCH', `/v2/projects/${project}`, { retention_days: 0 });
      assert.equal(bad.status, 422);
      assert.deepEqual(bad.body.detail[0].loc, ['body', 'retention_days']);

      assert.equal(await s.running.services.retention.job.runOnce(), 'done');
      const names = async (ls: string) => {
        const r = await s.call('POST', `/v2/projects/${project}/traces/search`, {
          log_stream_id: ls,
          sort: { name: 'created_at', ascending: true },
        });
        return r.body.records.map((x: any) => x.name);
      };
      assert.deepEqual(await names(own), ['recent', 'today'], '20 days: only the newer two stay');
      assert.deepEqual(await names(inherits), ['recent', 'today'], "the project's 30 days");
      assert.deepEqual(await names(forever), ['old-1', 'old-2', 'recent', 'today']);
      const run = await s.call('GET', `/v2/projects/${project}/log_streams/${inherits}`);
      assert.equal(run.body.num_traces, 2);
      assert.equal(run.body.num_spans, 2);
      const usage = await s.call(
        'POST',
        `/v2/projects/${project}/log_streams/${inherits}/logstream_insights/token_usage`,
        {},
      );
      assert.equal(usage.body.token_usages.length, 2, 'the token-usage days of the deleted spans are gone');
      // The sessions the old traces had (one per request here: shared with the newer ones) stay.
      const sessions = await s.call('POST', `/v2/projects/${project}/sessions/count`, {
        log_stream_id: inherits,
      });
      assert.equal(sessions.body.total_count, 1);
      const session = await s.call('POST', `/v2/projects/${project}/sessions/search`, {
        log_stream_id: inherits,
      });
      assert.equal(session.body.records[0].metrics.cost, 0.5, "the session's cost: its two traces left");
      assert.deepEqual(
        usage.body.token_usages.map((d: any) => d.cost),
        [0.25, 0.25],
      );
      // The expired trace's annotation and queue place went with it.
      const db = s.running.services.store.db;
      for (const table of ['annotations', 'annotation_aggregates', 'annotation_queue_records'] as const) {
        const ids = await db
          .selectFrom(table)
          .select('record_id')
          .where('project_id', '=', project)
          .execute();
        assert.deepEqual(
          ids.map((r: any) => r.record_id),
          [recentTrace.id],
          table,
        );
      }

      // null on the log stream: the project's period again.
      const ln = await s.call('PATCH', `/v2/projects/${project}/log_streams/${forever}`, {
        retention_days: null,
      });
      assert.equal(ln.body.retention_days, null);
      assert.equal(await s.running.services.retention.job.runOnce(), 'done');
      assert.deepEqual(await names(forever), ['recent', 'today']);
    });

    test('an empty session older than the period goes; one with a newer trace stays', async () => {
      const p = await s.call('POST', '/v2/projects', { name: `ret-s-${crypto.randomUUID()}` });
      const project = p.body.id;
      const ls = await stream(project, 'ls');
      const oldSession = crypto.randomUUID();
      const mixed = crypto.randomUUID();
      const r = await s.call('POST', `/v2/projects/${project}/traces`, {
        log_stream_id: ls,
        sessions: [
          { id: oldSession, name: 'old', created_at: new Date(Date.now() - 50 * DAY).toISOString() },
          { id: mixed, name: 'mixed', created_at: new Date(Date.now() - 50 * DAY).toISOString() },
        ],
        traces: [
          { ...trace(45, 'a'), session_id: oldSession },
          { ...trace(45, 'b'), session_id: mixed },
          { ...trace(1, 'c'), session_id: mixed },
        ],
      });
      assert.equal(r.status, 200, r.text);
      await s.call('PATCH', `/v2/projects/${project}`, { retention_days: 30 });
      assert.equal(await s.running.services.retention.job.runOnce(), 'done');
      const found = await s.call('POST', `/v2/projects/${project}/sessions/search`, { log_stream_id: ls });
      assert.deepEqual(
        found.body.records.map((x: any) => [x.name, x.input]),
        [['mixed', 'input c']],
      );
    });

    if (store === 'postgres') {
      test('two servers on one database: each job runs in one of them', async () => {
        const other: Running = await startServices(s.config, { logger: false });
        try {
          const a = s.running.services;
          const b = other.services;
          const outcomes = await Promise.all([a.retention.job.runOnce(), b.retention.job.runOnce()]);
          assert.deepEqual(outcomes.sort(), ['done', 'not_leader']);
          // Again: the holder keeps it.
          const again = await Promise.all([a.retention.job.runOnce(), b.retention.job.runOnce()]);
          assert.deepEqual(again.sort(), ['done', 'not_leader']);
          assert.deepEqual(
            [outcomes, again].map((o) => o.indexOf('done')),
            [outcomes.indexOf('done'), outcomes.indexOf('done')],
          );
          // The text indexer: both run their loop; one holds the lease.
          await other.app.ready();
          const holders = [leasesOf(a.store.db), leasesOf(b.store.db)];
          const deadline = Date.now() + 5000;
          let rows: { holder: string }[] = [];
          while (Date.now() < deadline) {
            rows = await a.store.db
              .selectFrom('leases')
              .select('holder')
              .where('name', '=', 'text-index')
              .execute();
            if (rows.length) break;
            await new Promise((r) => setTimeout(r, 50));
          }
          assert.equal(rows.length, 1);
          const held = holders.map((h) => h.holds('text-index'));
          assert.deepEqual(
            held.filter(Boolean).length,
            1,
            `exactly one indexer holds the lease (${JSON.stringify(held)})`,
          );
          assert.ok(holders.some((h) => h.holder === rows[0].holder));
          // Stopping the holder hands the job over at once.
          const holderIsOther = holders[1].holds('text-index');
          if (holderIsOther) await other.close();
          else await a.search.indexer.stop();
          const survivor = holderIsOther ? holders[0] : holders[1];
          const until = Date.now() + 5000;
          while (!survivor.holds('text-index') && Date.now() < until)
            await new Promise((r) => setTimeout(r, 50));
          assert.ok(survivor.holds('text-index'), 'the other server took the lease over');
          if (!holderIsOther) a.search.indexer.start();
        } finally {
          await other.close().catch(() => {});
        }
      });
    }
  });
}
