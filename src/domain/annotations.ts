/**
 * Human feedback without I/O: annotation templates (what reviewers rate and how), the values an
 * annotation may take for each template type, the aggregates kept per record and template, and the
 * `annotations` / `annotation_aggregates` fields records carry.
 */
import type { ErrorItem, Loc } from './errors.ts';
import { textProblem } from './text.ts';
import { toIso } from './time.ts';

export const TEMPLATE_TYPES = ['thumbs', 'stars', 'score', 'categorical', 'text', 'tags'] as const;
export type TemplateType = (typeof TEMPLATE_TYPES)[number];

/** Who gave an annotation: a reviewer (a Spanbase user) or an end user of the application. */
export const SOURCES = ['reviewer', 'end_user'] as const;
export type AnnotationSource = (typeof SOURCES)[number];

export const MAX_STARS = 5;
export const MAX_OPTIONS = 100;
export const MAX_OPTION_LENGTH = 255;
export const MAX_TEXT_LENGTH = 10_000;
export const MAX_TAGS = 100;

/** What a template's type needs besides its name: the score's range, the categorical options. */
export interface TemplateConfig {
  min?: number;
  max?: number;
  options?: string[];
  multiple?: boolean;
}

export interface Template {
  id: string;
  type: TemplateType;
  config: TemplateConfig;
}

/** The settings of a new template, checked for its type; faults are added to `faults`. */
export function templateConfig(
  type: TemplateType,
  body: { min?: number | null; max?: number | null; options?: string[] | null; multiple?: boolean | null },
  faults: ErrorItem[],
): TemplateConfig {
  const fault = (loc: Loc, msg: string, input?: unknown) =>
    faults.push({
      loc,
      msg: `Value error, ${msg}`,
      type: 'value_error',
      ...(input === undefined ? {} : { input }),
    });
  const given = (k: 'min' | 'max' | 'options' | 'multiple') => body[k] !== undefined && body[k] !== null;
  for (const k of ['min', 'max'] as const)
    if (type !== 'score' && given(k)) fault(['body', k], `${k} applies to score templates only`, body[k]);
  for (const k of ['options', 'multiple'] as const)
    if (type !== 'categorical' && given(k))
      fault(['body', k], `${k} applies to categorical templates only`, body[k]);
  if (type === 'score') {
    if (!given('min')) fault(['body', 'min'], 'a score template needs min');
    if (!given('max')) fault(['body', 'max'], 'a score template needs max');
    if (given('min') && given('max') && (body.min as number) >= (body.max as number))
      fault(['body', 'max'], 'max must be greater than min', body.max);
    return { min: body.min ?? 0, max: body.max ?? 0 };
  }
  if (type === 'categorical') {
    const options = body.options ?? [];
    if (!given('options') || options.length === 0)
      fault(['body', 'options'], 'a categorical template needs at least one option');
    const seen = new Set<string>();
    options.forEach((o, i) => {
      const problem = textProblem(o);
      if (problem) fault(['body', 'options', i], problem, o);
      else if (seen.has(o)) fault(['body', 'options', i], `the option '${o}' is given twice`, o);
      seen.add(o);
    });
    return { options, multiple: body.multiple ?? false };
  }
  return {};
}

/** An annotation's value as stored: the JSON value, and the parts filters and aggregates read. */
export interface StoredValue {
  value: unknown;
  /** thumbs (1 up, 0 down), stars, score. */
  num: number | null;
  /** text, and the choice of a single-choice categorical. */
  text: string | null;
  /** categorical choices and tags. */
  items: string[] | null;
}

const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * The value checked against its template, or null with one 422 item at `loc` added to `faults`
 * (the item names what the template takes).
 */
export function checkValue(t: Template, value: unknown, loc: Loc, faults: ErrorItem[]): StoredValue | null {
  const fail = (type: string, msg: string, at: Loc = loc): null => {
    faults.push({ loc: at, msg, type, input: value });
    return null;
  };
  const list = (max: number, allowed: Set<string> | null): string[] | null => {
    if (!Array.isArray(value)) return fail('list_type', 'Input should be a valid list');
    if (value.length > max) return fail('too_long', `List should have at most ${max} items`);
    const seen = new Set<string>();
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v !== 'string') return fail('string_type', 'Input should be a valid string', [...loc, i]);
      if (allowed && !allowed.has(v))
        return fail('value_error', `Value error, '${v}' is not an option of this template`, [...loc, i]);
      if (!allowed && (v.length === 0 || v.length > MAX_OPTION_LENGTH))
        return fail('value_error', `Value error, a tag has 1 to ${MAX_OPTION_LENGTH} characters`, [
          ...loc,
          i,
        ]);
      const problem = textProblem(v);
      if (problem) return fail('value_error', `Value error, ${problem}`, [...loc, i]);
      if (seen.has(v)) return fail('value_error', `Value error, '${v}' is given twice`, [...loc, i]);
      seen.add(v);
    }
    return value as string[];
  };
  switch (t.type) {
    case 'thumbs':
      if (typeof value !== 'boolean')
        return fail('bool_type', 'Input should be a valid boolean (true: thumbs up)');
      return { value, num: value ? 1 : 0, text: null, items: null };
    case 'stars':
      if (!isInteger(value) || value < 1 || value > MAX_STARS)
        return fail('value_error', `Value error, a stars annotation is an integer from 1 to ${MAX_STARS}`);
      return { value, num: value, text: null, items: null };
    case 'score': {
      const { min, max } = t.config as { min: number; max: number };
      if (!isNumber(value)) return fail('float_type', 'Input should be a valid number');
      if (value < min || value > max)
        return fail('value_error', `Value error, this score is a number from ${min} to ${max}`);
      return { value, num: value, text: null, items: null };
    }
    case 'categorical': {
      const options = new Set(t.config.options ?? []);
      if (t.config.multiple) {
        const items = list(options.size, options);
        if (!items) return null;
        if (items.length === 0) return fail('too_short', 'List should have at least 1 item');
        return { value: items, num: null, text: null, items };
      }
      if (typeof value !== 'string')
        return fail('string_type', 'Input should be a valid string (one option)');
      if (!options.has(value))
        return fail('value_error', `Value error, '${value}' is not an option of this template`);
      return { value, num: null, text: value, items: [value] };
    }
    case 'text': {
      if (typeof value !== 'string') return fail('string_type', 'Input should be a valid string');
      if (value.length > MAX_TEXT_LENGTH)
        return fail('string_too_long', `String should have at most ${MAX_TEXT_LENGTH} characters`);
      const problem = textProblem(value);
      if (problem) return fail('value_error', `Value error, ${problem}`);
      return { value, num: null, text: value, items: null };
    }
    case 'tags': {
      const items = list(MAX_TAGS, null);
      return items && { value: items, num: null, text: null, items };
    }
  }
}

