/**
 * Table shapes as Kysely sees them. Timestamps are epoch microseconds (integers) on both stores;
 * JSON columns are TEXT on SQLite and JSONB on PostgreSQL (write with JSON.stringify, read with
 * parseJson); booleans are 0/1 integers on both so that compiled filters read the same.
 */
import type { Generated } from 'kysely';
import type { RecordRow } from '../domain/records.ts';

export interface UsersTable {
  id: string;
  email: string;
  password_hash: string | null;
  first_name: string;
  last_name: string;
  role: string;
  created_at: number;
  updated_at: number;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  description: string;
  key_hash: string;
  /** First characters of the key, shown in listings so users can tell keys apart. */
  key_prefix: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface GroupsTable {
  id: string;
  name: string;
  description: string | null;
  created_by: string;
  created_at: number;
}

export interface GroupMembersTable {
  group_id: string;
  user_id: string;
  created_at: number;
}

export interface ProjectsTable {
  id: string;
  name: string;
  type: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  /** Days records are kept (null: forever); a run's own setting wins. */
  retention_days: number | null;
}

export interface ProjectCollaboratorsTable {
  id: string;
  project_id: string;
  user_id: string | null;
  group_id: string | null;
  role: string;
  created_at: number;
}

export interface RunsTable {
  id: string;
  project_id: string;
  /** 'log_stream' | 'experiment' */
  kind: string;
  name: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  num_traces: number;
  num_spans: number;
  has_user_created_sessions: number;
  /** Days records are kept (null: the project's setting). */
  retention_days: number | null;
}

/**
 * Every metrics/*, user_metadata/*, dataset_metadata/* key seen in a run, per record type and data
 * type, with when it was first and last seen (kept current by ingestion).
 */
export interface ColumnCatalogueTable {
  run_id: string;
  /** e.g. 'metrics/latency', 'user_metadata/customer' */
  column_id: string;
  record_type: string;
  /** text | integer | floating_point | boolean */
  data_type: string;
  first_seen: number;
  last_seen: number;
}

/** Token usage per log stream per UTC day (sums over llm spans created that day). */
export interface TokenUsageTable {
  id: string;
  project_id: string;
  log_stream_id: string;
  /** Epoch microseconds of the start of the UTC day. */
  day: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Dollars: the sum of the day's llm span costs; null while no span of the day has one. */
  cost: number | null;
  created_at: number;
  updated_at: number;
}

/** A project's own price of the models whose whole name matches `model_pattern` (case-insensitive). */
export interface ModelPricesTable {
  id: string;
  project_id: string;
  model_pattern: string;
  input_price_per_million: number;
  output_price_per_million: number;
  cache_read_input_price_per_million: number | null;
  cache_creation_input_price_per_million: number | null;
  /** 1, 0, or null: as the catalogue's provider of the model says. */
  input_includes_cached_tokens: number | null;
  /** Epoch microseconds from which the price applies; null: always. */
  start_date: number | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

/** Every model name seen on the llm spans of a run, with the created_at range of those spans. */
export interface RunModelsTable {
  run_id: string;
  model: string;
  first_seen: number;
  last_seen: number;
}

/** A trends dashboard of a log stream. Times as elsewhere in microseconds, except the range. */
export interface DashboardsTable {
  id: string;
  project_id: string;
  log_stream_id: string;
  name: string;
  description: string | null;
  is_default: number;
  visibility: string;
  created_by: string | null;
  is_favorited: number;
  /** JSON object: layout key → list of integers. */
  layout_map: string;
  interval_mins: number;
  group_by: string | null;
  /** JSON filter expression as the client sent it (validated). */
  filter_tree: string | null;
  /** Absolute range in epoch SECONDS (api.md), or null when relative_time is set. */
  start_time: number | null;
  end_time: number | null;
  relative_time: string | null;
  created_at: number;
  updated_at: number;
}

export interface DashboardSectionsTable {
  id: string;
  dashboard_id: string;
  name: string;
  description: string | null;
  color: string | null;
  /** Order of creation within the dashboard. */
  position: number;
  created_at: number;
  updated_at: number;
}

export interface DashboardWidgetsTable {
  id: string;
  dashboard_id: string;
  section_id: string | null;
  name: string;
  description: string | null;
  type: string;
  /** JSON list of objects mapping a key to a list of strings, or null. */
  dataset: string | null;
  metric: string;
  aggregation: string;
  /** Order of creation within the dashboard. */
  position: number;
  created_at: number;
  updated_at: number;
}

/** A model-provider integration. The token is only ever stored sealed (AES-256-GCM). */
export interface IntegrationsTable {
  id: string;
  /** One of the integration kinds, e.g. 'example_gateway'. */
  name: string;
  created_by: string;
  /** The user whose own integration of this name it is (their PUT updates it), or null once released. */
  holder_id: string | null;
  /** JSON: endpoint, use_case, multi_modal_config (nothing secret). */
  config: string;
  token_ciphertext: string;
  /** Fingerprint of the key that sealed the token. */
  key_id: string;
  is_disabled: number;
  created_at: number;
  updated_at: number;
}

/** A user or a group an integration is shared with (exactly one of user_id, group_id). */
export interface IntegrationCollaboratorsTable {
  id: string;
  integration_id: string;
  user_id: string | null;
  group_id: string | null;
  role: string;
  created_at: number;
  updated_at: number;
}

/** One model call Spanbase made (src/services/model-calls.ts), with its spend and outcome. */
export interface ModelCallsTable {
  id: string;
  project_id: string | null;
  run_id: string | null;
  integration_id: string | null;
  integration_name: string;
  purpose: string;
  model: string;
  status: string;
  error_kind: string | null;
  error: string | null;
  provider_status: number | null;
  tokens_in: number;
  tokens_out: number;
  cost_usd: number | null;
  latency_ms: number;
  attempts: number;
  /** JSON array, one entry per attempt. */
  attempt_log: string;
  day: string;
  created_at: number;
}

/** The integration of a kind a user selected for features to use by default. */
export interface IntegrationSelectionsTable {
  user_id: string;
  name: string;
  integration_id: string;
  updated_at: number;
}

/** The saved Signals configuration of one run (log stream or experiment). */
export interface SignalsConfigurationsTable {
  id: string;
  project_id: string;
  run_id: string;
  run_mode: string;
  schedule_type: string;
  schedule_cron: string;
  schedule_timezone: string;
  /** YYYY-MM-DD */
  start_date: string | null;
  end_date: string | null;
  scheduled_runs_enabled: number;
  model: string | null;
  integration_id: string | null;
  focus_on: string;
  dont_focus_on: string;
  /** JSON list of severities. */
  notification_severities: string;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

/** An annotation template of a project (domain/annotations.ts). */
export interface AnnotationTemplatesTable {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  type: string;
  /** JSON: min and max (score), options and multiple (categorical). */
  config: string;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

/** One author's annotation of a record on a template. */
export interface AnnotationsTable {
  id: string;
  project_id: string;
  record_id: string;
  template_id: string;
  source: string;
  /** The reviewer's user id, or `end_user:<external id>`. */
  author: string;
  user_id: string;
  external_user_id: string | null;
  /** JSON value as sent. */
  value: string;
  num_value: number | null;
  text_value: string | null;
  /** JSON list of strings: categorical choices and tags. */
  items: string | null;
  explanation: string | null;
  created_at: number;
  updated_at: number;
}

/** The aggregate of one record's annotations on one template from one source (kept on write). */
export interface AnnotationAggregatesTable {
  record_id: string;
  template_id: string;
  source: string;
  project_id: string;
  n: number;
  sum: number | null;
  min: number | null;
  max: number | null;
  mean: number | null;
  /** JSON object: choice or tag → annotations holding it. */
  counts: string | null;
  updated_at: number;
}

export interface AnnotationQueuesTable {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface AnnotationQueueTemplatesTable {
  queue_id: string;
  template_id: string;
  position: number;
}

export interface AnnotationQueueMembersTable {
  queue_id: string;
  user_id: string;
  position: number;
}

export interface AnnotationQueueRecordsTable {
  queue_id: string;
  record_id: string;
  project_id: string;
  record_created_at: number;
  added_at: number;
}

/** Who runs a background job until when (one process among those sharing the database). */
export interface LeasesTable {
  name: string;
  /** The holding process's random id. */
  holder: string;
  /** Epoch microseconds. */
  expires_at: number;
}

export interface ConsoleSessionsTable {
  /** SHA-256 of the cookie's token (hex). */
  token_hash: string;
  user_id: string;
  created_at: number;
  expires_at: number;
}

/** One item of background work (store/jobs.ts). JSON columns as everywhere (text / jsonb). */
export interface JobsTable {
  id: string;
  kind: string;
  key: string;
  project_id: string | null;
  run_id: string | null;
  payload: unknown;
  status: string;
  attempts: number;
  max_attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  reason: string | null;
  result: unknown;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export interface ScorersTable {
  id: string;
  name: string;
  scorer_type: string;
  description: string | null;
  tags: unknown;
  defaults: unknown;
  output_type: string | null;
  input_type: string | null;
  scoreable_node_types: unknown;
  default_version_id: string | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface ScorerVersionsTable {
  id: string;
  scorer_id: string;
  version: number;
  kind: string;
  config: unknown;
  created_by: string | null;
  created_at: number;
}

export interface RunScorerSettingsTable {
  run_id: string;
  project_id: string;
  scorers: unknown;
  segment_filters: unknown;
  paused_reason: string | null;
  integration_id: string | null;
  paused_at: number | null;
  updated_by: string | null;
  updated_at: number;
}

export interface ScoreResultsTable {
  record_id: string;
  scorer_id: string;
  project_id: string;
  run_id: string;
  status: string;
  reason: string | null;
  info: unknown;
  cost: number | null;
  updated_at: number;
  /** The scorer version it was written for (migration 034; null before). */
  version_id: string | null;
}

/** Dashboard rollups' record counts (migration 032, domain/rollups.ts). */
export interface RollupCountsTable {
  run_id: string;
  dim: string;
  hour: number;
  /** The group value as JSON text ('null' for none, '*' for every record with a value). */
  value: string;
  n: number;
}

/**
 * Dashboard rollups' record-column aggregates (migration 032, domain/rollups.ts): per column of
 * SCALAR_METRICS, c_<col>, s_<col>, t_<col>, lo_<col>, hi_<col> and b_<col> (its sketch).
 */
export interface RollupScalarsTable {
  run_id: string;
  dim: string;
  value: string;
  hour: number;
  [aggregate: string]: unknown;
}

/** Dashboard rollups' aggregates of metric keys (scores; migration 032, domain/rollups.ts). */
export interface RollupsTable {
  run_id: string;
  dim: string;
  value: string;
  col: string;
  hour: number;
  c: number;
  s: number;
  t: number;
  lo: number | null;
  hi: number | null;
  /** DDSketch code/count pairs: a blob of int32s (SQLite) or int4[] (PostgreSQL). */
  bins: Buffer | number[] | null;
}

export interface RollupDirtyTable {
  run_id: string;
  hour: number;
}

/** Whether a day's rollup rows (dims `day:<dim>`) are current (migration 035, store/rollups.ts). */
export interface RollupDaysTable {
  run_id: string;
  day: number;
  /** 1: the day's rows are the sums of its hours' rows; 0: an hour changed since (at changed_at, µs). */
  built: number;
  changed_at: number;
}

export interface RollupOverflowTable {
  run_id: string;
  dim: string;
}

export interface RollupGapsTable {
  run_id: string;
}

/** An ingestion transaction's rollup changes for one log stream, until folded (domain/rollups.ts RollupBatch.deltas). */
export interface RollupDeltasTable {
  id: Generated<number>;
  run_id: string;
  body: string;
}

export interface DB {
  rollups: RollupsTable;
  rollup_counts: RollupCountsTable;
  rollup_scalars: RollupScalarsTable;
  rollup_dirty: RollupDirtyTable;
  rollup_days: RollupDaysTable;
  rollup_overflow: RollupOverflowTable;
  rollup_gaps: RollupGapsTable;
  rollup_deltas: RollupDeltasTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  projects: ProjectsTable;
  project_collaborators: ProjectCollaboratorsTable;
  runs: RunsTable;
  /**
   * Every trace, span and session, in the shape ingestion writes (domain/records.ts RecordRow):
   * common metrics are real columns, the rest is JSON.
   */
  records: RecordRow;
  column_catalogue: ColumnCatalogueTable;
  token_usage: TokenUsageTable;
  model_prices: ModelPricesTable;
  run_models: RunModelsTable;
  dashboards: DashboardsTable;
  dashboard_sections: DashboardSectionsTable;
  dashboard_widgets: DashboardWidgetsTable;
  integrations: IntegrationsTable;
  integration_collaborators: IntegrationCollaboratorsTable;
  model_calls: ModelCallsTable;
  integration_selections: IntegrationSelectionsTable;
  signals_configurations: SignalsConfigurationsTable;
  annotation_templates: AnnotationTemplatesTable;
  annotations: AnnotationsTable;
  annotation_aggregates: AnnotationAggregatesTable;
  annotation_queues: AnnotationQueuesTable;
  annotation_queue_templates: AnnotationQueueTemplatesTable;
  annotation_queue_members: AnnotationQueueMembersTable;
  annotation_queue_records: AnnotationQueueRecordsTable;
  leases: LeasesTable;
  console_sessions: ConsoleSessionsTable;
  prompt_templates: PromptTemplatesTable;
  prompt_template_projects: PromptTemplateProjectsTable;
  prompt_template_versions: PromptTemplateVersionsTable;
  jobs: JobsTable;
  experiments: ExperimentsTable;
  experiment_jobs: ExperimentJobsTable;
  scorers: ScorersTable;
  scorer_versions: ScorerVersionsTable;
  run_scorer_settings: RunScorerSettingsTable;
  score_results: ScoreResultsTable;
  datasets: DatasetsTable;
  dataset_versions: DatasetVersionsTable;
  dataset_projects: DatasetProjectsTable;
  dataset_rows: DatasetRowsTable;
  signal_runs: SignalRunsTable;
  signals: SignalsTable;
  alert_rules: AlertRulesTable;
  alert_events: AlertEventsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

/** A prompt template: of a project (`project_id`), or global and shared with projects. */
export interface PromptTemplatesTable {
  id: string;
  project_id: string | null;
  name: string;
  selected_version: number;
  max_version: number;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

/** A project a global prompt template is shared with. */
export interface PromptTemplateProjectsTable {
  template_id: string;
  project_id: string;
  created_at: number;
}

/** One version of a prompt template, with what changed from the version before it. */
export interface PromptTemplateVersionsTable {
  id: string;
  template_id: string;
  version: number;
  /** JSON text: a string or a list of chat messages. */
  template: string;
  raw: number;
  /** JSON text of the model settings. */
  settings: string;
  output_type: string | null;
  content_changed: number;
  settings_changed: number;
  model_changed: number;
  lines_added: number;
  lines_edited: number;
  lines_removed: number;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

/** A dataset (migration 021); `state` is 'importing' while an upload streams in. */
export interface DatasetsTable {
  id: string;
  name: string;
  state: string;
  draft: number;
  hidden: number;
  current_version: number;
  num_rows: number;
  /** JSON list of strings. */
  column_names: string;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface DatasetVersionsTable {
  dataset_id: string;
  version_index: number;
  name: string | null;
  num_rows: number;
  /** JSON list of strings. */
  column_names: string;
  rows_added: number;
  rows_removed: number;
  rows_edited: number;
  columns_added: number;
  created_by: string | null;
  created_at: number;
}

export interface DatasetProjectsTable {
  dataset_id: string;
  project_id: string;
  created_at: number;
}

/** One state of a dataset row, valid in versions valid_from <= v < valid_to. */
export interface DatasetRowsTable {
  dataset_id: string;
  row_id: string;
  position: number;
  valid_from: number;
  valid_to: number;
  /** JSON object: column name -> value. */
  data: string;
  created_in_version: number;
  created_by: string | null;
  created_at: number;
  updated_by: string | null;
  updated_at: number;
}

/** One Signals run of a log stream: scheduled (one per cron slot) or on demand. */
export interface SignalRunsTable {
  id: string;
  project_id: string;
  run_id: string;
  /** 'scheduled' | 'on_demand' */
  trigger: string;
  /** Epoch microseconds of the cron slot (null on demand); UNIQUE with run_id. */
  slot_time: number | null;
  /** queued | running | succeeded | partial | failed */
  status: string;
  window_start: number;
  window_end: number;
  model: string | null;
  integration_id: string | null;
  records_read: number;
  records_sampled: number;
  tokens_in: number;
  tokens_out: number;
  cost: number | null;
  signals_found: number;
  /** Why the model step did not run (no integration, ...), when it did not. */
  skipped_reason: string | null;
  error: string | null;
  created_by: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

/** A problem Signals found in a log stream, merged across the runs that saw it again. */
export interface SignalsTable {
  id: string;
  project_id: string;
  run_id: string;
  first_signal_run_id: string;
  last_signal_run_id: string;
  fingerprint: string;
  /** 'model' | 'errors' | 'latency' | 'cost' */
  source: string;
  title: string;
  observation: string;
  details: string;
  suggested_action: string;
  severity: string;
  /** JSON list of {record_id, trace_id, session_id, type, created_at}. */
  occurrences: string;
  /** JSON list of {record_id, narrative}. */
  examples: string;
  occurrence_count: number;
  runs_seen: number;
  /** open | resolved | dismissed */
  status: string;
  first_seen: number;
  last_seen: number;
  updated_at: number;
}

/** A threshold on a metric of a log stream, evaluated every minute. */
export interface AlertRulesTable {
  id: string;
  project_id: string;
  run_id: string;
  name: string;
  metric: string;
  aggregation: string;
  filter_tree: string | null;
  window_minutes: number;
  comparison: string;
  threshold: number;
  enabled: number;
  /** ok | firing */
  state: string;
  last_value: number | null;
  last_evaluated_at: number | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface AlertEventsTable {
  id: string;
  rule_id: string;
  project_id: string;
  /** fired | recovered */
  kind: string;
  value: number | null;
  threshold: number;
  at: number;
}

/** A project's notification address; the signing secret only ever stored sealed. */
export interface WebhooksTable {
  id: string;
  project_id: string;
  url: string;
  /** json | slack */
  format: string;
  secret_ciphertext: string;
  key_id: string;
  enabled: number;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  project_id: string;
  event: string;
  body: string;
  /** pending | delivered | failed */
  status: string;
  attempts: number;
  next_attempt_at: number;
  response_status: number | null;
  error: string | null;
  created_at: number;
  finished_at: number | null;
}

/** What an experiment run was created with (migration 029). JSON columns as everywhere. */
export interface ExperimentsTable {
  run_id: string;
  project_id: string;
  dataset_id: string | null;
  dataset_version_index: number | null;
  prompt_template_version_id: string | null;
  prompt_settings: unknown;
  task_type: number;
  tags: unknown;
}

/** A hosted `JobDB` of an experiment (`playground_run`), with its progress. */
export interface ExperimentJobsTable {
  id: string;
  job_name: string;
  project_id: string;
  run_id: string;
  status: string;
  request_data: unknown;
  created_by: string;
  error_message: string | null;
  progress_message: string | null;
  steps_completed: number;
  steps_total: number;
  failed_rows: number;
  retries: number;
  created_at: number;
  updated_at: number;
  processing_started: number | null;
  completed_at: number | null;
  failed_at: number | null;
}
