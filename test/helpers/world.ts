/**
 * Known data for the reliability suites: a batch of records to ingest and read back, and a snapshot
 * of every stored row that belongs to a project (every table with a `project_id` column, found from
 * the database catalogue, so tables added later are covered too).
 */
import { type Operation, fillPath } from './openapi.ts';
import type { TestServer } from './server.ts';

export const INGEST_ROUTE = 'POST /v2/projects/{project_id}/traces';

/** Rows of every table with a `project_id` column, for one project, in a stable order. */
export async function dbSnapshot(
  s: TestServer,
  projectId: string,
  settle = false,
): Promise<Record<string, unknown[]>> {
  const take = () => snapshotOnce(s, projectId);
  if (!settle) return take();
  // Derived data may be written just after a write is acknowledged (search indexes): wait until
  // two reads agree.
  let prev = JSON.stringify(await take());
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 150));
    const cur = await take();
    const text = JSON.stringify(cur);
    if (text === prev) return cur;
    prev = text;
  }
  return JSON.parse(prev);
}

async function snapshotOnce(s: TestServer, projectId: string): Promise<Record<string, unknown[]>> {
  const store = s.running.services.store;
  const out: Record<string, unknown[]> = {};
  const norm = (row: Record<string, unknown>) => {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(row).sort()) {
      let v = row[k];
      if (typeof v === 'bigint') v = Number(v);
      if (v instanceof Date) v = v.toISOString();
      if (Buffer.isBuffer(v)) v = v.toString('base64');
      if (typeof v === 'string' && /^[[{]/.test(v)) {
        try {
          v = JSON.parse(v);
        } catch {}
      }
      o[k] = v;
    }
    return o;
  };
  const sortRows = (rows: Record<string, unknown>[]) =>
    rows.map(norm).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  if (store.sqlite) {
    const tables = store.sqlite
      .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")
      .all() as { name: string }[];
    for (const { name } of tables) {
      const cols = store.sqlite.prepare(`select name from pragma_table_info(?)`).all(name) as {
        name: string;
      }[];
      const key = cols.some((c) => c.name === 'project_id')
        ? 'project_id'
        : name === 'projects'
          ? 'id'
          : null;
      if (!key) continue;
      const rows = store.sqlite.prepare(`select * from "${name}" where "${key}" = ?`).all(projectId) as any[];
      out[name] = sortRows(rows);
    }
  } else {
    const pool = store.pool!;
    const { rows: tables } = await pool.query(
      `select table_name, bool_or(column_name = 'project_id') as has_project
         from information_schema.columns
        where table_schema = current_schema()
        group by table_name`,
    );
    for (const t of tables) {
      const key = t.has_project ? 'project_id' : t.table_name === 'projects' ? 'id' : null;
      if (!key) continue;
      const { rows } = await pool.query(`select * from "${t.table_name}" where "${key}" = $1`, [projectId]);
      out[t.table_name] = sortRows(rows);
    }
  }
  return out;
}

export interface KnownBatch {
  records: number;
  traceIds: string[];
  ids: Record<string, string[]>;
  body: any;
}

/** A batch with every span kind, metadata, tags, metrics and unicode; ids chosen here. */
export function knownBatch(logStreamId: string, n = 3, tag = 'known'): any {
  const traces = Array.from({ length: n }, (_, i) => {
    const traceId = crypto.randomUUID();
    const created = new Date(Date.UTC(2024, 0, 10 + i, 12, 0, 0)).toISOString();
    const llm = {
      type: 'llm',
      id: crypto.randomUUID(),
      name: `llm-${i}`,
      created_at: created,
      input: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: `question ${i} — ünïcödé 🙂 "quoted" 'single'` },
      ],
      output: { role: 'assistant', content: `answer ${i}` },
      model: 'gpt-test',
      metrics: {
        duration_ns: 1000 + i,
        num_input_tokens: 10 + i,
        num_output_tokens: 5,
        num_total_tokens: 15 + i,
      },
      user_metadata: { env: 'prod', "x') or 1=1 --": 'kept as data', i: String(i) },
      tags: [tag, `t${i}`],
    };
    const tool = {
      type: 'tool',
      id: crypto.randomUUID(),
      name: `tool-${i}`,
      created_at: created,
      input: '{"q": 1}',
      output: 'tool result',
      tool_call_id: `call_${i}`,
    };
    const retriever = {
      type: 'retriever',
      id: crypto.randomUUID(),
      name: `retriever-${i}`,
      created_at: created,
      input: 'find',
      output: [{ content: 'doc', metadata: { source: 'a' } }],
    };
    return {
      id: traceId,
      type: 'trace',
      name: `trace-${i}`,
      created_at: created,
      input: `trace input ${i}`,
      output: `trace output ${i}`,
      user_metadata: { batch: tag, '$.a"]': 'v' },
      tags: [tag],
      spans: [
        {
          type: 'workflow',
          id: crypto.randomUUID(),
          name: `workflow-${i}`,
          created_at: created,
          input: 'wf in',
          output: 'wf out',
          spans: [llm, tool],
        },
        retriever,
      ],
    };
  });
  return { log_stream_id: logStreamId, traces, is_complete: true };
}

