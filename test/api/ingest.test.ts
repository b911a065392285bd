import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_SPAN_DEPTH } from '../../src/domain/ingest.ts';
import { projectWithLogStream } from '../helpers/fixtures.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

const uuid = () => crypto.randomUUID();
const day = (d: number, h = 12) => new Date(Date.UTC(2024, 4, d, h)).toISOString();

/** A trace with one span of every kind (7), nested under a workflow and an agent. */
function fullTrace(
  opts: { id?: string; created?: string; tokens?: [number, number]; out?: string } = {},
): any {
  const created = opts.created ?? day(1);
  const [inTok, outTok] = opts.tokens ?? [10, 5];
  return {
    id: opts.id ?? uuid(),
    name: 'chat',
    input: 'question?',
    output: opts.out ?? 'answer.',
    created_at: created,
    user_metadata: { customer: 'acme', attempt: 2 },
    dataset_metadata: { split: 'test' },
    tags: ['beta'],
    metrics: { duration_ns: 2_000_000 },
    spans: [
      {
        type: 'agent',
        id: uuid(),
        name: 'planner',
        agent_type: 'planner',
        input: [{ role: 'user', content: 'plan it' }],
        output: 'plan',
        spans: [
          {
            type: 'workflow',
            id: uuid(),
            name: 'wf',
            input: 'wf in',
            spans: [
              {
                type: 'llm',
                id: uuid(),
                name: 'gen',
                model: 'gpt-x',
                temperature: 0.2,
                finish_reason: 'stop',
                tools: [{ type: 'function', function: { name: 'f' } }],
                input: [
                  { role: 'system', content: 'be brief' },
                  { role: 'user', content: 'hello' },
                ],
                output: {
                  role: 'assistant',
                  content: 'hi there',
                  tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{}' } }],
                },
                metrics: {
                  num_input_tokens: inTok,
                  num_output_tokens: outTok,
                  num_cache_read_input_tokens: 2,
                  time_to_first_token_ns: 1000,
                  latency_score: 0.5,
                },
                user_metadata: { prompt: 'v1' },
              },
              {
                type: 'tool',
                id: uuid(),
                name: 'lookup',
                tool_call_id: 'c1',
                input: '{"q":1}',
                output: 'found',
              },
              {
                type: 'retriever',
                id: uuid(),
                name: 'search',
                input: 'query',
                output: [
                  { content: 'doc one', metadata: { source: 'kb', score: 0.9 } },
                  { page_content: 'doc two' },
                ],
              },
            ],
          },
        ],
      },
      { type: 'control', id: uuid(), name: 'guard', input: 'check', output: 'ok' },
      { type: 'http', id: uuid(), name: 'GET /x', input: 'GET /x', output: '200', status_code: 200 },
    ],
  };
}

const SPANS_PER_FULL_TRACE = 7;

function find(node: any, type: string): any {
  if (node.type === type) return node;
  for (const c of node.spans ?? []) {
    const f = find(c, type);
    if (f) return f;
  }
  return null;
}

