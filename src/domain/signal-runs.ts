/**
 * Pure logic of Signals runs: which cron slot is due, the model-free findings over a run's selection,
 * the prompt sent with the sample, and how the model's answer is read: only occurrences of records
 * that were in the sample are believed, and a signal repeating an open one merges into it.
 */
import { CronExpressionParser } from 'cron-parser';
import { SEVERITIES } from './signals.ts';

export type Severity = (typeof SEVERITIES)[number];

export interface Schedule {
  cron: string;
  timezone: string;
  start_date: string | null;
  end_date: string | null;
}

/** The calendar date (YYYY-MM-DD) of an instant in a time zone. */
export function localDate(ms: number, timezone: string): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(new Date(ms));
}

/**
 * The latest slot of the schedule at or before `nowMs` and after `afterMs`, inside the start and end
 * dates in the schedule's zone; null when none is due. Only the latest counts: slots missed while the
 * service was down run once, as this one.
 */
export function dueSlot(s: Schedule, nowMs: number, afterMs: number): number | null {
  // cron-parser's prev() is strictly before its current date: start a millisecond later.
  const parsed = CronExpressionParser.parse(s.cron, { tz: s.timezone, currentDate: new Date(nowMs + 1) });
  const slot = parsed.prev().getTime();
  if (slot <= afterMs) return null;
  const day = localDate(slot, s.timezone);
  if (s.start_date && day < s.start_date) return null;
  if (s.end_date && day > s.end_date) return null;
  return slot;
}

/** A record of the selection, as the findings and the sample see it. */
export interface SelectedRecord {
  id: string;
  type: string;
  trace_id: string | null;
  session_id: string | null;
  name: string;
  created_at: number;
  status_code: number | null;
  duration_ns: number | null;
  cost: number | null;
  /**
   * Why it was selected: error, low_score (a score below the threshold, or a boolean score false),
   * latency, cost, or recent (the rest of the sample).
   */
  reason: 'error' | 'low_score' | 'latency' | 'cost' | 'recent';
  /** The score that was low (reason low_score). */
  score?: string;
}

export interface Occurrence {
  record_id: string;
  trace_id: string | null;
  session_id: string | null;
  type: string;
  created_at: number;
}

export interface FoundSignal {
  fingerprint: string;
  source: 'model' | 'errors' | 'scores' | 'latency' | 'cost';
  title: string;
  observation: string;
  details: string;
  suggested_action: string;
  severity: Severity;
  occurrences: Occurrence[];
  examples: { record_id: string; narrative: string }[];
  /** How many records it stands for (at least the occurrences kept). */
  count: number;
}

/** Occurrences kept per signal (the count says how many there were). */
export const MAX_OCCURRENCES = 50;

export const occurrenceOf = (r: SelectedRecord): Occurrence => ({
  record_id: r.id,
  trace_id: r.trace_id,
  session_id: r.session_id,
  type: r.type,
  created_at: r.created_at,
});

