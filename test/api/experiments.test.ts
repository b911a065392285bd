/**
 * Experiments (issue #34) on both stores against the fake provider: a template over a 4-row dataset
 * becomes 4 scored traces, progress moves and completes, a failing row is a trace with its error, a
 * job stopped mid-way finishes each row once, comparison and metrics match the traces, plus the
 * experiment routes (list, pages, update, tags, columns, delete) and the job routes' 4xx.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServices } from '../../src/server.ts';
import { EXPERIMENT_JOB } from '../../src/services/experiments.ts';
import { JobsRepo } from '../../src/store/jobs.ts';
import {
  type World,
  experimentWorld,
  newExperiment,
  ok,
  startJob,
  tracesOf,
  waitJob,
} from '../helpers/experiments.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`experiments [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let w: World;

    before(async () => {
      s = await startTestServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_JOB_POLL_MS: '20',
        SPANBASE_JOB_RETRY_BASE_MS: '1',
        SPANBASE_MODEL_RETRY_BASE_MS: '1',
        SPANBASE_MODEL_MAX_ATTEMPTS: '2',
      });
      fake = await startFakeProvider();
      w = await experimentWorld(s, fake, 4, store);
    });
    after(async () => {
      await fake?.close();
      await s?.close();
    });

    test('a template over 4 rows: 4 traces with the answers and their scores; progress completes', async () => {
      const e = await newExperiment(s, w, 'first');
      const created = await startJob(s, w, e);
      assert.equal(created.job_name, 'playground_run');
      assert.equal(created.run_id, e);
      const { job, seen } = await waitJob(s, created.job_id);
      assert.equal(job.status, 'completed', JSON.stringify(job));
      assert.equal(job.steps_total, 4);
      assert.equal(job.steps_completed, 4);
      assert.equal(job.progress_percent, 100);
      assert.equal(job.failed_rows, 0);
      assert.ok(job.completed_at && job.processing_started);
      assert.ok(
        seen.some((j) => j.status !== 'completed'),
        'a job is seen before it completes',
      );

      const traces = await tracesOf(s, w.P, e);
      assert.equal(traces.length, 4);
      const byRow = new Map(traces.map((t) => [t.dataset_metadata.dataset_row_index, t]));
      for (let i = 0; i < 4; i++) {
        const t = byRow.get(i) as Record<string, any>;
        assert.equal(t.output, `Answer: q${i}`);
        assert.equal(t.dataset_metadata.dataset_id, w.datasetId);
        assert.equal(t.dataset_metadata.dataset_version_index, w.datasetVersion);
        assert.equal(t.metrics[w.scorer.name], i === 3 ? 0 : 1);
      }
      const full = await ok(s, 'GET', `/v2/projects/${w.P}/traces/${traces[0].id}`);
      const llm = full.spans[0];
      assert.equal(llm.type, 'llm');
      assert.equal(llm.model, 'fake-model');
      assert.deepEqual(llm.input, [
        { role: 'user', content: `Answer: q${traces[0].dataset_metadata.dataset_row_index}` },
      ]);
      assert.ok(llm.metrics.num_input_tokens > 0);

      const exp = await ok(s, 'GET', `/v2/projects/${w.P}/experiments/${e}`);
      assert.equal(exp.num_samples, 4);
      assert.equal(exp.aggregate_metrics[`average_${w.scorer.name}`], 0.75);
      assert.equal(exp.status.log_generation.progress_percent, 100);
      assert.equal(exp.dataset.dataset_id, w.datasetId);
      assert.equal(exp.prompt_model, 'fake-model');
      assert.equal(exp.prompt.version_index, 0);
      const m = await ok(s, 'POST', `/v2/projects/${w.P}/experiments/${e}/metrics`, { filters: [] });
      const score = m.metrics.find((x: any) => x.name === w.scorer.name);
      assert.equal(score.average, 0.75);
      assert.deepEqual(
        Object.values(score.buckets).reduce((a: number, b: any) => a + b, 0),
        4,
      );

      const jobs = await ok(s, 'GET', `/v2/projects/${w.P}/runs/${e}/jobs`);
      assert.deepEqual(
        jobs.map((j: any) => j.id),
        [created.job_id],
      );
      assert.equal((await ok(s, 'GET', `/v2/projects/${w.P}/runs/${e}/jobs/latest`)).id, created.job_id);
    });

    test('a row whose call fails after retries is a trace with its error; the job completes with the count', async () => {
      const e = await newExperiment(s, w, 'failing');
      // Concurrency 1: the first row's both attempts get the faults.
      fake.queueFault({ status: 500 });
      fake.queueFault({ status: 500 });
      const { job } = await waitJob(s, (await startJob(s, w, e, { concurrency: 1 })).job_id);
      assert.equal(job.status, 'completed');
      assert.equal(job.failed_rows, 1);
      const traces = await tracesOf(s, w.P, e);
      assert.equal(traces.length, 4);
      const bad = traces.filter((t) => t.error_message);
      assert.equal(bad.length, 1);
      assert.match(bad[0].error_message, /500|server|provider/i);
      assert.equal(bad[0].dataset_metadata.dataset_row_index, 0);
    });

    test('a job stopped mid-way resumes and writes each row once', async () => {
      const e = await newExperiment(s, w, 'resumed');
      const jobs = s.running.services.jobs;
      const paused = jobs.pausedRuns;
      jobs.pausedRuns = async () => [...(await paused()), e];
      // The third row's call hangs until the worker is stopped, so the worker dies mid-way however
      // slow the machine is (a delay alone let a loaded machine finish all four rows first).
      const base = fake.requests.length;
      const hangAfterTwo = () =>
        Object.defineProperty(fake, 'delayMs', {
          configurable: true,
          get: () => (fake.requests.length - base > 2 ? 60_000 : 0),
          set: () => {},
        });
      const noDelay = () =>
        Object.defineProperty(fake, 'delayMs', { configurable: true, writable: true, value: 0 });
      hangAfterTwo();
      try {
        const created = await startJob(s, w, e, { concurrency: 1 });
        const item = await new JobsRepo(s.running.services.store.db, s.running.services.store.dialect).byKey(
          EXPERIMENT_JOB,
          created.job_id,
        );
        assert.ok(item);
        // A worker that dies after two rows: its answer is dropped, as a lost lease's is.
        const abort = new AbortController();
        const first = s.running.services.experiments.runJob(item, abort.signal);
        // Rows are done once their traces are written (the job's progress is written less often).
        while ((await tracesOf(s, w.P, e)).length < 2) await new Promise((r) => setTimeout(r, 10));
        abort.abort();
        assert.equal((await first).status, 'retry');
        noDelay();
        const partial = (await tracesOf(s, w.P, e)).length;
        assert.ok(partial >= 2 && partial < 4, `${partial} rows before the restart`);
        jobs.pausedRuns = paused;
        await jobs.wakeRun(e, EXPERIMENT_JOB);
        const { job } = await waitJob(s, created.job_id);
        assert.equal(job.status, 'completed');
        assert.equal(job.steps_completed, 4);
        const traces = await tracesOf(s, w.P, e);
        assert.equal(traces.length, 4);
        assert.equal(new Set(traces.map((t) => t.dataset_metadata.dataset_row_id)).size, 4);
      } finally {
        jobs.pausedRuns = paused;
        noDelay();
      }
    });

    test('two processes on one store: each job is run by one of them, each row once', {
      skip: store !== 'postgres' && 'the issue asks it of PostgreSQL (processes share it over the network)',
    }, async () => {
      const second = await startServices(s.config, { logger: false });
      await second.app.ready(); // its job queue starts with the app
      const procs = [s.running.services, second.services];
      const ran: { proc: number; run: string }[] = [];
      const restore: (() => void)[] = [];
      procs.forEach((svc, proc) => {
        const run = svc.experiments.runJob.bind(svc.experiments);
        svc.experiments.runJob = (job, signal) => {
          ran.push({ proc, run: job.runId as string });
          return run(job, signal);
        };
        const paused = svc.jobs.pausedRuns;
        restore.push(() => {
          svc.experiments.runJob = run;
          svc.jobs.pausedRuns = paused;
        });
      });
      fake.delayMs = 20;
      const calls = () => fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
      const before = calls();
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(await newExperiment(s, w, `two-${i}`));
        // Each process is kept off two of the experiments, so both surely take part; the fifth is
        // open to both at once.
        const [a0, a1, b0, b1] = ids;
        const pausedA = procs[0].jobs.pausedRuns;
        const pausedB = procs[1].jobs.pausedRuns;
        procs[0].jobs.pausedRuns = async () => [...(await pausedA()), b0, b1];
        procs[1].jobs.pausedRuns = async () => [...(await pausedB()), a0, a1];
        const jobs = await Promise.all(ids.map((e) => startJob(s, w, e, { concurrency: 2 })));
        for (const j of jobs) {
          const { job } = await waitJob(s, j.job_id, 20_000);
          assert.equal(job.status, 'completed', JSON.stringify(job));
          assert.equal(job.steps_completed, 4);
        }
        for (const e of ids) {
          const traces = await tracesOf(s, w.P, e);
          assert.equal(traces.length, 4, e);
          assert.equal(new Set(traces.map((t) => t.dataset_metadata.dataset_row_id)).size, 4);
        }
        // Each job ran once, in one process; both processes ran some; the provider saw each row once.
        assert.deepEqual(ran.map((r) => r.run).sort(), [...ids].sort());
        assert.deepEqual(new Set(ran.map((r) => r.proc)), new Set([0, 1]));
        assert.equal(ran.find((r) => r.run === a0)?.proc, 0);
        assert.equal(ran.find((r) => r.run === b0)?.proc, 1);
        assert.equal(calls() - before, 5 * 4);
      } finally {
        for (const r of restore) r();
        fake.delayMs = 0;
        await second.close();
      }
    });

    test('cancel stops a job before its next row', async () => {
      const e = await newExperiment(s, w, 'cancelled');
      // Slow enough that the four rows take over a second: a loaded machine's slow cancel still lands
      // before the last (80 ms failed once under a load average of 4).
      fake.delayMs = 300;
      try {
        const created = await startJob(s, w, e, { concurrency: 1 });
        const c = await ok(s, 'POST', `/v2/jobs/${created.job_id}/cancel`);
        assert.equal(c.status, 'cancelled');
        await new Promise((r) => setTimeout(r, 400));
        const j = await ok(s, 'GET', `/v2/jobs/${created.job_id}`);
        assert.equal(j.status, 'cancelled');
        assert.ok((await tracesOf(s, w.P, e)).length < 4);
      } finally {
        fake.delayMs = 0;
      }
    });

    test('comparison aligns rows of two experiments; its metrics match the traces; rank and winner', async () => {
      const a = await newExperiment(s, w, 'cmp-a');
      const b = await newExperiment(s, w, 'cmp-b');
      await waitJob(s, (await startJob(s, w, a)).job_id);
      // b answers differently: a template that never matches the ground truth.
      const t2 = await ok(s, 'POST', `/v2/projects/${w.P}/templates`, {
        name: 'other',
        template: [{ role: 'user', content: 'Reply: {{question}}' }],
      });
      await waitJob(
        s,
        (await startJob(s, w, b, { prompt_template_version_id: t2.selected_version_id })).job_id,
      );
      const cmp = await ok(
        s,
        'GET',
        `/v2/projects/${w.P}/experiments/compare?experiment_ids=${a},${b}&sort_by=${encodeURIComponent(w.scorer.name)}`,
      );
      assert.equal(cmp.total_rows, 4);
      assert.deepEqual(
        cmp.experiments.map((x: any) => x.id),
        [a, b],
      );
      // Rows 0-2 differ in score (1 vs 0), row 3 does not (0 vs 0): they sort first.
      assert.deepEqual(
        cmp.rows.map((r: any) => r.score_differences[w.scorer.name]),
        [1, 1, 1, 0],
      );
      assert.equal(cmp.rows[3].index, 3);
      for (const r of cmp.rows) {
        assert.equal(r.outputs_differ, true);
        assert.equal(r.cells[0].output, `Answer: q${r.index}`);
        assert.equal(r.cells[1].output, `Reply: q${r.index}`);
      }
      const ta = await tracesOf(s, w.P, a);
      const avg = ta.reduce((x, t) => x + t.metrics[w.scorer.name], 0) / ta.length;
      assert.equal(cmp.experiments[0].metrics.find((m: any) => m.name === w.scorer.name).average, avg);
      // Every metric of each experiment (computed in SQL) against its traces, read back: the score's
      // average and buckets, latency's average, and the rows' cells.
      for (const [i, id] of [a, b].entries()) {
        const traces = await tracesOf(s, w.P, id);
        const got = cmp.experiments[i].metrics as any[];
        const score = got.find((m) => m.name === w.scorer.name);
        const values = traces.map((t) => t.metrics[w.scorer.name] as number);
        assert.equal(score.average, values.reduce((x, v) => x + v, 0) / values.length);
        const ones = values.filter((v) => v === 1).length;
        const zeros = values.length - ones;
        assert.deepEqual(
          Object.values(score.buckets).filter((n) => n !== 0),
          [zeros, ones].filter((n) => n !== 0),
          JSON.stringify(score.buckets),
        );
        const latency = got.find((m) => m.name === 'latency_ms');
        const meanMs = traces.reduce((x, t) => x + t.metrics.duration_ns / 1e6, 0) / traces.length;
        assert.ok(Math.abs(latency.average - meanMs) < 1e-6, `${latency.average} vs ${meanMs}`);
        assert.equal(
          Object.values(latency.buckets as Record<string, number>).reduce((x, n) => x + n, 0),
          traces.length,
        );
        const own = await ok(s, 'POST', `/v2/projects/${w.P}/experiments/${id}/metrics`, {});
        assert.deepEqual(own.metrics, got);
        for (const t of traces) {
          const row = cmp.rows.find((r: any) => r.row_id === t.dataset_metadata.dataset_row_id);
          assert.equal(row.cells[i].trace_id, t.id);
          assert.equal(row.cells[i].output, t.output);
          assert.equal(row.cells[i].scores[w.scorer.name], t.metrics[w.scorer.name]);
        }
      }
      // Filters are not applied, so they are refused rather than ignored.
      for (const url of [
        `/v2/projects/${w.P}/experiments/metrics`,
        `/v2/projects/${w.P}/experiments/${a}/metrics`,
      ]) {
        const r = await s.call('POST', url, { filters: [{ name: w.scorer.name, operator: 'gt', value: 0 }] });
        assert.equal(r.status, 422, r.text);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'filters']);
      }
      // Pages: two rows at a time, in dataset row order, then past the end.
      const p1 = await ok(
        s,
        'GET',
        `/v2/projects/${w.P}/experiments/compare?experiment_ids=${a},${b}&limit=2`,
      );
      const p2 = await ok(
        s,
        'GET',
        `/v2/projects/${w.P}/experiments/compare?experiment_ids=${a},${b}&limit=2&starting_token=2`,
      );
      assert.deepEqual(
        [...p1.rows, ...p2.rows].map((r: any) => r.index),
        [0, 1, 2, 3],
      );
      assert.equal(p1.next_starting_token, 2);
      assert.equal(p2.next_starting_token, null);
      const p3 = await ok(
        s,
        'GET',
        `/v2/projects/${w.P}/experiments/compare?experiment_ids=${a},${b}&starting_token=10`,
      );
      assert.deepEqual([p3.rows.length, p3.total_rows], [0, 4]);
      assert.deepEqual(new Set(cmp.rows.map((r: any) => r.cells[0].trace_id)), new Set(ta.map((t) => t.id)));
      const ea = await ok(s, 'GET', `/v2/projects/${w.P}/experiments/${a}`);
      const eb = await ok(s, 'GET', `/v2/projects/${w.P}/experiments/${b}`);
      assert.ok(ea.rank < eb.rank);
      assert.equal(ea.winner, false === eb.winner && ea.rank === 1);
      const all = await ok(s, 'POST', `/v2/projects/${w.P}/experiments/metrics`, { experiment_ids: [a, b] });
      assert.equal(all.metrics.find((m: any) => m.name === w.scorer.name).average, 0.75 / 2);
      const bad = await s.call('GET', `/v2/projects/${w.P}/experiments/compare?experiment_ids=${a}`);
      assert.equal(bad.status, 422);
    });

    test('experiment routes: list, pages, rename, tags, columns, delete; job 4xx', async () => {
      const e = await newExperiment(s, w, 'routes');
      const dup = await s.call('POST', `/v2/projects/${w.P}/experiments`, { name: 'routes' });
      assert.equal(dup.status, 409);
      const list = await ok(s, 'GET', `/v2/projects/${w.P}/experiments`);
      assert.ok(list.some((x: any) => x.id === e));
      const page = await ok(s, 'POST', `/v2/projects/${w.P}/experiments/paginated?starting_token=0&limit=1`);
      assert.equal(page.experiments.length, 1);
      assert.equal(page.next_starting_token, 1);
      assert.equal(
        (await ok(s, 'PUT', `/v2/projects/${w.P}/experiments/${e}`, { name: 'renamed' })).name,
        'renamed',
      );
      const tag = await ok(s, 'POST', `/v2/projects/${w.P}/experiments/${e}/tags`, {
        key: 'team',
        value: 'a',
      });
      await ok(s, 'PUT', `/v2/projects/${w.P}/experiments/${e}/tags/${tag.id}`, { key: 'team', value: 'b' });
      const tags = await ok(s, 'GET', `/v2/projects/${w.P}/experiments/${e}/tags`);
      assert.deepEqual(
        tags.map((t: any) => [t.key, t.value]),
        [['team', 'b']],
      );
      assert.equal((await ok(s, 'GET', `/v2/projects/${w.P}/experiments/${e}`)).tags.team[0].value, 'b');
      const cols = await ok(s, 'GET', `/v2/projects/${w.P}/experiments/available_columns`);
      assert.ok(cols.columns.some((c: any) => c.id === 'average_cost'));
      const other = await s.call('POST', '/v2/jobs', {
        job_name: 'log_stream_scorer',
        project_id: w.P,
        run_id: e,
      });
      assert.equal(other.status, 422);
      assert.equal((await s.call('GET', `/v2/jobs/${crypto.randomUUID()}`)).status, 404);
      const viewer = await s.user();
      await ok(s, 'POST', `/v2/projects/${w.P}/collaborators`, { user_id: viewer.id, role: 'viewer' });
      assert.equal(
        (await s.call('GET', `/v2/projects/${w.P}/experiments/${e}`, undefined, viewer.key)).status,
        200,
      );
      assert.equal(
        (
          await s.call(
            'POST',
            '/v2/jobs',
            { job_name: 'playground_run', project_id: w.P, run_id: e },
            viewer.key,
          )
        ).status,
        403,
      );
      await ok(s, 'DELETE', `/v2/projects/${w.P}/experiments/${e}/tags/${tag.id}`);
      await ok(s, 'DELETE', `/v2/projects/${w.P}/experiments/${e}`);
      assert.equal((await s.call('GET', `/v2/projects/${w.P}/experiments/${e}`)).status, 404);
    });
  });
}
