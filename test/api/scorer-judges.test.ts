/**
 * LLM judges on both stores against the fake provider: every output type and voting rule (with an
 * abstaining judge), a placeholder resolving to nothing, retries then success, a 401 that pauses the
 * run until its integration is fixed, the preview, two servers on one store scoring each task once,
 * and a restart in the middle losing no task.
 *
 * The fake provider's answers are scripted by the judge template itself: `[[a|b|c]]` in a prompt makes
 * its successive calls answer a, b, c (as the JSON value of "rating"); `junk` answers text that is not
 * JSON, so that judge abstains.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startServices } from '../../src/server.ts';
import { JobQueue } from '../../src/services/job-queue.ts';
import { ScoreWorker } from '../../src/services/score-worker.ts';
import { JobsRepo } from '../../src/store/jobs.ts';
import { SCORE_BATCH_JOB, SCORE_JOB } from '../../src/domain/scoring-plan.ts';
import { ScorersRepo } from '../../src/store/scorers.ts';
import { RunsRepo } from '../../src/store/runs.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

type Json = Record<string, any>;

/** The scripted answers: a call counter per prompt. */
function scriptedReply() {
  const seen = new Map<string, number>();
  return (body: any) => {
    const msgs: any[] = body.messages ?? [];
    const prompt = msgs.map((m) => m.content).join('\n');
    const m = /\[\[([^\]]*)\]\]/.exec(prompt);
    if (!m) return JSON.stringify({ explanation: 'looks right', rating: true });
    const options = m[1].split('|');
    const n = seen.get(prompt) ?? 0;
    seen.set(prompt, n + 1);
    const pick = options[n % options.length];
    if (pick === 'junk') return 'I would rather not say.';
    return `{"explanation": "judge ${n + 1} says ${pick.replace(/"/g, '')}", "rating": ${pick}}`;
  };
}

