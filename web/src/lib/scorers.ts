/** How the console writes a scorer's definition in a line (the scorers page, a run's scoring page). */
import type { Scorer } from './api-types.ts';

type RuleDef = { rule: string; field: string; params: Record<string, unknown>; negate: boolean };

const bounds = (p: Record<string, unknown>, unit: string) => {
  const { min, max } = p as { min?: number; max?: number };
  if (min === undefined && max === undefined) return `the measure (${unit})`;
  if (min !== undefined && max !== undefined) return `1 when ${min}–${max} ${unit}, else 0`;
  return min !== undefined ? `1 when ≥ ${min} ${unit}, else 0` : `1 when ≤ ${max} ${unit}, else 0`;
};

/** A rule in words: "output matches /^\d+$/i", "not: output contains "sorry"". */
export function ruleText(r: RuleDef): string {
  const p = r.params ?? {};
  const not = r.negate ? 'not: ' : '';
  switch (r.rule) {
    case 'regex':
      return `${not}${r.field} matches /${String(p.pattern ?? '')}/${String(p.flags ?? '')}`;
    case 'contains':
      return `${not}${r.field} contains "${String(p.value ?? '')}"${p.case_sensitive === false ? ' (any case)' : ''}`;
    case 'equals_ground_truth':
      return `${not}${r.field} equals the ground truth`;
    case 'json_valid':
      return `${not}${r.field} is valid JSON`;
    case 'json_schema':
      return `${not}${r.field} matches a JSON Schema ${JSON.stringify(p.schema ?? {})}`;
    case 'length':
      return `length of ${r.field}: ${bounds(p, 'characters')}`;
    case 'latency_ms':
      return `latency: ${bounds(p, 'ms')}`;
    case 'cost':
      return `cost: ${bounds(p, 'USD')}`;
  }
  return `${r.rule} on ${r.field}`;
}

/** A scorer's definition in a line: a rule's check, a judge's model and votes, a preset's kind. */
export function scorerDefinition(s: Scorer): string {
  const v = s.default_version ?? s.latest_version;
  if (s.scorer_type === 'rule') return v?.rule ? ruleText(v.rule as RuleDef) : 'no version yet';
  if (s.scorer_type === 'llm') {
    if (!v) return 'no version yet';
    const judges = v.num_judges ?? 1;
    return `${judges} judge${judges === 1 ? '' : 's'}${v.model_name ? `, ${v.model_name}` : ''}${v.cot_enabled ? ', chain of thought' : ''}`;
  }
  return '';
}
