import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { test } from 'node:test';
import { evaluateRule, ruleProblem, type Rule } from '../../src/domain/scorer-rules.ts';
import type { ActiveScorer } from '../../src/domain/scorer-types.ts';
import { type ScoreView, decide, samplePoint, viewOf } from '../../src/domain/scoring-plan.ts';
import { parseTracesRequest } from '../../src/domain/ingest.ts';
import { tracesFlow } from '../../src/store/ingest-flow.ts';
import type { RunScoring } from '../../src/domain/scorer-types.ts';
import { bleu, rouge } from '../../src/domain/text-overlap.ts';

const view = (over: Partial<ScoreView> = {}): ScoreView => ({
  id: crypto.randomUUID(),
  type: 'llm',
  name: 'model',
  input: 'What is the capital of France?',
  output: 'Paris',
  groundTruth: 'Paris',
  metadata: { env: 'prod', lang: 'en' },
  durationNs: 1_500_000_000,
  cost: 0.002,
  ...over,
});
const rule = (r: Partial<Rule>): Rule => ({
  rule: 'contains',
  field: 'output',
  params: {},
  negate: false,
  ...r,
});

test('rules: each kind, negation, bounds, and what is not applicable', () => {
  const v = view({ output: '{"answer": "Paris", "confidence": 0.9}' });
  assert.deepEqual(evaluateRule(rule({ rule: 'regex', params: { pattern: 'paris', flags: 'i' } }), v), {
    value: 1,
  });
  assert.deepEqual(evaluateRule(rule({ rule: 'regex', params: { pattern: 'paris' } }), v), { value: 0 });
  assert.deepEqual(evaluateRule(rule({ params: { value: 'PARIS', case_sensitive: false } }), v), {
    value: 1,
  });
  assert.deepEqual(evaluateRule(rule({ params: { value: 'Paris' }, negate: true }), v), { value: 0 });
  assert.deepEqual(evaluateRule(rule({ rule: 'json_valid' }), v), { value: 1 });
  assert.deepEqual(evaluateRule(rule({ rule: 'json_valid' }), view()), { value: 0 });
  const schema = {
    type: 'object',
    required: ['answer'],
    properties: { confidence: { type: 'number', maximum: 1 } },
  };
  assert.deepEqual(evaluateRule(rule({ rule: 'json_schema', params: { schema } }), v), { value: 1 });
  assert.deepEqual(
    evaluateRule(rule({ rule: 'json_schema', params: { schema } }), view({ output: '{"x":1}' })),
    { value: 0 },
  );
  assert.deepEqual(evaluateRule(rule({ rule: 'equals_ground_truth' }), view({ output: ' Paris\n' })), {
    value: 1,
  });
  assert.ok(
    'notApplicable' in evaluateRule(rule({ rule: 'equals_ground_truth' }), view({ groundTruth: null })),
  );
  assert.deepEqual(evaluateRule(rule({ rule: 'length' }), view({ output: 'héllo' })), { value: 5 });
  assert.deepEqual(evaluateRule(rule({ rule: 'length', params: { min: 6 } }), view({ output: 'héllo' })), {
    value: 0,
  });
  assert.deepEqual(evaluateRule(rule({ rule: 'latency_ms' }), view()), { value: 1500 });
  assert.deepEqual(evaluateRule(rule({ rule: 'latency_ms', params: { max: 1000 } }), view()), { value: 0 });
  assert.deepEqual(evaluateRule(rule({ rule: 'cost', params: { max: 0.01 } }), view()), { value: 1 });
  assert.ok('notApplicable' in evaluateRule(rule({ rule: 'cost' }), view({ cost: null })));
  assert.deepEqual(evaluateRule(rule({ field: 'metadata.lang', params: { value: 'en' } }), view()), {
    value: 1,
  });
  const none = evaluateRule(rule({ field: 'metadata.missing', params: { value: 'x' } }), view());
  assert.deepEqual(none, { notApplicable: 'the record has no metadata.missing' });
  assert.equal(ruleProblem(rule({ params: { value: 'x' } })), null);
  assert.match(
    ruleProblem(rule({ rule: 'regex', params: { pattern: '[' } })) ?? '',
    /not a valid regular expression/,
  );
  assert.match(ruleProblem(rule({ field: 'body', params: { value: 'x' } })) ?? '', /field must be/);
});

test('bleu and rouge: 1 for identical texts, 0 for disjoint ones, in between otherwise', () => {
  const ref = 'the cat sat on the mat';
  assert.equal(bleu(ref, ref), 1);
  assert.equal(rouge(ref, ref), 1);
  assert.equal(bleu('dogs bark loudly', ref), 0);
  assert.equal(rouge('dogs bark loudly', ref), 0);
  const b = bleu('the cat sat on a mat', ref);
  const r = rouge('the cat sat on a mat', ref);
  assert.ok(b > 0.3 && b < 1, String(b));
  assert.ok(Math.abs(r - 10 / 12) < 1e-9, String(r));
});

