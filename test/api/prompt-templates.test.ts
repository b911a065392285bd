/**
 * Prompt templates over HTTP on the hosted routes: project and global templates, versions with what
 * each changed, selection, names unique per scope, access by role, and /render_template.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`prompt templates [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let viewer: { id: string; key: string };
    let editor: { id: string; key: string };
    let stranger: { id: string; key: string };

    before(async () => {
      s = await startTestServer(store);
      ({ projectId } = await projectWithLogStream(s));
      viewer = await s.user();
      editor = await s.user();
      stranger = await s.user();
      for (const [u, role] of [
        [viewer, 'viewer'],
        [editor, 'editor'],
      ] as const) {
        const r = await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: u.id, role });
        assert.equal(r.status, 200, r.text);
      }
    });
    after(() => s?.close());

    const base = () => `/v2/projects/${projectId}/templates`;

    test('a project template: first version 0, read by id and by name, names unique in the project', async () => {
      const created = await s.call(
        'POST',
        base(),
        {
          name: 'greeting',
          template: 'Hello {{name}}',
          settings: { model_alias: 'gpt-4o', temperature: 0.2 },
        },
        editor.key,
      );
      assert.equal(created.status, 200, created.text);
      const t = created.body;
      assert.equal(t.name, 'greeting');
      assert.equal(t.project_id, projectId);
      assert.equal(t.template, 'Hello {{name}}');
      assert.equal(t.selected_version.version, 0);
      assert.equal(t.selected_version_id, t.selected_version.id);
      assert.deepEqual(t.all_available_versions, [0]);
      assert.equal(t.total_versions, 1);
      assert.equal(t.max_version, 0);
      assert.deepEqual(t.selected_version.settings, { model_alias: 'gpt-4o', temperature: 0.2 });
      assert.equal(t.selected_version.content_changed, false, 'the first version changes nothing');
      assert.equal(t.created_by_user.id, editor.id);

      const again = await s.call('POST', base(), { name: 'greeting', template: 'x' }, editor.key);
      assert.equal(again.status, 409, again.text);
      assert.match(again.body.detail, /greeting/);
      const suffixed = await s.call(
        'POST',
        base(),
        { name: { value: 'greeting', append_suffix_if_duplicate: true }, template: 'x' },
        editor.key,
      );
      assert.equal(suffixed.status, 200, suffixed.text);
      assert.equal(suffixed.body.name, 'greeting (1)');

      const got = await s.call('GET', `${base()}/${t.id}`, undefined, viewer.key);
      assert.equal(got.status, 200, got.text);
      assert.equal(got.body.all_versions.length, 1);
      const byName = await s.call('GET', `${base()}/versions?template_name=greeting`, undefined, viewer.key);
      assert.equal(byName.status, 200, byName.text);
      assert.equal(byName.body.id, t.selected_version_id);
      assert.equal(byName.body.template, 'Hello {{name}}');
      const missing = await s.call('GET', `${base()}/versions?template_name=nope`, undefined, viewer.key);
      assert.equal(missing.status, 404, missing.text);
      const list = await s.call('GET', base(), undefined, viewer.key);
      assert.deepEqual(
        list.body.map((x: any) => x.name),
        ['greeting', 'greeting (1)'],
      );
    });

    test('each version records what changed from the one before; selecting a version', async () => {
      const t = (
        await s.call(
          'POST',
          base(),
          {
            name: 'support',
            template: [
              { role: 'system', content: 'You help with orders.\nBe brief.' },
              { role: 'user', content: '{{question}}' },
            ],
            settings: { model_alias: 'gpt-4o', temperature: 0.2 },
          },
          editor.key,
        )
      ).body;
      const v = (body: unknown) => s.call('POST', `${base()}/${t.id}/versions`, body, editor.key);

      // One line edited, one added; settings and model the same.
      const v1 = await v({
        template: [
          { role: 'system', content: 'You help with orders.\nBe kind.\nAnswer in English.' },
          { role: 'user', content: '{{question}}' },
        ],
        settings: { model_alias: 'gpt-4o', temperature: 0.2 },
      });
      assert.equal(v1.status, 200, v1.text);
      assert.equal(v1.body.version, 1);
      assert.deepEqual(
        [v1.body.content_changed, v1.body.settings_changed, v1.body.model_changed],
        [true, false, false],
      );
      assert.deepEqual([v1.body.lines_added, v1.body.lines_edited, v1.body.lines_removed], [1, 1, 0]);

      // Only the model changes.
      const v2 = await v({
        template: v1.body.template,
        settings: { model_alias: 'gpt-4o-mini', temperature: 0.2 },
      });
      assert.deepEqual(
        [v2.body.content_changed, v2.body.settings_changed, v2.body.model_changed],
        [false, false, true],
      );
      assert.deepEqual([v2.body.lines_added, v2.body.lines_edited, v2.body.lines_removed], [0, 0, 0]);

      // Settings change and two lines go.
      const v3 = await v({
        template: [{ role: 'user', content: '{{question}}' }],
        settings: { model_alias: 'gpt-4o-mini', temperature: 0.9 },
      });
      assert.deepEqual(
        [v3.body.content_changed, v3.body.settings_changed, v3.body.model_changed],
        [true, true, false],
      );
      assert.deepEqual([v3.body.lines_added, v3.body.lines_edited, v3.body.lines_removed], [0, 0, 3]);

      const now = await s.call('GET', `/v2/templates/${t.id}`, undefined, viewer.key);
      assert.equal(now.body.selected_version.version, 3, 'a new version is the selected one');
      assert.deepEqual(now.body.all_available_versions, [0, 1, 2, 3]);

      const taken = await v({ template: 'x', version: 2 });
      assert.equal(taken.status, 409, taken.text);

      const sel = await s.call('PUT', `${base()}/${t.id}/versions/1`, undefined, editor.key);
      assert.equal(sel.status, 200, sel.text);
      assert.equal(sel.body.selected_version.version, 1);
      assert.equal(sel.body.max_version, 3);
      const byName = await s.call('GET', `${base()}/versions?template_name=support`, undefined, viewer.key);
      assert.equal(byName.body.version, 1, 'by name answers the selected version');
      const v2ByName = await s.call('GET', `${base()}/versions?template_name=support&version=2`);
      assert.equal(v2ByName.body.settings.model_alias, 'gpt-4o-mini');
      const none = await s.call('PUT', `${base()}/${t.id}/versions/9`, undefined, editor.key);
      assert.equal(none.status, 404, none.text);

      const versions = await s.call('POST', `/v2/templates/${t.id}/versions/query?limit=3`, {}, viewer.key);
      assert.equal(versions.status, 200, versions.text);
      assert.deepEqual(
        versions.body.versions.map((x: any) => x.version),
        [3, 2, 1],
      );
      assert.equal(versions.body.next_starting_token, 3);
      const rest = await s.call('POST', `/v2/templates/${t.id}/versions/query?starting_token=3&limit=3`, {
        sort: { name: 'version', ascending: false },
      });
      assert.deepEqual(
        rest.body.versions.map((x: any) => x.version),
        [0],
      );
      assert.equal(rest.body.next_starting_token, null);
    });

    test('global templates: shared with a project, queried by name, renamed, deleted', async () => {
      const g = await s.call(
        'POST',
        `/v2/templates?project_id=${projectId}`,
        { name: 'shared', template: 'S {{x}}' },
        editor.key,
      );
      assert.equal(g.status, 200, g.text);
      assert.equal(g.body.project_id, null);
      assert.deepEqual(g.body.shared_with_projects, [projectId]);
      const mine = await s.call(
        'POST',
        '/v2/templates',
        { name: 'private-of-stranger', template: 'P' },
        stranger.key,
      );
      assert.equal(mine.status, 200, mine.text);

      const q = (body: unknown, key = viewer.key) => s.call('POST', '/v2/templates/query', body, key);
      const eq = await q({ filters: [{ name: 'name', operator: 'eq', value: 'shared' }] });
      assert.deepEqual(
        eq.body.templates.map((x: any) => x.id),
        [g.body.id],
      );
      const inProject = await q({
        filters: [{ name: 'used_in_project', value: projectId }],
        sort: { name: 'name', ascending: true, sort_type: 'column' },
      });
      assert.deepEqual(
        inProject.body.templates.map((x: any) => x.name),
        ['greeting', 'greeting (1)', 'shared', 'support'],
      );
      const contains = await q({
        filters: [{ name: 'name', operator: 'contains', value: 'GREET', case_sensitive: false }],
      });
      assert.equal(contains.body.templates.length, 2);
      const exact = await q({ filters: [{ name: 'name', operator: 'contains', value: 'GREET' }] });
      assert.equal(exact.body.templates.length, 0, 'case-sensitive by default');
      const notIn = await q({ filters: [{ name: 'not_in_project', value: projectId }] }, stranger.key);
      assert.deepEqual(
        notIn.body.templates.map((x: any) => x.name),
        ['private-of-stranger'],
        'the stranger sees only their own',
      );
      const all = await q({}, s.adminKey);
      assert.equal(all.body.templates.length, 5, 'admins see every template');
      const page = await q({ sort: { name: 'name', ascending: true } }, s.adminKey);
      const p1 = await s.call('POST', '/v2/templates/query?limit=2&starting_token=2', {
        sort: { name: 'name', ascending: true },
      });
      assert.deepEqual(
        p1.body.templates.map((x: any) => x.name),
        page.body.templates.slice(2, 4).map((x: any) => x.name),
      );
      assert.equal(p1.body.next_starting_token, 4);

      // The project route sees the shared template too.
      const viaProject = await s.call('GET', `${base()}/${g.body.id}`, undefined, viewer.key);
      assert.equal(viaProject.status, 200, viaProject.text);
      assert.equal((await s.call('GET', `/v2/templates/${mine.body.id}`, undefined, viewer.key)).status, 404);

      const dup = await s.call('POST', '/v2/templates', { name: 'shared', template: 'again' }, stranger.key);
      assert.equal(dup.status, 409, 'global names are unique among global templates');
      const renamed = await s.call('PATCH', `/v2/templates/${g.body.id}`, { name: 'shared-2' }, editor.key);
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.name, 'shared-2');
      const clash = await s.call(
        'PATCH',
        `/v2/templates/${g.body.id}`,
        { name: 'private-of-stranger' },
        editor.key,
      );
      assert.equal(clash.status, 409, clash.text);
      const gone = await s.call('DELETE', `/v2/templates/${g.body.id}`, undefined, editor.key);
      assert.equal(gone.status, 200, gone.text);
      assert.equal((await s.call('GET', `/v2/templates/${g.body.id}`)).status, 404);
      assert.equal((await s.call('GET', `/v2/templates/${g.body.id}/versions/0`)).status, 404);
    });

    test('access: viewers read, editors change, strangers see nothing', async () => {
      const t = (await s.call('POST', base(), { name: 'acl', template: 'A' }, editor.key)).body;
      const denied = [
        ['POST', base(), { name: 'v', template: 'x' }],
        ['POST', `${base()}/${t.id}/versions`, { template: 'y' }],
        ['PUT', `${base()}/${t.id}/versions/0`, undefined],
        ['PATCH', `/v2/templates/${t.id}`, { name: 'z' }],
        ['DELETE', `/v2/templates/${t.id}`, undefined],
        ['DELETE', `${base()}/${t.id}`, undefined],
        ['POST', `/v2/templates?project_id=${projectId}`, { name: 'g', template: 'x' }],
      ] as const;
      for (const [m, url, body] of denied) {
        const r = await s.call(m, url, body, viewer.key);
        assert.equal(r.status, 403, `${m} ${url}: ${r.text}`);
      }
      for (const url of [`${base()}/${t.id}`, `/v2/templates/${t.id}`, `/v2/templates/${t.id}/versions/0`]) {
        assert.equal((await s.call('GET', url, undefined, viewer.key)).status, 200, url);
        assert.equal((await s.call('GET', url, undefined, stranger.key)).status, 404, url);
      }
      assert.equal((await s.call('GET', base(), undefined, stranger.key)).status, 404);
      const other = await projectWithLogStream(s, stranger.key);
      const elsewhere = await s.call(
        'GET',
        `/v2/projects/${other.projectId}/templates/${t.id}`,
        undefined,
        stranger.key,
      );
      assert.equal(elsewhere.status, 404, 'a template is not reached through another project');
      assert.equal((await s.call('DELETE', `${base()}/${t.id}`, undefined, editor.key)).status, 200);
    });

    test('bad input answers 4xx', async () => {
      const bad = [
        { name: 'b', template: [{ content: 'no role' }] },
        { name: 'b', template: [] },
        { name: '', template: 'x' },
        { name: 'b', template: 'Hi {{#open}}' },
        {
          name: 'b',
          template: [
            { role: 'user', content: 'ok' },
            { role: 'user', content: '{{/close}}' },
          ],
        },
        { name: 'b\u0000', template: 'x' },
        { name: 'b', template: 'x', settings: { temperature: 'hot' } },
        { name: 'b', template: 'x', version: -1 },
      ];
      for (const body of bad) {
        const r = await s.call('POST', base(), body, editor.key);
        assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
        assert.ok(Array.isArray(r.body.detail), r.text);
      }
      const syntax = await s.call(
        'POST',
        base(),
        {
          name: 'b',
          template: [
            { role: 'user', content: 'ok' },
            { role: 'user', content: '{{/close}}' },
          ],
        },
        editor.key,
      );
      assert.deepEqual(syntax.body.detail[0].loc, ['body', 'template', 1, 'content']);
      assert.equal((await s.call('GET', `/v2/templates/${crypto.randomUUID()}`)).status, 404);
      assert.equal((await s.call('GET', '/v2/templates/not-a-uuid')).status, 422);
      const list = await s.call('GET', base(), undefined, editor.key);
      assert.ok(!list.body.some((x: any) => x.name === 'b'), 'nothing half-written');
    });

    test('render_template: input strings, nested values, a warning per missing variable, pages', async () => {
      const r = await s.call(
        'POST',
        '/v2/render_template?starting_token=0&limit=2',
        {
          template: 'Dear {{user.name}} of {{user.city}}, about {{topic}}',
          data: {
            input_strings: [
              '{"user": {"name": "Ada", "city": "London"}, "topic": "engines"}',
              '{"user": {"name": "Alan"}}',
              'plain text',
            ],
          },
        },
        viewer.key,
      );
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.rendered_templates, [
        { result: 'Dear Ada of London, about engines', warning: null },
        {
          result: 'Dear Alan of , about ',
          warning: "Variable 'user.city' has no value; Variable 'topic' has no value",
        },
      ]);
      assert.equal(r.body.next_starting_token, 2);
      const rest = await s.call('POST', '/v2/render_template?starting_token=2&limit=2', {
        template: 'Got: {{input}}',
        data: { input_strings: ['{}', '{}', 'plain text'] },
      });
      assert.deepEqual(rest.body.rendered_templates, [{ result: 'Got: plain text', warning: null }]);
      assert.equal(rest.body.next_starting_token, null);

      const broken = await s.call('POST', '/v2/render_template', {
        template: '{{#a}}',
        data: { input_strings: ['{}'] },
      });
      assert.equal(broken.status, 422, broken.text);
      assert.deepEqual(broken.body.detail[0].loc, ['body', 'template']);
      const noData = await s.call('POST', '/v2/render_template', { template: 'x', data: {} });
      assert.equal(noData.status, 422, noData.text);
    });
  });
}
