/**
 * The response of a record search as JSON: rows → API records (domain/records.ts) → the page
 * envelope, as the route's response schema (SearchRecordsPage) serializes them with
 * fast-json-stringify, as Fastify would. On SQLite the statement that reads the page renders most
 * records itself (store/search-json.ts) and `pageBody` only joins them with the ones rendered here
 * (`recordJson`), on the reader thread that ran the query (store/search-worker.ts): the main thread
 * neither copies the rows across threads nor decodes nor serializes them; it sends the bytes as they are.
 */
import fastJson from 'fast-json-stringify';
import { type StoredRecord, recordToApi } from '../domain/records.ts';
import { RecordSchema } from '../schemas/records.ts';
import { SearchRecordsPage } from '../schemas/search.ts';

/** What the envelope needs besides the rows (which hold one more than `limit` when a page follows). */
export interface PageFormat {
  startingToken: number;
  limit: number;
  includeCounts: boolean;
}

let serialize: ((page: unknown) => string) | null = null;
let serializeRecord: ((record: unknown) => string) | null = null;

/** The page object the route answers (the shape SearchRecordsPage describes). */
export function searchPage(rows: readonly unknown[], f: PageFormat) {
  const more = rows.length > f.limit;
  const page = more ? rows.slice(0, f.limit) : rows;
  const next = more ? f.startingToken + f.limit : null;
  return {
    records: page.map((r) => recordToApi(r as StoredRecord, { includeCounts: f.includeCounts })),
    num_rows: page.length,
    next_starting_token: next,
    paginated: next !== null,
    last_row_id: page.length ? (page[page.length - 1] as { id: string }).id : null,
  };
}

/** `searchPage` as JSON text, through the route's response schema. */
export function searchPageJson(rows: readonly unknown[], f: PageFormat): string {
  serialize ??= fastJson(SearchRecordsPage as object);
  return serialize(searchPage(rows, f));
}

/** One record as the page's serializer writes it (its item schema, RecordSchema). */
export function recordJson(row: StoredRecord, includeCounts: boolean): string {
  serializeRecord ??= fastJson(RecordSchema as object);
  return serializeRecord(recordToApi(row, { includeCounts }));
}

/**
 * The page's response body, UTF-8, from its records already rendered as JSON (`records`: at most
 * `limit` of them, in order; `ids` their ids), byte for byte what `searchPageJson` writes. `more`:
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
