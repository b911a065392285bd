/**
 * Datasets over HTTP on both stores: uploads (JSONL, CSV, rows, copies), pages with an ETag, edits
 * with If-Match and the versions they make, bad uploads (422 naming the line, nothing left behind),
 * a 100,000-row upload, and access by project role.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { multipartBody } from '../helpers/multipart.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

for (const store of storesUnderTest()) {
  describe(`datasets [${store}]`, () => {
    let s: TestServer;
    let projectId: string;

    const upload = async (
      fields: Record<string, string>,
      file?: { filename: string; content: Buffer | string },
      query = '',
      key = s.adminKey,
    ) => {
      const m = multipartBody(fields, file);
      const r = await s.running.app.inject({
        method: 'POST',
        url: `/v2/datasets${query}`,
        payload: m.payload,
        headers: { ...m.headers, 'service-api-key': key },
      });
      return { status: r.statusCode, body: JSON.parse(r.body), headers: r.headers };
    };
    const counts = async () => {
      const db = s.running.services.store.db;
      const n = async (t: string) =>
        Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(t)}`.execute(db)).rows[0].n);
      return {
        datasets: await n('datasets'),
        rows: await n('dataset_rows'),
        versions: await n('dataset_versions'),
      };
    };
    const content = async (id: string, version?: number) => {
      const rows: any[] = [];
      for (let token: number | null = 0; token !== null; ) {
        const url: string =
          version === undefined
            ? `/v2/datasets/${id}/content?starting_token=${token}&limit=2`
            : `/v2/datasets/${id}/versions/${version}/content?starting_token=${token}&limit=2`;
        const r = await s.call('GET', url);
        assert.equal(r.status, 200, r.text);
        rows.push(...r.body.rows);
        token = r.body.next_starting_token;
      }
      return rows;
    };
    const edit = (id: string, edits: unknown[], etag?: string, key = s.adminKey) =>
      s.call(
        'PATCH',
        `/v2/datasets/${id}/content`,
        { edits },
        {
          'service-api-key': key,
          ...(etag ? { 'if-match': etag } : {}),
        },
      );

    before(async () => {
      s = await startTestServer(store, { SPANBASE_DATASET_MAX_BYTES: String(64 * 1024 * 1024) });
      projectId = (await s.call('POST', '/v2/projects', { name: 'evals' })).body.id;
    });
    after(() => s.close());

    test('a JSONL upload as the client sends it: rows with input, output and metadata, as values and a dict', async () => {
      const jsonl =
        '{"input":"{\\"q\\": \\"2+2\\"}","output":"4","metadata":{"source":"math"}}\n' +
        '{"input":"capital of France","output":"Paris","n":3,"flag":true,"tags":["a"]}\n';
      const r = await upload(
        {
          name: 'qa',
          project_id: projectId,
          draft: 'false',
          hidden: 'false',
          append_suffix_if_duplicate: 'false',
        },
        { filename: 'qa', content: jsonl },
        '?format=jsonl',
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.name, 'qa');
      assert.equal(r.body.num_rows, 2);
      assert.equal(r.body.current_version_index, 1);
      assert.equal(r.body.project_count, 1);
      assert.deepEqual(r.body.column_names, ['input', 'output', 'metadata', 'n', 'flag', 'tags']);
      const c = await s.call('GET', `/v2/datasets/${r.body.id}/content`);
      assert.match(c.headers.etag, /^".+:1"$/);
      const [a, b] = c.body.rows;
      assert.deepEqual(a.values_dict, { input: '{"q": "2+2"}', output: '4', metadata: { source: 'math' } });
      assert.deepEqual(a.values, ['{"q": "2+2"}', '4', { source: 'math' }, null, null, null]);
      assert.equal(a.index, 0);
      assert.equal(b.index, 1);
      // Booleans and lists are kept as their JSON text (the hosted row types hold strings, numbers and flat dicts).
      assert.deepEqual(b.values_dict, {
        input: 'capital of France',
        output: 'Paris',
        n: 3,
        flag: 'true',
        tags: '["a"]',
      });
      assert.equal(a.metadata.created_in_version, 1);
      assert.equal(a.metadata.created_by_user.id, s.adminId);
      const projects = await s.call('GET', `/v2/datasets/${r.body.id}/projects`);
      assert.deepEqual(
        projects.body.projects.map((p: any) => p.name),
        ['evals'],
      );
    });

    test('a CSV upload (quoted fields, newlines in a field, a BOM) and a name taken answer 409 or get a suffix', async () => {
      const csv = '\uFEFFinput,output\n"Hello, world","line one\nline two"\nplain,"with ""quotes"""\n';
      const r = await upload({ name: 'greetings' }, { filename: 'greetings.csv', content: csv });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.column_names, ['input', 'output']);
      const rows = await content(r.body.id);
      assert.deepEqual(
        rows.map((x) => x.values_dict),
        [
          { input: 'Hello, world', output: 'line one\nline two' },
          { input: 'plain', output: 'with "quotes"' },
        ],
      );
      const again = await upload({ name: 'greetings' }, { filename: 'g.csv', content: csv });
      assert.equal(again.status, 409);
      const suffixed = await upload(
        { name: 'greetings', append_suffix_if_duplicate: 'true' },
        { filename: 'g.csv', content: csv },
      );
      assert.equal(suffixed.status, 200);
      assert.equal(suffixed.body.name, 'greetings (1)');
    });

    test('create from rows (JSON) and as a copy of another version; the file name names a dataset sent without one', async () => {
      const r = await s.call('POST', '/v2/datasets', {
        name: 'from-rows',
        rows: [{ input: 'a' }, { input: 'b', output: 'B' }],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.num_rows, 2);
      const etag = (await s.call('GET', `/v2/datasets/${r.body.id}/content`)).headers.etag;
      assert.equal(
        (await edit(r.body.id, [{ edit_type: 'append_row', values: { input: 'c' } }], etag)).status,
        200,
      );
      const copy = await s.call('POST', '/v2/datasets', {
        name: 'copy-of-v1',
        copy_from_dataset_id: r.body.id,
        copy_from_dataset_version_index: 1,
      });
      assert.equal(copy.status, 200, copy.text);
      assert.deepEqual(
        (await content(copy.body.id)).map((x) => x.values_dict.input),
        ['a', 'b'],
      );
      const unnamed = await upload({}, { filename: 'from-file-name', content: '{"input":"x"}\n' });
      assert.equal(unnamed.status, 200);
      assert.equal(unnamed.body.name, 'from-file-name');
    });

    test('edits: each kind makes a version with its counts; every version stays readable; If-Match answers 412 when stale', async () => {
      const r = await s.call('POST', '/v2/datasets', {
        name: 'versions',
        rows: [{ input: 'r0' }, { input: 'r1' }, { input: 'r2' }],
      });
      const id = r.body.id;
      let page = await s.call('GET', `/v2/datasets/${id}/content?limit=1`);
      const etag1 = page.headers.etag;
      const [r0, r1, r2] = (await content(id)).map((x) => x.row_id);

      let e = await edit(id, [{ edit_type: 'append_row', values: { input: 'r3', output: 'o3' } }], etag1);
      assert.equal(e.status, 200, e.text);
      assert.deepEqual([e.body.version_index, e.body.rows_added, e.body.columns_added], [2, 1, 1]);
      const etag2 = e.headers.etag;
      assert.notEqual(etag2, etag1);

      // The ETag of version 1 no longer matches: nothing is written.
      const stale = await edit(id, [{ edit_type: 'delete_row', row_id: r0 }], etag1);
      assert.equal(stale.status, 412, stale.text);

      e = await edit(id, [{ edit_type: 'prepend_row', values: { input: 'first' } }], etag2);
      assert.deepEqual([e.body.version_index, e.body.rows_added, e.body.num_rows], [3, 1, 5]);
      e = await edit(id, [{ edit_type: 'update_row', row_id: r1, values: { output: 'o1' } }], e.headers.etag);
      assert.deepEqual([e.body.version_index, e.body.rows_edited, e.body.rows_added], [4, 1, 0]);
      e = await edit(id, [{ edit_type: 'delete_row', row_id: r2 }], e.headers.etag);
      assert.deepEqual([e.body.version_index, e.body.rows_removed, e.body.num_rows], [5, 1, 4]);
      // Several edits in one request are one version; an update of a row added in it is one added row.
      e = await edit(id, [
        {
          edit_type: 'append_row',
          values: { input: 'late' },
          row_id: '00000000-0000-4000-8000-000000000001',
        },
        { edit_type: 'update_row', row_id: '00000000-0000-4000-8000-000000000001', values: { output: 'L' } },
        { edit_type: 'update_row', row_id: r0, values: { input: 'r0!' } },
        { edit_type: 'delete_row', row_id: r1 },
      ]);
      assert.equal(e.status, 200, e.text);
      assert.deepEqual(
        [e.body.version_index, e.body.rows_added, e.body.rows_edited, e.body.rows_removed],
        [6, 1, 1, 1],
      );

      const inputs = async (v?: number) => (await content(id, v)).map((x) => x.values_dict.input);
      assert.deepEqual(await inputs(1), ['r0', 'r1', 'r2']);
      assert.deepEqual(await inputs(2), ['r0', 'r1', 'r2', 'r3']);
      assert.deepEqual(await inputs(3), ['first', 'r0', 'r1', 'r2', 'r3']);
      assert.deepEqual((await content(id, 4)).find((x) => x.row_id === r1).values_dict, {
        input: 'r1',
        output: 'o1',
      });
      assert.deepEqual(await inputs(5), ['first', 'r0', 'r1', 'r3']);
      assert.deepEqual(await inputs(), ['first', 'r0!', 'r3', 'late']);
      const late = (await content(id)).find((x) => x.values_dict.input === 'late');
      assert.deepEqual(late.values_dict, { input: 'late', output: 'L' });
      const updated = (await content(id)).find((x) => x.row_id === r0);
      assert.deepEqual([updated.metadata.created_in_version, updated.metadata.updated_in_version], [1, 6]);

      const history = await s.call('POST', `/v2/datasets/${id}/versions/query`);
      assert.deepEqual(
        history.body.versions.map((v: any) => [
          v.version_index,
          v.num_rows,
          v.rows_added,
          v.rows_removed,
          v.rows_edited,
        ]),
        [
          [1, 3, 3, 0, 0],
          [2, 4, 1, 0, 0],
          [3, 5, 1, 0, 0],
          [4, 5, 0, 0, 1],
          [5, 4, 0, 1, 0],
          [6, 4, 1, 1, 1],
        ],
      );
      const desc = await s.call('POST', `/v2/datasets/${id}/versions/query?limit=2`, {
        sort: { name: 'version_index', ascending: false },
      });
      assert.deepEqual(
        desc.body.versions.map((v: any) => v.version_index),
        [6, 5],
      );
      assert.equal(desc.body.next_starting_token, 2);
      const named = await s.call('PATCH', `/v2/datasets/${id}/versions/2`, { name: 'with r3' });
      assert.equal(named.body.name, 'with r3');
      assert.equal((await s.call('GET', `/v2/datasets/${id}/versions/7/content`)).status, 404);

      // Edits that name rows the dataset lacks are refused whole.
      const bad = await edit(id, [
        { edit_type: 'append_row', values: { input: 'never' } },
        { edit_type: 'delete_row', row_id: r2 },
      ]);
      assert.equal(bad.status, 422, bad.text);
      assert.deepEqual(bad.body.detail[0].loc, ['body', 'edits', 1, 'row_id']);
      page = await s.call('GET', `/v2/datasets/${id}`);
      assert.equal(page.body.current_version_index, 6);
    });

    test('list, query by name, rename, delete', async () => {
      const a = (await s.call('POST', '/v2/datasets', { name: 'Alpha set', rows: [{ input: 1 }] })).body;
      const list = await s.call('GET', '/v2/datasets?limit=2');
      assert.equal(list.body.datasets.length, 2);
      assert.equal(list.body.next_starting_token, 2);
      const byName = await s.call('POST', '/v2/datasets/query', {
        filters: [{ name: 'name', operator: 'eq', value: 'Alpha set' }],
      });
      assert.deepEqual(
        byName.body.datasets.map((d: any) => d.id),
        [a.id],
      );
      const folded = await s.call('POST', '/v2/datasets/query', {
        filters: [{ name: 'name', operator: 'contains', value: 'alpha', case_sensitive: false }],
      });
      assert.deepEqual(
        folded.body.datasets.map((d: any) => d.id),
        [a.id],
      );
      const inProject = await s.call('POST', '/v2/datasets/query', {
        filters: [{ name: 'used_in_project', value: projectId }],
        sort: { name: 'name', ascending: true },
      });
      assert.deepEqual(
        inProject.body.datasets.map((d: any) => d.name),
        ['qa'],
      );
      const renamed = await s.call('PATCH', `/v2/datasets/${a.id}`, { name: 'Beta set' });
      assert.equal(renamed.body.name, 'Beta set');
      assert.equal((await s.call('PATCH', `/v2/datasets/${a.id}`, { name: 'qa' })).status, 409);
      const suffixed = await s.call('PATCH', `/v2/datasets/${a.id}`, {
        name: { value: 'qa', append_suffix_if_duplicate: true },
      });
      assert.equal(suffixed.body.name, 'qa (1)');
      assert.equal((await s.call('DELETE', `/v2/datasets/${a.id}`)).status, 200);
      assert.equal((await s.call('GET', `/v2/datasets/${a.id}`)).status, 404);
    });

    test('bad uploads answer 422 naming the line and leave no dataset behind', async () => {
      const before = await counts();
      const cases: [string, { filename: string; content: Buffer | string }, string, number][] = [
        [
          'not UTF-8',
          {
            filename: 'bad.jsonl',
            content: Buffer.concat([
              Buffer.from('{"input":"ok"}\n{"input":"'),
              Buffer.from([0xff, 0xfe]),
              Buffer.from('"}\n'),
            ]),
          },
          'not valid UTF-8',
          2,
        ],
        [
          'a JSONL line that is a list',
          { filename: 'bad.jsonl', content: '{"input":"a"}\n{"input":"b"}\n[1,2]\n' },
          'must be a JSON object',
          3,
        ],
        [
          'a JSONL line that is not JSON',
          { filename: 'bad.jsonl', content: '{"input":"a"}\n{"input":\n' },
          'not valid JSON',
          2,
        ],
        [
          'a broken CSV record',
          { filename: 'bad.csv', content: 'input,output\na,b\nc,d,e\nf,g\n' },
          'number of fields',
          3,
        ],
        [
          'an unclosed CSV quote',
          { filename: 'bad.csv', content: 'input,output\na,b\n"c,d\n' },
          'not closed',
          3,
        ],
      ];
      for (const [what, file, msg, line] of cases) {
        // Many rows before the fault, so some batches were written before it was found.
        const r = await upload({ name: `bad ${what}` }, file);
        assert.equal(r.status, 422, `${what}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.detail[0].msg, new RegExp(`^Line ${line}: .*${msg}`), what);
        assert.deepEqual(r.body.detail[0].loc, ['body', 'file', 'line', line], what);
      }
      const big = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ input: `row ${i}` })).join('\n');
      const late = await upload(
        { name: 'late fault' },
        { filename: 'late.jsonl', content: `${big}\n"oops"\n` },
      );
      assert.equal(late.status, 422);
      assert.match(late.body.detail[0].msg, /^Line 3001: /);
      assert.equal(
        (await upload({ name: 'feather' }, { filename: 'x', content: 'x' }, '?format=feather')).status,
        422,
      );
      // A multipart body the parser cannot read: no boundary, or a JSON text under a boundary.
      for (const contentType of ['multipart/form-data', 'multipart/form-data; boundary=x']) {
        const r = await s.running.app.inject({
          method: 'POST',
          url: '/v2/datasets',
          payload: JSON.stringify({ name: 'not a form', rows: [{ a: 1 }] }),
          headers: { 'content-type': contentType, 'service-api-key': s.adminKey },
        });
        assert.equal(r.statusCode, 400, `${contentType}: ${r.body}`);
        assert.match(JSON.parse(r.body).detail, /multipart/);
      }
      assert.deepEqual(await counts(), before, 'nothing of the refused uploads is stored');
      const list = await s.call('POST', '/v2/datasets/query', {
        filters: [{ name: 'name', operator: 'contains', value: 'bad' }],
      });
      assert.equal(list.body.datasets.length, 0);
    });

    test('a file over SPANBASE_DATASET_MAX_BYTES answers 422 naming the line and stores nothing', async () => {
      const small = await startTestServer(store, { SPANBASE_DATASET_MAX_BYTES: '2000' });
      try {
        const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ input: `row ${i}` })).join('\n');
        const m = multipartBody({ name: 'too big' }, { filename: 'big.jsonl', content: lines });
        const r = await small.running.app.inject({
          method: 'POST',
          url: '/v2/datasets',
          payload: m.payload,
          headers: { ...m.headers, 'service-api-key': small.adminKey },
        });
        assert.equal(r.statusCode, 422, r.body);
        const detail = JSON.parse(r.body).detail[0];
        assert.match(detail.msg, /^Line \d+: the file is larger than the limit of 2000 bytes/);
        assert.ok(detail.ctx.line > 50 && detail.ctx.line < 200, `line ${detail.ctx.line}`);
        assert.equal((await small.call('GET', '/v2/datasets')).body.datasets.length, 0);
      } finally {
        await small.close();
      }
    });

    test('an upload of 100,000 rows', async () => {
      const lines: string[] = [];
      for (let i = 0; i < 100_000; i++)
        lines.push(
          JSON.stringify({ input: `question ${i}`, output: `answer ${i}`, metadata: { i: String(i) } }),
        );
      const r = await upload(
        { name: 'hundred-k' },
        { filename: 'big.jsonl', content: `${lines.join('\n')}\n` },
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.num_rows, 100_000);
      const last = await s.call('GET', `/v2/datasets/${r.body.id}/content?starting_token=99998&limit=100`);
      assert.deepEqual(
        last.body.rows.map((x: any) => [x.index, x.values_dict.input]),
        [
          [99998, 'question 99998'],
          [99999, 'question 99999'],
        ],
      );
      assert.equal(last.body.next_starting_token, null);
      assert.equal((await s.call('DELETE', `/v2/datasets/${r.body.id}`)).status, 200);
    });

    test('access: project viewers read, editors edit, owners delete and share; others see nothing', async () => {
      const viewer = await s.user();
      const editor = await s.user();
      const stranger = await s.user();
      const share = (userId: string, role: string) =>
        s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: userId, role });
      await share(viewer.id, 'viewer');
      await share(editor.id, 'editor');
      const ds = (
        await s.call('POST', '/v2/datasets/query', {
          filters: [{ name: 'name', operator: 'eq', value: 'qa' }],
        })
      ).body.datasets[0];
      const asUser = (key: string, method: string, url: string, body?: unknown) =>
        s.call(method, url, body, key);

      assert.equal((await asUser(viewer.key, 'GET', `/v2/datasets/${ds.id}/content`)).status, 200);
      const viewerList = await asUser(viewer.key, 'GET', '/v2/datasets');
      assert.deepEqual(
        viewerList.body.datasets.map((d: any) => d.name),
        ['qa'],
      );
      assert.equal(
        viewerList.body.datasets[0].permissions.find((p: any) => p.action === 'update').allowed,
        false,
      );
      assert.equal(
        (await edit(ds.id, [{ edit_type: 'append_row', values: { input: 'v' } }], undefined, viewer.key))
          .status,
        403,
      );
      assert.equal((await asUser(viewer.key, 'PATCH', `/v2/datasets/${ds.id}`, { name: 'x' })).status, 403);

      const e = await edit(
        ds.id,
        [{ edit_type: 'append_row', values: { input: 'by editor' } }],
        undefined,
        editor.key,
      );
      assert.equal(e.status, 200, e.text);
      assert.equal((await asUser(editor.key, 'DELETE', `/v2/datasets/${ds.id}`)).status, 403);

      for (const [m, url] of [
        ['GET', `/v2/datasets/${ds.id}`],
        ['GET', `/v2/datasets/${ds.id}/content`],
        ['POST', `/v2/datasets/${ds.id}/versions/query`],
        ['GET', `/v2/datasets/${ds.id}/projects`],
      ])
        assert.equal((await asUser(stranger.key, m, url)).status, 404, `${m} ${url}`);
      assert.equal((await asUser(stranger.key, 'GET', '/v2/datasets')).body.datasets.length, 0);

      // A user's own dataset is theirs alone until shared with a project they edit.
      const own = await asUser(stranger.key, 'POST', '/v2/datasets', {
        name: 'private',
        rows: [{ input: 1 }],
      });
      assert.equal(own.status, 200);
      assert.equal((await asUser(viewer.key, 'GET', `/v2/datasets/${own.body.id}`)).status, 404);
      assert.equal(
        (
          await asUser(stranger.key, 'POST', `/v2/datasets/${own.body.id}/projects`, {
            project_id: projectId,
          })
        ).status,
        404,
        'sharing needs the editor role on the project',
      );
      await share(stranger.id, 'editor');
      const shared = await asUser(stranger.key, 'POST', `/v2/datasets/${own.body.id}/projects`, {
        project_id: projectId,
      });
      assert.equal(shared.status, 200, shared.text);
      assert.equal((await asUser(viewer.key, 'GET', `/v2/datasets/${own.body.id}`)).status, 200);
      assert.equal(
        (await asUser(stranger.key, 'DELETE', `/v2/datasets/${own.body.id}/projects/${projectId}`)).status,
        200,
      );
      assert.equal((await asUser(viewer.key, 'GET', `/v2/datasets/${own.body.id}`)).status, 404);
      // A project given at upload needs its editor role.
      const r = await upload(
        { name: 'viewer upload', project_id: projectId },
        { filename: 'v.jsonl', content: '{"input":1}\n' },
        '',
        viewer.key,
      );
      assert.equal(r.status, 403);
    });

    test('services.datasets.rows reads any version in pages with the values dict', async () => {
      const ds = (
        await s.call('POST', '/v2/datasets', {
          name: 'svc',
          rows: [{ input: 'a' }, { input: 'b' }, { input: 'c' }],
        })
      ).body;
      const caller = {
        id: s.adminId,
        email: 'admin@localhost',
        role: 'admin' as const,
        first_name: '',
        last_name: '',
      };
      await edit(ds.id, [{ edit_type: 'append_row', values: { input: 'd' } }]);
      const p1 = await s.running.services.datasets.rows(caller, ds.id, { version: 1, offset: 1, limit: 5 });
      assert.deepEqual(
        p1.rows.map((r) => [r.index, r.values_dict.input]),
        [
          [1, 'b'],
          [2, 'c'],
        ],
      );
      assert.equal(p1.next_offset, null);
      const latest = await s.running.services.datasets.rows(caller, ds.id, { offset: 0, limit: 2 });
      assert.equal(latest.version_index, 2);
      assert.equal(latest.next_offset, 2);
    });
  });
}
