/**
 * Crash safety of ingestion, on each store: writers post batches (sessions created in the batch,
 * traces with nested spans, spans added to stored traces) to a real server process; the server is
 * SIGKILLed in the middle, restarted on the same store, and then:
 * - every batch that was answered 200 is there, whole and intact (every record, its text, its tree);
 * - every batch that got no answer is either wholly there or wholly absent, never half;
 * - the derived data agrees with what is there (log stream counts, session trace counts and tokens).
 *
 * SPANBASE_CRASH_CYCLES (default 2) sets the kill-and-restart cycles per store.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, test } from 'node:test';
import { type ChildServer, startChildServer } from '../helpers/child-server.ts';
import { storesUnderTest } from '../helpers/server.ts';

const CYCLES = Number(process.env.SPANBASE_CRASH_CYCLES ?? 2);
const WRITERS = 4;

interface SentTrace {
  id: string;
  session: string;
  input: string;
  output: string;
  /** Span id → its input text, parent id and type. */
  spans: Map<string, { input: string; parent: string; type: string }>;
  tokens: number;
}

interface Batch {
  kind: 'traces' | 'spans';
  traces: SentTrace[];
  /** For a spans batch: the trace the spans were added to, and the span ids added. */
  added?: { trace: SentTrace; ids: string[] };
  state: 'pending' | 'acked' | 'refused';
}

const text = (label: string, n = 300) => `${label} ${crypto.randomBytes(n).toString('base64')} ünï 🙂 "q"`;

function makeTrace(session: string): { body: any; sent: SentTrace } {
  const id = crypto.randomUUID();
  const wf = crypto.randomUUID();
  const llm = crypto.randomUUID();
  const tool = crypto.randomUUID();
  const tokens = 1 + Math.floor(Math.random() * 100);
  const sent: SentTrace = {
    id,
    session,
    input: text('trace-in'),
    output: text('trace-out'),
    spans: new Map(),
    tokens,
  };
  const llmIn = text('llm-in');
  const toolIn = text('tool-in', 1500);
  const wfIn = text('wf-in');
  sent.spans.set(wf, { input: wfIn, parent: id, type: 'workflow' });
  sent.spans.set(llm, { input: llmIn, parent: wf, type: 'llm' });
  sent.spans.set(tool, { input: toolIn, parent: wf, type: 'tool' });
  const body = {
    id,
    session_id: session,
    name: 'crash',
    input: sent.input,
    output: sent.output,
    spans: [
      {
        type: 'workflow',
        id: wf,
        input: wfIn,
        spans: [
          {
            type: 'llm',
            id: llm,
            input: [{ role: 'user', content: llmIn }],
            output: { role: 'assistant', content: 'ok' },
            metrics: { num_input_tokens: tokens, num_output_tokens: 1 },
          },
          { type: 'tool', id: tool, input: toolIn, output: 'done' },
        ],
      },
    ],
  };
  return { body, sent };
}

function flatten(node: any, out: Map<string, any> = new Map()): Map<string, any> {
  for (const c of node.spans ?? []) {
    out.set(c.id, c);
    flatten(c, out);
  }
  return out;
}