function idsOf(body: any): Record<string, string[]> {
  const out: Record<string, string[]> = { trace_id: [], span_id: [] };
  const walk = (spans: any[]) => {
    for (const sp of spans ?? []) {
      out.span_id.push(sp.id);
      walk(sp.spans);
    }
  };
  for (const t of body.traces) {
    out.trace_id.push(t.id);
    walk(t.spans);
  }
  return out;
}

/** Ingests a known batch when the ingestion route exists; null before it does. */
export async function ingestKnownBatch(
  s: TestServer,
  ops: Operation[],
  projectId: string,
  logStreamId: string,
  key = s.adminKey,
): Promise<KnownBatch | null> {
  if (!ops.some((o) => o.key === INGEST_ROUTE)) return null;
  const body = knownBatch(logStreamId);
  const r = await s.call(
    'POST',
    fillPath('/v2/projects/{project_id}/traces', { project_id: projectId }),
    body,
    key,
  );
  if (r.status !== 200) throw new Error(`ingest failed: ${r.status} ${r.text}`);
  const ids = idsOf(body);
  if (typeof r.body.session_id === 'string') ids.session_id = [r.body.session_id];
  return {
    records: ids.trace_id.length + ids.span_id.length,
    traceIds: ids.trace_id,
    ids,
    body,
  };
}

/** Every record of a log stream as the search routes return it (those that exist), sorted by id. */
export async function readBackBatch(
  s: TestServer,
  ops: Operation[],
  projectId: string,
  logStreamId: string,
): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const kind of ['traces', 'spans', 'sessions']) {
    const path = `/v2/projects/{project_id}/${kind}/search`;
    if (!ops.some((o) => o.key === `POST ${path}`)) continue;
    const rows: any[] = [];
    let start = 0;
    for (let page = 0; page < 100; page++) {
      const r = await s.call('POST', fillPath(path, { project_id: projectId }), {
        log_stream_id: logStreamId,
        pagination: { starting_token: start, limit: 500 },
      });
      if (r.status !== 200) throw new Error(`${kind} search failed: ${r.status} ${r.text}`);
      rows.push(...r.body.records);
      if (r.body.next_starting_token === null || r.body.next_starting_token === undefined) break;
      start = r.body.next_starting_token;
    }
    out[kind] = rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  }
  return out;
}

/**
 * Furnishes a project with one of everything the served routes can make (a session, records, a
 * default and a further dashboard with a widget and a section, a Signals configuration, and, when
 * asked, the caller's gateway integration shared with a user and a group), and returns the ids by
 * the names path parameters and body fields use. Routes not served yet are skipped.
 */
