/**
 * Record search and available columns over data sent through the ingestion routes: traces search
 * carries the filter and sort semantics (traces have every client-settable field), sessions search
 * its aggregates and counts, spans search its kinds.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';
import { BASE_TIME_US as T0, allIds, createSession, ingestTraces, iso } from '../property/support.ts';

const S = 1_000_000; // one second in µs
const pause = () => new Promise((r) => setTimeout(r, 3));

for (const store of storesUnderTest()) {
  describe(`record search [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    let otherStreamId: string;
    let traces: string;
    let sessions: string;
    const id: Record<string, string> = {};
    const label = (x: string) => Object.keys(id).find((k) => id[k] === x) ?? x;

    /** Names of the traces a traces search answers (one page of up to 1000). */
    const names = async (body: Record<string, unknown>, url = traces) => {
      const r = await s.call('POST', url, { log_stream_id: logStreamId, ...body, limit: 1000 });
      assert.equal(r.status, 200, r.text);
      return r.body.records.map((x: any) => x.name);
    };
    const sorted = (xs: string[]) => [...xs].sort();
    const search = (body: Record<string, unknown>, url = traces) =>
      s.call('POST', url, { log_stream_id: logStreamId, ...body });

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      traces = `/v2/projects/${projectId}/traces/search`;
      sessions = `/v2/projects/${projectId}/sessions/search`;
      const other = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'other' });
      otherStreamId = other.body.id;

      // Two sessions, created one after the other.
      id.s1 = await createSession(s, projectId, logStreamId, {
        name: 'first session',
        external_id: 'ext-s1',
        user_metadata: { customer: 'acme', tier: 2 },
      });
      await pause();
      id.s2 = await createSession(s, projectId, logStreamId, { name: 'second session' });

      const trace = (name: string, fields: Record<string, unknown>) => {
        id[name] = randomUUID();
        return { id: id[name], name, ...fields };
      };
      // Sent one request at a time, so that updated_at follows this order: beta, gamma, ete, alpha.
      const batches = [
        [
          trace('beta', {
            created_at: iso(T0 + 2 * S),
            input: 'hello there',
            tags: ['blue'],
            user_metadata: { customer: 'Initech', n: 'five' },
            metrics: { duration_ns: 300, latency: 3, num_input_tokens: 7 },
            is_complete: false,
            error_message: 'timeout',
          }),
        ],
        [trace('gamma', { created_at: iso(T0 + 1 * S), metrics: { duration_ns: 200 }, status_code: 500 })],
        [
          trace('ÉTÉ', {
            created_at: iso(T0 + 3 * S),
            input: 'Été à Paris',
            external_id: 'ext-3',
            status_code: 200,
          }),
        ],
        [
          trace('alpha', {
            created_at: iso(T0 + 1 * S),
            input: [{ role: 'user', content: 'Hello World from Paris' }],
            output: { role: 'assistant', content: 'bonjour' },
            tags: ['red', 'blue'],
            user_metadata: { customer: 'acme', 'a/b': 'slash', 'q"t': 'quote', n: 5, flag: true },
            metrics: { duration_ns: 100, latency: 1.5, num_input_tokens: 3 },
            status_code: 200,
            spans: [
              {
                type: 'llm',
                name: 'gen',
                model: 'gpt-4o',
                input: 'Hello span',
                created_at: iso(T0 + 1 * S + 10),
                metrics: { num_input_tokens: 3 },
              },
              { type: 'tool', name: 'lookup', input: 'q', created_at: iso(T0 + 1 * S + 20) },
            ],
          }),
        ],
      ];
      for (const b of batches) {
        await ingestTraces(s, projectId, logStreamId, b, b[0].name === 'beta' ? { session_id: id.s1 } : {});
        await pause();
      }
      await ingestTraces(s, projectId, logStreamId, [{ name: 'elsewhere', input: 'x' }], {});
      await ingestTraces(s, projectId, logStreamId, [trace('late', { created_at: iso(T0 + 9 * S) })], {
        session_id: id.s2,
      });
      const o = await s.call('POST', `/v2/projects/${projectId}/traces`, {
        log_stream_id: otherStreamId,
        traces: [{ name: 'other stream', input: 'Hello' }],
      });
      assert.equal(o.status, 200, o.text);
    });
    after(() => s.close());

    test('default order is created_at then id, both descending; the envelope', async () => {
      const r = await search({
        filters: [{ column_id: 'name', operator: 'one_of', value: ['alpha', 'beta', 'gamma', 'ÉTÉ'] }],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.num_rows, 4);
      assert.equal(r.body.next_starting_token, null);
      assert.equal(r.body.paginated, false);
      const got = r.body.records.map((x: any) => x.id);
      const tie = [id.alpha, id.gamma].sort().reverse();
      assert.deepEqual(got, [id.ÉTÉ, id.beta, ...tie]);
      assert.equal(r.body.last_row_id, got[3]);
      const alpha = r.body.records.find((x: any) => x.id === id.alpha);
      assert.equal(alpha.type, 'trace');
      assert.equal(alpha.project_id, projectId);
      assert.equal(alpha.created_at, iso(T0 + S));
      assert.deepEqual(alpha.input, [{ role: 'user', content: 'Hello World from Paris' }]);
      assert.equal(alpha.num_spans, undefined);
    });

    test('pages: pagination object or top level; next token null after an exactly full last page', async () => {
      const body = {
        filters: [{ column_id: 'name', operator: 'one_of', value: ['alpha', 'beta', 'gamma', 'ÉTÉ'] }],
      };
      let r = await search({ ...body, pagination: { starting_token: 0, limit: 3 } });
      assert.equal(r.body.num_rows, 3);
      assert.equal(r.body.next_starting_token, 3);
      assert.equal(r.body.paginated, true);
      r = await search({ ...body, starting_token: 3, limit: 3 });
      assert.equal(r.body.num_rows, 1);
      assert.equal(r.body.next_starting_token, null);
      r = await search({ ...body, starting_token: 2, limit: 2 });
      assert.equal(r.body.num_rows, 2);
      assert.equal(r.body.next_starting_token, null, 'exactly full last page');
      r = await search({ ...body, starting_token: 10 });
      assert.equal(r.body.num_rows, 0);
      assert.equal(r.body.next_starting_token, null);
      const all = await allIds(s, traces, { log_stream_id: logStreamId, ...body }, 1);
      assert.equal(all.length, 4);
      assert.equal(new Set(all).size, 4);
    });

    test('page bounds are 422 with loc', async () => {
      for (const [body, loc] of [
        [{ limit: 0 }, ['body', 'limit']],
        [{ limit: 1001 }, ['body', 'limit']],
        [{ starting_token: -1 }, ['body', 'starting_token']],
        [{ pagination: { limit: 0 } }, ['body', 'pagination', 'limit']],
        [{ pagination: { starting_token: 'x' } }, ['body', 'pagination', 'starting_token']],
      ] as [Record<string, unknown>, unknown[]][]) {
        const r = await search(body);
        assert.equal(r.status, 422, JSON.stringify(body));
        assert.deepEqual(r.body.detail[0].loc, loc);
      }
      assert.equal((await search({ limit: 1000 })).status, 200);
    });

    test('text filters: eq, ne, contains, one_of, not_in; case folding; name alias', async () => {
      const f = (filter: Record<string, unknown>) =>
        names({ filters: [{ type: 'text', ...filter }] }).then(sorted);
      assert.deepEqual(await f({ column_id: 'name', operator: 'eq', value: 'alpha' }), ['alpha']);
      assert.deepEqual(await f({ name: 'name', operator: 'eq', value: 'ALPHA' }), []);
      assert.deepEqual(await f({ name: 'name', operator: 'eq', value: 'ALPHA', case_sensitive: false }), [
        'alpha',
      ]);
      assert.deepEqual(await f({ name: 'name', operator: 'eq', value: 'été', case_sensitive: false }), [
        'ÉTÉ',
      ]);
      assert.deepEqual(await f({ column_id: 'name', operator: 'ne', value: 'alpha' }), [
        'beta',
        'elsewhere',
        'gamma',
        'late',
        'ÉTÉ',
      ]);
      // Message contents are searched as flattened text.
      assert.deepEqual(await f({ column_id: 'input', operator: 'contains', value: 'hello' }), ['beta']);
      assert.deepEqual(
        await f({ column_id: 'input', operator: 'contains', value: 'hello', case_sensitive: false }),
        ['alpha', 'beta'],
      );
      assert.deepEqual(
        await f({ column_id: 'input', operator: 'contains', value: 'PARIS', case_sensitive: false }),
        ['alpha', 'ÉTÉ'],
      );
      assert.deepEqual(await f({ column_id: 'output', operator: 'eq', value: 'bonjour' }), ['alpha']);
      // A trace without an error message matches ne and not_in, never eq or contains.
      assert.deepEqual(await f({ column_id: 'error_message', operator: 'contains', value: 'time' }), [
        'beta',
      ]);
      assert.deepEqual(await f({ column_id: 'error_message', operator: 'ne', value: 'timeout' }), [
        'alpha',
        'elsewhere',
        'gamma',
        'late',
        'ÉTÉ',
      ]);
      assert.deepEqual(await f({ column_id: 'error_message', operator: 'not_in', value: ['timeout'] }), [
        'alpha',
        'elsewhere',
        'gamma',
        'late',
        'ÉTÉ',
      ]);
      assert.deepEqual(await f({ column_id: 'name', operator: 'one_of', value: ['alpha', 'beta', 'x'] }), [
        'alpha',
        'beta',
      ]);
      assert.deepEqual(await f({ column_id: 'name', operator: 'one_of', value: [] }), []);
      assert.deepEqual(
        await f({
          column_id: 'name',
          operator: 'not_in',
          value: ['ALPHA', 'été', 'late', 'elsewhere'],
          case_sensitive: false,
        }),
        ['beta', 'gamma'],
      );
      assert.deepEqual(await f({ column_id: 'external_id', operator: 'eq', value: 'ext-3' }), ['ÉTÉ']);
      // LIKE wildcards are literal.
      assert.deepEqual(await f({ column_id: 'input', operator: 'contains', value: '%' }), []);
      assert.deepEqual(await f({ column_id: 'name', operator: 'contains', value: '_' }), []);
    });

    test('metadata keys: missing never matches positive operators, always ne/not_in, also under not', async () => {
      const f = (filter: Record<string, unknown>) => names({ filters: [filter] }).then(sorted);
      const rest = ['elsewhere', 'gamma', 'late', 'ÉTÉ'];
      assert.deepEqual(
        await f({ column_id: 'user_metadata/customer', operator: 'eq', value: 'acme', type: 'text' }),
        ['alpha'],
      );
      // type inferred from the column
      assert.deepEqual(await f({ column_id: 'user_metadata/customer', operator: 'eq', value: 'acme' }), [
        'alpha',
      ]);
      assert.deepEqual(
        await f({ column_id: 'user_metadata/customer', operator: 'ne', value: 'acme', type: 'text' }),
        sorted(['beta', ...rest]),
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/customer', operator: 'not_in', value: ['acme'], type: 'text' }),
        sorted(['beta', ...rest]),
      );
      const not = await names({
        filter_tree: {
          not: {
            filter: {
              column_id: 'user_metadata/customer',
              operator: 'eq',
              value: 'initech',
              type: 'text',
              case_sensitive: false,
            },
          },
        },
      });
      assert.deepEqual(sorted(not), sorted(['alpha', ...rest]));
      assert.deepEqual(
        await f({ column_id: 'user_metadata/a/b', operator: 'eq', value: 'slash', type: 'text' }),
        ['alpha'],
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/q"t', operator: 'eq', value: 'quote', type: 'text' }),
        ['alpha'],
      );
      assert.deepEqual(
        await f({ column_id: "user_metadata/x') or 1=1 --", operator: 'eq', value: 'x', type: 'text' }),
        [],
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/never', operator: 'eq', value: 'x', type: 'text' }),
        [],
      );
      // Typed values: a number filter sees numbers only, a text filter strings only.
      assert.deepEqual(await f({ column_id: 'user_metadata/n', operator: 'gte', value: 5, type: 'number' }), [
        'alpha',
      ]);
      assert.deepEqual(
        await f({ column_id: 'user_metadata/n', operator: 'eq', value: 'five', type: 'text' }),
        ['beta'],
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/n', operator: 'eq', value: '5', type: 'text' }),
        [],
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/n', operator: 'contains', value: '5', type: 'text' }),
        [],
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/flag', operator: 'eq', value: true, type: 'boolean' }),
        ['alpha'],
      );
      assert.deepEqual(
        await f({ column_id: 'user_metadata/flag', operator: 'ne', value: true, type: 'boolean' }),
        sorted(['beta', ...rest]),
      );
    });

    test('number, date, boolean and id filters', async () => {
      const f = (filter: Record<string, unknown>) => names({ filters: [filter] }).then(sorted);
      assert.deepEqual(
        await f({ column_id: 'metrics/duration_ns', type: 'number', operator: 'gt', value: 150 }),
        ['beta', 'gamma'],
      );
      assert.deepEqual(
        await f({ column_id: 'metrics/duration_ns', type: 'number', operator: 'between', value: [100, 200] }),
        ['alpha', 'gamma'],
      );
      assert.deepEqual(
        await f({ column_id: 'metrics/duration_ns', type: 'number', operator: 'ne', value: 100 }),
        ['beta', 'elsewhere', 'gamma', 'late', 'ÉTÉ'],
      );
      assert.deepEqual(
        await f({ column_id: 'metrics/duration_ns', type: 'number', operator: 'eq', value: 100.5 }),
        [],
      );
      assert.deepEqual(await f({ column_id: 'metrics/latency', type: 'number', operator: 'lt', value: 2 }), [
        'alpha',
      ]);
      assert.deepEqual(await f({ column_id: 'status_code', type: 'number', operator: 'gte', value: 300 }), [
        'gamma',
      ]);
      assert.deepEqual(await f({ column_id: 'num_spans', type: 'number', operator: 'eq', value: 2 }), [
        'alpha',
      ]);
      const at = iso(T0 + 2 * S);
      assert.deepEqual(await f({ column_id: 'created_at', type: 'date', operator: 'eq', value: at }), [
        'beta',
      ]);
      assert.deepEqual(
        await f({ column_id: 'created_at', type: 'date', operator: 'lt', value: iso(T0 + 2 * S) }),
        ['alpha', 'gamma'],
      );
      assert.deepEqual(await f({ column_id: 'is_complete', type: 'boolean', value: false }), ['beta']);
      assert.deepEqual(await f({ column_id: 'id', type: 'id', value: id.beta }), ['beta']);
      assert.deepEqual(await f({ column_id: 'id', value: [id.beta, id.gamma], operator: 'one_of' }), [
        'beta',
        'gamma',
      ]);
      assert.deepEqual(await f({ column_id: 'id', operator: 'contains', value: id.beta.slice(3, 12) }), [
        'beta',
      ]);
      assert.deepEqual(await f({ column_id: 'session_id', value: id.s1 }), ['beta']);
    });

    test('collection filters on tags', async () => {
      const f = (filter: Record<string, unknown>) =>
        names({ filters: [{ column_id: 'tags', type: 'collection', ...filter }] }).then(sorted);
      const untagged = ['elsewhere', 'gamma', 'late', 'ÉTÉ'];
      assert.deepEqual(await f({ operator: 'contains', value: 'blue' }), ['alpha', 'beta']);
      assert.deepEqual(await f({ operator: 'contains', value: 'BLUE' }), []);
      assert.deepEqual(await f({ operator: 'contains', value: 'BLUE', case_sensitive: false }), [
        'alpha',
        'beta',
      ]);
      assert.deepEqual(await f({ operator: 'one_of', value: ['red', 'green'] }), ['alpha']);
      assert.deepEqual(
        await f({ operator: 'not_in', value: ['red', 'green'] }),
        sorted(['beta', ...untagged]),
      );
      assert.deepEqual(await f({ operator: 'eq', value: ['red', 'blue'] }), ['alpha']);
      assert.deepEqual(await f({ operator: 'eq', value: ['blue', 'red'] }), []);
      assert.deepEqual(await f({ operator: 'eq', value: 'blue' }), ['beta']);
      assert.deepEqual(await f({ operator: 'eq', value: [] }), untagged);
    });

    test('filter trees: and, or, not, nested; filters and filter_tree combine with AND', async () => {
      const leaf = (column_id: string, operator: string, value: unknown, type = 'text') => ({
        filter: { column_id, operator, value, type },
      });
      const tree = {
        or: [
          { and: [leaf('name', 'eq', 'alpha'), { not: leaf('is_complete', 'eq', false, 'boolean') }] },
          leaf('metrics/duration_ns', 'gte', 300, 'number'),
        ],
      };
      assert.deepEqual(sorted(await names({ filter_tree: tree })), ['alpha', 'beta']);
      assert.deepEqual(
        await names({
          filter_tree: tree,
          filters: [{ column_id: 'name', operator: 'eq', value: 'beta', type: 'text' }],
        }),
        ['beta'],
      );
      assert.equal((await names({ filter_tree: { and: [] } })).length, 6);
      assert.deepEqual(await names({ filter_tree: { or: [] } }), []);
      let deep: any = leaf('name', 'eq', 'alpha');
      for (let i = 0; i < 16; i++) deep = { not: deep };
      assert.deepEqual(await names({ filter_tree: deep }), ['alpha']);
    });

    test('bad filters answer 422 pointing at the fault', async () => {
      const cases: [Record<string, unknown>, unknown[], string][] = [
        [
          {
            filter_tree: {
              and: [
                { filter: { column_id: 'name', operator: 'eq', value: 'x', type: 'text' } },
                { filter: { column_id: 'name', operator: 'eq', value: 'x', type: 'text' } },
                { filter: { column_id: 'name', operator: 'gt', value: 'x', type: 'text' } },
              ],
            },
          },
          ['body', 'filter_tree', 'and', 2, 'filter', 'operator'],
          'enum',
        ],
        [
          { filters: [{ column_id: 'input', operator: 'gt', value: 1, type: 'number' }] },
          ['body', 'filters', 0, 'type'],
          'value_error',
        ],
        [
          { filters: [{ column_id: 'nope', operator: 'eq', value: 'x', type: 'text' }] },
          ['body', 'filters', 0, 'column_id'],
          'value_error',
        ],
        [
          { filters: [{ name: 'nope', operator: 'eq', value: 'x' }] },
          ['body', 'filters', 0, 'name'],
          'value_error',
        ],
        [
          { filters: [{ column_id: 'metrics/unseen', operator: 'eq', value: 1, type: 'number' }] },
          ['body', 'filters', 0, 'column_id'],
          'value_error',
        ],
        [
          { filters: [{ column_id: 'name', operator: 'eq', value: 3, type: 'text' }] },
          ['body', 'filters', 0, 'value'],
          'string_type',
        ],
        [
          { filters: [{ column_id: 'name', operator: 'one_of', value: 'x', type: 'text' }] },
          ['body', 'filters', 0, 'value'],
          'list_type',
        ],
        [
          { filters: [{ column_id: 'name', operator: 'one_of', value: ['x', 2], type: 'text' }] },
          ['body', 'filters', 0, 'value', 1],
          'string_type',
        ],
        [
          { filters: [{ column_id: 'name', value: 'x', type: 'text' }] },
          ['body', 'filters', 0, 'operator'],
          'missing',
        ],
        [
          { filters: [{ operator: 'eq', value: 'x', type: 'text' }] },
          ['body', 'filters', 0, 'column_id'],
          'missing',
        ],
        [
          { filters: [{ column_id: 'name', operator: 'eq', type: 'text' }] },
          ['body', 'filters', 0, 'value'],
          'missing',
        ],
        [
          { filters: [{ column_id: 'name', operator: 'eq', value: 'x', type: 'weird' }] },
          ['body', 'filters', 0, 'type'],
          'union_tag_invalid',
        ],
        [
          {
            filters: [{ column_id: 'name', operator: 'eq', value: 'x', type: 'text', case_sensitive: 'no' }],
          },
          ['body', 'filters', 0, 'case_sensitive'],
          'bool_type',
        ],
        [
          {
            filters: [
              { column_id: 'metrics/duration_ns', operator: 'between', value: [5, 1], type: 'number' },
            ],
          },
          ['body', 'filters', 0, 'value'],
          'value_error',
        ],
        [
          {
            filters: [
              { column_id: 'metrics/duration_ns', operator: 'between', value: [1, 2, 3], type: 'number' },
            ],
          },
          ['body', 'filters', 0, 'value'],
          'value_error',
        ],
        [
          {
            filters: [
              { column_id: 'metrics/duration_ns', operator: 'between', value: [1, '2'], type: 'number' },
            ],
          },
          ['body', 'filters', 0, 'value', 1],
          'float_type',
        ],
        [
          { filters: [{ column_id: 'metrics/duration_ns', operator: 'gt', value: true, type: 'number' }] },
          ['body', 'filters', 0, 'value'],
          'float_type',
        ],
        [
          { filters: [{ column_id: 'created_at', operator: 'gt', value: 'yesterday', type: 'date' }] },
          ['body', 'filters', 0, 'value'],
          'datetime_parsing',
        ],
        [
          { filters: [{ column_id: 'is_complete', value: 'yes', type: 'boolean' }] },
          ['body', 'filters', 0, 'value'],
          'bool_type',
        ],
        [
          { filters: [{ column_id: 'tags', operator: 'ne', value: 'x', type: 'collection' }] },
          ['body', 'filters', 0, 'operator'],
          'enum',
        ],
        [{ filters: [{ type: 'fully_annotated', user_ids: null }] }, ['body', 'filters', 0], 'value_error'],
        [{ filters: [5] }, ['body', 'filters', 0], 'dict_type'],
        [{ filters: { column_id: 'name' } }, ['body', 'filters'], 'list_type'],
        [
          { filter_tree: { and: [{ filter: {} }, { bogus: 1 }] } },
          ['body', 'filter_tree', 'and', 0, 'filter', 'column_id'],
          'missing',
        ],
        [{ filter_tree: { and: [{ bogus: 1 }] } }, ['body', 'filter_tree', 'and', 0], 'value_error'],
        [{ filter_tree: { and: {} } }, ['body', 'filter_tree', 'and'], 'list_type'],
        [
          {
            filter_tree: {
              not: { filter: { column_id: 'name', operator: 'eq', value: 'x', type: 'text' } },
              and: [],
            },
          },
          ['body', 'filter_tree'],
          'value_error',
        ],
        [{ filter_tree: 'name = x' }, ['body', 'filter_tree'], 'dict_type'],
        [{ sort: { name: 'input' } }, ['body', 'sort', 'name'], 'value_error'],
        [{ sort: { name: 'nope' } }, ['body', 'sort', 'name'], 'value_error'],
        [{ sort: { column_id: 'metrics/unseen' } }, ['body', 'sort', 'column_id'], 'value_error'],
        [{ sort: { name: 'name', ascending: 'yes' } }, ['body', 'sort', 'ascending'], 'bool_type'],
        [{ sort: { name: 'name', sort_type: 'custom' } }, ['body', 'sort', 'sort_type'], 'literal_error'],
        [{ log_stream_id: 'not-a-uuid' }, ['body', 'log_stream_id'], 'uuid_parsing'],
      ];
      for (const [body, loc, type] of cases) {
        const r = await search(body);
        assert.equal(r.status, 422, `${JSON.stringify(body)} → ${r.status} ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, loc, JSON.stringify(body));
        assert.equal(r.body.detail[0].type, type, JSON.stringify(body));
        assert.equal(typeof r.body.detail[0].msg, 'string');
      }
      // Too deep: 17 levels of not.
      let deep: any = { filter: { column_id: 'name', operator: 'eq', value: 'x', type: 'text' } };
      for (let i = 0; i < 17; i++) deep = { not: deep };
      const r = await search({ filter_tree: deep });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'filter_tree', ...Array(16).fill('not')]);
      // Several faults: one item each.
      const many = await search({
        filters: [
          { column_id: 'name', operator: 'bad', value: 'x', type: 'text' },
          { column_id: 'nope', operator: 'eq', value: 'x' },
        ],
        sort: { name: 'input' },
      });
      assert.equal(many.status, 422);
      assert.equal(many.body.detail.length, 3);
    });

    test('sorts: every direction, missing values last, ties by id in the same direction', async () => {
      const four = {
        filters: [{ column_id: 'name', operator: 'one_of', value: ['alpha', 'beta', 'gamma', 'ÉTÉ'] }],
      };
      const order = (sort: Record<string, unknown>) => names({ ...four, sort });
      assert.deepEqual(await order({ name: 'updated_at' }), ['beta', 'gamma', 'ÉTÉ', 'alpha']);
      assert.deepEqual(await order({ name: 'updated_at', ascending: false }), [
        'alpha',
        'ÉTÉ',
        'gamma',
        'beta',
      ]);
      assert.deepEqual(await order({ name: 'metrics/duration_ns', ascending: true }), [
        'alpha',
        'gamma',
        'beta',
        'ÉTÉ',
      ]);
      assert.deepEqual(await order({ name: 'metrics/duration_ns', ascending: false }), [
        'beta',
        'gamma',
        'alpha',
        'ÉTÉ',
      ]);
      const noLatency = [id.gamma, id.ÉTÉ].sort();
      assert.deepEqual(await order({ column_id: 'metrics/latency', ascending: false }), [
        'beta',
        'alpha',
        ...[...noLatency].reverse().map(label),
      ]);
      // 'Initech' < 'acme' by code point; records without the key last
      assert.deepEqual(await order({ name: 'user_metadata/customer' }), [
        'beta',
        'alpha',
        ...noLatency.map(label),
      ]);
      assert.deepEqual(await order({ name: 'name', ascending: true }), ['alpha', 'beta', 'gamma', 'ÉTÉ']);
      const asc = await search({ ...four, sort: { name: 'created_at', ascending: true } });
      assert.deepEqual(
        asc.body.records.slice(0, 2).map((x: any) => x.id),
        [id.alpha, id.gamma].sort(),
      );
      const byStatus = await order({ name: 'status_code', ascending: false });
      assert.deepEqual(byStatus.slice(0, 1), ['gamma']);
      assert.equal(byStatus[3], 'beta', 'no status code: last');
    });

    test('sessions: aggregates from their traces, include_counts, default order', async () => {
      let r = await search({}, sessions);
      assert.equal(r.status, 200, r.text);
      const ids = r.body.records.map((x: any) => x.id);
      assert.ok(ids.includes(id.s1) && ids.includes(id.s2));
      const byId = Object.fromEntries(r.body.records.map((x: any) => [x.id, x]));
      for (const x of r.body.records) assert.equal(x.type, 'session');
      assert.equal(byId[id.s1].num_traces, undefined);
      const created = r.body.records.map((x: any) => x.created_at);
      assert.deepEqual(created, [...created].sort().reverse(), 'newest first');
      r = await search({ include_counts: true }, sessions);
      const s1 = r.body.records.find((x: any) => x.id === id.s1);
      assert.equal(s1.num_traces, 1);
      assert.equal(s1.external_id, 'ext-s1');
      const f = async (filter: Record<string, unknown>) =>
        (await search({ filters: [filter] }, sessions)).body.records.map((x: any) => x.id);
      assert.deepEqual(await f({ column_id: 'user_metadata/customer', operator: 'eq', value: 'acme' }), [
        id.s1,
      ]);
      assert.deepEqual(
        await f({ column_id: 'user_metadata/tier', operator: 'eq', value: 2, type: 'number' }),
        [id.s1],
      );
      assert.deepEqual(await f({ column_id: 'external_id', operator: 'eq', value: 'ext-s1' }), [id.s1]);
      assert.deepEqual(await f({ column_id: 'input', operator: 'contains', value: 'hello there' }), [id.s1]);
      assert.deepEqual(
        await f({ column_id: 'metrics/num_input_tokens', operator: 'eq', value: 7, type: 'number' }),
        [id.s1],
      );
      // Traces sent without a session got one each: every session holds one trace.
      assert.deepEqual(
        await f({ column_id: 'num_traces', operator: 'eq', value: 1, type: 'number' }).then(sorted),
        sorted(ids),
      );
      assert.deepEqual(await f({ column_id: 'num_traces', operator: 'gt', value: 1, type: 'number' }), []);
      const byDuration = await search({ sort: { name: 'metrics/duration_ns', ascending: false } }, sessions);
      assert.equal(byDuration.status, 200);
    });

    test('spans search: span kinds only; model; traces search: traces only; runs stay apart', async () => {
      const spans = `/v2/projects/${projectId}/spans/search`;
      const sp = await search({ filters: [{ column_id: 'model', operator: 'eq', value: 'gpt-4o' }] }, spans);
      assert.deepEqual(
        sp.body.records.map((x: any) => x.name),
        ['gen'],
      );
      const all = await search({ include_counts: true }, spans);
      assert.deepEqual(sorted(all.body.records.map((x: any) => x.type)), ['llm', 'tool']);
      const byType = await search({ filters: [{ column_id: 'type', operator: 'eq', value: 'tool' }] }, spans);
      assert.deepEqual(
        byType.body.records.map((x: any) => x.name),
        ['lookup'],
      );
      const tr = await search({
        include_counts: true,
        filters: [{ column_id: 'name', operator: 'eq', value: 'alpha' }],
      });
      assert.equal(tr.body.records[0].num_spans, 2);
      const other = await s.call('POST', traces, { log_stream_id: otherStreamId });
      assert.deepEqual(
        other.body.records.map((x: any) => x.name),
        ['other stream'],
      );
      const whole = await s.call('POST', traces, { limit: 1000 });
      assert.equal(whole.body.num_rows, 7, 'no run: the whole project');
    });

    test('scoping and access: unknown run 404, two runs 422, other users 404, no credentials 401', async () => {
      const unknown = '00000000-0000-4000-8000-000000000000';
      assert.equal((await s.call('POST', sessions, { log_stream_id: unknown })).status, 404);
      assert.equal((await s.call('POST', sessions, { experiment_id: logStreamId })).status, 404);
      assert.equal((await s.call('POST', sessions, { metrics_testing_id: unknown })).status, 404);
      assert.equal((await s.call('POST', sessions, { metrics_testing_id: logStreamId })).status, 200);
      const two = await s.call('POST', sessions, { log_stream_id: logStreamId, experiment_id: logStreamId });
      assert.equal(two.status, 422);
      assert.equal(two.body.detail[0].type, 'value_error');
      const u = await s.user();
      assert.equal((await s.call('POST', sessions, { log_stream_id: logStreamId }, u.key)).status, 404);
      assert.equal((await s.call('POST', sessions, { log_stream_id: logStreamId }, null)).status, 401);
      const mine = await projectWithLogStream(s, u.key);
      assert.equal(
        (
          await s.call(
            'POST',
            `/v2/projects/${mine.projectId}/sessions/search`,
            { log_stream_id: logStreamId },
            u.key,
          )
        ).status,
        404,
        "another project's log stream",
      );
      assert.equal((await s.call('POST', `/v2/projects/${unknown}/sessions/search`, {})).status, 404);
      // Unknown body fields are ignored.
      assert.equal(
        (await s.call('POST', sessions, { log_stream_id: logStreamId, project_id: projectId, extra: 1 }))
          .status,
        200,
      );
    });

    test('available columns: standard columns and catalogue keys of the run and window', async () => {
      const cols = async (target: string, body: Record<string, unknown>) => {
        const r = await s.call('POST', `/v2/projects/${projectId}/${target}/available_columns`, body);
        assert.equal(r.status, 200, r.text);
        return new Map<string, any>(r.body.columns.map((c: any) => [c.id, c]));
      };
      const c = await cols('sessions', { log_stream_id: logStreamId });
      for (const idc of [
        'id',
        'name',
        'input',
        'output',
        'created_at',
        'updated_at',
        'tags',
        'metrics/duration_ns',
        'num_traces',
      ]) {
        assert.ok(c.has(idc), idc);
      }
      assert.ok(!c.has('model'), 'model is for llm spans');
      const latency = c.get('metrics/latency');
      assert.equal(latency.category, 'metric');
      assert.equal(latency.filter_type, 'number');
      assert.equal(latency.sortable, true);
      assert.deepEqual(latency.applicable_types, ['trace']);
      const ab = c.get('user_metadata/a/b');
      assert.equal(ab.category, 'user_metadata');
      assert.equal(ab.data_type, 'text');
      assert.equal(ab.filter_type, 'text');
      assert.deepEqual(sorted(c.get('user_metadata/customer').applicable_types), ['session', 'trace']);
      assert.equal(c.get('user_metadata/flag').data_type, 'boolean');
      assert.equal(c.get('user_metadata/flag').filter_type, 'boolean');
      assert.equal(c.get('user_metadata/n').data_type, 'text', 'seen as a number and as a text');
      assert.equal(c.get('tags').data_type, 'string_list');
      assert.equal(c.get('tags').multi_valued, true);
      assert.equal(c.get('input').sortable, false);
      assert.equal(c.get('id').is_empty, false);
      for (const d of c.values()) {
        for (const k of [
          'id',
          'label',
          'category',
          'data_type',
          'sortable',
          'filterable',
          'filter_type',
          'applicable_types',
          'is_empty',
          'multi_valued',
        ]) {
          assert.ok(k in d, `${d.id} lacks ${k}`);
        }
      }
      // The window: keys seen only on records created before it are left out. When a key was seen
      // is kept to the hour: latency, last seen at T0 + 2 s, counts until T0 + 1 h.
      const sameHour = await cols('sessions', { log_stream_id: logStreamId, start_time: iso(T0 + 2.5 * S) });
      assert.ok(sameHour.has('metrics/latency'), 'latency was last seen within the hour from T0');
      const later = await cols('sessions', { log_stream_id: logStreamId, start_time: iso(T0 + 3601 * S) });
      assert.ok(!later.has('metrics/latency'), 'latency was last seen before T0 + 1 h');
      const early = await cols('sessions', { log_stream_id: logStreamId, end_time: iso(T0 + 1.5 * S) });
      assert.ok(early.has('user_metadata/a/b'));
      // Traces: trace keys; spans: model and span keys.
      const tr = await cols('traces', { log_stream_id: logStreamId });
      assert.ok(tr.has('num_spans'));
      assert.ok(tr.has('user_metadata/customer'));
      const sp = await cols('spans', { log_stream_id: logStreamId });
      assert.ok(sp.has('model'));
      assert.ok(!sp.has('user_metadata/customer'));
      // Another run sees none of these keys, and is_empty tells there are no records in it.
      const empty = await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: 'exp' });
      const e = await cols('sessions', { experiment_id: empty.body.id });
      assert.ok(!e.has('metrics/latency'));
      assert.equal(e.get('id').is_empty, true);
      // Errors.
      const bad = await s.call('POST', `/v2/projects/${projectId}/sessions/available_columns`, {
        log_stream_id: logStreamId,
        start_time: 'x',
      });
      assert.equal(bad.status, 422);
      assert.deepEqual(bad.body.detail[0].loc, ['body', 'start_time']);
      const reversed = await s.call('POST', `/v2/projects/${projectId}/sessions/available_columns`, {
        start_time: iso(T0 + 5 * S),
        end_time: iso(T0),
      });
      assert.equal(reversed.status, 422);
      const unknown = await s.call('POST', `/v2/projects/${projectId}/sessions/available_columns`, {
        log_stream_id: '00000000-0000-4000-8000-000000000000',
      });
      assert.equal(unknown.status, 404);
    });

    test('contains on input and output stays exact before, during and after text indexing', async () => {
      const { projectId: p2, logStreamId: ls2 } = await projectWithLogStream(s);
      const u2 = `/v2/projects/${p2}/traces/search`;
      const texts = [
        'The Quick Brown Fox',
        'quick silver',
        'slow brown dog',
        'ΟΔΥΣΣΕΥΣ',
        'naïve café',
        'a"b\'c%d_e\\f',
      ];
      const tids = texts.map(() => randomUUID());
      // Records written before and after, so that on SQLite the texts end up in full blocks of the
      // text index (not only among the newest records, which are checked directly).
      const filler = () =>
        ingestTraces(
          s,
          p2,
          ls2,
          Array.from({ length: 300 }, (_, i) => ({ name: `filler ${i}`, input: `nothing to see ${i}` })),
        );
      await filler();
      await ingestTraces(
        s,
        p2,
        ls2,
        texts.map((t, i) => ({
          id: tids[i],
          name: `s${i}`,
          input: t,
          output: t.split('').reverse().join(''),
        })),
      );
      const probe = async () => {
        const out: string[][] = [];
        for (const [value, cs, column] of [
          ['quick', true, 'input'],
          ['QUICK', false, 'input'],
          ['brown', false, 'input'],
          ['ΣΣΕ', true, 'input'],
          ['σσε', false, 'input'],
          ['café', true, 'input'],
          ['CAFÉ', false, 'input'],
          ['"b\'c%d_e\\', true, 'input'],
          ['kciuq', false, 'output'],
          ['xyz', false, 'input'],
        ] as [string, boolean, string][]) {
          const r = await s.call('POST', u2, {
            log_stream_id: ls2,
            filters: [{ column_id: column, operator: 'contains', value, case_sensitive: cs, type: 'text' }],
          });
          assert.equal(r.status, 200, r.text);
          out.push(r.body.records.map((x: any) => x.name).sort());
        }
        return out;
      };
      const expected = [
        ['s1'],
        ['s0', 's1'],
        ['s0', 's2'],
        ['s3'],
        ['s3'],
        ['s4'],
        ['s4'],
        ['s5'],
        ['s0', 's1'],
        [],
      ];
      await filler();
      const indexer = s.running.services.search.indexer;
      assert.deepEqual(await probe(), expected, 'before indexing');
      await indexer.drain();
      assert.equal(await indexer.pending(), 0);
      assert.deepEqual(await probe(), expected, 'after indexing');
      // Change a text: queued again; searches see the new text at once.
      const patch = await s.call('PATCH', `/v2/projects/${p2}/traces/${tids[0]}`, {
        log_stream_id: ls2,
        input: 'no longer quick',
      });
      assert.equal(patch.status, 200, patch.text);
      const r = await s.call('POST', u2, {
        log_stream_id: ls2,
        filters: [
          { column_id: 'input', operator: 'contains', value: 'brown', case_sensitive: false, type: 'text' },
        ],
      });
      assert.deepEqual(
        r.body.records.map((x: any) => x.name),
        ['s2'],
      );
      await indexer.drain();
      const r2 = await s.call('POST', u2, {
        log_stream_id: ls2,
        filters: [{ column_id: 'input', operator: 'contains', value: 'no longer', type: 'text' }],
      });
      assert.deepEqual(
        r2.body.records.map((x: any) => x.name),
        ['s0'],
      );
    });
  });
}
