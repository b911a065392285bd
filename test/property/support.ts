/** Helpers shared by the search API tests and the property tests. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Store } from '../../src/store/db.ts';
import type { TestServer } from '../helpers/server.ts';

export const BASE_TIME_US = Date.UTC(2025, 0, 1) * 1000;
export const iso = (us: number) => new Date(us / 1000).toISOString();

/** Sends traces (with nested spans) through the ingestion route; answers the response body. */
export async function ingestTraces(
  s: TestServer,
  projectId: string,
  logStreamId: string,
  traces: unknown[],
  extra: Record<string, unknown> = {},
) {
  const r = await s.call('POST', `/v2/projects/${projectId}/traces`, {
    log_stream_id: logStreamId,
    traces,
    ...extra,
  });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Creates a session through the API; answers its id. */
export async function createSession(
  s: TestServer,
  projectId: string,
  logStreamId: string,
  body: Record<string, unknown> = {},
): Promise<string> {
  const r = await s.call('POST', `/v2/projects/${projectId}/sessions`, {
    log_stream_id: logStreamId,
    ...body,
  });
  assert.equal(r.status, 200, r.text);
  return r.body.id;
}

/*
 * Direct inserts into the tables search reads, for tests that need rows ingestion cannot produce
 * (other helpers' tests use these too).
 */
/** A record as tests describe it: JSON columns as values, everything optional but type. */
export interface SeedRecord {
  id?: string;
  type: string;
  name?: string;
  created_at?: number;
  updated_at?: number;
  is_complete?: boolean;
  session_id?: string | null;
  trace_id?: string | null;
  parent_id?: string | null;
  status_code?: number | null;
  duration_ns?: number | null;
  num_input_tokens?: number | null;
  num_output_tokens?: number | null;
  num_total_tokens?: number | null;
  model?: string | null;
  external_id?: string | null;
  error_message?: string | null;
  input_text?: string | null;
  output_text?: string | null;
  metrics?: Record<string, unknown> | null;
  user_metadata?: Record<string, unknown> | null;
  dataset_metadata?: Record<string, unknown> | null;
  tags?: unknown;
  num_children?: number;
}

const T0 = BASE_TIME_US;

/** Inserts records straight into the `records` table (the row shape search reads). */
export async function insertRecords(
  store: Store,
  projectId: string,
  runId: string,
  records: SeedRecord[],
): Promise<string[]> {
  const enc = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  const rows = records.map((r, i) => ({
    id: r.id ?? randomUUID(),
    project_id: projectId,
    run_id: runId,
    type: r.type,
    session_id: r.session_id ?? null,
    trace_id: r.trace_id ?? null,
    parent_id: r.parent_id ?? null,
    name: r.name ?? '',
    created_at: r.created_at ?? T0 + i * 1_000_000,
    updated_at: r.updated_at ?? r.created_at ?? T0 + i * 1_000_000,
    is_complete: r.is_complete === false ? 0 : 1,
    status_code: r.status_code ?? null,
    duration_ns: r.duration_ns ?? null,
    num_input_tokens: r.num_input_tokens ?? null,
    num_output_tokens: r.num_output_tokens ?? null,
    num_total_tokens: r.num_total_tokens ?? null,
    num_cache_read_input_tokens: null,
    num_cache_creation_input_tokens: null,
    time_to_first_token_ns: null,
    model: r.model ?? null,
    external_id: r.external_id ?? null,
    error_message: r.error_message ?? null,
    input_text: r.input_text ?? null,
    output_text: r.output_text ?? null,
    metrics: enc(r.metrics),
    user_metadata: enc(r.user_metadata),
    dataset_metadata: enc(r.dataset_metadata),
    tags: enc(r.tags),
    body: null,
    num_children: r.num_children ?? 0,
  }));
  for (let i = 0; i < rows.length; i += 200) {
    await store.db
      .insertInto('records')
      .values(rows.slice(i, i + 200) as any)
      .execute();
  }
  // Records written around ingestion have no dashboard rollups: the log stream's dashboards scan.
  await store.db
    .insertInto('rollup_gaps')
    .values({ run_id: runId })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return rows.map((r) => r.id);
}

/** Notes keys in the column catalogue, as ingestion does. */
export async function catalogue(
  store: Store,
  runId: string,
  entries: {
    column_id: string;
    record_type: string;
    data_type: string;
    first_seen?: number;
    last_seen?: number;
  }[],
): Promise<void> {
  if (!entries.length) return;
  await store.db
    .insertInto('column_catalogue')
    .values(
      entries.map((e) => ({
        run_id: runId,
        column_id: e.column_id,
        record_type: e.record_type,
        data_type: e.data_type,
        first_seen: e.first_seen ?? T0,
        last_seen: e.last_seen ?? T0 + 1e12,
      })),
    )
    .execute();
}

/** Ids of every page of a search, following next_starting_token. */
export async function allIds(s: TestServer, url: string, body: Record<string, unknown>, limit = 1000) {
  const ids: string[] = [];
  let token: number | null = 0;
  while (token !== null) {
    const r = await s.call('POST', url, { ...body, pagination: { starting_token: token, limit } });
    if (r.status !== 200) throw new Error(`search failed ${r.status}: ${r.text}`);
    ids.push(...r.body.records.map((x: any) => x.id));
    token = r.body.next_starting_token;
  }
  return ids;
}
