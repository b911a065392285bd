/**
 * SQLite: each record of a search page as its response JSON, built by the statement that reads it.
 *
 * The text is exactly what the route's response schema makes of `recordToApi(row)`
 * (domain/records.ts, domain/record-json.ts RecordSchema, serialized with fast-json-stringify): the
 * same fields, in the order that serializer writes them, with the same values and the same bytes.
 * The stored JSON columns (tags, metadata, extra metrics) were written by JSON.stringify and are
 * spliced as they are; strings are quoted by json_quote, which escapes as JSON.stringify does. Only
 * the fields of RecordSchema are written, each named here, so no other column of the row can reach
 * a response.
 *
 * A row the statement cannot render exactly gets NULL instead, and the caller renders that row in
 * JavaScript (recordJson): a structured input or output (its contents are sliced out of the
 * flattened text), a timestamp outside 1970–9999, a value of an unexpected storage class, or extra
 * metric keys whose order or merging JavaScript would change. test/unit/search-json.test.ts checks
 * the two renderings agree, byte for byte.
 */
import { PROMOTED_METRICS } from '../domain/records.ts';
import { RecordSchema } from '../domain/record-json.ts';
import { hasFeedbackSql } from './annotations.ts';

/** The largest timestamp stored (µs; ingestion keeps integers within the safe range): year 2255. */
const MAX_US = '9007199254740991';

/** domain/time.ts toIso, for 0 ≤ us ≤ MAX_US. */
const iso = (c: string) =>
  `strftime('%Y-%m-%dT%H:%M:%S', ${c} / 1000000, 'unixepoch') || ` +
  `case when ${c} % 1000 = 0 then printf('.%03dZ', (${c} / 1000) % 1000) else printf('.%06dZ', ${c} % 1000000) end`;

const q = (c: string) => `json_quote(${c})`;
/** A JSON value inside `body`, as JSON text; `fallback` (JSON text) when absent. */
const fromBody = (path: string, fallback = 'null') => `coalesce(r.body -> '${path}', '${fallback}')`;

/** The `metrics` object: promoted columns that are set, in order, then the stored extra keys. */
const metrics = () => {
  const promoted = PROMOTED_METRICS.map(
    (m) => `case when r.${m} is null then '' else ',"${m}":' || r.${m} end`,
  ).join(' || ');
  const extra = `case when r.metrics is null or r.metrics = '{}' then '' else ',' || substr(r.metrics, 2, length(r.metrics) - 2) end`;
  return `'{' || ltrim(${promoted} || ${extra}, ',') || '}'`;
};

/**
 * When the statement renders a row: JavaScript would give the same bytes. Extra metric values are
 * numbers, so a quote in `metrics` opens a key: keys that start with a digit (JavaScript puts
 * integer-like keys first) or name a promoted metric (metricsOf merges those) are left to JavaScript.
 * Any other key is spliced as stored, as metricsOf keeps it (`constructor` and `__proto__` too).
 */
const renderable = () =>
  [
    ...['created_at', 'updated_at'].map(
      (c) => `typeof(r.${c}) = 'integer' and r.${c} between 0 and ${MAX_US}`,
    ),
    ...[...PROMOTED_METRICS, 'status_code'].map((c) => `typeof(r.${c}) in ('integer', 'null')`),
    `typeof(r.num_children) = 'integer'`,
    ...['id', 'type', 'name', 'project_id', 'run_id'].map((c) => `typeof(r.${c}) = 'text'`),
    `(r.body is null or (json_valid(r.body) and instr(r.body, '"in":') = 0 and instr(r.body, '"out":') = 0))`,
    // Feedback (annotations, their aggregates, queues) is rendered in JavaScript.
    `not ${hasFeedbackSql('r.id')}`,
    `(r.metrics is null or not (${[
      `r.metrics glob '*"[0-9]*'`,
      `r.metrics glob '*"num_*'`,
      ...['duration_ns', 'time_to_first_token_ns'].map((k) => `instr(r.metrics, '"${k}"')`),
    ].join(' or ')}))`,
  ].join(' and ');

/**
 * Each field of RecordSchema as SQL text over `records` as `r`: `"name":value` as recordToApi sets it,
 * or '' where recordToApi leaves an optional field out.
 */