/** Words of a title, lowercased: two signals with the same words are the same signal. */
export function fingerprintOf(title: string): string {
  return (title.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join(' ').slice(0, 200);
}

export const severityRank = (s: string) => SEVERITIES.indexOf(s as Severity);
export const higherSeverity = (a: string, b: string) => (severityRank(a) >= severityRank(b) ? a : b);

export interface WindowFigures {
  /** Records of the window (traces and spans). */
  records: number;
  errors: { name: string; status_code: number; count: number }[];
  /** Median trace latency and cost over the window (null without values). */
  medianDurationNs: number | null;
  medianCost: number | null;
}

/** How far above the median a trace must be to count as an outlier. */
export const OUTLIER_FACTOR = 3;

/**
 * What a run reports without a model: bursts of errors (per span name and status), and traces far
 * slower or costlier than the window's median.
 */
export function modelFreeFindings(figures: WindowFigures, selected: SelectedRecord[]): FoundSignal[] {
  const out: FoundSignal[] = [];
  for (const e of figures.errors) {
    const records = selected.filter(
      (r) => r.reason === 'error' && r.name === e.name && r.status_code === e.status_code,
    );
    const share = figures.records ? e.count / figures.records : 1;
    out.push({
      fingerprint: `errors:${e.status_code}:${e.name}`,
      source: 'errors',
      title: `Errors ${e.status_code} in '${e.name}'`,
      observation: `${e.count} record${e.count === 1 ? '' : 's'} named '${e.name}' ended with status ${e.status_code} (${(share * 100).toFixed(2)}% of the window's ${figures.records}).`,
      details: 'Counted from the status codes of the records since the previous run.',
      suggested_action: `Open an occurrence and read the error of '${e.name}'.`,
      severity: share >= 0.05 || e.status_code >= 500 ? 'HIGH' : 'MEDIUM',
      occurrences: records.slice(0, MAX_OCCURRENCES).map(occurrenceOf),
      examples: [],
      count: e.count,
    });
  }
  const outliers = (reason: 'latency' | 'cost', median: number | null) => {
    if (median === null || median <= 0) return;
    const value = (r: SelectedRecord) => (reason === 'latency' ? r.duration_ns : r.cost) ?? 0;
    const far = selected.filter((r) => r.reason === reason && value(r) > OUTLIER_FACTOR * median);
    if (!far.length) return;
    const worst = Math.max(...far.map(value));
    const show = (v: number) =>
      reason === 'latency' ? `${(v / 1e6).toFixed(0)} ms` : `$${v.toPrecision(3)}`;
    out.push({
      fingerprint: `${reason}:outliers`,
      source: reason,
      title: reason === 'latency' ? 'Latency outliers' : 'Cost outliers',
      observation: `${far.length} trace${far.length === 1 ? '' : 's'} took more than ${OUTLIER_FACTOR}x the median ${reason} (${show(median)}); the worst ${show(worst)}.`,
      details: `Among the ${reason === 'latency' ? 'slowest' : 'costliest'} traces since the previous run.`,
      suggested_action:
        reason === 'latency'
          ? 'Look at the slowest spans of these traces.'
          : 'Look at the models and token counts of these traces.',
      severity: worst > 10 * OUTLIER_FACTOR * median ? 'HIGH' : 'MEDIUM',
      occurrences: far.slice(0, MAX_OCCURRENCES).map(occurrenceOf),
      examples: [],
      count: far.length,
    });
  };
  const low = new Map<string, SelectedRecord[]>();
  for (const r of selected)
    if (r.reason === 'low_score' && r.score) low.set(r.score, [...(low.get(r.score) ?? []), r]);
  for (const [score, records] of low)
    out.push({
      fingerprint: `scores:${score}`,
      source: 'scores',
      title: `Low scores of '${score}'`,
      observation: `${records.length} record${records.length === 1 ? '' : 's'} since the previous run scored low on '${score}' (a failed check, or below the low-score threshold).`,
      details: 'Taken from the scores written on the records of the window.',
      suggested_action: `Open an occurrence and read why '${score}' scored it low.`,
      severity: 'MEDIUM',
      occurrences: records.slice(0, MAX_OCCURRENCES).map(occurrenceOf),
      examples: [],
      count: records.length,
    });
  outliers('latency', figures.medianDurationNs);
  outliers('cost', figures.medianCost);
  return out;
}

/** A record as the prompt shows it (texts already cut to the budget). */
export interface SampleItem {
  record: SelectedRecord;
  input: string;
  output: string;
}

/** Roughly 4 characters a token: how the sample is held within the model's context budget. */
export const CHARS_PER_TOKEN = 4;

/** Texts cut so that the sample stays within `budgetTokens`; items that do not fit are left out. */
export function fitSample(
  items: { record: SelectedRecord; input: string; output: string }[],
  budgetTokens: number,
  perTextChars = 600,
): SampleItem[] {
  let left = budgetTokens * CHARS_PER_TOKEN;
  const out: SampleItem[] = [];
  for (const it of items) {
    const input = cut(it.input, perTextChars);
    const output = cut(it.output, perTextChars);
    const size = input.length + output.length + 200;
    if (size > left) break;
    left -= size;
    out.push({ record: it.record, input, output });
  }
  return out;
}

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

export interface OpenSignalMemo {
  id: string;
  title: string;
  severity: string;
  occurrence_count: number;
}

/** The JSON the model is asked to answer. */
export const SIGNALS_SCHEMA = {
  type: 'object',
  properties: {
    signals: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          title: { type: 'string' },
          observation: { type: 'string' },
          details: { type: 'string' },
          suggested_action: { type: 'string' },
          severity: { type: 'string', enum: [...SEVERITIES] },
          same_as: { type: ['string', 'null'] },
          record_ids: { type: 'array', items: { type: 'string' } },
          examples: {
            type: 'array',
            items: {
              type: 'object',
              properties: { record_id: { type: 'string' }, narrative: { type: 'string' } },
              required: ['record_id', 'narrative'],
            },
          },
        },
        required: ['title', 'observation', 'severity', 'record_ids'],
      },
    },
  },
  required: ['signals'],
} as const;