/** The aggregate of one template's annotations on one record from one source (kept on write). */
export interface Aggregate {
  n: number;
  /** Sum of the numbers (thumbs: the up votes); null for templates without numbers. */
  sum: number | null;
  min: number | null;
  max: number | null;
  /** Choices and tags: how many annotations hold each. */
  counts: Record<string, number> | null;
}

/** The aggregate of `values` (the stored values of one record, template and source). */
export function aggregate(type: TemplateType, values: readonly StoredValue[]): Aggregate {
  const numeric = type === 'thumbs' || type === 'stars' || type === 'score';
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  const counts: Record<string, number> = {};
  for (const v of values) {
    if (numeric && v.num !== null) {
      sum += v.num;
      min = Math.min(min, v.num);
      max = Math.max(max, v.num);
    }
    for (const item of v.items ?? []) counts[item] = (Object.hasOwn(counts, item) ? counts[item] : 0) + 1;
  }
  const any = values.length > 0;
  return {
    n: values.length,
    sum: numeric && any ? sum : null,
    min: numeric && any ? min : null,
    max: numeric && any ? max : null,
    counts: type === 'categorical' || type === 'tags' ? sortedCounts(counts) : null,
  };
}

/** Counts by key in code point order, so that every store renders them alike. */
function sortedCounts(counts: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(counts).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) out[k] = counts[k];
  return out;
}

/** An aggregate as records show it, by template type. */
export function aggregateJson(type: TemplateType, a: Aggregate): Record<string, unknown> {
  switch (type) {
    case 'thumbs':
      return { count: a.n, up: a.sum ?? 0, down: a.n - (a.sum ?? 0) };
    case 'stars':
    case 'score':
      return { count: a.n, average: a.n ? (a.sum ?? 0) / a.n : null, min: a.min, max: a.max };
    case 'categorical':
    case 'tags':
      return { count: a.n, counts: a.counts ?? {} };
    case 'text':
      return { count: a.n };
  }
}

/** The key of an annotation's author among a record's annotations of one template. */
export function authorKey(source: AnnotationSource, userId: string, externalUserId: string | null): string {
  return source === 'reviewer' ? userId : `end_user:${externalUserId}`;
}

/** One annotation as read back with its record. */
export interface AnnotationView {
  template_id: string;
  author: string;
  source: AnnotationSource;
  user_id: string;
  external_user_id: string | null;
  value: unknown;
  explanation: string | null;
  created_at: number;
  updated_at: number;
}

/** One kept aggregate as read back with its record. */
export interface AggregateView {
  template_id: string;
  template_type: TemplateType;
  source: AnnotationSource;
  aggregate: Aggregate;
}

/** What a record shows of its feedback: its annotations, their aggregates, its queues. */
export interface RecordFeedback {
  annotations: AnnotationView[];
  aggregates: AggregateView[];
  queueIds: string[];
}

export const NO_FEEDBACK: RecordFeedback = { annotations: [], aggregates: [], queueIds: [] };

const byKey = <T>(a: [string, T], b: [string, T]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * The record fields of its feedback: `annotations` by template id and author (a reviewer's user id,
 * or `end_user:<external id>`), `annotation_aggregates` by template id and source, and
 * `annotation_queue_ids`. Entries go in code point order of their keys, whatever order they came in.
 */
export function feedbackFields(f: RecordFeedback) {
  const annotations: Record<string, Record<string, unknown>> = {};
  const sorted = [...f.annotations].sort(
    (a, b) => byKey([a.template_id, 0], [b.template_id, 0]) || byKey([a.author, 0], [b.author, 0]),
  );
  for (const a of sorted) {
    annotations[a.template_id] ??= {};
    annotations[a.template_id][a.author] = {
      value: a.value,
      explanation: a.explanation,
      source: a.source,
      user_id: a.user_id,
      external_user_id: a.external_user_id,
      created_at: toIso(Number(a.created_at)),
      updated_at: toIso(Number(a.updated_at)),
    };
  }
  const aggregates: Record<string, Record<string, unknown>> = {};
  const aggs = [...f.aggregates].sort(
    (a, b) => byKey([a.template_id, 0], [b.template_id, 0]) || byKey([a.source, 0], [b.source, 0]),
  );
  for (const a of aggs) {
    aggregates[a.template_id] ??= { type: a.template_type };
    aggregates[a.template_id][a.source] = aggregateJson(a.template_type, a.aggregate);
  }
  return {
    annotations,
    annotation_aggregates: aggregates,
    annotation_queue_ids: [...f.queueIds].sort(),
  };
}
