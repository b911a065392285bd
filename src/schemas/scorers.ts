import { type TSchema, Type } from '@sinclair/typebox';
import { RULE_KINDS } from '../domain/scorer-rules.ts';
import { OUTPUT_TYPES, SCORER_TYPES } from '../domain/scorer-types.ts';
import { DateTime, Nullable, Uuid } from './common.ts';

const enumOf = (values: readonly string[]) => Type.Unsafe<string>({ type: 'string', enum: [...values] });
const Opt = <T extends TSchema>(t: T) => Type.Optional(Nullable(t));
const Any = Type.Unknown();
const NodeTypes = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 16 });

export const ScorerParams = Type.Object({ id: Uuid });

export const NodeNameFilter = Type.Object(
  {
    name: Type.Literal('node_name'),
    filter_type: Type.Optional(Type.String()),
    operator: enumOf(['eq', 'ne', 'contains']),
    value: Type.String({ maxLength: 1024 }),
    case_sensitive: Type.Optional(Type.Boolean()),
  },
  { title: 'NodeNameFilter' },
);
export const MetadataFilter = Type.Object(
  {
    name: Type.Literal('metadata'),
    filter_type: Type.Optional(Type.String()),
    key: Type.String({ minLength: 1, maxLength: 256 }),
    operator: enumOf(['one_of', 'not_in', 'eq', 'ne']),
    value: Type.Union([
      Type.String({ maxLength: 1024 }),
      Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 100 }),
    ]),
  },
  { title: 'MetadataFilter' },
);
export const ScorerFilter = Type.Union([NodeNameFilter, MetadataFilter]);

export const ChainPollTemplate = Type.Object(
  {
    metric_system_prompt: Opt(Type.String({ maxLength: 20_000 })),
    metric_description: Opt(Type.String({ maxLength: 5_000 })),
    value_field_name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    explanation_field_name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    template: Type.String({ minLength: 1, maxLength: 50_000 }),
    metric_few_shot_examples: Type.Optional(
      Type.Array(
        Type.Object({
          generation_prompt_and_response: Type.String({ maxLength: 20_000 }),
          evaluating_response: Type.String({ maxLength: 20_000 }),
        }),
        { maxItems: 20 },
      ),
    ),
    response_schema: Opt(Type.Record(Type.String(), Any)),
  },
  { title: 'ChainPollTemplate' },
);

export const ScorerDefaults = Type.Object(
  {
    model_name: Opt(Type.String({ maxLength: 255 })),
    num_judges: Opt(Type.Integer({ minimum: 1, maximum: 10 })),
    filters: Opt(Type.Array(ScorerFilter, { maxItems: 20 })),
    scoreable_node_types: Opt(NodeTypes),
    cot_enabled: Opt(Type.Boolean()),
    output_type: Opt(enumOf(OUTPUT_TYPES)),
    input_type: Opt(Type.String({ maxLength: 64 })),
  },
  { title: 'ScorerDefaults' },
);

export const CreateScorer = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    description: Opt(Type.String({ maxLength: 5_000 })),
    tags: Opt(Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 50 })),
    defaults: Opt(ScorerDefaults),
    scorer_type: enumOf(SCORER_TYPES),
    model_type: Opt(Type.String()),
    ground_truth: Opt(Type.Boolean()),
    default_version_id: Opt(Type.String()),
    user_prompt: Opt(Type.String({ maxLength: 50_000 })),
    scoreable_node_types: Opt(NodeTypes),
    output_type: Opt(enumOf(OUTPUT_TYPES)),
    input_type: Opt(Type.String({ maxLength: 64 })),
    required_scorers: Opt(Type.Array(Type.String(), { maxItems: 50 })),
  },
  { title: 'CreateScorerRequest' },
);

export const UpdateScorer = Type.Object(
  {
    name: Opt(Type.String({ minLength: 1, maxLength: 255 })),
    description: Opt(Type.String({ maxLength: 5_000 })),
    tags: Opt(Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 50 })),
    defaults: Opt(ScorerDefaults),
    scoreable_node_types: Opt(NodeTypes),
    output_type: Opt(enumOf(OUTPUT_TYPES)),
    input_type: Opt(Type.String({ maxLength: 64 })),
  },
  { title: 'UpdateScorerRequest' },
);

export const CreateLlmVersion = Type.Object(
  {
    model_name: Opt(Type.String({ maxLength: 255 })),
    num_judges: Opt(Type.Integer({ minimum: 1, maximum: 10 })),
    scoreable_node_types: Opt(NodeTypes),
    cot_enabled: Opt(Type.Boolean()),
    output_type: Opt(enumOf(OUTPUT_TYPES)),
    input_type: Opt(Type.String({ maxLength: 64 })),
    instructions: Opt(Type.String({ maxLength: 50_000 })),
    chain_poll_template: Opt(ChainPollTemplate),
    user_prompt: Opt(Type.String({ maxLength: 50_000 })),
  },
  { title: 'CreateLLMScorerVersionRequest' },
);

