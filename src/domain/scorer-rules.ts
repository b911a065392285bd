/**
 * Rule scorers: declarative checks computed in code at ingestion (cheap, deterministic, no queue).
 * A rule reads one field of a record (its input, output or a metadata key; latency and cost read the
 * record's metrics) and answers a number (1/0 for a check, a length, milliseconds, dollars).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { RULE_KINDS, type Rule, type ScoreView } from './scorer-types.ts';

export { RULE_KINDS, type Rule };

export type RuleOutcome = { value: number } | { notApplicable: string };

/** The rule's output type as the hosted shapes name it. */
export function ruleOutputType(r: Rule): 'boolean' | 'count' | 'percentage' {
  if (r.rule === 'length' || r.rule === 'latency_ms' || r.rule === 'cost')
    return r.params.min !== undefined || r.params.max !== undefined ? 'boolean' : 'count';
  return 'boolean';
}

const ajv = new Ajv({ allErrors: false, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

/** Checks a rule as sent; answers the problem in words, or null when it is valid. */
export function ruleProblem(r: Rule): string | null {
  if (!RULE_KINDS.includes(r.rule)) return `rule must be one of ${RULE_KINDS.join(', ')}`;
  const usesField = r.rule !== 'latency_ms' && r.rule !== 'cost';
  if (usesField && !/^(input|output|metadata\..+)$/.test(r.field))
    return 'field must be input, output or metadata.<key>';
  const p = r.params;
  if (r.rule === 'regex') {
    if (typeof p.pattern !== 'string' || !p.pattern) return 'params.pattern must be a non-empty string';
    if (p.flags !== undefined && (typeof p.flags !== 'string' || !/^[imsu]*$/.test(p.flags)))
      return 'params.flags may hold only i, m, s and u';
    try {
      new RegExp(p.pattern, (p.flags as string | undefined) ?? '');
    } catch (err) {
      return `params.pattern is not a valid regular expression: ${(err as Error).message}`;
    }
  }
  if (r.rule === 'contains' && (typeof p.value !== 'string' || !p.value))
    return 'params.value must be a non-empty string';
  if (r.rule === 'json_schema') {
    if (typeof p.schema !== 'object' || p.schema === null || Array.isArray(p.schema))
      return 'params.schema must be a JSON Schema object';
    try {
      ajv.compile(p.schema as object);
    } catch (err) {
      return `params.schema is not a valid JSON Schema: ${(err as Error).message}`;
    }
  }
  for (const k of ['min', 'max'] as const)
    if (p[k] !== undefined && (typeof p[k] !== 'number' || !Number.isFinite(p[k])))
      return `params.${k} must be a number`;
  return null;
}

/** The text a rule reads: the field's flattened text, or a metadata value (null when absent). */
function fieldText(v: ScoreView, field: string): string | null {
  if (field === 'input') return v.input;
  if (field === 'output') return v.output;
  const val = v.metadata[field.slice('metadata.'.length)];
  return val === undefined || val === null ? null : String(val);
}

function within(n: number, p: Record<string, unknown>): number {
  if (p.min === undefined && p.max === undefined) return n;
  const ok =
    (p.min === undefined || n >= (p.min as number)) && (p.max === undefined || n <= (p.max as number));
  return ok ? 1 : 0;
}

/** A check's score: 1 when it holds (0 when `negate`). Not a closure: ingestion calls this per row. */
function check(r: Rule, b: boolean): RuleOutcome {
  return { value: b !== r.negate ? 1 : 0 };
}

/** A rule's score of one record. */
export function evaluateRule(r: Rule, v: ScoreView): RuleOutcome {
  const p = r.params;
  if (r.rule === 'latency_ms') {
    if (v.durationNs === null) return { notApplicable: 'the record has no duration' };
    return { value: within(v.durationNs / 1e6, p) };
  }
  if (r.rule === 'cost') {
    if (v.cost === null) return { notApplicable: 'the record has no cost' };
    return { value: within(v.cost, p) };
  }
  const text = fieldText(v, r.field);
  if (text === null) return { notApplicable: `the record has no ${r.field}` };
  switch (r.rule) {
    case 'regex':
      return check(r, new RegExp(p.pattern as string, (p.flags as string | undefined) ?? '').test(text));
    case 'contains':
      return check(
        r,
        p.case_sensitive === false
          ? text.toLowerCase().includes((p.value as string).toLowerCase())
          : text.includes(p.value as string),
      );
    case 'equals_ground_truth':
      if (v.groundTruth === null) return { notApplicable: 'the record has no ground truth' };
      return check(r, text.trim() === v.groundTruth.trim());
    case 'json_valid':
      return check(r, parses(text).ok);
    case 'json_schema': {
      const parsed = parses(text);
      if (!parsed.ok) return check(r, false);
      const schema = p.schema as object;
      let validate = compiled.get(schema);
      if (!validate) {
        validate = ajv.compile(schema);
        compiled.set(schema, validate);
      }
      return check(r, validate(parsed.value) as boolean);
    }
    case 'length':
      return { value: within([...text].length, p) };
  }
  return { notApplicable: `unknown rule ${r.rule}` };
}

function parses(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}