function fields(includeCounts: boolean): Record<string, string> {
  const f = (name: string, value: string) => `'"${name}":' || ${value}`;
  const when = (cond: string, name: string, value: string) =>
    `case when ${cond} then ${f(name, value)} else '' end`;
  const llm = `r.type = 'llm'`;
  const empty = { object: `'{}'`, array: `'[]'` };
  return {
    id: f('id', q('r.id')),
    type: f('type', q('r.type')),
    name: f('name', q('r.name')),
    created_at: f('created_at', `'"' || ${iso('r.created_at')} || '"'`),
    updated_at: f('updated_at', `'"' || ${iso('r.updated_at')} || '"'`),
    input: f('input', q(`coalesce(r.input_text, case when r.type = 'session' then null else '' end)`)),
    output: f('output', q('r.output_text')),
    redacted_input: f('redacted_input', fromBody('$.rin')),
    redacted_output: f('redacted_output', fromBody('$.rout')),
    is_complete: f('is_complete', `case when r.is_complete then 'true' else 'false' end`),
    error_message: f('error_message', q('r.error_message')),
    project_id: f('project_id', q('r.project_id')),
    run_id: f('run_id', q('r.run_id')),
    session_id: f('session_id', q('r.session_id')),
    trace_id: f('trace_id', q('r.trace_id')),
    parent_id: f('parent_id', q('r.parent_id')),
    external_id: f('external_id', q('r.external_id')),
    status_code: f('status_code', `coalesce(r.status_code, 'null')`),
    tags: f('tags', `coalesce(r.tags, '[]')`),
    user_metadata: f('user_metadata', `coalesce(r.user_metadata, '{}')`),
    dataset_metadata: f('dataset_metadata', `coalesce(r.dataset_metadata, '{}')`),
    dataset_input: f('dataset_input', fromBody('$.din')),
    dataset_output: f('dataset_output', fromBody('$.dout')),
    metrics: f('metrics', metrics()),
    has_children: f('has_children', `case when r.num_children > 0 then 'true' else 'false' end`),
    step_number: when(`r.type not in ('session', 'trace')`, 'step_number', fromBody('$.step')),
    model: when(`${llm} or r.model is not null`, 'model', q('r.model')),
    temperature: when(llm, 'temperature', fromBody('$.x.temperature')),
    finish_reason: when(llm, 'finish_reason', fromBody('$.x.finish_reason')),
    tools: when(llm, 'tools', fromBody('$.x.tools')),
    events: `coalesce(case when ${llm} then ${f('events', `(r.body -> '$.x.events')`)} end, '')`,
    tool_call_id: when(`r.type = 'tool'`, 'tool_call_id', fromBody('$.x.tool_call_id')),
    agent_type: when(`r.type = 'agent'`, 'agent_type', fromBody('$.x.agent_type', '"default"')),
    previous_session_id: when(
      `r.type = 'session'`,
      'previous_session_id',
      fromBody('$.x.previous_session_id'),
    ),
    num_traces: includeCounts ? when(`r.type = 'session'`, 'num_traces', 'r.num_children') : `''`,
    num_spans: includeCounts ? when(`r.type = 'trace'`, 'num_spans', 'r.num_children') : `''`,
    annotations: f('annotations', empty.object),
    annotation_aggregates: f('annotation_aggregates', empty.object),
    annotation_agreement: f('annotation_agreement', empty.object),
    annotation_queue_ids: f('annotation_queue_ids', empty.array),
    feedback_rating_info: f('feedback_rating_info', empty.object),
    file_ids: f('file_ids', empty.array),
    file_modalities: f('file_modalities', empty.array),
  };
}

/**
 * The record's JSON text as UTF-8 bytes (SQL expression over `records` as `r`), or NULL for a row to
 * render in JavaScript. Fields go in the serializer's order: RecordSchema's required properties, then
 * its optional ones, each group in declaration order. Every field of the schema has its SQL and no other
 * field has any (checked here, when the statement is made).
 */
export function recordJsonSql(includeCounts: boolean): string {
  const sqlOf = fields(includeCounts);
  const props = Object.keys(RecordSchema.properties);
  const required = new Set<string>(RecordSchema.required ?? []);
  const missing = props.filter((p) => !(p in sqlOf));
  const extra = Object.keys(sqlOf).filter((p) => !props.includes(p));
  if (missing.length || extra.length)
    throw new Error(`search-json: RecordSchema and the SQL disagree (${[...missing, ...extra].join(', ')})`);
  const order = [...props.filter((p) => required.has(p)), ...props.filter((p) => !required.has(p))];
  if (!required.has(order[0])) throw new Error('search-json: the first field must be required');
  const parts = order.map((p, i) => {
    if (i === 0) return `'{', ${sqlOf[p]}`;
    // An optional field may be '' (left out): its comma goes with it.
    return required.has(p) ? `',', ${sqlOf[p]}` : `coalesce(',' || nullif(${sqlOf[p]}, ''), '')`;
  });
  // concat() writes the text once (a chain of || would copy the growing prefix at every step).
  return `case when ${renderable()} then cast(concat(${parts.join(', ')}, '}') as blob) end`;
}

const statements: Record<'counts' | 'plain', string | undefined> = { counts: undefined, plain: undefined };

/**
 * The page's records by rowid (bound as a JSON array), in that order: `rid`, `id`, and `j`, the
 * record's JSON text as UTF-8 bytes (a Buffer), or null for a row to render in JavaScript. The text is
 * made once (it keys the prepared statement cache).
 */
export function pageJsonStatement(includeCounts: boolean): string {
  const key = includeCounts ? 'counts' : 'plain';
  statements[key] ??=
    `select k.value as rid, r.id as id, ${recordJsonSql(includeCounts)} as j from json_each(?) as k cross join records as r on r.rowid = k.value order by k.key`;
  return statements[key];
}
