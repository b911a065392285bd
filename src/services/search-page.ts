/**
 * The response of a record search as JSON text: rows → API records (domain/records.ts) → the page
 * envelope, serialized through the route's response schema (SearchRecordsPage) with
 * fast-json-stringify, as Fastify would. On SQLite this runs on the reader thread that ran the
 * query (store/search-worker.ts), so the main thread neither copies the rows across threads nor
 * decodes nor serializes them; it sends the text as it is.
 */
import fastJson from 'fast-json-stringify';
import { type StoredRecord, recordToApi } from '../domain/records.ts';
import { SearchRecordsPage } from '../schemas/search.ts';

/** What the envelope needs besides the rows (which hold one more than `limit` when a page follows). */
export interface PageFormat {
  startingToken: number;
  limit: number;
  includeCounts: boolean;
}

let serialize: ((page: unknown) => string) | null = null;

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