export const CreateRuleVersion = Type.Object(
  {
    rule: enumOf(RULE_KINDS),
    field: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    params: Type.Optional(Type.Record(Type.String(), Any)),
    negate: Type.Optional(Type.Boolean()),
    scoreable_node_types: Opt(NodeTypes),
  },
  {
    title: 'CreateRuleScorerVersionRequest',
    description:
      'A rule scorer version (Spanbase extension). `field`: input, output or metadata.<key> (latency_ms and cost read the record). `params`: regex {pattern, flags}, contains {value, case_sensitive}, json_schema {schema}, length/latency_ms/cost {min, max} (with bounds the score is 1 inside them, else 0; without, the number itself).',
  },
);

export const ScorerVersion = Type.Object(
  {
    id: Uuid,
    version: Type.Integer(),
    scorer_id: Uuid,
    model_name: Opt(Type.String()),
    num_judges: Opt(Type.Integer()),
    scoreable_node_types: Opt(Type.Array(Type.String())),
    cot_enabled: Opt(Type.Boolean()),
    output_type: Opt(Type.String()),
    input_type: Opt(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
    chain_poll_template: Opt(ChainPollTemplate),
    user_prompt: Opt(Type.String()),
    instructions: Opt(Type.String()),
    rule: Opt(
      Type.Object({
        rule: Type.String(),
        field: Type.String(),
        params: Type.Record(Type.String(), Any),
        negate: Type.Boolean(),
      }),
    ),
    allowed_model: Opt(Type.Boolean()),
  },
  { title: 'BaseScorerVersionResponse' },
);

export const Scorer = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    scorer_type: Type.String(),
    defaults: Opt(ScorerDefaults),
    latest_version: Opt(ScorerVersion),
    default_version_id: Opt(Uuid),
    default_version: Opt(ScorerVersion),
    scoreable_node_types: Opt(Type.Array(Type.String())),
    output_type: Opt(Type.String()),
    input_type: Opt(Type.String()),
    label: Opt(Type.String()),
    tags: Type.Array(Type.String()),
    description: Opt(Type.String()),
    created_by: Opt(Type.String()),
    created_at: Opt(DateTime),
    updated_at: Opt(DateTime),
  },
  { title: 'ScorerResponse' },
);

export const ListScorers = Type.Object(
  {
    filters: Type.Optional(
      Type.Array(
        Type.Object({
          name: enumOf([
            'name',
            'scorer_type',
            'tags',
            'model_type',
            'creator',
            'created_at',
            'updated_at',
            'label',
          ]),
          operator: Type.Optional(Type.String({ maxLength: 16 })),
          value: Type.Union([
            Type.String({ maxLength: 1024 }),
            Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 500 }),
          ]),
          case_sensitive: Type.Optional(Type.Boolean()),
        }),
        { maxItems: 20 },
      ),
    ),
    sort: Type.Optional(
      Nullable(Type.Object({ name: Type.String(), ascending: Type.Optional(Type.Boolean()) })),
    ),
  },
  { title: 'ListScorersRequest' },
);

export const ListQuery = Type.Object({
  starting_token: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});

export const ScorerList = Type.Object({
  scorers: Type.Array(Scorer),
  starting_token: Type.Integer(),
  limit: Type.Integer(),
  paginated: Type.Boolean(),
  next_starting_token: Nullable(Type.Integer()),
});

export const VersionQuery = Type.Object({ version: Type.Optional(Type.Integer({ minimum: 1 })) });
export const VersionParams = Type.Object({ id: Uuid, version: Type.Integer({ minimum: 1 }) });
export const VersionList = Type.Object({ versions: Type.Array(ScorerVersion) });
export const Message = Type.Object({ message: Type.String() });

/** The hosted code-validation task, answered as refused (we do not run users' code). */
export const CodeTask = Type.Object({
  id: Type.String(),
  status: Type.String(),
  result: Type.Object({
    result_type: Type.String(),
    score_type: Nullable(Type.String()),
    error_message: Type.String(),
  }),
});

// ---- run scorer settings --------------------------------------------------------------------