for (const store of storesUnderTest()) {
  describe(`ingestion [${store}]`, () => {
    let s: TestServer;
    let projectId: string;
    let logStreamId: string;
    const db = () => s.running.services.store.db;
    const post = (path: string, body: unknown, auth?: string | null) =>
      s.call('POST', `/v2/projects/${projectId}${path}`, body, auth);
    const counts = async (id = logStreamId, pid = projectId) => {
      const r = await s.call('GET', `/v2/projects/${pid}/log_streams/${id}`);
      return { traces: r.body.num_traces, spans: r.body.num_spans };
    };
    const recordCount = async () =>
      Number(
        (
          await db()
            .selectFrom('records')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      s = await startTestServer(store);
      ({ projectId, logStreamId } = await projectWithLogStream(s));
    });
    after(() => s.close());

    test('a batch of traces with spans of every kind is stored and read back as a tree', async () => {
      const t = fullTrace();
      const r = await post('/traces', {
        log_stream_id: logStreamId,
        traces: [t],
        include_trace_ids: true,
        // Extra fields the hosted clients send are ignored.
        logging_method: 'typescript_client',
        client_version: '1.0',
        reliable: true,
        experiment_id: null,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.project_id, projectId);
      assert.equal(typeof r.body.project_name, 'string');
      assert.equal(r.body.log_stream_id, logStreamId);
      assert.equal(r.body.experiment_id, null);
      assert.match(r.body.session_id, /^[0-9a-f-]{36}$/);
      assert.equal(r.body.records_count, 1 + SPANS_PER_FULL_TRACE);
      assert.equal(r.body.traces_count, 1);
      assert.equal(r.body.spans_count, SPANS_PER_FULL_TRACE);
      assert.deepEqual(r.body.trace_ids, [t.id]);

      const g = await s.call('GET', `/v2/projects/${projectId}/traces/${t.id}`);
      assert.equal(g.status, 200, g.text);
      const tr = g.body;
      assert.equal(tr.type, 'trace');
      assert.equal(tr.id, t.id);
      assert.equal(tr.trace_id, t.id);
      assert.equal(tr.parent_id, null);
      assert.equal(tr.session_id, r.body.session_id);
      assert.equal(tr.run_id, logStreamId);
      assert.equal(tr.project_id, projectId);
      assert.equal(tr.created_at, '2024-05-01T12:00:00.000Z');
      assert.match(tr.updated_at, /Z$/);
      assert.equal(tr.input, 'question?');
      assert.equal(tr.output, 'answer.');
      assert.equal(tr.is_complete, true);
      assert.deepEqual(tr.tags, ['beta']);
      assert.deepEqual(tr.user_metadata, { customer: 'acme', attempt: 2 });
      assert.deepEqual(tr.dataset_metadata, { split: 'test' });
      assert.equal(tr.num_spans, SPANS_PER_FULL_TRACE);
      assert.equal(tr.has_children, true);
      // Trace token metrics are the sums over its llm spans; its own duration is kept.
      assert.deepEqual(tr.metrics, {
        duration_ns: 2_000_000,
        num_input_tokens: 10,
        num_output_tokens: 5,
        num_total_tokens: 15,
        num_cache_read_input_tokens: 2,
      });
      assert.deepEqual(
        tr.spans.map((x: any) => x.type),
        ['agent', 'control', 'http'],
      );
      const agent = tr.spans[0];
      assert.equal(agent.agent_type, 'planner');
      assert.deepEqual(agent.input, [{ role: 'user', content: 'plan it' }]);
      assert.equal(agent.parent_id, t.id);
      const wf = agent.spans[0];
      assert.equal(wf.parent_id, agent.id);
      assert.deepEqual(
        wf.spans.map((x: any) => x.type),
        ['llm', 'tool', 'retriever'],
      );
      const llm = find(tr, 'llm');
      assert.equal(llm.parent_id, wf.id);
      assert.equal(llm.trace_id, t.id);
      assert.equal(llm.session_id, r.body.session_id);
      assert.equal(llm.model, 'gpt-x');
      assert.equal(llm.temperature, 0.2);
      assert.equal(llm.finish_reason, 'stop');
      assert.deepEqual(llm.tools, [{ type: 'function', function: { name: 'f' } }]);
      assert.deepEqual(llm.input, t.spans[0].spans[0].spans[0].input);
      assert.deepEqual(llm.output, t.spans[0].spans[0].spans[0].output);
      assert.deepEqual(llm.metrics, {
        num_input_tokens: 10,
        num_output_tokens: 5,
        num_total_tokens: 15,
        num_cache_read_input_tokens: 2,
        time_to_first_token_ns: 1000,
        latency_score: 0.5,
      });
      assert.equal(find(tr, 'tool').tool_call_id, 'c1');
      assert.deepEqual(find(tr, 'retriever').output, [
        { page_content: 'doc one', metadata: { source: 'kb', score: 0.9 } },
        { page_content: 'doc two', metadata: {} },
      ]);
      assert.equal(find(tr, 'http').status_code, 200);
      for (const key of ['annotations', 'feedback_rating_info']) assert.deepEqual(tr[key], {});
      for (const key of ['file_ids', 'file_modalities', 'annotation_queue_ids'])
        assert.deepEqual(tr[key], []);

      const sp = await s.call('GET', `/v2/projects/${projectId}/spans/${llm.id}`);
      assert.equal(sp.status, 200, sp.text);
      assert.equal(sp.body.id, llm.id);
      assert.equal(sp.body.model, 'gpt-x');
      assert.deepEqual(sp.body.output, llm.output);

      const ss = await s.call('GET', `/v2/projects/${projectId}/sessions/${r.body.session_id}`);
      assert.equal(ss.status, 200, ss.text);
      assert.equal(ss.body.type, 'session');
      assert.equal(ss.body.num_traces, 1);
      assert.deepEqual(
        ss.body.traces.map((x: any) => x.id),
        [t.id],
      );

      // A trace is not a span and a span is not a trace.
      assert.equal((await s.call('GET', `/v2/projects/${projectId}/spans/${t.id}`)).status, 404);
      assert.equal((await s.call('GET', `/v2/projects/${projectId}/traces/${llm.id}`)).status, 404);
      assert.equal((await s.call('GET', `/v2/projects/${projectId}/sessions/${t.id}`)).status, 404);
      assert.equal((await s.call('GET', `/v2/projects/${projectId}/traces/${uuid()}`)).status, 404);
    });

    test('the target run: exactly one of log_stream_id and experiment_id; unknown is 404', async () => {
      const exp = await s.call('POST', `/v2/projects/${projectId}/experiments`, { name: `e-${uuid()}` });
      assert.equal(exp.status, 200, exp.text);
      const t = fullTrace();
      let r = await post('/traces', { experiment_id: exp.body.id, traces: [t] });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.experiment_id, exp.body.id);
      assert.equal(r.body.log_stream_id, null);
      assert.equal(
        (await s.call('GET', `/v2/projects/${projectId}/traces/${t.id}`)).body.run_id,
        exp.body.id,
      );

      r = await post('/traces', {
        log_stream_id: logStreamId,
        experiment_id: exp.body.id,
        traces: [fullTrace()],
      });
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'value_error');
      r = await post('/traces', { traces: [fullTrace()] });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body']);
      r = await post('/traces', { log_stream_id: uuid(), traces: [fullTrace()] });
      assert.equal(r.status, 404);
      assert.match(r.body.detail, /Log stream not found/);
      r = await post('/traces', { experiment_id: uuid(), traces: [fullTrace()] });
      assert.equal(r.status, 404);
      // A log stream id is not an experiment id.
      r = await post('/traces', { experiment_id: logStreamId, traces: [fullTrace()] });
      assert.equal(r.status, 404);
      // A run of another project is unknown here.
      const other = await projectWithLogStream(s);
      r = await post('/traces', { log_stream_id: other.logStreamId, traces: [fullTrace()] });
      assert.equal(r.status, 404);
      // Path parameters repeated in the query string, and the target given there, are accepted.
      r = await s.call(
        'POST',
        `/v2/projects/${projectId}/traces?project_id=${projectId}&log_stream_id=${logStreamId}`,
        {
          traces: [fullTrace()],
        },
      );
      assert.equal(r.status, 200, r.text);
    });

    test('re-sending a batch adds nothing and counts nothing twice; changes win field by field', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const body = { log_stream_id: ls, traces: [fullTrace(), fullTrace({ created: day(2) })] };
      const first = await s.call('POST', `/v2/projects/${pid}/traces`, body);
      assert.equal(first.status, 200, first.text);
      const sid = first.body.session_id;
      const before = await s.call('GET', `/v2/projects/${pid}/sessions/${sid}`);
      const stored = async () =>
        Number(
          (
            await db()
              .selectFrom('records')
              .where('project_id', '=', pid)
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const n = await stored();
      assert.equal(n, 2 * 8 + 1);
      const usage = () =>
        db()
          .selectFrom('token_usage')
          .select(['day', 'input_tokens', 'output_tokens', 'cache_read_input_tokens', 'id'])
          .where('log_stream_id', '=', ls)
          .orderBy('day')
          .execute();
      const usageBefore = await usage();

      for (let i = 0; i < 2; i++) {
        const again = await s.call('POST', `/v2/projects/${pid}/traces`, body);
        assert.equal(again.status, 200, again.text);
        assert.equal(again.body.session_id, sid, 'an existing trace keeps its session');
      }
      assert.equal(await stored(), n);
      const lsr = await s.call('GET', `/v2/projects/${pid}/log_streams/${ls}`);
      assert.equal(lsr.body.num_traces, 2);
      assert.equal(lsr.body.num_spans, 2 * SPANS_PER_FULL_TRACE);
      const after = await s.call('GET', `/v2/projects/${pid}/sessions/${sid}`);
      assert.equal(after.body.num_traces, 2);
      assert.deepEqual(after.body.metrics, before.body.metrics);
      assert.deepEqual(await usage(), usageBefore);

      // Last write wins, field by field; created_at and ids never change.
      const t = structuredClone(body.traces[0]);
      t.output = 'changed output';
      t.created_at = day(20);
      (t.spans[0].spans[0].spans[0] as any).metrics = { num_input_tokens: 100 };
      delete (t as any).tags;
      const changed = await s.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [t] });
      assert.equal(changed.status, 200, changed.text);
      const tr = (await s.call('GET', `/v2/projects/${pid}/traces/${t.id}`)).body;
      assert.equal(tr.output, 'changed output');
      assert.equal(tr.created_at, body.traces[0].created_at);
      assert.deepEqual(tr.tags, ['beta'], 'a field left out keeps its value');
      const llm = find(tr, 'llm');
      assert.equal(llm.metrics.num_input_tokens, 100);
      assert.equal(llm.metrics.num_output_tokens, 5, 'metrics merge key by key');
      assert.equal(llm.model, 'gpt-x');
      assert.equal(tr.metrics.num_input_tokens, 100, 'the trace sum follows its llm span');
      const sess = (await s.call('GET', `/v2/projects/${pid}/sessions/${sid}`)).body;
      assert.equal(sess.metrics.num_input_tokens, 110);
      assert.equal(sess.num_traces, 2);
      const u = await usage();
      assert.equal(u.length, 2);
      assert.equal(Number(u[0].input_tokens), 100);
      assert.equal(u[0].id, usageBefore[0].id, 'a token-usage record keeps its id');
      assert.equal((await s.call('GET', `/v2/projects/${pid}/log_streams/${ls}`)).body.num_spans, 14);
    });

    test('sessions: aggregates, session_id, session_external_id, POST /sessions', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const created = await s.call('POST', `/v2/projects/${pid}/sessions`, {
        log_stream_id: ls,
        name: 'conv',
        external_id: 'ext-1',
        previous_session_id: null,
        user_metadata: { user: 'u1' },
      });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.name, 'conv');
      assert.equal(created.body.external_id, 'ext-1');
      assert.equal(created.body.project_id, pid);
      const sid = created.body.id;
      // The same external id names the same session.
      const again = await s.call('POST', `/v2/projects/${pid}/sessions`, {
        log_stream_id: ls,
        external_id: 'ext-1',
      });
      assert.equal(again.body.id, sid);
      assert.equal(
        (await s.call('GET', `/v2/projects/${pid}/log_streams/${ls}`)).body.has_user_created_sessions,
        true,
      );

      const t2 = fullTrace({ created: '2024-05-01T12:00:10Z', tokens: [20, 7], out: 'second' });
      const t1 = fullTrace({ created: '2024-05-01T12:00:00Z', tokens: [10, 5], out: 'first' });
      t1.input = 'first input';
      (t2.metrics as any).duration_ns = 3_000_000_000;
      let r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        session_id: sid,
        traces: [t2],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.session_id, sid);
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        session_external_id: 'ext-1',
        traces: [t1],
      });
      assert.equal(r.body.session_id, sid);
      const sess = (await s.call('GET', `/v2/projects/${pid}/sessions/${sid}`)).body;
      assert.equal(sess.name, 'conv');
      assert.equal(sess.external_id, 'ext-1');
      assert.equal(sess.previous_session_id, null);
      assert.deepEqual(sess.user_metadata, { user: 'u1' }, 'trace metadata is not merged');
      assert.equal(sess.num_traces, 2);
      assert.equal(sess.input, 'first input', 'input of the first trace');
      assert.equal(sess.output, 'second', 'output of the last trace');
      assert.equal(sess.metrics.duration_ns, 13_000_000_000, 'first start to last end');
      assert.equal(sess.metrics.num_input_tokens, 30);
      assert.equal(sess.metrics.num_output_tokens, 12);
      assert.equal(sess.metrics.num_total_tokens, 42);
      assert.deepEqual(
        sess.traces.map((t: any) => t.id),
        [t1.id, t2.id],
      );

      // A new external id creates its session on first use, then reuses it.
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        session_external_id: 'ext-2',
        traces: [fullTrace()],
      });
      const s2 = r.body.session_id;
      assert.notEqual(s2, sid);
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        session_external_id: 'ext-2',
        traces: [fullTrace()],
      });
      assert.equal(r.body.session_id, s2);
      assert.equal((await s.call('GET', `/v2/projects/${pid}/sessions/${s2}`)).body.external_id, 'ext-2');
      assert.equal((await s.call('GET', `/v2/projects/${pid}/sessions/${s2}`)).body.num_traces, 2);

      // A trace-level session id wins over the request's.
      const t3 = { ...fullTrace(), session_id: sid };
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        session_id: s2,
        traces: [t3],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', `/v2/projects/${pid}/traces/${t3.id}`)).body.session_id, sid);

      // An unknown session id is 404, and nothing of the batch is stored.
      const before = await recordCount();
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        session_id: uuid(),
        traces: [fullTrace()],
      });
      assert.equal(r.status, 404);
      assert.match(r.body.detail, /Session not found/);
      assert.equal(await recordCount(), before);
      // A session of another log stream is unknown here.
      const other = await s.call('POST', `/v2/projects/${pid}/log_streams`, { name: `o-${uuid()}` });
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: other.body.id,
        session_id: sid,
        traces: [fullTrace()],
      });
      assert.equal(r.status, 404);
      // Traces without a session get one per request.
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        traces: [fullTrace(), fullTrace()],
      });
      const auto = (await s.call('GET', `/v2/projects/${pid}/sessions/${r.body.session_id}`)).body;
      assert.equal(auto.num_traces, 2);
      assert.equal(auto.external_id, null);
    });

    test('POST /spans adds spans to a stored trace; PATCH updates traces and spans', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const t = fullTrace({ created: day(3) });
      const first = await s.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [t] });
      const wfId = t.spans[0].spans[0].id;
      const added = {
        type: 'llm',
        id: uuid(),
        input: 'more',
        output: 'out',
        metrics: { num_input_tokens: 7, num_output_tokens: 1 },
      };
      let r = await s.call('POST', `/v2/projects/${pid}/spans`, {
        log_stream_id: ls,
        trace_id: t.id,
        parent_id: wfId,
        spans: [{ ...added, spans: [{ type: 'tool', input: 'deep' }] }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        { ...r.body, project_name: undefined },
        {
          project_id: pid,
          project_name: undefined,
          log_stream_id: ls,
          experiment_id: null,
          metrics_testing_id: null,
          session_id: first.body.session_id,
          records_count: 2,
          trace_id: t.id,
          parent_id: wfId,
        },
      );
      let tr = (await s.call('GET', `/v2/projects/${pid}/traces/${t.id}`)).body;
      assert.equal(tr.num_spans, SPANS_PER_FULL_TRACE + 2);
      assert.equal(tr.metrics.num_input_tokens, 17);
      const wf = tr.spans[0].spans[0];
      assert.equal(wf.spans.length, 4);
      const newLlm = wf.spans.find((x: any) => x.id === added.id);
      assert.equal(newLlm.created_at, newLlm.created_at);
      assert.equal(newLlm.spans[0].type, 'tool');
      assert.equal(newLlm.session_id, first.body.session_id);
      assert.equal(
        (await s.call('GET', `/v2/projects/${pid}/log_streams/${ls}`)).body.num_spans,
        SPANS_PER_FULL_TRACE + 2,
      );
      const sess = (await s.call('GET', `/v2/projects/${pid}/sessions/${first.body.session_id}`)).body;
      assert.equal(sess.metrics.num_input_tokens, 17);

      // Unknown trace: 404. A parent that is a record of another trace: 422 at parent_id.
      r = await s.call('POST', `/v2/projects/${pid}/spans`, {
        log_stream_id: ls,
        trace_id: uuid(),
        parent_id: wfId,
        spans: [added],
      });
      assert.equal(r.status, 404);
      const other = fullTrace();
      await s.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [other] });
      r = await s.call('POST', `/v2/projects/${pid}/spans`, {
        log_stream_id: ls,
        trace_id: t.id,
        parent_id: other.spans[0].id,
        spans: [{ type: 'tool', input: 'x' }],
      });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'parent_id']);

      // A parent that has not arrived yet (streaming clients, OpenTelemetry): kept, counted when it lands.
      const lateParent = uuid();
      const early = uuid();
      r = await s.call('POST', `/v2/projects/${pid}/spans`, {
        log_stream_id: ls,
        trace_id: t.id,
        parent_id: lateParent,
        spans: [{ type: 'tool', id: early, input: 'early child' }],
      });
      assert.equal(r.status, 200, r.text);
      r = await s.call('POST', `/v2/projects/${pid}/spans`, {
        log_stream_id: ls,
        trace_id: t.id,
        parent_id: t.id,
        spans: [{ type: 'workflow', id: lateParent, input: 'late parent' }],
      });
      assert.equal(r.status, 200, r.text);
      tr = (await s.call('GET', `/v2/projects/${pid}/traces/${t.id}`)).body;
      const late = tr.spans.find((x: any) => x.id === lateParent);
      assert.deepEqual(
        late.spans.map((x: any) => x.id),
        [early],
      );
      assert.equal(late.has_children, true);

      // PATCH a trace: output, status, tags (added), duration, is_complete.
      r = await s.call('PATCH', `/v2/projects/${pid}/traces/${t.id}`, {
        log_stream_id: ls,
        trace_id: t.id,
        output: 'patched',
        status_code: 500,
        tags: ['beta', 'patched'],
        duration_ns: 5,
        is_complete: false,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.trace_id, t.id);
      assert.equal(r.body.records_count, 1);
      assert.equal(r.body.session_id, first.body.session_id);
      tr = (await s.call('GET', `/v2/projects/${pid}/traces/${t.id}`)).body;
      assert.equal(tr.output, 'patched');
      assert.equal(tr.status_code, 500);
      assert.deepEqual(tr.tags, ['beta', 'patched']);
      assert.equal(tr.metrics.duration_ns, 5);
      assert.equal(tr.is_complete, false);
      assert.equal(tr.input, 'question?');
      assert.equal(tr.num_spans, SPANS_PER_FULL_TRACE + 4, 'a PATCH keeps the child count');
      assert.equal(tr.metrics.num_input_tokens, 17, 'a PATCH keeps the token sums');
      // The session shows the output of its last trace.
      assert.equal(
        (await s.call('GET', `/v2/projects/${pid}/sessions/${first.body.session_id}`)).body.output,
        'patched',
      );

      // PATCH a span.
      const toolId = t.spans[0].spans[0].spans[1].id;
      r = await s.call('PATCH', `/v2/projects/${pid}/spans/${toolId}`, {
        output: 'new tool output',
        status_code: 404,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.span_id, toolId);
      assert.equal(r.body.log_stream_id, ls);
      const tool = (await s.call('GET', `/v2/projects/${pid}/spans/${toolId}`)).body;
      assert.equal(tool.output, 'new tool output');
      assert.equal(tool.status_code, 404);
      assert.equal(tool.tool_call_id, 'c1');

      // PATCH of something that is not there, or of the wrong kind: 404. A bad field: 422.
      assert.equal(
        (await s.call('PATCH', `/v2/projects/${pid}/spans/${uuid()}`, { output: 'x' })).status,
        404,
      );
      assert.equal((await s.call('PATCH', `/v2/projects/${pid}/spans/${t.id}`, { output: 'x' })).status, 404);
      assert.equal(
        (await s.call('PATCH', `/v2/projects/${pid}/traces/${toolId}`, { output: 'x' })).status,
        404,
      );
      r = await s.call('PATCH', `/v2/projects/${pid}/traces/${t.id}`, { status_code: 'x' });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'status_code']);
      // A PATCH naming another log stream does not find the trace.
      const ls2 = await s.call('POST', `/v2/projects/${pid}/log_streams`, { name: `p-${uuid()}` });
      r = await s.call('PATCH', `/v2/projects/${pid}/traces/${t.id}`, {
        log_stream_id: ls2.body.id,
        output: 'x',
      });
      assert.equal(r.status, 404);
    });

    test('children stored before their parent stay counted when the trace is written again', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const t = { id: uuid(), input: 'q', output: 'a', spans: [] };
      let r = await s.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [t] });
      assert.equal(r.status, 200, r.text);
      const [parentA, parentB] = [uuid(), uuid()];
      for (const parent of [parentA, parentB]) {
        r = await s.call('POST', `/v2/projects/${pid}/spans`, {
          log_stream_id: ls,
          trace_id: t.id,
          parent_id: parent,
          spans: [{ type: 'tool', input: 'early child' }],
        });
        assert.equal(r.status, 200, r.text);
      }
      // The trace is patched, then re-sent with one parent; the other parent comes on its own.
      r = await s.call('PATCH', `/v2/projects/${pid}/traces/${t.id}`, { log_stream_id: ls, output: 'b' });
      assert.equal(r.status, 200, r.text);
      const withParentA = { ...t, spans: [{ type: 'workflow', id: parentA, input: 'late parent' }] };
      for (let i = 0; i < 2; i++) {
        r = await s.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [withParentA] });
        assert.equal(r.status, 200, r.text);
      }
      r = await s.call('POST', `/v2/projects/${pid}/spans`, {
        log_stream_id: ls,
        trace_id: t.id,
        parent_id: t.id,
        spans: [{ type: 'workflow', id: parentB, input: 'late parent' }],
      });
      assert.equal(r.status, 200, r.text);
      const tr = (await s.call('GET', `/v2/projects/${pid}/traces/${t.id}`)).body;
      assert.equal(tr.num_spans, 4);
      for (const id of [parentA, parentB]) {
        const sp = (await s.call('GET', `/v2/projects/${pid}/spans/${id}`)).body;
        assert.equal(sp.has_children, true, id);
      }
      assert.deepEqual(await counts(ls, pid), { traces: 1, spans: 4 });
    });

    test('token usage per log stream per UTC day of the llm spans', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const late = fullTrace({ created: '2024-05-01T23:59:59.999Z', tokens: [1, 2] });
      const early = fullTrace({ created: '2024-05-02T00:00:00Z', tokens: [10, 20] });
      const same = fullTrace({ created: '2024-05-02T18:00:00+02:00', tokens: [100, 200] });
      const r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        traces: [late, early, same],
      });
      assert.equal(r.status, 200, r.text);
      const rows = await db()
        .selectFrom('token_usage')
        .selectAll()
        .where('log_stream_id', '=', ls)
        .orderBy('day')
        .execute();
      assert.deepEqual(
        rows.map((x) => [
          new Date(Number(x.day) / 1000).toISOString(),
          Number(x.input_tokens),
          Number(x.output_tokens),
          Number(x.cache_read_input_tokens),
          Number(x.cache_creation_input_tokens),
        ]),
        [
          ['2024-05-01T00:00:00.000Z', 1, 2, 2, 0],
          ['2024-05-02T00:00:00.000Z', 110, 220, 4, 0],
        ],
      );
      assert.equal(Number(rows[0].created_at), Number(rows[0].day));
      assert.equal(rows[0].project_id, pid);
    });

    test('the column catalogue lists metadata and metric keys per record type and data type', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const a = fullTrace({ created: day(5) });
      const b = fullTrace({ created: day(7) });
      (b.user_metadata as any).attempt = 'two';
      await s.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [a, b] });
      const rows = await db().selectFrom('column_catalogue').selectAll().where('run_id', '=', ls).execute();
      const has = (col: string, type: string, dt: string) =>
        rows.find((r) => r.column_id === col && r.record_type === type && r.data_type === dt);
      assert.ok(has('user_metadata/customer', 'trace', 'text'));
      const attemptInt = has('user_metadata/attempt', 'trace', 'integer');
      assert.ok(attemptInt);
      assert.equal(Number(attemptInt.first_seen), Date.parse(day(5)) * 1000);
      assert.equal(Number(attemptInt.last_seen), Date.parse(day(5)) * 1000);
      assert.ok(has('user_metadata/attempt', 'trace', 'text'));
      assert.ok(has('dataset_metadata/split', 'trace', 'text'));
      assert.ok(has('user_metadata/prompt', 'llm', 'text'));
      assert.ok(has('metrics/latency_score', 'llm', 'floating_point'));
      assert.ok(has('metrics/num_input_tokens', 'llm', 'integer'));
      assert.ok(has('metrics/num_input_tokens', 'trace', 'integer'));
      assert.ok(has('metrics/num_input_tokens', 'session', 'integer'));
      const cust = has('user_metadata/customer', 'trace', 'text');
      assert.equal(Number(cust?.first_seen), Date.parse(day(5)) * 1000);
      assert.equal(Number(cust?.last_seen), Date.parse(day(7)) * 1000);
    });

    test('the catalogue keeps first and last seen to the hour, rounded outwards', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const at = (minutes: number) => new Date(Date.parse(day(5)) + minutes * 60_000).toISOString();
      const seen = async () => {
        const row = await db()
          .selectFrom('column_catalogue')
          .select(['first_seen', 'last_seen'])
          .where('run_id', '=', ls)
          .where('column_id', '=', 'user_metadata/customer')
          .where('record_type', '=', 'trace')
          .executeTakeFirstOrThrow();
        return [Number(row.first_seen), Number(row.last_seen)].map((us) => new Date(us / 1000).toISOString());
      };
      await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        traces: [fullTrace({ created: at(10) })],
      });
      assert.deepEqual(await seen(), [day(5, 12), day(5, 13)]);
      // A later batch inside the same hour moves nothing; one in the next hour moves last_seen.
      await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        traces: [fullTrace({ created: at(50) })],
      });
      assert.deepEqual(await seen(), [day(5, 12), day(5, 13)]);
      await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        traces: [fullTrace({ created: at(70) })],
      });
      assert.deepEqual(await seen(), [day(5, 12), day(5, 14)]);
    });

    test('bad input: exact locs, nesting bound, and a rejected batch leaves nothing', async () => {
      const before = await recordCount();
      const beforeCounts = await counts();
      const good = fullTrace();
      const bad = fullTrace();
      (bad.spans[1] as any).id = 'not-a-uuid';
      let r = await post('/traces', { log_stream_id: logStreamId, traces: [good, bad] });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces', 1, 'spans', 1, 'id']);
      assert.equal(r.body.detail[0].type, 'uuid_parsing');
      assert.equal(r.body.detail[0].input, 'not-a-uuid');
      assert.equal(await recordCount(), before);
      assert.deepEqual(await counts(), beforeCounts);

      const wrong = fullTrace();
      (wrong as any).tags = 'x';
      (wrong.spans[0].spans[0].spans[0] as any).temperature = 'hot';
      (wrong.spans[0].spans[0].spans[0] as any).input = [{ role: 'robot', content: 'x' }];
      (wrong.spans[2] as any).status_code = 2.5;
      (wrong as any).created_at = 'yesterday';
      r = await post('/traces', { log_stream_id: logStreamId, traces: [wrong] });
      assert.equal(r.status, 422);
      const locs = r.body.detail.map((d: any) => `${d.loc.join('.')}:${d.type}`).sort();
      assert.deepEqual(locs, [
        'body.traces.0.created_at:datetime_parsing',
        'body.traces.0.spans.0.spans.0.spans.0.input.0.role:enum',
        'body.traces.0.spans.0.spans.0.spans.0.temperature:float_type',
        'body.traces.0.spans.2.status_code:int_type',
        'body.traces.0.tags:list_type',
      ]);

      const nest = (depth: number): any =>
        depth === 0 ? [] : [{ type: 'workflow', name: `d${depth}`, spans: nest(depth - 1) }];
      r = await post('/traces', {
        log_stream_id: logStreamId,
        traces: [{ name: 'deep', spans: nest(MAX_SPAN_DEPTH + 1) }],
      });
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].loc.filter((x: unknown) => x === 'spans').length, MAX_SPAN_DEPTH + 1);
      r = await post('/traces', {
        log_stream_id: logStreamId,
        traces: [{ name: 'deep', spans: nest(MAX_SPAN_DEPTH) }],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.spans_count, MAX_SPAN_DEPTH);

      // A nested span that names another trace or parent.
      const t = fullTrace();
      (t.spans[1] as any).trace_id = uuid();
      r = await post('/traces', { log_stream_id: logStreamId, traces: [t] });
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces', 0, 'spans', 1, 'trace_id']);

      // Ids already used by another record (another project's trace, or a trace re-sent as a span):
      // the whole batch is refused, nothing of it stays.
      const taken = fullTrace();
      await post('/traces', { log_stream_id: logStreamId, traces: [taken] });
      const mid = await recordCount();
      const clash = fullTrace();
      (clash.spans[1] as any).id = taken.id;
      r = await post('/traces', { log_stream_id: logStreamId, traces: [fullTrace(), clash] });
      assert.equal(r.status, 422, r.text);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces', 1, 'spans', 1, 'id']);
      assert.equal(await recordCount(), mid);
      const other = await projectWithLogStream(s);
      r = await s.call('POST', `/v2/projects/${other.projectId}/traces`, {
        log_stream_id: other.logStreamId,
        traces: [taken],
      });
      assert.equal(r.status, 422);
      assert.equal(await recordCount(), mid);

      // Not JSON, not an object, empty lists, missing fields.
      r = await post('/traces', '{"traces": [');
      assert.equal(r.status, 422);
      assert.equal(r.body.detail[0].type, 'json_invalid');
      r = await post('/traces', [1, 2]);
      assert.deepEqual(r.body.detail[0].loc, ['body']);
      r = await post('/traces', { log_stream_id: logStreamId, traces: [] });
      assert.equal(r.body.detail[0].type, 'too_short');
      r = await post('/traces', { log_stream_id: logStreamId });
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces']);
      assert.equal(r.body.detail[0].type, 'missing');
      r = await post('/traces', { log_stream_id: logStreamId, traces: [{ spans: [{ name: 'no type' }] }] });
      assert.deepEqual(r.body.detail[0].loc, ['body', 'traces', 0, 'spans', 0, 'type']);
      assert.equal(r.body.detail[0].type, 'missing');
      r = await s.call('POST', '/v2/projects/not-a-uuid/traces', {
        log_stream_id: logStreamId,
        traces: [good],
      });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'project_id']);
      r = await s.call('GET', `/v2/projects/${projectId}/traces/nope`);
      assert.deepEqual(r.body.detail[0].loc, ['path', 'trace_id']);
      r = await post('/sessions', { log_stream_id: logStreamId, user_metadata: { a: { b: 1 } } });
      assert.deepEqual(r.body.detail[0].loc, ['body', 'user_metadata', 'a']);
      assert.equal(await recordCount(), mid);
    });

    test('integers beyond the columns answer 422; NUL and lone surrogates are stored as U+FFFD', async () => {
      const t = fullTrace();
      t.metrics = { duration_ns: 1e300 };
      t.status_code = 2 ** 31;
      const r = await post('/traces', { log_stream_id: logStreamId, traces: [t] });
      assert.equal(r.status, 422, r.text);
      const byLoc = Object.fromEntries(r.body.detail.map((d: any) => [d.loc.join('.'), d.type]));
      assert.equal(byLoc['body.traces.0.metrics.duration_ns'], 'less_than_equal');
      assert.equal(byLoc['body.traces.0.status_code'], 'less_than_equal');
      const long = {
        ...fullTrace(),
        session_external_id: undefined,
        user_metadata: { ['k'.repeat(3000)]: 'v' },
      };
      const r2 = await post('/traces', {
        log_stream_id: logStreamId,
        traces: [long],
        session_external_id: 'é'.repeat(3000),
      });
      assert.equal(r2.status, 422, r2.text);
      assert.deepEqual(r2.body.detail.map((d: any) => d.type).sort(), ['string_too_long', 'value_error']);

      // Escapes in the JSON text: NUL, a lone high surrogate, and a key with a lone low surrogate.
      const id = uuid();
      const text = String.raw`{"log_stream_id":"${logStreamId}","traces":[{"id":"${id}","name":"a\\u0000b",
        "input":"x\u0000y\ud800z","user_metadata":{"k\udc00":"v\u0000"}}]}`;
      const w = await post('/traces', text);
      assert.equal(w.status, 200, w.text);
      const g = await s.call('GET', `/v2/projects/${projectId}/traces/${id}`);
      assert.equal(g.status, 200, g.text);
      assert.equal(g.body.name, 'a\\u0000b', 'an escaped backslash is not an escape');
      assert.equal(g.body.input, 'x\uFFFDy\uFFFDz');
      assert.deepEqual(g.body.user_metadata, { 'k\uFFFD': 'v\uFFFD' });
      const q = await s.call('GET', `/v2/projects?project_name=${encodeURIComponent('a\u0000')}`);
      assert.equal(q.status, 200, q.text);
    });

    test('a body over the limit is 413', async () => {
      const small = await startTestServer(store, { SPANBASE_BODY_LIMIT_BYTES: '4096' });
      try {
        const { projectId: pid, logStreamId: ls } = await projectWithLogStream(small);
        const t = fullTrace();
        t.input = 'x'.repeat(5000);
        const r = await small.call('POST', `/v2/projects/${pid}/traces`, { log_stream_id: ls, traces: [t] });
        assert.equal(r.status, 413);
        assert.equal(typeof r.body.detail, 'string');
        const ok = await small.call('POST', `/v2/projects/${pid}/traces`, {
          log_stream_id: ls,
          traces: [{ name: 'x' }],
        });
        assert.equal(ok.status, 200, ok.text);
      } finally {
        await small.close();
      }
    });

    test('access: no credentials 401, another user 404, a viewer 403, an editor may write', async () => {
      const t = fullTrace();
      await post('/traces', { log_stream_id: logStreamId, traces: [t] });
      let r = await post('/traces', { log_stream_id: logStreamId, traces: [fullTrace()] }, null);
      assert.equal(r.status, 401);
      r = await s.call('GET', `/v2/projects/${projectId}/traces/${t.id}`, undefined, null);
      assert.equal(r.status, 401);
      const stranger = await s.user();
      for (const [method, path, body] of [
        ['POST', '/traces', { log_stream_id: logStreamId, traces: [fullTrace()] }],
        ['POST', '/sessions', { log_stream_id: logStreamId }],
        [
          'POST',
          '/spans',
          { log_stream_id: logStreamId, trace_id: t.id, parent_id: t.id, spans: [{ type: 'tool' }] },
        ],
        ['PATCH', `/traces/${t.id}`, { output: 'x' }],
        ['PATCH', `/spans/${t.spans[1].id}`, { output: 'x' }],
        ['GET', `/traces/${t.id}`, undefined],
        ['GET', `/spans/${t.spans[1].id}`, undefined],
      ] as const) {
        r = await s.call(method, `/v2/projects/${projectId}${path}`, body, stranger.key);
        assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
      }
      const viewer = await s.user();
      const editor = await s.user();
      for (const [u, role] of [
        [viewer, 'viewer'],
        [editor, 'editor'],
      ] as const) {
        const share = await s.call('POST', `/v2/projects/${projectId}/collaborators`, {
          user_id: u.id,
          role,
        });
        assert.equal(share.status, 200, share.text);
      }
      r = await post('/traces', { log_stream_id: logStreamId, traces: [fullTrace()] }, viewer.key);
      assert.equal(r.status, 403);
      r = await s.call('GET', `/v2/projects/${projectId}/traces/${t.id}`, undefined, viewer.key);
      assert.equal(r.status, 200);
      r = await post('/traces', { log_stream_id: logStreamId, traces: [fullTrace()] }, editor.key);
      assert.equal(r.status, 200, r.text);
    });

    test('log stream counts are real, and deleting a project removes its records', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        traces: [fullTrace(), fullTrace()],
      });
      const search = await s.call('POST', `/v2/projects/${pid}/log_streams/search`, { include_counts: true });
      assert.equal(search.body.log_streams[0].num_traces, 2);
      assert.equal(search.body.log_streams[0].num_spans, 2 * SPANS_PER_FULL_TRACE);
      const owned = async (table: 'records' | 'token_usage' | 'column_catalogue') =>
        Number(
          (
            await db()
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .where(
                table === 'records' ? 'project_id' : table === 'token_usage' ? 'log_stream_id' : 'run_id',
                '=',
                table === 'records' ? pid : ls,
              )
              .executeTakeFirstOrThrow()
          ).n,
        );
      assert.ok((await owned('records')) > 0);
      assert.ok((await owned('token_usage')) > 0);
      assert.ok((await owned('column_catalogue')) > 0);
      const del = await s.call('DELETE', `/v2/projects/${pid}`);
      assert.ok(del.status === 200 || del.status === 204, del.text);
      assert.equal(await owned('records'), 0);
      assert.equal(await owned('token_usage'), 0);
      assert.equal(await owned('column_catalogue'), 0);
    });

    test('extension: sessions created with the batch', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const [s1, s2] = [uuid(), uuid()];
      const body = {
        log_stream_id: ls,
        sessions: [
          { id: s1, name: 'one', external_id: 'batch-ext-1', user_metadata: { u: 'x' } },
          { id: s2, name: 'two', created_at: day(1) },
        ],
        traces: [
          { ...fullTrace(), session_id: s1 },
          { ...fullTrace(), session_id: s1 },
          { ...fullTrace(), session_id: s2 },
        ],
      };
      let r = await s.call('POST', `/v2/projects/${pid}/traces`, body);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.records_count, 2 + 3 * (1 + SPANS_PER_FULL_TRACE));
      const one = (await s.call('GET', `/v2/projects/${pid}/sessions/${s1}`)).body;
      assert.equal(one.name, 'one');
      assert.equal(one.external_id, 'batch-ext-1');
      assert.deepEqual(one.user_metadata, { u: 'x' });
      assert.equal(one.num_traces, 2);
      assert.equal((await s.call('GET', `/v2/projects/${pid}/sessions/${s2}`)).body.num_traces, 1);
      assert.equal(
        (await s.call('GET', `/v2/projects/${pid}/log_streams/${ls}`)).body.has_user_created_sessions,
        true,
      );
      // Re-sending the batch adds nothing.
      r = await s.call('POST', `/v2/projects/${pid}/traces`, body);
      assert.equal(r.status, 200, r.text);
      assert.equal((await s.call('GET', `/v2/projects/${pid}/sessions/${s1}`)).body.num_traces, 2);
      // The external id of another session, or a session id without the session: refused whole.
      const before = await recordCount();
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        sessions: [{ id: uuid(), external_id: 'batch-ext-1' }],
        traces: [fullTrace()],
      });
      assert.equal(r.status, 422);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'sessions', 0, 'external_id']);
      r = await s.call('POST', `/v2/projects/${pid}/traces`, {
        log_stream_id: ls,
        sessions: [{ name: 'x' }],
        traces: [fullTrace()],
      });
      assert.deepEqual(r.body.detail[0].loc, ['body', 'sessions', 0, 'id']);
      assert.equal(await recordCount(), before);
    });

    test('internal option: a session per new trace (OTLP exports batch unrelated traces)', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const caller = await s.running.services.auth.authenticate(
        { 'service-api-key': s.adminKey },
        '127.0.0.1',
      );
      const named = await s.call('POST', `/v2/projects/${pid}/sessions`, { log_stream_id: ls });
      const [a, b, c] = [fullTrace(), fullTrace(), { ...fullTrace(), session_id: named.body.id }];
      const r = await s.running.services.ingest.traces(
        caller,
        pid,
        { log_stream_id: ls, traces: [a, b, c] },
        {},
        { sessionPerTrace: true },
      );
      const sessionOf = async (t: any) =>
        (await s.call('GET', `/v2/projects/${pid}/traces/${t.id}`)).body.session_id;
      const [sa, sb, sc] = [await sessionOf(a), await sessionOf(b), await sessionOf(c)];
      assert.notEqual(sa, sb);
      assert.equal(sc, named.body.id);
      assert.equal(r.session_id, sa);
      for (const sid of [sa, sb]) {
        assert.equal((await s.call('GET', `/v2/projects/${pid}/sessions/${sid}`)).body.num_traces, 1);
      }
    });

    test('concurrent batches into one session count every trace once', async () => {
      const { projectId: pid, logStreamId: ls } = await projectWithLogStream(s);
      const sess = await s.call('POST', `/v2/projects/${pid}/sessions`, { log_stream_id: ls });
      const batches = Array.from({ length: 6 }, () => ({
        log_stream_id: ls,
        session_id: sess.body.id,
        traces: [fullTrace(), fullTrace()],
      }));
      const results = await Promise.all(
        [...batches, ...batches].map((b) => s.call('POST', `/v2/projects/${pid}/traces`, b)),
      );
      for (const r of results) assert.equal(r.status, 200, r.text);
      const got = (await s.call('GET', `/v2/projects/${pid}/sessions/${sess.body.id}`)).body;
      assert.equal(got.num_traces, 12);
      assert.equal(got.metrics.num_input_tokens, 120);
      assert.deepEqual(await counts(ls, pid), { traces: 12, spans: 12 * SPANS_PER_FULL_TRACE });
    });
  });
}