for (const store of storesUnderTest()) {
  describe(`LLM judges [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let P: string;
    let integrationId: string;
    const env = {
      SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
      SPANBASE_JOB_POLL_MS: '20',
      SPANBASE_JOB_RETRY_BASE_MS: '1',
      SPANBASE_MODEL_RETRY_BASE_MS: '1',
      SPANBASE_MODEL_MAX_ATTEMPTS: '2',
      SPANBASE_SCORER_QUIET_MS: '0',
    };
    const ok = async (method: string, url: string, body?: unknown) => {
      const r = await s.call(method, url, body);
      assert.equal(r.status, 200, `${method} ${url}: ${r.text}`);
      return r.body;
    };
    const proj = (path: string) => `/v2/projects/${P}${path}`;
    const putIntegration = (token: string) =>
      ok('PUT', '/v2/integrations/example_gateway', { endpoint: fake.url, use_case: 'chat', token });

    /** A judge with its own template (and so its own script). */
    async function judge(name: string, version: Json) {
      const sc = await ok('POST', '/v2/scorers', {
        name: `${name}-${store}-${Math.random().toString(36).slice(2, 8)}`,
        scorer_type: 'llm',
        scoreable_node_types: ['llm'],
      });
      const v = await ok('POST', `/v2/scorers/${sc.id}/version/llm`, {
        model_name: 'fake-model',
        ...version,
      });
      return { id: sc.id as string, name: sc.name as string, versionId: v.id as string };
    }

    /** A judge of one call whose answer is always yes. */
    const yesJudge = (name: string) =>
      judge(name, {
        output_type: 'boolean',
        num_judges: 1,
        chain_poll_template: { template: '{{output}} [[true]]' },
      });

    async function stream(scorers: { id: string }[]) {
      const ls = (await ok('POST', proj('/log_streams'), { name: `ls-${Math.random()}` })).id as string;
      await ok('POST', proj(`/runs/${ls}/scorer-settings`), {
        scorers: scorers.map((x) => ({ id: x.id, scorer_type: 'llm' })),
      });
      return ls;
    }

    /** Logs one trace with one llm span; answers the span's id. */
    async function logSpan(ls: string, output = 'Paris', extra: Json = {}) {
      const spanId = crypto.randomUUID();
      await ok('POST', proj('/traces'), {
        log_stream_id: ls,
        traces: [
          {
            id: crypto.randomUUID(),
            name: 'chat',
            input: 'Capital of France?',
            output,
            spans: [
              { id: spanId, type: 'llm', name: 'model', input: 'Capital of France?', output, ...extra },
            ],
          },
        ],
      });
      return spanId;
    }

    /** Logs `n` traces in one request, each with one llm span answering `<tag> <i>`. */
    async function logSpans(ls: string, tag: string, n: number) {
      const spanIds = Array.from({ length: n }, () => crypto.randomUUID());
      await ok('POST', proj('/traces'), {
        log_stream_id: ls,
        traces: spanIds.map((id, i) => ({
          id: crypto.randomUUID(),
          name: 'chat',
          input: 'Q',
          output: `${tag} ${i}`,
          spans: [{ id, type: 'llm', name: 'model', input: 'Q', output: `${tag} ${i}` }],
        })),
      });
      return spanIds;
    }

    /** The span, once every listed scorer's state is one of `done`. */
    async function settled(id: string, names: string[], done = ['success', 'error', 'failed'], ms = 8000) {
      const until = Date.now() + ms;
      for (;;) {
        const span = await ok('GET', proj(`/spans/${id}`));
        if (names.every((n) => done.includes(span.metric_info?.[n]?.status_type))) {
          return span;
        }
        if (Date.now() > until) {
          const jobs = await s.running.services.store.db
            .selectFrom('jobs')
            .selectAll()
            .where('key', 'like', `${id}%`)
            .execute();
          assert.fail(
            `${JSON.stringify(jobs)} ` +
              `not settled: ${JSON.stringify(span.metric_info)} ${JSON.stringify(span.metrics)}`,
          );
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    }

    /** Waits until no score task or batch is pending or running. */
    async function waitIdle(repo: JobsRepo, ms = 8000) {
      const until = Date.now() + ms;
      while ((await repo.open([SCORE_JOB, SCORE_BATCH_JOB])) > 0) {
        assert.ok(Date.now() < until, 'the score queue did not drain');
        await new Promise((r) => setTimeout(r, 25));
      }
    }

    before(async () => {
      s = await startTestServer(store, env);
      fake = await startFakeProvider();
      fake.reply = scriptedReply();
      P = (await ok('POST', '/v2/projects', { name: `judges-${Date.now()}` })).id;
      integrationId = (await putIntegration('tok-1')).id;
    });
    after(async () => {
      await fake?.close();
      await s?.close();
    });

    test('each output type and its voting rule, with an abstaining judge counted', async () => {
      const tpl = (marks: string) => ({
        template: `Question: {{input}}\nAnswer: {{output}}\n[[${marks}]]`,
      });
      const boolean = await judge('bool', {
        output_type: 'boolean',
        num_judges: 3,
        chain_poll_template: tpl('true|true|false'),
      });
      const count = await judge('count', {
        output_type: 'count',
        num_judges: 2,
        chain_poll_template: tpl('2|4'),
      });
      const discrete = await judge('disc', {
        output_type: 'discrete',
        num_judges: 3,
        chain_poll_template: tpl('1|2|junk'),
      });
      const pct = await judge('pct', {
        output_type: 'percentage',
        num_judges: 2,
        chain_poll_template: tpl('0.2|"40%"'),
      });
      const cat = await judge('cat', {
        output_type: 'categorical',
        num_judges: 3,
        chain_poll_template: {
          ...tpl('"Good"|"bad"|"good"'),
          response_schema: { type: 'object', properties: { rating: { enum: ['good', 'bad'] } } },
        },
      });
      const free = await judge('free', {
        output_type: 'freeform',
        num_judges: 1,
        cot_enabled: false,
        chain_poll_template: tpl('"concise"'),
      });
      const all = [boolean, count, discrete, pct, cat, free];
      const ls = await stream(all);
      const id = await logSpan(ls);
      const span = await settled(
        id,
        all.map((x) => x.name),
      );
      const info = span.metric_info;
      for (const x of all)
        assert.equal(info[x.name].status_type, 'success', `${x.name}: ${JSON.stringify(info[x.name])}`);
      assert.ok(Math.abs(span.metrics[boolean.name] - 2 / 3) < 1e-9);
      assert.equal(info[boolean.name].votes.length, 3);
      assert.match(info[boolean.name].explanation, /says true/);
      assert.equal(info[boolean.name].model_alias, 'fake-model');
      assert.equal(span.metrics[count.name], 3);
      assert.equal(span.metrics[discrete.name], 1.5);
      assert.equal(info[discrete.name].abstained, 1);
      assert.match(info[discrete.name].votes.find((v: Json) => v.abstained).abstained, /not a JSON object/);
      assert.ok(Math.abs(span.metrics[pct.name] - 0.3) < 1e-9);
      assert.equal(info[cat.name].value, 'good');
      assert.equal(span.metrics[cat.name], undefined, 'labels live in metric_info, not metrics');
      assert.equal(info[free.name].value, 'concise');
      // The judges were asked as configured: N calls, JSON answers, chain of thought when enabled.
      const asked = fake.requests.filter((r) => JSON.stringify(r.body).includes('1|2|junk'));
      assert.equal(asked.length, 3);
      assert.match(asked[0].body.messages[0].content, /step by step/);
      assert.match(asked[0].body.messages[1].content, /Answer: Paris/);
      // The score is a metrics/<name> column: filter by it.
      const found = await ok('POST', proj('/spans/search'), {
        log_stream_id: ls,
        filters: [{ column_id: `metrics/${count.name}`, operator: 'gte', value: 3, type: 'number' }],
      });
      assert.deepEqual(
        found.records.map((r: Json) => r.id),
        [id],
      );
    });

    test('a placeholder that resolves to nothing is an error naming the path', async () => {
      const j = await judge('topic', {
        output_type: 'boolean',
        num_judges: 1,
        chain_poll_template: { template: 'Topic {{metadata.topic}}: {{output}}' },
      });
      const ls = await stream([j]);
      const id = await logSpan(ls);
      const span = await settled(id, [j.name]);
      assert.equal(span.metric_info[j.name].status_type, 'error');
      assert.match(span.metric_info[j.name].message, /\{\{metadata\.topic\}\} resolves to nothing/);
      // With the metadata there, the same judge scores.
      const id2 = await logSpan(ls, 'Paris', { user_metadata: { topic: 'geo' } });
      const ok2 = await settled(id2, [j.name]);
      assert.equal(ok2.metric_info[j.name].status_type, 'success');
    });

    test("a deleted record's score result goes with it, and a deleted log stream's results and jobs", async () => {
      const j = await yesJudge('deletes');
      const ls = await stream([j]);
      const [gone, kept] = [await logSpan(ls, 'Paris gone'), await logSpan(ls, 'Paris kept')];
      for (const id of [gone, kept]) await settled(id, [j.name]);
      const db = s.running.services.store.db;
      const results = async () =>
        (await db.selectFrom('score_results').select('record_id').where('run_id', '=', ls).execute())
          .map((r) => r.record_id)
          .sort();
      assert.deepEqual(await results(), [gone, kept].sort());
      // The trace of `gone` (and so its span) is deleted: its result goes, the other stays.
      const goneTrace = (await ok('GET', proj(`/spans/${gone}`))).trace_id;
      await ok('POST', proj('/traces/delete'), {
        log_stream_id: ls,
        filters: [{ column_id: 'id', operator: 'eq', value: goneTrace, type: 'id' }],
      });
      assert.deepEqual(await results(), [kept]);
      // A batch written for a record deleted before the queue expands it adds no task for it.
      const scoring = s.running.services.scoring as unknown as {
        expandBatch(job: object): Promise<number>;
      };
      const batch = { groups: [{ scorer_id: j.id, version_id: j.versionId, record_ids: [gone, kept] }] };
      assert.equal(await scoring.expandBatch({ projectId: P, runId: ls, payload: batch }), 0);
      assert.deepEqual(await results(), [kept]);
      // Deleting the log stream (as an import that failed does; no route offers it) takes its
      // results and jobs.
      await new RunsRepo(db, s.running.services.store.dialect).delete(ls);
      assert.deepEqual(await results(), []);
      assert.equal((await db.selectFrom('jobs').select('id').where('run_id', '=', ls).execute()).length, 0);
    });

    test("a finished task's job is pruned; its record written again is not judged again, a recompute is", async () => {
      const j = await yesJudge('pruned');
      const ls = await stream([j]);
      const sv = s.running.services;
      const repo = new JobsRepo(sv.store.db, sv.store.dialect);
      const trace = { id: crypto.randomUUID(), name: 'chat', input: 'Q', output: 'Paris' };
      const span = { id: crypto.randomUUID(), type: 'llm', name: 'model', input: 'Q', output: 'Paris' };
      const log = () =>
        ok('POST', proj('/traces'), { log_stream_id: ls, traces: [{ ...trace, spans: [span] }] });
      await log();
      await settled(span.id, [j.name]);
      const calls = fake.requests.length;
      // As if an hour had passed: the finished task and its batch are pruned.
      await sv.store.db.updateTable('jobs').set({ finished_at: 1 }).where('run_id', '=', ls).execute();
      assert.ok((await sv.jobs.prune()) >= 2);
      assert.equal(
        (await sv.store.db.selectFrom('jobs').select('id').where('run_id', '=', ls).execute()).length,
        0,
      );
      // Written again: its batch is expanded into no task, the judge is not called.
      await log();
      await waitIdle(repo);
      assert.equal(fake.requests.length, calls);
      assert.equal((await ok('GET', proj(`/spans/${span.id}`))).metric_info[j.name].status_type, 'success');
      // A recompute re-scores it.
      await ok('POST', proj('/recompute_metrics'), { log_stream_id: ls, scorer_ids: [j.id] });
      await waitIdle(repo);
      assert.equal(fake.requests.length, calls + 1);
    });

    test('provider errors are retried, then the score lands', async () => {
      const j = await yesJudge('retry');
      const ls = await stream([j]);
      const before = fake.requests.length;
      // Two 500s exhaust the model-call module's two attempts (the task retries); a third is retried inside.
      for (let i = 0; i < 3; i++) fake.queueFault({ status: 500 });
      const id = await logSpan(ls);
      const span = await settled(id, [j.name]);
      assert.equal(span.metric_info[j.name].status_type, 'success');
      assert.equal(span.metrics[j.name], 1);
      assert.equal(fake.requests.length - before, 4);
    });

    test('a 401 pauses the run with the reason shown; fixing the integration resumes it', async () => {
      const j = await judge('auth', {
        output_type: 'boolean',
        num_judges: 1,
        chain_poll_template: { template: '{{output}} [[false]]' },
      });
      const ls = await stream([j]);
      fake.queueFault({ status: 401, body: '{"error":{"message":"bad key"}}' });
      const id = await logSpan(ls);
      let status: Json = {};
      // Time-bounded, not count-bounded: under a loaded CI the claim, call and pause take seconds.
      for (const end = Date.now() + 30_000; Date.now() < end && !status.paused_reason; ) {
        status = await ok('GET', proj(`/runs/${ls}/scorer-settings/status`));
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.match(status.paused_reason, /credential/);
      const paused = await ok('GET', proj(`/spans/${id}`));
      assert.equal(paused.metric_info[j.name].status_type, 'pending');
      assert.match(paused.metric_info[j.name].message, /paused: credential/);
      const counts = status.scorers[0].counts;
      assert.ok(
        counts.some((c: Json) => c.status === 'pending' && /paused/.test(c.reason)),
        JSON.stringify(counts),
      );
      // A second record waits too: no call is made while paused.
      const calls = fake.requests.length;
      const id2 = await logSpan(ls);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(fake.requests.length, calls);
      // Its task waits in ingestion's batch (a paused run's batches are not expanded) and reads so.
      const waiting = await ok('GET', proj(`/spans/${id2}`));
      assert.equal(waiting.metric_info[j.name].status_type, 'pending');
      assert.match(waiting.metric_info[j.name].message, /paused: credential/);
      const both = (await ok('GET', proj(`/runs/${ls}/scorer-settings/status`))).scorers[0].counts;
      assert.equal(
        both.filter((c: Json) => c.status === 'pending').reduce((n: number, c: Json) => n + c.count, 0),
        2,
        JSON.stringify(both),
      );
      // The integration is fixed (a new token saved): both are scored.
      await putIntegration('tok-2');
      for (const x of [id, id2]) {
        const span = await settled(x, [j.name]);
        assert.equal(span.metrics[j.name], 0);
      }
      status = await ok('GET', proj(`/runs/${ls}/scorer-settings/status`));
      assert.equal(status.paused_reason, null);
    });

    test("preview: the rendered prompt, each judge's raw answer and the parsed score, nothing stored", async () => {
      const j = await judge('prev', {
        output_type: 'boolean',
        num_judges: 2,
        chain_poll_template: { template: 'Saved {{output}}' },
      });
      const ls = await stream([]);
      const id = await logSpan(ls, 'Lyon');
      const r = await ok('POST', proj(`/scorers/${j.id}/preview`), {
        record_ids: [id],
        version: {
          output_type: 'boolean',
          num_judges: 2,
          chain_poll_template: { template: 'Draft: {{output}} [[true|junk]]' },
        },
      });
      const res = r.results[0];
      assert.equal(res.status, 'success', JSON.stringify(res));
      assert.equal(res.rendered_prompt, 'Draft: Lyon [[true|junk]]');
      assert.equal(res.judges.length, 2);
      assert.ok(res.judges.some((x: Json) => x.raw === 'I would rather not say.' && x.abstained));
      assert.equal(res.value, 1);
      assert.equal(res.abstained, 1);
      const missing = await ok('POST', proj(`/scorers/${j.id}/preview`), {
        record_ids: [id],
        version: { model_name: 'fake-model', chain_poll_template: { template: '{{ground_truth}}' } },
      });
      assert.equal(missing.results[0].status, 'error');
      assert.match(missing.results[0].error, /\{\{ground_truth\}\}/);
      const span = await ok('GET', proj(`/spans/${id}`));
      assert.equal(span.metrics[j.name], undefined);
      assert.equal(integrationId.length > 0, true);
    });

    test('a restart in the middle loses no task; on PostgreSQL two servers score each task once', async () => {
      const j = await judge('once', {
        output_type: 'boolean',
        num_judges: 1,
        chain_poll_template: { template: '{{output}} [[true]]' },
      });
      const ls = await stream([j]);
      const asked = (tag: string) =>
        fake.requests
          .map((r) => r.body?.messages?.at(-1)?.content as string)
          .filter((c) => typeof c === 'string' && c.startsWith(tag));
      // The worker stops in the middle (a process going down): its running tasks go back to pending;
      // a new worker on the same store (the restarted process) scores them all, none lost.
      fake.delayMs = 150;
      const more = await logSpans(ls, 'restart', 12);
      await new Promise((r) => setTimeout(r, 100));
      const sv = s.running.services;
      await sv.jobs.stop();
      const queue = new JobQueue(new JobsRepo(sv.store.db, sv.store.dialect), {
        concurrency: sv.config.jobConcurrency,
        leaseMs: sv.config.jobLeaseMs,
        pollMs: sv.config.jobPollMs,
        retryBaseMs: sv.config.jobRetryBaseMs,
      });
      queue.pausedRuns = () => sv.scoring.pausedRuns();
      new ScoreWorker(
        new ScorersRepo(sv.store.db, sv.store.dialect),
        sv.scoring,
        sv.judges,
        sv.ingest,
        queue,
        {
          quietMs: 0,
          resumeCheckMs: 1000,
        },
      );
      queue.start();
      try {
        for (const id of more) assert.equal((await settled(id, [j.name], ['success'])).metrics[j.name], 1);
        assert.equal(new Set(asked('restart ')).size, 12);
        // Only a call the stop cut short is asked again.
        assert.ok(
          asked('restart ').length <= 12 + sv.config.jobConcurrency,
          String(asked('restart ').length),
        );
        if (store !== 'postgres') return;
        // Two servers claim from one table (FOR UPDATE SKIP LOCKED): every record is judged once.
        const second = await startServices(s.config, { logger: false });
        await second.app.ready();
        try {
          fake.delayMs = 30;
          const ids = await logSpans(ls, 'both', 16);
          for (const id of ids) assert.equal((await settled(id, [j.name], ['success'])).metrics[j.name], 1);
          assert.equal(asked('both ').length, 16);
          assert.equal(new Set(asked('both ')).size, 16);
        } finally {
          await second.close();
        }
      } finally {
        fake.delayMs = 0;
        await queue.stop();
      }
    });
  });
}
