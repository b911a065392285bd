/**
 * A record as every response shows it: its schema (RecordSchema, which also serializes it in the
 * routes' responses), and its JSON text as that schema's serializer writes `recordToApi(row)`
 * (domain/records.ts). recordToApi sets the fields in the order that serializer writes them, with
 * values of the schema's types, so that text is JSON.stringify's (test/unit/search-json.test.ts
 * holds the two equal): one native call, where the serializer takes longer. A search
 * page is these texts in the page envelope, whichever store and thread rendered them: on SQLite the
 * statement that reads the page renders most records itself (store/search-json.ts, checked field by
 * field against RecordSchema) and `recordJson` the rest (`pageBody`); on PostgreSQL a page is
 * rendered whole (`pageBodyOf`).
 */
import { Type } from '@sinclair/typebox';
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

/** One record as the page's serializer writes it (its item schema, RecordSchema). */
export function recordJson(row: StoredRecord, includeCounts: boolean, feedback?: RecordFeedback): string {
  return JSON.stringify(recordToApi(row, { includeCounts, feedback }));
}

/** The envelope after the page's records: its count and where the next page starts. */
function pageTail(count: number, lastId: string | null, more: boolean, f: PageFormat): string {
  const next = more ? f.startingToken + f.limit : null;
  return `],"num_rows":${count},"next_starting_token":${next === null ? 'null' : next},"paginated":${
    next !== null
  },"last_row_id":${lastId === null ? 'null' : JSON.stringify(lastId)}}`;
}

/**
 * The page's response body from its records as `recordToApi` gives them (at most `limit`, in order):
 * one JSON.stringify over them all (a call per record costs about twice as much, flattening and
 * encoding each record's text apart). The same bytes as `pageBody` of their `recordJson` texts.
 */
export function pageBodyOf(
  records: readonly Record<string, unknown>[],
  lastId: string | null,
  more: boolean,
  f: PageFormat,
): Buffer {
  // The array's closing bracket opens the tail.
  const list = JSON.stringify(records).slice(0, -1);
  return Buffer.from(`{"records":${list}${pageTail(records.length, lastId, more, f)}`);
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
  const head = Buffer.from('{"records":[');
  const tail = Buffer.from(pageTail(records.length, lastId, more, f));
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
