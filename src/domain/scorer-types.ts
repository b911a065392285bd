/**
 * Scorers as the hosted API shapes them (design/evaluations.md §1.1, §1.2), the parts Spanbase's
 * scoring reads.
 */
export const RULE_KINDS = [
  'regex',
  'contains',
  'equals_ground_truth',
  'json_valid',
  'json_schema',
  'length',
  'latency_ms',
  'cost',
] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

export interface Rule {
  rule: RuleKind;
  /** `input`, `output` or `metadata.<key>` (ignored by latency_ms and cost). */
  field: string;
  /** regex: pattern, flags; contains: value, case_sensitive; json_schema: schema; length, latency_ms, cost: min, max. */
  params: Record<string, unknown>;
  /** A check's 1 becomes 0 and its 0 becomes 1. */
  negate: boolean;
}

/** What scorers read of a record. */
export interface ScoreView {
  id: string;
  type: string;
  name: string;
  input: string | null;
  output: string | null;
  groundTruth: string | null;
  metadata: Record<string, unknown>;
  durationNs: number | null;
  cost: number | null;
}

export const OUTPUT_TYPES = [
  'boolean',
  'categorical',
  'count',
  'discrete',
  'freeform',
  'percentage',
  'multilabel',
] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];

export const SCORER_TYPES = ['llm', 'code', 'luna', 'preset', 'rule'] as const;
export type ScorerType = (typeof SCORER_TYPES)[number];

/** The hosted NodeType values a scorer may score. */
export const NODE_TYPES = [
  'chain',
  'chat',
  'llm',
  'retriever',
  'tool',
  'agent',
  'workflow',
  'trace',
  'session',
] as const;

export interface FewShotExample {
  generation_prompt_and_response: string;
  evaluating_response: string;
}

export interface ChainPollTemplate {
  metric_system_prompt?: string | null;
  metric_description?: string | null;
  value_field_name?: string;
  explanation_field_name?: string;
  template: string;
  metric_few_shot_examples?: FewShotExample[];
  response_schema?: Record<string, unknown> | null;
}

/** What an LLM judge version holds. */
export interface LlmVersionConfig {
  model_name: string | null;
  num_judges: number;
  cot_enabled: boolean;
  output_type: OutputType;
  input_type: string | null;
  scoreable_node_types: string[] | null;
  instructions: string | null;
  user_prompt: string | null;
  chain_poll_template: ChainPollTemplate | null;
}

export type VersionConfig = ({ kind: 'llm' } & LlmVersionConfig) | ({ kind: 'rule' } & Rule);

export type ScorerFilter =
  | { name: 'node_name'; operator: 'eq' | 'ne' | 'contains'; value: string; case_sensitive?: boolean }
  | { name: 'metadata'; key: string; operator: 'one_of' | 'not_in' | 'eq' | 'ne'; value: string | string[] };

export interface SegmentFilter {
  filter: ScorerFilter | null;
  sample_rate: number;
  /** The rate applies to LLM scorers only (rules and code scorers score every record). */
  llm_scorers: boolean;
}

/** A scorer as a run uses it: the version to apply, where, and how. */
export interface ActiveScorer {
  id: string;
  name: string;
  versionId: string;
  version: number;
  /** rule and code run inline at ingestion; llm goes to the job queue. */
  kind: 'rule' | 'code' | 'llm';
  rule?: Rule;
  code?: 'bleu' | 'rouge';
  llm?: LlmVersionConfig;
  nodeTypes: string[];
  filters: ScorerFilter[];
}

export interface RunScoring {
  runId: string;
  scorers: ActiveScorer[];
  segments: SegmentFilter[];
  pausedReason: string | null;
  /** The integration its LLM judges call (null: none was readable by whoever saved the settings). */
  integrationId: string | null;
}
