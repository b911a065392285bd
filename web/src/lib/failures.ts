/**
 * Which records of a page failed: those with an error of their own, and traces holding a span that
 * failed (a trace record does not carry its spans' errors, so one spans search asks for them).
 */
import { post } from './api.ts';
import type { ApiRecord, RecordsPage } from './api-types.ts';
import type { Scope } from './list-view.ts';
import { useApi } from './use-api.ts';

export const hasFailed = (r: ApiRecord) => (r.status_code ?? 0) >= 400 || !!r.error_message;

/** Record id → the status of its failure (its own, else a trace's first failed span's; null: none). */
export type Failures = ReadonlyMap<string, number | null>;

/** `traces`: the records are traces whose spans are to be asked about (a fresh page of them). */
export function useFailures(
  projectId: string,
  scope: Scope,
  records: ApiRecord[],
  traces: boolean,
): Failures {
  const ids = traces ? records.map((t) => t.id) : [];
  const spans = useApi(ids.length ? `failed-spans/${ids.join(',')}` : null, () =>
    post<RecordsPage>(`/v2/projects/${projectId}/spans/search`, {
      ...scope,
      filters: [
        { column_id: 'trace_id', type: 'id', operator: 'one_of', value: ids },
        { column_id: 'status_code', type: 'number', operator: 'gte', value: 400 },
      ],
      pagination: { starting_token: 0, limit: 1000 },
    }),
  );
  const failures = new Map<string, number | null>();
  for (const s of spans.data?.records ?? [])
    if (s.trace_id && !failures.has(s.trace_id)) failures.set(s.trace_id, s.status_code ?? null);
  for (const r of records) if (hasFailed(r)) failures.set(r.id, r.status_code ?? null);
  return failures;
}