test('sampling is deterministic by record id and its rate holds over 10,000 ids', () => {
  const ids = Array.from({ length: 10_000 }, () => crypto.randomUUID());
  for (const rate of [0.05, 0.3, 0.5, 0.9]) {
    const taken = ids.filter((id) => samplePoint(id) < rate).length;
    // Binomial: 4 standard deviations (at most 200 records at rate 0.5).
    const sd = Math.sqrt(10_000 * rate * (1 - rate));
    assert.ok(Math.abs(taken - 10_000 * rate) < 4 * sd, `rate ${rate}: ${taken}`);
  }
  for (const id of ids.slice(0, 100)) assert.equal(samplePoint(id), samplePoint(id));
  const s: ActiveScorer = {
    id: 'x',
    name: 'x',
    versionId: 'v',
    version: 1,
    kind: 'llm',
    nodeTypes: ['llm'],
    filters: [{ name: 'node_name', operator: 'contains', value: 'MOD', case_sensitive: false }],
  };
  const seg = [
    {
      filter: { name: 'metadata' as const, key: 'env', operator: 'eq' as const, value: 'prod' },
      sample_rate: 0.5,
      llm_scorers: true,
    },
  ];
  const decisions = ids.slice(0, 2000).map((id) => decide(s, view({ id }), seg).state);
  const scored = decisions.filter((d) => d === 'score').length;
  assert.ok(scored > 850 && scored < 1150, String(scored));
  // Decided again, the same way.
  assert.deepEqual(
    ids.slice(0, 2000).map((id) => decide(s, view({ id }), seg).state),
    decisions,
  );
  assert.deepEqual(decide(s, view({ type: 'tool' }), seg), { state: 'skip' });
  assert.match(
    JSON.stringify(
      decide({ ...s, filters: [{ name: 'node_name', operator: 'eq', value: 'other' }] }, view(), []),
    ),
    /filtered out/,
  );
  // A segment that does not match the record leaves it unsampled; rules ignore llm-only segments.
  assert.deepEqual(decide(s, view({ metadata: { env: 'dev' } }), [{ ...seg[0], sample_rate: 0 }]), {
    state: 'score',
  });
  assert.deepEqual(decide({ ...s, kind: 'rule' }, view(), [{ ...seg[0], sample_rate: 0 }]), {
    state: 'score',
  });
});

test('a view parses the JSON parts of a row when they are read, as text or as parsed values', () => {
  const row = {
    id: 'r1',
    type: 'llm',
    name: 'model',
    input_text: 'Q',
    output_text: 'A',
    user_metadata: '{"lang":"en"}',
    body: { dout: 'A' },
    duration_ns: 2000,
    metrics: '{"cost":0.5}',
  };
  const v = viewOf(row);
  assert.deepEqual(
    [v.id, v.type, v.name, v.input, v.output, v.groundTruth, v.metadata, v.durationNs, v.cost],
    ['r1', 'llm', 'model', 'Q', 'A', 'A', { lang: 'en' }, 2000, 0.5],
  );
  const bare = viewOf({ ...row, user_metadata: null, body: null, duration_ns: null, metrics: null });
  assert.deepEqual([bare.groundTruth, bare.metadata, bare.durationNs, bare.cost], [null, {}, null, null]);
});

test("a scored write's rows carry the rule scores, and its catalogue their columns and the metadata", () => {
  const runId = crypto.randomUUID();
  const scoring: RunScoring = {
    runId,
    segments: [],
    pausedReason: null,
    integrationId: null,
    scorers: [
      {
        id: 's1',
        name: 'says_paris',
        versionId: 'v1',
        version: 1,
        kind: 'rule',
        rule: rule({ params: { value: 'Paris' } }),
        nodeTypes: ['trace', 'llm'],
        filters: [],
      },
    ],
  };
  const now = Date.now() * 1000;
  const req = parseTracesRequest(
    {
      log_stream_id: runId,
      traces: [
        {
          id: crypto.randomUUID(),
          name: 'chat',
          input: 'Q',
          output: 'Paris',
          user_metadata: { lang: 'en' },
          metrics: { duration_ns: 5, quality: 0.5 },
          spans: [{ id: crypto.randomUUID(), type: 'llm', name: 'm', input: 'Q', output: 'Lyon' }],
        },
      ],
    },
    {},
    now,
  );
  // Twice over the same request: PostgreSQL runs a flow again when its transaction lost a race.
  for (let attempt = 0; attempt < 2; attempt++) {
    const gen = tracesFlow(req, { projectId: 'p', runId, now, scoring: () => scoring });
    let step = gen.next();
    while (!step.done) step = gen.next([]);
    const plan = step.value.plan;
    assert.ok(plan);
    const metrics = Object.fromEntries(plan.inserts.map((r) => [r.type, r.metrics]));
    assert.deepEqual(metrics, {
      session: null,
      trace: '{"quality":0.5,"says_paris":1}',
      llm: '{"says_paris":0}',
    });
    const columns = plan.catalogue.map((c) => `${c.record_type} ${c.column_id} ${c.data_type}`).sort();
    assert.deepEqual(columns, [
      'llm metrics/says_paris integer',
      'session metrics/duration_ns integer',
      'trace metrics/duration_ns integer',
      'trace metrics/quality floating_point',
      'trace metrics/says_paris integer',
      'trace user_metadata/lang text',
    ]);
  }
});
