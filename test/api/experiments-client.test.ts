/**
 * Experiments through the official client (npm `galileo`), unchanged: `runExperiment` with a prompt
 * template (the server runs the rows as a `playground_run` job) and with a function (the client runs
 * the rows and logs them into the experiment), then `getExperiment(s)`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { getExperiment, getExperiments, getPrompt, runExperiment } from 'galileo';
import { type World, experimentWorld, ok, tracesOf, waitJob } from '../helpers/experiments.ts';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.ts';
import { pointClientAt } from '../helpers/galileo-client.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`official galileo client: experiments [${store}]`, () => {
    let s: TestServer;
    let fake: FakeProvider;
    let w: World;
    let restore: () => void = () => {};
    let projectName: string;
    let datasetName: string;

    before(async () => {
      s = await startTestServer(store, {
        SPANBASE_ALLOW_PRIVATE_PROVIDERS: '1',
        SPANBASE_JOB_POLL_MS: '20',
        SPANBASE_MODEL_RETRY_BASE_MS: '1',
      });
      fake = await startFakeProvider();
      w = await experimentWorld(s, fake, 4, `client-${store}`);
      projectName = (await ok(s, 'GET', `/v2/projects/${w.P}`)).name;
      // The client runs experiments only over a dataset the project uses.
      datasetName = (await ok(s, 'GET', `/v2/datasets/${w.datasetId}`)).name;
      await ok(s, 'POST', '/v2/datasets', {
        name: `${datasetName}-linked`,
        copy_from_dataset_id: w.datasetId,
        copy_from_dataset_version_index: w.datasetVersion,
        project_id: w.P,
      });
      datasetName = `${datasetName}-linked`;
      restore = await pointClientAt(s, { GALILEO_PROJECT: projectName });
    });
    after(async () => {
      restore();
      await fake?.close();
      await s?.close();
    });

    test('runExperiment with a prompt template: the server runs every row', async () => {
      const prompt: any = await getPrompt({
        id: (await ok(s, 'GET', `/v2/projects/${w.P}/templates`))[0].id,
      });
      const out: any = await runExperiment({
        name: 'client-template',
        datasetName,
        promptTemplate: prompt,
        promptSettings: { model_alias: 'fake-model', temperature: 0 } as any,
        metrics: [w.scorer.name],
        projectName,
      } as any);
      const id = out.experiment.id;
      const latest = await ok(s, 'GET', `/v2/projects/${w.P}/runs/${id}/jobs/latest`);
      const { job } = await waitJob(s, latest.id);
      assert.equal(job.status, 'completed', JSON.stringify(job));
      const traces = await tracesOf(s, w.P, id);
      assert.deepEqual(traces.map((t) => t.output).sort(), [
        'Answer: q0',
        'Answer: q1',
        'Answer: q2',
        'Answer: q3',
      ]);
      const got: any = await getExperiment({ id, projectName });
      assert.equal(got.id, id);
      const all: any[] = await getExperiments(projectName);
      assert.ok(all.some((e) => e.id === id));
    });

    test('runExperiment with a function: the client logs the rows into the experiment', async () => {
      const out: any = await runExperiment({
        name: 'client-function',
        datasetName,
        function: async (input: any) => `echo ${JSON.stringify(input)}`,
        projectName,
      } as any);
      const id = out.experiment.id;
      const traces = await tracesOf(s, w.P, id);
      assert.equal(traces.length, 4);
      assert.ok(traces.every((t) => String(t.output).startsWith('echo')));
    });
  });
}
