/**
 * Datasets through the hosted service's official TypeScript client (npm `galileo`), unchanged,
 * against a listening Spanbase: createDataset (multipart JSONL, with and without a project),
 * getDataset(s) by id and name, getDatasetContent, addRowsToDataset (ETag + If-Match),
 * getDatasetVersionHistory, getDatasetVersion, listDatasetProjects, getRecordsForDataset and
 * deleteDataset.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  addRowsToDataset,
  createDataset,
  deleteDataset,
  disableLogging,
  getDataset,
  getDatasetContent,
  getDatasetVersion,
  getDatasetVersionHistory,
  getDatasets,
  getRecordsForDataset,
  listDatasetProjects,
  resetAll,
} from 'galileo';
import { pointClientAt } from '../helpers/galileo-client.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`official galileo client: datasets [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    const project = `datasets-client-${store}`;
    let restoreClient = () => {};

    before(async () => {
      s = await startTestServer(store);
      restoreClient = await pointClientAt(s);
      disableLogging();
      projectId = (await s.call('POST', '/v2/projects', { name: project })).body.id;
    });
    after(async () => {
      await resetAll();
      restoreClient();
      await s.close();
    });

    test('createDataset from rows, in a project; getDataset by id and name; getDatasets; listDatasetProjects', async () => {
      const created = await createDataset({
        name: 'capitals',
        content: [
          { input: { country: 'France' }, output: 'Paris', metadata: { level: 'easy' } },
          { input: { country: 'Peru' }, output: 'Lima', metadata: { level: 'hard' } },
        ] as any,
        projectName: project,
      });
      assert.equal(created.name, 'capitals');
      assert.equal(created.numRows, 2);
      assert.deepEqual(created.columnNames, ['input', 'output', 'metadata']);
      const byId = await getDataset({ id: created.id });
      assert.equal(byId.name, 'capitals');
      const byName = await getDataset({ name: 'capitals', projectName: project });
      assert.equal(byName.id, created.id);
      const all = await getDatasets();
      assert.deepEqual(
        all.map((d) => d.name),
        ['capitals'],
      );
      const inProject = await getDatasets({ projectId });
      assert.equal(inProject.length, 1);
      const projects = await listDatasetProjects({ datasetId: created.id });
      assert.deepEqual(
        projects.map((p) => p.id),
        [projectId],
      );
      await assert.rejects(getDataset({ name: 'no such dataset' }), /not found/);
    });

    test('getDatasetContent, addRowsToDataset (ETag and If-Match), version history and an old version', async () => {
      const rows = await getDatasetContent({ datasetName: 'capitals' });
      assert.equal(rows.length, 2);
      // The client sends every value as text; input is JSON text.
      assert.deepEqual(rows[0].valuesDict, {
        input: '{"country":"France"}',
        output: 'Paris',
        metadata: '{"level":"easy"}',
      });
      await addRowsToDataset({
        datasetName: 'capitals',
        rows: [{ input: '{"country": "Japan"}', output: 'Tokyo', metadata: null }],
      });
      const after = await getDatasetContent({ datasetName: 'capitals' });
      assert.deepEqual(
        after.map((r) => r.valuesDict.output),
        ['Paris', 'Lima', 'Tokyo'],
      );
      const history = await getDatasetVersionHistory({ datasetName: 'capitals' });
      assert.deepEqual(
        history.versions.map((v) => [v.versionIndex, v.numRows, v.rowsAdded]),
        [
          [1, 2, 2],
          [2, 3, 1],
        ],
      );
      const v1 = await getDatasetVersion({ datasetName: 'capitals', versionIndex: 1 });
      assert.equal(v1.rows?.length, 2);
      const records = await getRecordsForDataset({ datasetName: 'capitals' });
      assert.deepEqual(
        records.map((r) => r.output),
        ['Paris', 'Lima', 'Tokyo'],
      );
    });

    test('createDataset without a project is seen by its creator; content pages until the last; deleteDataset', async () => {
      const many = Array.from({ length: 250 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
      const created = await createDataset(many as any, 'many rows');
      assert.equal(created.numRows, 250);
      const rows = await getDatasetContent({ datasetId: created.id });
      assert.equal(rows.length, 250, 'the client read every page and stopped');
      assert.equal(rows[249].valuesDict.input, 'q249');
      await deleteDataset({ name: 'many rows' });
      await assert.rejects(getDataset({ id: created.id }), /not found/);
    });
  });
}