export const ScorerConfig = Type.Object(
  {
    id: Uuid,
    name: Opt(Type.String()),
    scorer_type: Type.String(),
    model_type: Opt(Type.String()),
    scorer_version: Opt(
      Type.Object(
        { id: Type.Optional(Uuid), version: Type.Optional(Type.Integer()) },
        { additionalProperties: true },
      ),
    ),
    model_name: Opt(Type.String({ maxLength: 255 })),
    num_judges: Opt(Type.Integer({ minimum: 1, maximum: 10 })),
    filters: Opt(Type.Array(ScorerFilter, { maxItems: 20 })),
    scoreable_node_types: Opt(NodeTypes),
    cot_enabled: Opt(Type.Boolean()),
    output_type: Opt(Type.String()),
    input_type: Opt(Type.String()),
  },
  { title: 'ScorerConfig' },
);

export const SegmentFilter = Type.Object(
  {
    filter: Type.Optional(Nullable(ScorerFilter)),
    sample_rate: Type.Number({ minimum: 0, maximum: 1 }),
    llm_scorers: Type.Optional(Type.Boolean()),
  },
  { title: 'SegmentFilter' },
);

export const RunParams = Type.Object({ project_id: Uuid, run_id: Uuid });

export const SettingsBody = Type.Object(
  {
    run_id: Type.Optional(Uuid),
    scorers: Type.Optional(Nullable(Type.Array(ScorerConfig, { maxItems: 100 }))),
    segment_filters: Type.Optional(Nullable(Type.Array(SegmentFilter, { maxItems: 20 }))),
    integration_id: Type.Optional(Nullable(Uuid)),
  },
  { title: 'RunScorerSettingsPatchRequest' },
);

export const SettingsResponse = Type.Object(
  {
    run_id: Uuid,
    scorers: Type.Array(ScorerConfig),
    segment_filters: Nullable(Type.Array(SegmentFilter)),
    integration_id: Type.Optional(Nullable(Uuid)),
  },
  { title: 'RunScorerSettingsResponse' },
);

export const ScoringStatus = Type.Object(
  {
    run_id: Uuid,
    paused_reason: Nullable(Type.String()),
    spend_today: Type.Number(),
    scorers: Type.Array(
      Type.Object({
        id: Uuid,
        name: Type.String(),
        kind: Type.String(),
        counts: Type.Array(
          Type.Object({ status: Type.String(), reason: Nullable(Type.String()), count: Type.Integer() }),
        ),
      }),
    ),
  },
  {
    title: 'ScoringStatus',
    description:
      "Why a score is or is not there: each scorer's records by state and reason (LLM scorers from their tasks; rule scorers are computed as records arrive), the pause reason, and today's spend.",
  },
);

// ---- recompute -------------------------------------------------------------------------------

export const RecomputeBody = Type.Object(
  {
    log_stream_id: Type.Optional(Nullable(Uuid)),
    experiment_id: Type.Optional(Nullable(Uuid)),
    metrics_testing_id: Type.Optional(Nullable(Uuid)),
    scorer_ids: Type.Optional(Nullable(Type.Array(Uuid, { maxItems: 100 }))),
    filters: Type.Optional(Nullable(Type.Array(Any, { maxItems: 50 }))),
    filter_tree: Type.Optional(Nullable(Any)),
    dry_run: Type.Optional(Type.Boolean()),
    max_records: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  },
  { title: 'RecomputeLogRecordsMetricsRequest' },
);

/** Spanbase extension: a judge run on chosen records, nothing stored. */
export const PreviewParams = Type.Object({ project_id: Uuid, id: Uuid });
export const PreviewBody = Type.Object(
  {
    record_ids: Type.Array(Uuid, { minItems: 1, maxItems: 20 }),
    integration_id: Type.Optional(Nullable(Uuid)),
    /** An unsaved version to try (the editor's draft); without it, the scorer's default version. */
    version: Type.Optional(Nullable(CreateLlmVersion)),
  },
  { title: 'ScorerPreviewRequest' },
);

const PreviewMessage = Type.Object({ role: Type.String(), content: Type.String() });
const Value = Nullable(Type.Union([Type.Number(), Type.String(), Type.Array(Type.String())]));

export const PreviewResponse = Type.Object(
  {
    scorer_id: Uuid,
    model: Nullable(Type.String()),
    results: Type.Array(
      Type.Object({
        record_id: Uuid,
        status: Type.String(),
        error: Nullable(Type.String()),
        messages: Type.Array(PreviewMessage),
        rendered_prompt: Nullable(Type.String()),
        judges: Type.Array(
          Type.Object({
            raw: Nullable(Type.String()),
            value: Value,
            explanation: Nullable(Type.String()),
            abstained: Nullable(Type.String()),
          }),
        ),
        value: Value,
        explanation: Nullable(Type.String()),
        abstained: Type.Integer(),
        cost: Nullable(Type.Number()),
      }),
    ),
  },
  { title: 'ScorerPreviewResponse' },
);
