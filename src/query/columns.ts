/**
 * The column registry: every column a record search can filter or sort on, with its data type, the
 * filter kinds and operators it takes, where it lives in the `records` table and which record types
 * it applies to.
 *
 * Column ids are the standard field names (`id`, `name`, `input`, ...) and namespaced keys:
 * `metrics/<key>`, `user_metadata/<key>`, `dataset_metadata/<key>`. The key is everything after the
 * first `/` and may itself contain `/`, quotes or anything else: it only ever reaches SQL as a bound
 * parameter (see compile.ts). `annotation/<template id>` names an annotation template of the project:
 * those columns come from the project's templates (a ColumnContext the service reads), not from here.
 */

import { MAX_STARS, type TemplateConfig, type TemplateType } from '../domain/annotations.ts';
import { RECORD_TYPES, type RecordType, SPAN_TYPES as DOMAIN_SPAN_TYPES } from '../domain/records.ts';
import type { FilterKind } from './filter-kinds.ts';

export { RECORD_TYPES, type RecordType };
/** The span kinds, as a plain list for the column descriptors' `applicable_types`. */
export const SPAN_TYPES: RecordType[] = [...DOMAIN_SPAN_TYPES];

export type DataType =
  | 'uuid'
  | 'text'
  | 'integer'
  | 'floating_point'
  | 'boolean'
  | 'timestamp'
  | 'string_list';
export type { FilterKind };
export type Category = 'standard' | 'metric' | 'user_metadata' | 'dataset_metadata' | 'tags' | 'annotation';
export type JsonColumn = 'metrics' | 'user_metadata' | 'dataset_metadata';

/** Promoted scalar columns of `records` that a column may map to. */
export type ScalarColumn =
  | 'id'
  | 'session_id'
  | 'trace_id'
  | 'parent_id'
  | 'type'
  | 'name'
  | 'created_at'
  | 'updated_at'
  | 'is_complete'
  | 'status_code'
  | 'duration_ns'
  | 'num_input_tokens'
  | 'num_output_tokens'
  | 'num_total_tokens'
  | 'num_cache_read_input_tokens'
  | 'num_cache_creation_input_tokens'
  | 'time_to_first_token_ns'
  | 'model'
  | 'external_id'
  | 'error_message'
  | 'input_text'
  | 'output_text'
  | 'num_children';

/** Scalar columns that are NOT NULL in `records` (a value is never missing). */
export const NEVER_NULL: ReadonlySet<string> = new Set<ScalarColumn>([
  'id',
  'type',
  'name',
  'created_at',
  'updated_at',
  'is_complete',
  'num_children',
]);

/** Columns of `annotations` that an annotation filter reads (see compile.ts annotationLeaf). */
export type AnnotationValueColumn = 'num_value' | 'text_value';

/** Columns of `runs` that a log stream search filters on (RUN_COLUMNS). */
export type RunColumn = 'id' | 'name' | 'created_by' | 'created_at' | 'updated_at';

/** Where a column's value comes from. */
export type ColumnSource =
  /** A real column; SQL NULL means the record lacks the value. */
  | { kind: 'scalar'; column: ScalarColumn | RunColumn | AnnotationValueColumn }
  /** A key of a JSON object column; a missing key (or a value of another JSON type) is "missing". */
  | { kind: 'json'; column: JsonColumn; key: string }
  /** The `tags` JSON array of strings. */
  | { kind: 'tags' }
  /** The `items` JSON array of an annotation (categorical choices, tags). */
  | { kind: 'items' }
  /**
   * The reviewers' annotations of a record on a template: a filter matches when one of them
   * matches (a negative operator: when none matches the positive one); sorts and metrics read their
   * aggregate.
   */
  | { kind: 'annotation'; templateId: string; type: TemplateType };

