/**
 * A record as every response shows it: its schema (RecordSchema, which also serializes it in the
 * routes' responses), and its JSON text as that schema's serializer writes `recordToApi(row)`
 * (domain/records.ts). A search page is these texts joined in the page envelope (`pageBody`),
 * whichever store and thread rendered them: on SQLite the statement that reads the page renders most
 * records itself (store/search-json.ts, checked field by field against RecordSchema) and `recordJson`
 * the rest.
 */
import { Type } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import type { RecordFeedback } from './annotations.ts';
import { type StoredRecord, recordToApi } from './records.ts';
import { AnyKeyMap, DateTime, Nullable, Uuid } from './schema-types.ts';

const any = Type.Unknown();

/** One record as every response shows it (`recordToApi`). */
export const RecordSchema = Type.Object(
  {
    id: Uuid,
    type: Type.String(),
    name: Type.String(),
    created_at: DateTime,
    updated_at: DateTime,
    input: any,
    output: any,
    redacted_input: any,
    redacted_output: any,
    is_complete: Type.Boolean(),
    error_message: Nullable(Type.String()),
    project_id: Uuid,
    run_id: Uuid,
    session_id: Nullable(Uuid),
    trace_id: Nullable(Uuid),
    parent_id: Nullable(Uuid),
    external_id: Nullable(Type.String()),
    status_code: Nullable(Type.Integer()),
    tags: Type.Array(Type.String()),
    user_metadata: AnyKeyMap(any),
    dataset_metadata: AnyKeyMap(any),
    dataset_input: Nullable(Type.String()),
    dataset_output: Nullable(Type.String()),
    metrics: AnyKeyMap(Type.Number()),
    has_children: Type.Boolean(),
    step_number: Type.Optional(Nullable(Type.Integer())),
    model: Type.Optional(Nullable(Type.String())),
    temperature: Type.Optional(Nullable(Type.Number())),
    finish_reason: Type.Optional(Nullable(Type.String())),
    tools: Type.Optional(any),
    events: Type.Optional(any),
    tool_call_id: Type.Optional(Nullable(Type.String())),
    agent_type: Type.Optional(Type.String()),
    previous_session_id: Type.Optional(Nullable(Uuid)),
    num_traces: Type.Optional(Type.Integer()),
    num_spans: Type.Optional(Type.Integer()),
    annotations: AnyKeyMap(any),
    annotation_aggregates: AnyKeyMap(any),
    annotation_agreement: AnyKeyMap(any),
    annotation_queue_ids: Type.Array(any),
    feedback_rating_info: AnyKeyMap(any),
    file_ids: Type.Array(any),
    file_modalities: Type.Array(any),
  },
  { title: 'Record', additionalProperties: true },
);

/** What the envelope needs besides the records (`limit`: the page size asked for). */
export interface PageFormat {
  startingToken: number;
  limit: number;
  includeCounts: boolean;
}

let serializeRecord: ((record: unknown) => string) | null = null;

/** One record as the page's serializer writes it (its item schema, RecordSchema). */
export function recordJson(row: StoredRecord, includeCounts: boolean, feedback?: RecordFeedback): string {
  serializeRecord ??= fastJson(RecordSchema as object);
  return serializeRecord(recordToApi(row, { includeCounts, feedback }));
}

/**
 * The page's response body, UTF-8, from its records already rendered as JSON (`records`: at most
 * `limit` of them, in order; `ids` their ids), byte for byte what the route's response schema (schemas/search.ts SearchRecordsPage) writes for them. `more`:
 * another page follows. The bytes are a buffer of their own (never Node's shared pool), so they can be
 * moved to another thread.
 */
export function pageBody(
  records: readonly Uint8Array[],
  lastId: string | null,
  more: boolean,
  f: PageFormat,
): Buffer {
  const next = more ? f.startingToken + f.limit : null;
  const head = Buffer.from('{"records":[');
  const tail = Buffer.from(
    `],"num_rows":${records.length},"next_starting_token":${next === null ? 'null' : next},"paginated":${
      next !== null
    },"last_row_id":${lastId === null ? 'null' : JSON.stringify(lastId)}}`,
  );
  let size = head.length + tail.length + Math.max(0, records.length - 1);
  for (const r of records) size += r.length;
  const out = Buffer.allocUnsafeSlow(size);
  let at = head.copy(out, 0);
  for (let i = 0; i < records.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    out.set(records[i], at);
    at += records[i].length;
  }
  tail.copy(out, at);
  return out;
}
