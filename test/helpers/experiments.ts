/**
 * Fixtures of experiment tests: a gateway integration at the fake provider, a dataset whose rows ask
 * a question with a ground truth, a template, and a rule scorer comparing the output to it.
 */
import assert from 'node:assert/strict';
import type { FakeProvider } from './fake-provider.ts';
import type { TestServer } from './server.ts';

type Json = Record<string, any>;

export async function ok(s: TestServer, method: string, url: string, body?: unknown, key?: string) {
  const r = await s.call(method, url, body, key);
  assert.equal(r.status, 200, `${method} ${url}: ${r.text}`);
  return r.body as Json;
}

/** The fake echoes the last user message, so `Answer: {{question}}` answers `Answer: qN`. */
export async function experimentWorld(s: TestServer, fake: FakeProvider, rows = 4, tag = 'x') {
  const integration = await ok(s, 'PUT', '/v2/integrations/example_gateway', {
    endpoint: fake.url,
    use_case: 'chat',
    token: `tok-${'k'.repeat(24)}`,
  });
  const project = await ok(s, 'POST', '/v2/projects', { name: `exp-${tag}-${Date.now()}` });
  const P = project.id as string;
  // The last row's ground truth is wrong: its exact-match score is 0.
  const dataset = await ok(s, 'POST', '/v2/datasets', {
    name: `questions-${tag}-${Date.now()}`,
    rows: Array.from({ length: rows }, (_, i) => ({
      input: JSON.stringify({ question: `q${i}` }),
      output: i === rows - 1 ? 'wrong' : `Answer: q${i}`,
    })),
  });
  const template = await ok(s, 'POST', `/v2/projects/${P}/templates`, {
    name: `answer-${tag}`,
    template: [{ role: 'user', content: 'Answer: {{question}}' }],
  });
  const scorer = await ok(s, 'POST', '/v2/scorers', {
    name: `exact-${tag}-${Date.now()}`,
    scorer_type: 'rule',
  });
  await ok(s, 'POST', `/v2/scorers/${scorer.id}/version/rule`, {
    rule: 'equals_ground_truth',
    field: 'output',
  });
  return {
    P,
    integrationId: integration.id as string,
    datasetId: dataset.id as string,
    datasetVersion: dataset.current_version_index as number,
    versionId: template.selected_version_id as string,
    scorer: { id: scorer.id as string, name: scorer.name as string },
  };
}

export type World = Awaited<ReturnType<typeof experimentWorld>>;

/** Creates an experiment over the world's dataset with its scorer enabled on traces. */
export async function newExperiment(s: TestServer, w: World, name: string) {
  const e = await ok(s, 'POST', `/v2/projects/${w.P}/experiments`, {
    name,
    task_type: 16,
    dataset: { dataset_id: w.datasetId, version_index: w.datasetVersion },
  });
  await ok(s, 'POST', `/v2/projects/${w.P}/runs/${e.id}/scorer-settings`, {
    run_id: e.id,
    scorers: [{ id: w.scorer.id, scorer_type: 'rule', scoreable_node_types: ['trace'] }],
  });
  return e.id as string;
}

export async function startJob(s: TestServer, w: World, runId: string, extra: Json = {}) {
  return ok(s, 'POST', '/v2/jobs', {
    job_name: 'playground_run',
    project_id: w.P,
    run_id: runId,
    prompt_template_version_id: w.versionId,
    dataset_id: w.datasetId,
    prompt_settings: { model_alias: 'fake-model', temperature: 0 },
    integration_id: w.integrationId,
    task_type: 16,
    ...extra,
  });
}

/** Polls a job until it ends; answers every progress seen. */
export async function waitJob(s: TestServer, jobId: string, ms = 8000) {
  const seen: Json[] = [];
  const until = Date.now() + ms;
  for (;;) {
    const j = await ok(s, 'GET', `/v2/jobs/${jobId}?job_id=${jobId}`);
    seen.push(j);
    if (['completed', 'failed', 'cancelled'].includes(j.status)) return { job: j, seen };
    if (Date.now() > until)
      assert.fail(`job ${jobId} still ${j.status} (${j.steps_completed}/${j.steps_total})`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The experiment's traces, oldest first. */
export async function tracesOf(s: TestServer, P: string, runId: string) {
  const r = await ok(s, 'POST', `/v2/projects/${P}/traces/search`, {
    experiment_id: runId,
    limit: 100,
    sort: { column_id: 'created_at', ascending: true },
  });
  return r.records as Json[];
}