export interface ColumnDef {
  id: string;
  label: string;
  description: string;
  category: Category;
  dataType: DataType;
  /** The filter kind the column advertises (available columns' `filter_type`). */
  filterKind: FilterKind;
  /** Every filter kind the column accepts (the advertised one first). */
  acceptedKinds: FilterKind[];
  sortable: boolean;
  filterable: boolean;
  multiValued: boolean;
  applicableTypes: RecordType[];
  source: ColumnSource;
  /** Text search on this column may use the trigram index (input and output). */
  textIndexed: boolean;
  allowedValues?: unknown[];
}

const ALL = [...RECORD_TYPES];
const NOT_SESSION = RECORD_TYPES.filter((t) => t !== 'session');
const WITH_TOKENS: RecordType[] = ['session', 'trace', 'llm'];

function std(
  id: string,
  label: string,
  description: string,
  dataType: DataType,
  source: ColumnSource,
  applicableTypes: RecordType[],
  extra: Partial<ColumnDef> = {},
): ColumnDef {
  const kinds: Record<DataType, FilterKind[]> = {
    uuid: ['id', 'text'],
    text: ['text', 'id'],
    integer: ['number'],
    floating_point: ['number'],
    boolean: ['boolean'],
    timestamp: ['date'],
    string_list: ['collection'],
  };
  return {
    id,
    label,
    description,
    category: 'standard',
    dataType,
    filterKind: kinds[dataType][0],
    acceptedKinds: kinds[dataType],
    sortable: dataType !== 'string_list',
    filterable: true,
    multiValued: dataType === 'string_list',
    applicableTypes,
    source,
    textIndexed: false,
    ...extra,
  };
}

const scalar = (column: ScalarColumn | RunColumn): ColumnSource => ({ kind: 'scalar', column });

/**
 * The standard metrics: promoted integer columns of `records`, and the cost in dollars (a floating
 * point key of the metrics JSON, on llm spans and summed on traces and sessions).
 */
export const STANDARD_METRICS: Record<
  string,
  { column: ScalarColumn | 'metrics'; label: string; types: RecordType[] }
> = {
  duration_ns: { column: 'duration_ns', label: 'Duration (ns)', types: ALL },
  num_input_tokens: { column: 'num_input_tokens', label: 'Input tokens', types: WITH_TOKENS },
  num_output_tokens: { column: 'num_output_tokens', label: 'Output tokens', types: WITH_TOKENS },
  num_total_tokens: { column: 'num_total_tokens', label: 'Total tokens', types: WITH_TOKENS },
  num_cache_read_input_tokens: {
    column: 'num_cache_read_input_tokens',
    label: 'Cache read input tokens',
    types: WITH_TOKENS,
  },
  num_cache_creation_input_tokens: {
    column: 'num_cache_creation_input_tokens',
    label: 'Cache creation input tokens',
    types: WITH_TOKENS,
  },
  time_to_first_token_ns: {
    column: 'time_to_first_token_ns',
    label: 'Time to first token (ns)',
    types: ['llm'],
  },
  cost: { column: 'metrics', label: 'Cost (USD)', types: WITH_TOKENS },
};

