/**
 * LLM judges, the pure part: the messages a chain-poll template makes for one record, each judge's
 * answer parsed for its output type, and the judges' votes combined (design/evaluations.md §4.4.3).
 *
 * - A placeholder that resolves to nothing is an error naming its path (JudgeTemplateError), never an
 *   empty string: a judge asked about an empty output answers confidently and wrongly.
 * - A judge whose answer cannot be parsed abstains; the abstention is counted and shown.
 * - boolean: the share of yes votes; count, discrete, percentage: the mean; categorical: the majority
 *   (ties go to the label met first); freeform and multilabel: the first parsed answer, the labels
 *   more than half the judges chose.
 */
import { renderTemplate, templateVariables } from './templates.ts';
import type { ChainPollTemplate, LlmVersionConfig, OutputType, ScoreView } from './scorer-types.ts';

export class JudgeTemplateError extends Error {}

export interface JudgeMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One judge's parsed answer: a value, or why it abstained. */
export interface Vote {
  value: number | string | string[] | null;
  explanation: string | null;
  /** Set when the judge abstained (its answer could not be read as the output type). */
  abstained: string | null;
}

export interface Verdict {
  /** The combined value; null when every judge abstained. */
  value: number | string | string[] | null;
  explanation: string | null;
  abstained: number;
}

const DEFAULT_VALUE_FIELD = 'rating';
const DEFAULT_EXPLANATION_FIELD = 'explanation';
/** What a version with only a user prompt (the official client's custom metric) is shown of a record. */
const DEFAULT_RECORD_PART = '\n\nInput:\n{{input}}\n\nOutput:\n{{output}}';

export function fieldsOf(t: ChainPollTemplate | null) {
  return {
    value: t?.value_field_name || DEFAULT_VALUE_FIELD,
    explanation: t?.explanation_field_name || DEFAULT_EXPLANATION_FIELD,
  };
}

/** The labels a categorical judge may answer, from the template's response schema, if it gives them. */
export function categoriesOf(t: ChainPollTemplate | null): string[] | null {
  const schema = t?.response_schema as Record<string, any> | null | undefined;
  if (!schema) return null;
  const field = fieldsOf(t).value;
  const list = schema.properties?.[field]?.enum ?? schema.enum ?? schema.properties?.[field]?.items?.enum;
  return Array.isArray(list) && list.every((x) => typeof x === 'string') ? list : null;
}

/** The template a version judges with (a user prompt without placeholders is shown the record). */
export function templateOf(c: LlmVersionConfig): string {
  if (c.chain_poll_template?.template) return c.chain_poll_template.template;
  const prompt = c.user_prompt ?? c.instructions ?? '';
  return templateVariables(prompt).length ? prompt : prompt + DEFAULT_RECORD_PART;
}

function answerInstruction(c: LlmVersionConfig): string {
  const f = fieldsOf(c.chain_poll_template);
  const cats = categoriesOf(c.chain_poll_template);
  const what: Record<OutputType, string> = {
    boolean: 'true or false',
    categorical: cats ? `exactly one of ${cats.map((x) => JSON.stringify(x)).join(', ')}` : 'one short label',
    count: 'a whole number, 0 or more',
    discrete: 'a whole number',
    percentage: 'a number from 0 to 1',
    freeform: 'a short text',
    multilabel: cats
      ? `a list of the labels that apply, from ${cats.map((x) => JSON.stringify(x)).join(', ')}`
      : 'a list of short labels',
  };
  const shape = c.cot_enabled
    ? `{"${f.explanation}": "<your reasoning, step by step, in a few sentences>", "${f.value}": <value>}`
    : `{"${f.value}": <value>}`;
  return `${c.cot_enabled ? 'Think step by step before you decide. ' : ''}Answer with one JSON object and nothing else: ${shape}. The ${f.value} is ${what[c.output_type]}.`;
}

/** The variables a judge template may use for a record. */
export function variablesOf(v: ScoreView): Record<string, unknown> {
  return {
    input: v.input,
    output: v.output,
    ground_truth: v.groundTruth,
    metadata: Object.keys(v.metadata).length ? v.metadata : null,
    name: v.name,
    type: v.type,
    // The hosted examples' names.
    query: v.input,
    response: v.output,
  };
}

/** The messages every judge of a version is sent for one record (one call per judge). */
export function judgeMessages(c: LlmVersionConfig, v: ScoreView): JudgeMessage[] {
  const t = c.chain_poll_template;
  const rendered = renderTemplate(templateOf(c), variablesOf(v));
  if (rendered.missing.length)
    throw new JudgeTemplateError(
      `The template's placeholder ${rendered.missing.map((m) => `{{${m}}}`).join(', ')} resolves to nothing for this record`,
    );
  const system = [t?.metric_system_prompt || t?.metric_description || defaultSystem(c), answerInstruction(c)]
    .filter(Boolean)
    .join('\n\n');
  const out: JudgeMessage[] = [{ role: 'system', content: system }];
  for (const ex of t?.metric_few_shot_examples ?? []) {
    out.push({ role: 'user', content: ex.generation_prompt_and_response });
    out.push({ role: 'assistant', content: ex.evaluating_response });
  }
  out.push({ role: 'user', content: rendered.text });
  return out;
}

function defaultSystem(c: LlmVersionConfig): string {
  return c.chain_poll_template?.template || c.user_prompt
    ? 'You are a careful evaluator of an AI application. Judge the record below as the instructions ask.'
    : '';
}

