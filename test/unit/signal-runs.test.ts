import assert from 'node:assert/strict';
import { test } from 'node:test';
import { holds, transition } from '../../src/domain/alerts.ts';
import {
  type SelectedRecord,
  dueSlot,
  fitSample,
  modelFreeFindings,
  readAnswer,
  signalsPrompt,
} from '../../src/domain/signal-runs.ts';
import { backoffMs, signBody, urlProblem, verifyBody, webhookBody } from '../../src/domain/webhooks.ts';

const rec = (id: string, reason: SelectedRecord['reason'] = 'recent'): SelectedRecord => ({
  id,
  type: 'trace',
  trace_id: id,
  session_id: null,
  name: 'chat',
  created_at: 1,
  status_code: null,
  duration_ns: 1e8,
  cost: null,
  reason,
});

test('dueSlot: the latest slot in the zone, once, inside the dates', () => {
  const s = { cron: '0 9 * * *', timezone: 'Europe/Paris', start_date: null, end_date: null };
  const now = Date.parse('2026-03-10T12:00:00Z');
  // 09:00 in Paris (UTC+1 in March before DST) is 08:00 UTC.
  assert.equal(dueSlot(s, now, 0), Date.parse('2026-03-10T08:00:00Z'));
  // Three days missed: only the latest.
  assert.equal(dueSlot(s, now, Date.parse('2026-03-07T08:00:00Z')), Date.parse('2026-03-10T08:00:00Z'));
  // Already run.
  assert.equal(dueSlot(s, now, Date.parse('2026-03-10T08:00:00Z')), null);
  // Exactly at the slot: due.
  assert.equal(dueSlot(s, Date.parse('2026-03-10T08:00:00Z'), 0), Date.parse('2026-03-10T08:00:00Z'));
  assert.equal(dueSlot({ ...s, start_date: '2026-03-11' }, now, 0), null);
  assert.equal(dueSlot({ ...s, end_date: '2026-03-09' }, now, 0), null);
  assert.equal(dueSlot({ ...s, end_date: '2026-03-10' }, now, 0), Date.parse('2026-03-10T08:00:00Z'));
});

test('readAnswer keeps only ids from the sample and drops a signal left without one', () => {
  const sample = fitSample(
    ['a', 'b', 'c'].map((id) => ({ record: rec(id), input: 'in', output: 'out' })),
    10_000,
  );
  const out = readAnswer(
    JSON.stringify({
      signals: [
        {
          title: 'Refusals on billing questions',
          observation: 'o',
          severity: 'HIGH',
          record_ids: ['a', 'zzz', 'b'],
          examples: [
            { record_id: 'a', narrative: 'refused' },
            { record_id: 'nope', narrative: 'x' },
          ],
        },
        { title: 'Invented', observation: 'o', severity: 'LOW', record_ids: ['ghost'] },
        { title: 'Odd', observation: 'o', severity: 'WHAT', record_ids: ['c'], same_as: 'sig-1' },
      ],
    }),
    sample,
  );
  assert.deepEqual(
    out.signals.map((s) => [s.title, s.severity, s.occurrences.map((o) => o.record_id), s.sameAs]),
    [
      ['Refusals on billing questions', 'HIGH', ['a', 'b'], null],
      ['Odd', 'LOW', ['c'], 'sig-1'],
    ],
  );
  assert.deepEqual(out.signals[0].examples, [{ record_id: 'a', narrative: 'refused' }]);
  assert.deepEqual(out.dropped.sort(), ['ghost', 'nope', 'zzz']);
  assert.equal(out.signals[0].fingerprint, 'refusals on billing questions');
  assert.throws(() => readAnswer('not json', sample));
  assert.throws(() => readAnswer('{"x": 1}', sample), /signals/);
});

test('fitSample holds the sample within the token budget', () => {
  const items = Array.from({ length: 100 }, (_, i) => ({
    record: rec(`r${i}`),
    input: 'x'.repeat(5000),
    output: 'y',
  }));
  const sample = fitSample(items, 2000);
  const prompt = signalsPrompt({
    sample,
    focusOn: 'billing',
    dontFocusOn: 'greetings',
    open: [],
    findings: [],
  });
  const chars = prompt.reduce((n, m) => n + m.content.length, 0);
  assert.ok(sample.length > 0 && sample.length < 100);
  assert.ok(chars <= 2000 * 4 + 2000, String(chars));
  assert.match(prompt[1].content, /Focus on: billing/);
  assert.match(prompt[1].content, /Do not focus on: greetings/);
});

test('model-free findings: errors by name and status, outliers above 3x the median', () => {
  const found = modelFreeFindings(
    {
      records: 100,
      errors: [{ name: 'tool', status_code: 429, count: 2 }],
      medianDurationNs: 1e8,
      medianCost: null,
    },
    [
      { ...rec('e1', 'error'), name: 'tool', status_code: 429 },
      { ...rec('e2', 'error'), name: 'tool', status_code: 429 },
      { ...rec('slow', 'latency'), duration_ns: 5e8 },
      { ...rec('fine', 'latency'), duration_ns: 2e8 },
    ],
  );
  assert.deepEqual(
    found.map((f) => [f.fingerprint, f.severity, f.occurrences.map((o) => o.record_id)]),
    [
      ['errors:429:tool', 'MEDIUM', ['e1', 'e2']],
      ['latency:outliers', 'MEDIUM', ['slow']],
    ],
  );
});

test('webhook URLs: http(s) only, no credentials, no metadata host', () => {
  assert.equal(urlProblem('https://hooks.example.com/x'), null);
  assert.ok(urlProblem('ftp://x'));
  assert.ok(urlProblem('https://user:pw@example.com'));
  assert.ok(urlProblem('http://metadata.google.internal/'));
});

test('webhook signatures verify, bodies by format, backoff doubles', () => {
  const body = webhookBody('json', { event: 'x', a: 1 });
  const sig = signBody('s3cret', body);
  assert.ok(verifyBody('s3cret', body, sig));
  assert.ok(!verifyBody('other', body, sig));
  assert.ok(!verifyBody('s3cret', `${body} `, sig));
  const slack = JSON.parse(
    webhookBody('slack', {
      event: 'alert',
      alert: { name: 'n', state: 'ok', value: 1, comparison: 'gt', threshold: 2 },
    }),
  );
  assert.match(slack.text, /Alert recovered: n/);
  assert.deepEqual(
    [1, 2, 3, 4].map((a) => backoffMs(a, 100)),
    [100, 200, 400, 800],
  );
  assert.equal(backoffMs(40, 1000), 3_600_000);
});

test('alert transitions: fire once when holding starts, recover once when it stops', () => {
  assert.equal(holds(null, 'lt', 5), false);
  assert.equal(holds(5, 'gte', 5), true);
  assert.equal(holds(5, 'gt', 5), false);
  let state = 'ok';
  const seen: string[] = [];
  for (const v of [1, 10, 11, 12, 2, 1, 10]) {
    const t = transition(state, holds(v, 'gt', 5));
    if (t) {
      seen.push(t);
      state = t === 'fired' ? 'firing' : 'ok';
    }
  }
  assert.deepEqual(seen, ['fired', 'recovered', 'fired']);
});