/** The standard columns, in the order available columns lists them. */
export const STANDARD_COLUMNS: ColumnDef[] = [
  std('id', 'ID', 'Identifier of the record', 'uuid', scalar('id'), ALL),
  std('type', 'Type', 'Kind of record', 'text', scalar('type'), ALL, { allowedValues: [...RECORD_TYPES] }),
  std('name', 'Name', 'Name of the record', 'text', scalar('name'), ALL),
  std('input', 'Input', 'Input text (messages flattened)', 'text', scalar('input_text'), ALL, {
    sortable: false,
    textIndexed: true,
  }),
  std('output', 'Output', 'Output text (messages flattened)', 'text', scalar('output_text'), ALL, {
    sortable: false,
    textIndexed: true,
  }),
  std('created_at', 'Created', 'When the record started', 'timestamp', scalar('created_at'), ALL),
  std('updated_at', 'Updated', 'When the record last changed', 'timestamp', scalar('updated_at'), ALL),
  std('is_complete', 'Complete', 'Whether the record is complete', 'boolean', scalar('is_complete'), ALL, {
    allowedValues: [true, false],
  }),
  std(
    'status_code',
    'Status code',
    'Status code of the record',
    'integer',
    scalar('status_code'),
    NOT_SESSION,
  ),
  std(
    'error_message',
    'Error message',
    'Error message of a failed record',
    'text',
    scalar('error_message'),
    ALL,
  ),
  std('external_id', 'External ID', 'Identifier given by the client', 'text', scalar('external_id'), ALL),
  std('session_id', 'Session ID', 'Session the record belongs to', 'uuid', scalar('session_id'), ALL),
  std('trace_id', 'Trace ID', 'Trace the record belongs to', 'uuid', scalar('trace_id'), NOT_SESSION),
  std(
    'parent_id',
    'Parent ID',
    'Parent of a span',
    'uuid',
    scalar('parent_id'),
    NOT_SESSION.filter((t) => t !== 'trace'),
  ),
  std('model', 'Model', 'Model of an LLM span', 'text', scalar('model'), ['llm']),
  std('tags', 'Tags', 'Tags of the record', 'string_list', { kind: 'tags' }, ALL, { category: 'tags' }),
  std('num_traces', 'Traces', 'Number of traces in a session', 'integer', scalar('num_children'), [
    'session',
  ]),
  std('num_spans', 'Spans', 'Number of spans in a trace', 'integer', scalar('num_children'), ['trace']),
  ...Object.entries(STANDARD_METRICS).map(([key, m]) =>
    m.column === 'metrics'
      ? std(
          `metrics/${key}`,
          m.label,
          `Metric ${key}`,
          'floating_point',
          { kind: 'json', column: 'metrics', key },
          m.types,
          {
            category: 'metric',
          },
        )
      : std(`metrics/${key}`, m.label, `Metric ${key}`, 'integer', scalar(m.column), m.types, {
          category: 'metric',
        }),
  ),
];

const STANDARD_BY_ID = new Map(STANDARD_COLUMNS.map((c) => [c.id, c]));

const NAMESPACES: Record<string, JsonColumn> = {
  metrics: 'metrics',
  user_metadata: 'user_metadata',
  dataset_metadata: 'dataset_metadata',
};

const NAMESPACE_LABEL: Record<JsonColumn, string> = {
  metrics: 'Metric',
  user_metadata: 'User metadata',
  dataset_metadata: 'Dataset metadata',
};

/**
 * A column for a `metrics/<key>` (not a standard one), `user_metadata/<key>` or `dataset_metadata/<key>`
 * id. `dataType` is what the catalogue saw (it decides the advertised filter kind); a metadata key
 * accepts text, id, number and boolean filters whatever it holds.
 */
export function namespacedColumn(
  namespace: JsonColumn,
  key: string,
  dataType: DataType = namespace === 'metrics' ? 'floating_point' : 'text',
  applicableTypes: RecordType[] = ALL,
): ColumnDef {
  const isMetric = namespace === 'metrics';
  const filterKind: FilterKind =
    dataType === 'integer' || dataType === 'floating_point'
      ? 'number'
      : dataType === 'boolean'
        ? 'boolean'
        : 'text';
  const acceptedKinds: FilterKind[] = isMetric
    ? ['number']
    : [filterKind, ...(['text', 'id', 'number', 'boolean'] as FilterKind[]).filter((k) => k !== filterKind)];
  return {
    id: `${namespace}/${key}`,
    label: key,
    description: `${NAMESPACE_LABEL[namespace]} key ${key}`,
    category: isMetric ? 'metric' : namespace,
    dataType,
    filterKind: isMetric ? 'number' : filterKind,
    acceptedKinds,
    sortable: true,
    filterable: true,
    multiValued: false,
    applicableTypes,
    source: { kind: 'json', column: namespace, key },
    textIndexed: false,
  };
}

/**
 * The columns of `runs` a log stream search filters on, compiled by the same compiler as record
 * filters (over table `runs`).
 */