export async function furnish(
  s: TestServer,
  ops: Operation[],
  projectId: string,
  opts: { integration?: boolean; userId?: string; groupId?: string; key?: string } = {},
): Promise<{ ctx: Record<string, string>; batch: KnownBatch | null }> {
  const key = opts.key ?? s.adminKey;
  const has = (k: string) => ops.some((o) => o.key === k);
  const ok = async (method: string, url: string, body?: unknown) => {
    const r = await s.call(method, url, body, key);
    if (r.status >= 300) throw new Error(`furnish: ${method} ${url} → ${r.status} ${r.text}`);
    return r.body;
  };
  const p = `/v2/projects/${projectId}`;
  const ls = await ok('POST', `${p}/log_streams`, { name: `ls-${crypto.randomUUID().slice(0, 8)}` });
  const ex = await ok('POST', `${p}/experiments`, { name: `ex-${crypto.randomUUID().slice(0, 8)}` });
  const ctx: Record<string, string> = {
    project_id: projectId,
    log_stream_id: ls.id,
    run_id: ls.id,
    experiment_id: ex.id,
  };
  if (opts.userId) ctx.user_id = opts.userId;
  if (opts.groupId) ctx.group_id = opts.groupId;
  if (has('POST /v2/projects/{project_id}/sessions')) {
    ctx.session_id = (await ok('POST', `${p}/sessions`, { log_stream_id: ls.id, name: 'furnished' })).id;
  }
  let batch: KnownBatch | null = null;
  if (has(INGEST_ROUTE)) {
    const body = { ...knownBatch(ls.id), ...(ctx.session_id ? { session_id: ctx.session_id } : {}) };
    const r = await ok('POST', `${p}/traces`, body);
    const ids = idsOf(body);
    if (typeof r.session_id === 'string') ids.session_id = [r.session_id];
    batch = { records: ids.trace_id.length + ids.span_id.length, traceIds: ids.trace_id, ids, body };
    ctx.trace_id = ids.trace_id[0];
    ctx.span_id = ids.span_id[0];
  }
  const trends = `${p}/log_streams/${ls.id}/trends`;
  if (has('PUT /v2/projects/{project_id}/log_streams/{log_stream_id}/trends')) {
    const d = await ok('PUT', trends, { name: 'furnished default' });
    ctx.trends_dashboard_id = d.id;
    ctx.dashboard_id = d.id;
  }
  if (has('POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends')) {
    const d = await ok('POST', trends, { name: 'furnished', relative_time: 'last_7_days' });
    ctx.dashboard_id = d.id;
    const base = `${trends}/${d.id}`;
    if (has('POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/sections')) {
      const sec = await ok('POST', `${base}/sections`, { name: 'section' });
      ctx.section_id = sec.id ?? sec.sections?.[0]?.id;
    }
    if (has('POST /v2/projects/{project_id}/log_streams/{log_stream_id}/trends/{dashboard_id}/widgets')) {
      const w = await ok('POST', `${base}/widgets`, {
        name: 'widget',
        type: 'line_chart',
        metric: 'metrics/duration_ns',
        aggregation: 'Average',
      });
      ctx.widget_id = w.id ?? w.widgets?.[0]?.id;
    }
  }
  if (has('PUT /v2/projects/{project_id}/runs/{run_id}/signals/configuration')) {
    await ok('PUT', `${p}/runs/${ls.id}/signals/configuration`, { model: 'gpt-4o', run_mode: 'ON_DEMAND' });
  }
  if (opts.integration && has('PUT /v2/integrations/example_gateway')) {
    const i = await ok('PUT', '/v2/integrations/example_gateway', {
      endpoint: 'https://gateway.example.com/v1',
      use_case: 'chat',
      token: `furnished-${crypto.randomUUID()}`,
    });
    ctx.integration_id = i.id;
    if (opts.userId && has('POST /v2/integrations/{integration_id}/users'))
      await ok('POST', `/v2/integrations/${i.id}/users`, [{ user_id: opts.userId, role: 'viewer' }]);
    if (opts.groupId && has('POST /v2/integrations/{integration_id}/groups'))
      await ok('POST', `/v2/integrations/${i.id}/groups`, [{ group_id: opts.groupId, role: 'viewer' }]);
  }
  return { ctx, batch };
}