/** The JSON object of an answer: the whole text, a fenced block, or the outermost braces. */
function jsonOf(text: string): Record<string, unknown> | null {
  const tries = [text.trim()];
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  if (fenced) tries.push(fenced[1].trim());
  const a = text.indexOf('{');
  const b = text.lastIndexOf('}');
  if (a >= 0 && b > a) tries.push(text.slice(a, b + 1));
  for (const t of tries) {
    try {
      const v = JSON.parse(t);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v;
    } catch {}
  }
  return null;
}

function numberOf(x: unknown): number | null {
  if (typeof x === 'number' && Number.isFinite(x)) return x;
  if (typeof x === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(x)) return Number(x);
  return null;
}

/** One judge's answer read as the version's output type, or its abstention with the reason. */
export function parseVote(c: LlmVersionConfig, text: string): Vote {
  const f = fieldsOf(c.chain_poll_template);
  const obj = jsonOf(text);
  const abstain = (why: string): Vote => ({ value: null, explanation: null, abstained: why });
  if (!obj) return abstain('the answer is not a JSON object');
  if (!(f.value in obj)) return abstain(`the answer has no "${f.value}" field`);
  const raw = obj[f.value];
  const explanation = typeof obj[f.explanation] === 'string' ? (obj[f.explanation] as string) : null;
  const ok = (value: Vote['value']): Vote => ({ value, explanation, abstained: null });
  const cats = categoriesOf(c.chain_poll_template);
  switch (c.output_type) {
    case 'boolean': {
      if (raw === true || raw === 1 || (typeof raw === 'string' && /^(true|yes|1)$/i.test(raw.trim())))
        return ok(1);
      if (raw === false || raw === 0 || (typeof raw === 'string' && /^(false|no|0)$/i.test(raw.trim())))
        return ok(0);
      return abstain(`"${f.value}" is not true or false`);
    }
    case 'count':
    case 'discrete': {
      const n = numberOf(raw);
      if (n === null || !Number.isInteger(n)) return abstain(`"${f.value}" is not a whole number`);
      if (c.output_type === 'count' && n < 0) return abstain(`"${f.value}" is a negative count`);
      return ok(n);
    }
    case 'percentage': {
      let n = numberOf(raw);
      if (n === null && typeof raw === 'string' && /^\s*\d+(\.\d+)?\s*%\s*$/.test(raw))
        n = Number.parseFloat(raw) / 100;
      if (n === null || n < 0 || n > 1) return abstain(`"${f.value}" is not a number from 0 to 1`);
      return ok(n);
    }
    case 'categorical': {
      if (typeof raw !== 'string' || !raw.trim()) return abstain(`"${f.value}" is not a label`);
      if (!cats) return ok(raw.trim());
      const hit = cats.find((x) => x.toLowerCase() === raw.trim().toLowerCase());
      return hit ? ok(hit) : abstain(`"${raw}" is not one of the labels`);
    }
    case 'multilabel': {
      if (!Array.isArray(raw) || !raw.every((x) => typeof x === 'string'))
        return abstain(`"${f.value}" is not a list of labels`);
      const labels = cats ? raw.map((x) => cats.find((k) => k.toLowerCase() === x.toLowerCase())) : raw;
      if (labels.some((x) => x === undefined)) return abstain(`"${f.value}" has a label not in the list`);
      return ok([...new Set(labels as string[])]);
    }
    default: {
      if (typeof raw !== 'string' || !raw.trim()) return abstain(`"${f.value}" is empty`);
      return ok(raw.trim());
    }
  }
}

/** The judges' votes combined by the rule of the output type, with a majority judge's explanation. */
export function combine(type: OutputType, votes: Vote[]): Verdict {
  const cast = votes.filter((v) => v.abstained === null);
  const abstained = votes.length - cast.length;
  if (!cast.length) return { value: null, explanation: null, abstained };
  let value: Verdict['value'];
  let voice: Vote;
  if (type === 'boolean' || type === 'count' || type === 'discrete' || type === 'percentage') {
    const nums = cast.map((v) => v.value as number);
    value = nums.reduce((a, b) => a + b, 0) / nums.length;
    // The explanation of the judge nearest the result (for a boolean: one of the majority).
    const target = type === 'boolean' ? (value >= 0.5 ? 1 : 0) : value;
    voice = cast.reduce((best, v) =>
      Math.abs((v.value as number) - target) < Math.abs((best.value as number) - target) ? v : best,
    );
  } else if (type === 'categorical') {
    const counts = new Map<string, number>();
    for (const v of cast) counts.set(v.value as string, (counts.get(v.value as string) ?? 0) + 1);
    let top = cast[0].value as string;
    for (const [k, n] of counts) if (n > (counts.get(top) ?? 0)) top = k;
    value = top;
    voice = cast.find((v) => v.value === top) as Vote;
  } else if (type === 'multilabel') {
    const counts = new Map<string, number>();
    for (const v of cast) for (const l of v.value as string[]) counts.set(l, (counts.get(l) ?? 0) + 1);
    value = [...counts].filter(([, n]) => n * 2 > cast.length).map(([l]) => l);
    voice = cast[0];
  } else {
    value = cast[0].value;
    voice = cast[0];
  }
  return { value, explanation: voice.explanation, abstained };
}

/** A value as the records' `metrics` hold it (numbers only; labels and text live in metric_info). */
export function metricValue(v: Verdict['value']): number | null {
  return typeof v === 'number' ? v : null;
}