export const RUN_COLUMNS: Record<RunColumn, ColumnDef> = {
  id: std('id', 'ID', 'Identifier of the run', 'uuid', scalar('id'), []),
  name: std('name', 'Name', 'Name of the run', 'text', scalar('name'), []),
  created_by: std('created_by', 'Created by', 'User who created the run', 'uuid', scalar('created_by'), []),
  created_at: std('created_at', 'Created', 'When the run was created', 'timestamp', scalar('created_at'), []),
  updated_at: std(
    'updated_at',
    'Updated',
    'When the run last changed',
    'timestamp',
    scalar('updated_at'),
    [],
  ),
};

/** The prefix of annotation columns: `annotation/<template id>`. */
export const ANNOTATION_PREFIX = 'annotation/';

const ANNOTATION_TYPES: Record<TemplateType, { dataType: DataType; kind: FilterKind }> = {
  thumbs: { dataType: 'boolean', kind: 'boolean' },
  stars: { dataType: 'integer', kind: 'number' },
  score: { dataType: 'floating_point', kind: 'number' },
  categorical: { dataType: 'string_list', kind: 'collection' },
  tags: { dataType: 'string_list', kind: 'collection' },
  text: { dataType: 'text', kind: 'text' },
};

/** The column of an annotation template, labelled with its name. */
export function annotationColumn(t: {
  id: string;
  name: string;
  type: TemplateType;
  config: TemplateConfig;
}): ColumnDef {
  const { dataType, kind } = ANNOTATION_TYPES[t.type];
  const allowed =
    t.type === 'thumbs'
      ? [true, false]
      : t.type === 'stars'
        ? Array.from({ length: MAX_STARS }, (_, i) => i + 1)
        : t.type === 'categorical'
          ? t.config.options
          : undefined;
  return {
    id: `${ANNOTATION_PREFIX}${t.id}`,
    label: t.name,
    description: `Annotations on template ${t.name} (${t.type})`,
    category: 'annotation',
    dataType,
    filterKind: kind,
    acceptedKinds: [kind],
    // A record's place in a sort is the average of its reviewers' numbers (thumbs: the share of up).
    sortable: kind === 'number' || kind === 'boolean',
    filterable: true,
    multiValued: kind === 'collection',
    applicableTypes: ALL,
    source: { kind: 'annotation', templateId: t.id, type: t.type },
    textIndexed: false,
    ...(allowed ? { allowedValues: allowed } : {}),
  };
}

/** What a column id may name besides the static registry: the project's annotation columns. */
export interface ColumnContext {
  /** Annotation columns by id (`annotation/<template id>`). */
  annotations?: ReadonlyMap<string, ColumnDef>;
}

export type ColumnLookup =
  | {
      ok: true;
      column: ColumnDef /** a metrics/<key> that is not standard: must be in the catalogue */;
      needsCatalogue: boolean;
    }
  | { ok: false };

/**
 * The column for an id, from the static registry: standard columns, any `user_metadata/<key>` or
 * `dataset_metadata/<key>`, and `metrics/<key>` (whose key the caller must still find in the catalogue
 * unless it is a standard metric); an annotation column from `ctx`.
 */
export function lookupColumn(id: string, ctx: ColumnContext = {}): ColumnLookup {
  const standard = STANDARD_BY_ID.get(id);
  if (standard) return { ok: true, column: standard, needsCatalogue: false };
  if (id.startsWith(ANNOTATION_PREFIX)) {
    const column = ctx.annotations?.get(id);
    return column ? { ok: true, column, needsCatalogue: false } : { ok: false };
  }
  const slash = id.indexOf('/');
  if (slash <= 0) return { ok: false };
  const prefix = id.slice(0, slash);
  // Own keys only: `constructor/x` names no namespace.
  const namespace = Object.hasOwn(NAMESPACES, prefix) ? NAMESPACES[prefix] : undefined;
  const key = id.slice(slash + 1);
  if (!namespace || key === '') return { ok: false };
  return { ok: true, column: namespacedColumn(namespace, key), needsCatalogue: namespace === 'metrics' };
}
