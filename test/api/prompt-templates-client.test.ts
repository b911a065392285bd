/**
 * Prompt templates through the hosted service's official client (npm `galileo`), unchanged, against
 * a listening Spanbase: createPrompt, getPrompt(s), updatePrompt, deletePrompt, renderPrompt, the
 * deprecated helpers, and the project-scoped calls of its API client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  GalileoApiClient,
  createPrompt,
  createPromptTemplate,
  deletePrompt,
  getPrompt,
  getPromptTemplate,
  getPrompts,
  renderPrompt,
  updatePrompt,
} from 'galileo';
import { pointClientAt } from '../helpers/galileo-client.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`official galileo client: prompt templates [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    const projectName = `prompts-${store}`;
    let restoreClient = () => {};

    before(async () => {
      s = await startTestServer(store);
      restoreClient = await pointClientAt(s);
      const p = await s.call('POST', '/v2/projects', { name: projectName });
      assert.equal(p.status, 200, p.text);
      projectId = p.body.id;
    });
    after(async () => {
      restoreClient();
      await s.close();
    });

    test('createPrompt in a project, getPrompt by name and by id, getPrompts', async () => {
      const created: any = await createPrompt({
        name: 'support',
        template: [
          { role: 'system', content: 'You answer about {{product}}.' },
          { role: 'user', content: '{{question}}' },
        ] as any,
        projectName,
      });
      assert.match(created.id, /^[0-9a-f-]{36}$/);
      assert.equal(created.selectedVersion.version, 0);
      assert.ok(created.selectedVersionId);
      const link = await s.call('GET', `/v2/projects/${projectId}/templates`);
      assert.deepEqual(
        link.body.map((t: any) => t.name),
        ['support'],
        'the client shares it with the project',
      );

      const byName: any = await getPrompt({ name: 'support', projectName });
      assert.equal(byName.version, 0);
      assert.deepEqual(byName.template, [
        { role: 'system', content: 'You answer about {{product}}.' },
        { role: 'user', content: '{{question}}' },
      ]);
      const byId: any = await getPrompt({ id: created.id });
      assert.equal(byId.id, byName.id);

      // A second version (over HTTP: the client has no call for it), then the client reads both.
      const v1 = await s.call('POST', `/v2/templates/${created.id}/versions`, {
        template: [
          { role: 'system', content: 'You answer about {{product}}, briefly.' },
          { role: 'user', content: '{{question}}' },
        ],
        settings: { model_alias: 'gpt-4o-mini' },
      });
      assert.equal(v1.status, 200, v1.text);
      const latest: any = await getPrompt({ name: 'support', projectId });
      assert.equal(latest.version, 1);
      assert.equal(latest.contentChanged, true);
      assert.equal(latest.modelChanged, true);
      assert.equal(latest.linesEdited, 1);
      const first: any = await getPrompt({ name: 'support', projectId, version: 0 });
      assert.equal(first.version, 0);

      const list: any[] = await getPrompts({ projectName });
      assert.deepEqual(
        list.map((t) => t.name),
        ['support'],
      );
      const none: any[] = await getPrompts({ name: 'nothing-like-it' });
      assert.deepEqual(none, []);
      await assert.rejects(getPrompt({ name: 'missing', projectName }), /not found/);
    });

    test('createPrompt with ensureUniqueName, global without a project; updatePrompt, deletePrompt', async () => {
      const a: any = await createPrompt({ name: 'global one', template: 'Hello {{name}}' });
      const b: any = await createPrompt({
        name: 'global one',
        template: 'Hi {{name}}',
        ensureUniqueName: true,
      });
      assert.equal(b.name, 'global one (1)');
      await assert.rejects(createPrompt({ name: 'global one', template: 'x' }), /409|exists/i);
      const text: any = await getPrompt({ id: a.id });
      assert.deepEqual(
        text.template,
        [{ role: 'user', content: 'Hello {{name}}' }],
        'a string becomes a user message',
      );

      const renamed: any = await updatePrompt({ id: b.id, newName: 'global two' });
      assert.equal(renamed.name, 'global two');
      const byName: any = await getPrompt({ name: 'global two' });
      assert.equal(byName.id, b.selectedVersionId);
      await deletePrompt({ name: 'global two' });
      await deletePrompt({ id: a.id });
      assert.equal((await s.call('GET', `/v2/templates/${a.id}`)).status, 404);
      assert.equal((await s.call('GET', `/v2/templates/${b.id}`)).status, 404);
    });

    test('renderPrompt: input strings with nested values and a warning per missing variable', async () => {
      const r: any = await renderPrompt({
        template: 'About {{item.name}} for {{who}}',
        data: ['{"item": {"name": "tea"}, "who": "Ada"}', '{"item": {}}'],
      });
      assert.deepEqual(r.renderedTemplates, [
        { result: 'About tea for Ada', warning: null },
        {
          result: 'About  for ',
          warning: "Variable 'item.name' has no value; Variable 'who' has no value",
        },
      ]);
    });

    test("the deprecated helpers and the API client's project routes", async () => {
      const t: any = await createPromptTemplate({ name: 'old style', template: 'Old {{x}}', projectName });
      const v: any = await getPromptTemplate({ name: 'old style', projectName });
      assert.equal(v.id, t.selectedVersionId);

      const client = new GalileoApiClient();
      await client.init({ projectName, projectScoped: true });
      const own: any = await client.createPromptTemplate(
        [{ role: 'user', content: 'Project {{x}}' }] as any,
        'project only',
      );
      assert.equal(own.name, 'project only');
      const names = (await client.getPromptTemplates()).map((x: any) => x.name).sort();
      assert.deepEqual(names, ['old style', 'project only', 'support']);
      const got: any = await client.getPromptTemplate(own.id);
      assert.equal(got.selectedVersion.version, 0);
      const ver: any = await client.getPromptTemplateVersion(own.id, 0);
      assert.deepEqual(ver.template, [{ role: 'user', content: 'Project {{x}}' }]);
      const byName: any = await client.getPromptTemplateVersionByName('project only');
      assert.equal(byName.id, ver.id);
    });
  });
}