/** The messages of a run's model step. */
export function signalsPrompt(a: {
  sample: SampleItem[];
  focusOn: string;
  dontFocusOn: string;
  open: OpenSignalMemo[];
  findings: FoundSignal[];
}): { role: 'system' | 'user'; content: string }[] {
  const system = [
    'You review the recent traffic of an LLM application and report problems nobody wrote an evaluation for:',
    'failures, wrong or unhelpful answers, loops, refusals, tool misuse, slow or costly paths.',
    'Answer JSON only: {"signals": [{"title", "observation", "details", "suggested_action",',
    '"severity": "LOW"|"MEDIUM"|"HIGH"|"CRITICAL", "same_as": id of an open signal it repeats or null,',
    '"record_ids": ids of the records below where it occurs, "examples": [{"record_id", "narrative"}]}]}.',
    'Cite only record ids listed below. Report nothing rather than guess.',
  ].join('\n');
  const parts: string[] = [];
  if (a.focusOn) parts.push(`Focus on: ${a.focusOn}`);
  if (a.dontFocusOn) parts.push(`Do not focus on: ${a.dontFocusOn}`);
  if (a.open.length)
    parts.push(
      `Signals still open from earlier runs (answer same_as with the id when you see one again):\n${a.open
        .map((o) => `- ${o.id}: ${o.title} (${o.severity}, ${o.occurrence_count} occurrences)`)
        .join('\n')}`,
    );
  if (a.findings.length)
    parts.push(
      `Found without a model in this window:\n${a.findings.map((f) => `- ${f.title}: ${f.observation}`).join('\n')}`,
    );
  parts.push(
    `Records (${a.sample.length}):\n${a.sample
      .map(
        (s) =>
          `### id=${s.record.id} type=${s.record.type} name=${s.record.name} status=${s.record.status_code ?? '-'} duration_ms=${
            s.record.duration_ns === null ? '-' : Math.round(s.record.duration_ns / 1e6)
          } selected_for=${s.record.reason}\ninput: ${s.input}\noutput: ${s.output}`,
      )
      .join('\n')}`,
  );
  return [
    { role: 'system', content: system },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

export interface ReadAnswer {
  signals: (FoundSignal & { sameAs: string | null })[];
  /** Record ids the model cited that were not in its sample (not believed). */
  dropped: string[];
}

const text = (v: unknown, max: number) => (typeof v === 'string' ? v.slice(0, max) : '');

/**
 * The model's answer as signals. Occurrences and examples citing a record outside the sample are
 * dropped; a signal left without any occurrence is dropped whole. Throws on an answer that is not
 * the JSON asked for.
 */
export function readAnswer(answer: string, sample: SampleItem[]): ReadAnswer {
  const json = JSON.parse(answer.trim().replace(/^```(?:json)?\s*|\s*```$/g, '')) as { signals?: unknown };
  if (!json || !Array.isArray(json.signals)) throw new Error('The answer has no "signals" list');
  const shown = new Map(sample.map((s) => [s.record.id, s.record]));
  const dropped = new Set<string>();
  /** Whether a cited id was shown; the others are noted as dropped. */
  const believed = (id: string) => {
    if (!shown.has(id)) dropped.add(id);
    return shown.has(id);
  };
  const signals: ReadAnswer['signals'] = [];
  for (const raw of json.signals as Record<string, unknown>[]) {
    if (!raw || typeof raw !== 'object') continue;
    const title = text(raw.title, 300).trim();
    if (!title) continue;
    const ids = Array.isArray(raw.record_ids)
      ? raw.record_ids.filter((x): x is string => typeof x === 'string')
      : [];
    const kept = [...new Set(ids)].filter(believed);
    if (!kept.length) continue;
    const examples = (Array.isArray(raw.examples) ? raw.examples : [])
      .filter((e): e is { record_id: string; narrative: unknown } => typeof e?.record_id === 'string')
      .filter((e) => believed(e.record_id))
      .slice(0, 5)
      .map((e) => ({ record_id: e.record_id, narrative: text(e.narrative, 2000) }));
    const severity = SEVERITIES.includes(raw.severity as Severity) ? (raw.severity as Severity) : 'LOW';
    signals.push({
      fingerprint: fingerprintOf(title),
      source: 'model',
      title,
      observation: text(raw.observation, 4000),
      details: text(raw.details, 8000),
      suggested_action: text(raw.suggested_action, 2000),
      severity,
      occurrences: kept.slice(0, MAX_OCCURRENCES).map((id) => occurrenceOf(shown.get(id)!)),
      examples,
      count: kept.length,
      sameAs: typeof raw.same_as === 'string' ? raw.same_as : null,
    });
  }
  return { signals, dropped: [...dropped] };
}