async function run(store: 'sqlite' | 'postgres') {
  const server: ChildServer = await startChildServer(store);
  try {
    const p = await server.call('POST', '/v2/projects', { name: `crash-${crypto.randomUUID()}` });
    assert.equal(p.status, 200, p.text);
    const ls = await server.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'crash' });
    const projectId = p.body.id as string;
    const logStreamId = ls.body.id as string;
    const batches: Batch[] = [];
    const ackedTraces: SentTrace[] = [];

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      let alive = true;
      const writer = async () => {
        while (alive) {
          const addSpans = ackedTraces.length > 0 && Math.random() < 0.25;
          if (addSpans) {
            const trace = ackedTraces[Math.floor(Math.random() * ackedTraces.length)];
            const ids = [crypto.randomUUID(), crypto.randomUUID()];
            const spans = ids.map((id) => ({
              type: 'retriever',
              id,
              input: text('added'),
              output: [{ content: 'd' }],
            }));
            const batch: Batch = { kind: 'spans', traces: [], added: { trace, ids }, state: 'pending' };
            batches.push(batch);
            try {
              const r = await server.call('POST', `/v2/projects/${projectId}/spans`, {
                log_stream_id: logStreamId,
                trace_id: trace.id,
                parent_id: trace.id,
                spans,
              });
              if (r.status === 200) {
                batch.state = 'acked';
                for (const [i, id] of ids.entries()) {
                  trace.spans.set(id, { input: spans[i].input, parent: trace.id, type: 'retriever' });
                }
              } else batch.state = 'refused';
            } catch {
              return; // the server died: this batch stays pending
            }
            continue;
          }
          const sessions = [crypto.randomUUID(), crypto.randomUUID()];
          const made = Array.from({ length: 6 }, (_, i) => makeTrace(sessions[i % 2]));
          const batch: Batch = { kind: 'traces', traces: made.map((m) => m.sent), state: 'pending' };
          batches.push(batch);
          try {
            const r = await server.call('POST', `/v2/projects/${projectId}/traces`, {
              log_stream_id: logStreamId,
              sessions: sessions.map((id) => ({ id })),
              traces: made.map((m) => m.body),
            });
            if (r.status === 200) {
              batch.state = 'acked';
              ackedTraces.push(...batch.traces);
            } else batch.state = 'refused';
          } catch {
            return;
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, writer);
      await new Promise((r) => setTimeout(r, 400 + Math.random() * 1200));
      await server.kill('SIGKILL');
      alive = false;
      await Promise.all(writers);
      await server.restart();
    }

    assert.ok(
      batches.some((b) => b.state === 'acked'),
      'some batches were acknowledged',
    );
    const get = async (path: string) => server.call('GET', `/v2/projects/${projectId}${path}`);

    // Every trace batch: acked → all there and intact; pending → all or nothing.
    const present = new Map<string, any>();
    for (const b of batches.filter((x) => x.kind === 'traces')) {
      const found: boolean[] = [];
      for (const t of b.traces) {
        const r = await get(`/traces/${t.id}`);
        assert.ok(r.status === 200 || r.status === 404, r.text);
        found.push(r.status === 200);
        if (r.status === 200) present.set(t.id, r.body);
      }
      if (b.state === 'acked') assert.ok(found.every(Boolean), 'an acknowledged batch is whole');
      else
        assert.ok(
          found.every(Boolean) || !found.some(Boolean),
          `an unanswered batch is all or nothing (${found})`,
        );
    }
    // Spans batches: acked → present; pending → both or neither.
    for (const b of batches.filter((x) => x.kind === 'spans')) {
      const { trace, ids } = b.added!;
      const tree = present.get(trace.id);
      assert.ok(tree, 'spans were only added to acknowledged traces');
      const spans = flatten(tree);
      const found = ids.map((id) => spans.has(id));
      if (b.state === 'acked') assert.deepEqual(found, [true, true]);
      else assert.ok(found[0] === found[1], 'an unanswered spans batch is all or nothing');
    }
    // Intact: texts, tree links, token sums; sessions and counts agree with what is there.
    let traces = 0;
    let spansTotal = 0;
    const perSession = new Map<string, { traces: number; tokens: number }>();
    for (const t of batches.flatMap((b) => b.traces)) {
      const tree = present.get(t.id);
      if (!tree) continue;
      traces++;
      assert.equal(tree.input, t.input);
      assert.equal(tree.output, t.output);
      assert.equal(tree.session_id, t.session);
      const spans = flatten(tree);
      spansTotal += spans.size;
      assert.equal(tree.num_spans, spans.size);
      for (const [id, s] of t.spans) {
        const got = spans.get(id);
        assert.ok(got, `span ${id} of an acknowledged write is there`);
        assert.equal(got.parent_id, s.parent);
        assert.equal(got.type, s.type);
        if (s.type === 'llm') assert.deepEqual(got.input, [{ role: 'user', content: s.input }]);
        else assert.equal(got.input, s.input);
      }
      assert.equal(tree.metrics.num_input_tokens, t.tokens);
      const agg = perSession.get(t.session) ?? { traces: 0, tokens: 0 };
      agg.traces++;
      agg.tokens += t.tokens;
      perSession.set(t.session, agg);
    }
    for (const [sid, agg] of perSession) {
      const s = await get(`/sessions/${sid}`);
      assert.equal(s.status, 200, s.text);
      assert.equal(s.body.num_traces, agg.traces);
      assert.equal(s.body.metrics.num_input_tokens, agg.tokens);
    }
    const counts = await get(`/log_streams/${logStreamId}`);
    assert.equal(counts.body.num_traces, traces);
    assert.equal(counts.body.num_spans, spansTotal);
    // Text search is exact after the crashes (records indexed, or still queued for the text index):
    // a random piece of a trace's input finds that trace if it is there, and nothing otherwise.
    const sent = batches.flatMap((b) => b.traces);
    for (const t of sent.filter((_, i) => i % Math.max(1, Math.floor(sent.length / 24)) === 0)) {
      const r = await server.call('POST', `/v2/projects/${projectId}/traces/search`, {
        log_stream_id: logStreamId,
        filters: [{ column_id: 'input', operator: 'contains', value: t.input.slice(9, 33), type: 'text' }],
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        r.body.records.map((x: any) => x.id),
        present.has(t.id) ? [t.id] : [],
      );
    }
    return {
      batches: batches.length,
      acked: batches.filter((b) => b.state === 'acked').length,
      pending: batches.filter((b) => b.state === 'pending').length,
      traces,
    };
  } finally {
    await server.close();
  }
}

for (const store of storesUnderTest()) {
  describe(`ingest crash safety [${store}]`, () => {
    test(`SIGKILL during ingestion, ${CYCLES} times: acknowledged batches whole, the rest all or nothing`, {
      timeout: 240_000,
    }, async (t) => {
      const r = await run(store);
      t.diagnostic(
        `${r.batches} batches: ${r.acked} acknowledged, ${r.pending} unanswered; ${r.traces} traces stored`,
      );
      assert.ok(r.traces > 0);
    });
  });
}
