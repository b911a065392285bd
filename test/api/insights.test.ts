import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const DAY_US = 86_400_000_000;
/** 2025-01-01T00:00:00Z in microseconds. */
const D0 = Date.UTC(2025, 0, 1) * 1000;

for (const store of storesUnderTest()) {
  describe(`token-usage insights [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    let url: string;
    const days: { id: string; day: number; updated: number; input: number }[] = [];

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
      url = `/v2/projects/${projectId}/log_streams/${logStreamId}/logstream_insights/token_usage`;
      const other = await s.call('POST', `/v2/projects/${projectId}/log_streams`, { name: 'other' });
      const db = s.running.services.store.db;
      // Five days of this log stream (updated at different times, not in day order), one of another.
      for (let i = 0; i < 5; i++) {
        const row = {
          id: randomUUID(),
          day: D0 + i * DAY_US,
          updated: D0 + i * DAY_US + ((i * 7) % 5) * 3_600_000_000,
          input: 100 + i,
        };
        days.push(row);
        await db
          .insertInto('token_usage')
          .values({
            id: row.id,
            project_id: projectId,
            log_stream_id: logStreamId,
            day: row.day,
            input_tokens: row.input,
            output_tokens: 10 * i,
            cache_read_input_tokens: i,
            cache_creation_input_tokens: 2 * i,
            created_at: row.day,
            updated_at: row.updated,
          })
          .execute();
      }
      await db
        .insertInto('token_usage')
        .values({
          id: randomUUID(),
          project_id: projectId,
          log_stream_id: other.body.id,
          day: D0,
          input_tokens: 1,
          output_tokens: 1,
          cache_read_input_tokens: 1,
          cache_creation_input_tokens: 1,
          created_at: D0,
          updated_at: D0,
        })
        .execute();
    });
    after(() => s.close());

    const iso = (us: number) => new Date(us / 1000).toISOString();
    const ids = (r: { body: any }) => r.body.token_usages.map((t: any) => t.id);

    test('an absent body lists every day, newest first, with the page envelope', async () => {
      for (const body of [undefined, null, {}]) {
        const r = await s.call('POST', url, body === null ? 'null' : body);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(
          ids(r),
          [...days].reverse().map((d) => d.id),
        );
        assert.equal(r.body.starting_token, 0);
        assert.equal(r.body.limit, 100);
        assert.equal(r.body.paginated, false);
        assert.equal(r.body.next_starting_token, null);
      }
      const r = await s.call('POST', url);
      const first = r.body.token_usages[0];
      assert.deepEqual(first, {
        id: days[4].id,
        project_id: projectId,
        log_stream_id: logStreamId,
        created_at: iso(days[4].day),
        updated_at: iso(days[4].updated),
        token_usage: {
          input_tokens: 104,
          output_tokens: 40,
          cache_read_input_tokens: 4,
          cache_creation_input_tokens: 8,
        },
        cost: null,
      });
      assert.match(first.created_at, /T00:00:00(\.000)?Z$/);
    });

    test('sort by created_at, ascending by default when given', async () => {
      assert.deepEqual(
        ids(await s.call('POST', url, { sort: { name: 'created_at' } })),
        days.map((d) => d.id),
      );
      assert.deepEqual(
        ids(
          await s.call('POST', url, { sort: { name: 'created_at', ascending: false, sort_type: 'column' } }),
        ),
        [...days].reverse().map((d) => d.id),
      );
      assert.deepEqual(
        ids(await s.call('POST', url, { sort: null })),
        [...days].reverse().map((d) => d.id),
      );
    });

    test('pages: limit and starting_token; an exactly full last page has no next token', async () => {
      const p1 = await s.call('POST', url, { limit: 2, sort: { name: 'created_at', ascending: true } });
      assert.deepEqual(ids(p1), [days[0].id, days[1].id]);
      assert.equal(p1.body.paginated, true);
      assert.equal(p1.body.next_starting_token, 2);
      const p3 = await s.call('POST', url, {
        limit: 2,
        starting_token: 4,
        sort: { name: 'created_at', ascending: true },
      });
      assert.deepEqual(ids(p3), [days[4].id]);
      assert.equal(p3.body.next_starting_token, null);
      const exact = await s.call('POST', url, { limit: 5 });
      assert.equal(exact.body.token_usages.length, 5);
      assert.equal(exact.body.paginated, false);
      assert.equal(exact.body.next_starting_token, null);
      const beyond = await s.call('POST', url, { starting_token: 50 });
      assert.deepEqual(ids(beyond), []);
    });

    test('created_at and updated_at filters, every operator, combined with AND', async () => {
      const ops: Record<string, (a: number, b: number) => boolean> = {
        eq: (a, b) => a === b,
        ne: (a, b) => a !== b,
        gt: (a, b) => a > b,
        gte: (a, b) => a >= b,
        lt: (a, b) => a < b,
        lte: (a, b) => a <= b,
      };
      for (const [op, f] of Object.entries(ops)) {
        const at = days[2].day;
        const r = await s.call('POST', url, {
          filters: [{ name: 'created_at', operator: op, value: iso(at) }],
          sort: { name: 'created_at' },
        });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(
          ids(r),
          days.filter((d) => f(d.day, at)).map((d) => d.id),
          `created_at ${op}`,
        );
        const u = days[3].updated;
        const r2 = await s.call('POST', url, {
          filters: [{ name: 'updated_at', operator: op, value: iso(u) }],
          sort: { name: 'created_at' },
        });
        assert.deepEqual(
          ids(r2),
          days.filter((d) => f(d.updated, u)).map((d) => d.id),
          `updated_at ${op}`,
        );
      }
      const both = await s.call('POST', url, {
        filters: [
          { name: 'created_at', operator: 'gte', value: iso(days[1].day) },
          { name: 'created_at', operator: 'lt', value: '2025-01-04T00:00:00+00:00' },
        ],
        sort: { name: 'created_at' },
      });
      assert.deepEqual(ids(both), [days[1].id, days[2].id]);
      // An offset and no offset (UTC) mean the same instant.
      const offset = await s.call('POST', url, {
        filters: [{ name: 'created_at', operator: 'eq', value: '2025-01-02T02:00:00+02:00' }],
      });
      assert.deepEqual(ids(offset), [days[1].id]);
    });

    test('bad bodies answer 422 with the exact loc', async () => {
      const cases: [unknown, unknown[], string][] = [
        [{ limit: 0 }, ['body', 'limit'], 'greater_than_equal'],
        [{ limit: 1001 }, ['body', 'limit'], 'less_than_equal'],
        [{ limit: 'ten' }, ['body', 'limit'], 'int_type'],
        [{ starting_token: -1 }, ['body', 'starting_token'], 'greater_than_equal'],
        [
          { filters: [{ name: 'created_at', operator: 'eq', value: 'yesterday' }] },
          ['body', 'filters', 0, 'value'],
          'datetime_parsing',
        ],
        [
          { filters: [{ name: 'created_at', operator: 'eq', value: '2025-02-30T00:00:00Z' }] },
          ['body', 'filters', 0, 'value'],
          'datetime_parsing',
        ],
        [
          { filters: [{ name: 'created_at', operator: 'contains', value: '2025-01-01T00:00:00Z' }] },
          ['body', 'filters', 0, 'operator'],
          'enum',
        ],
        [
          { filters: [{ name: 'updated_at', value: '2025-01-01T00:00:00Z' }] },
          ['body', 'filters', 0, 'operator'],
          'missing',
        ],
        [
          { filters: [{ name: 'input_tokens', operator: 'eq', value: '2025-01-01T00:00:00Z' }] },
          ['body', 'filters', 0],
          'union_tag_invalid',
        ],
        [{ filters: {} }, ['body', 'filters'], 'list_type'],
        [{ sort: { name: 'updated_at' } }, ['body', 'sort', 'name'], 'literal_error'],
        [{ sort: { name: 'created_at', ascending: 'yes' } }, ['body', 'sort', 'ascending'], 'bool_type'],
        [[], ['body'], 'dict_type'],
      ];
      for (const [body, loc, type] of cases) {
        const r = await s.call('POST', url, body);
        assert.equal(r.status, 422, `${JSON.stringify(body)}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, loc, JSON.stringify(body));
        assert.equal(r.body.detail[0].type, type, JSON.stringify(body));
      }
      const r = await s.call('POST', url, '{"limit": ');
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'json_invalid');
    });

    test('access: 401, 404 for strangers, unknown and experiment runs; viewers read', async () => {
      assert.equal((await s.call('POST', url, {}, null)).status, 401);
      const stranger = await s.user();
      assert.equal((await s.call('POST', url, {}, stranger.key)).status, 404);
      const viewer = await s.user();
      await s.call('POST', `/v2/projects/${projectId}/collaborators`, { user_id: viewer.id, role: 'viewer' });
      const r = await s.call('POST', url, {}, viewer.key);
      assert.equal(r.status, 200);
      assert.equal(r.body.token_usages.length, 5);
      const unknown = `/v2/projects/${projectId}/log_streams/${randomUUID()}/logstream_insights/token_usage`;
      assert.equal((await s.call('POST', unknown, {})).status, 404);
      const ex = await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: 'exp' });
      const exUrl = `/v2/projects/${projectId}/log_streams/${ex.body.id}/logstream_insights/token_usage`;
      assert.equal((await s.call('POST', exUrl, {})).status, 404);
      const badPath = await s.call(
        'POST',
        `/v2/projects/${projectId}/log_streams/nope/logstream_insights/token_usage`,
        {},
      );
      assert.equal(badPath.status, 422);
      assert.deepEqual(badPath.body.detail[0].loc, ['path', 'log_stream_id']);
    });
  });
}
