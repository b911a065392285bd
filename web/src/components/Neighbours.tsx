import { Link, useSearchParams } from 'react-router';
import { post } from '../lib/api.ts';
import type { ApiRecord, RecordTab, RecordsPage } from '../lib/api-types.ts';
import { DEFAULT_COLUMNS, type Scope, parseView, searchBody } from '../lib/list-view.ts';
import { useApi } from '../lib/use-api.ts';

/**
 * Previous and next record of the list the record was opened from: the list's view travels in the
 * record's URL (`from`, `i`), so the same neighbours come back after a reload.
 */
export function Neighbours({
  projectId,
  tab,
  base,
  scope,
}: {
  projectId: string;
  tab: RecordTab;
  base: string;
  scope: Scope;
}) {
  const [params] = useSearchParams();
  const from = params.get('from');
  const index = Number(params.get('i'));
  const known = from !== null && Number.isSafeInteger(index) && index >= 0;
  const around = useApi(known ? `${tab}/${from}/${index}` : null, () => {
    const view = { ...parseView(new URLSearchParams(from ?? '')), start: Math.max(0, index - 1), limit: 3 };
    return post<RecordsPage>(
      `/v2/projects/${projectId}/${tab}/search`,
      searchBody(view, scope, DEFAULT_COLUMNS[tab], Date.now()),
    );
  });
  if (!known) return null;
  const records = around.data?.records ?? [];
  const prev: ApiRecord | undefined = index > 0 ? records[0] : undefined;
  const next: ApiRecord | undefined = records[index > 0 ? 2 : 1];
  const href = (r: ApiRecord, i: number) =>
    `${base}/${tab}/${r.id}?${new URLSearchParams({ from: from ?? '', i: String(i) })}`;
  return (
    <nav className="neighbours" aria-label="Records of the list">
      <Link to={`${base}/${tab}?${from}`} className="button ghost small">
        ← Back to the list
      </Link>
      {prev ? (
        <Link to={href(prev, index - 1)} className="button small" rel="prev">
          Previous {tab.slice(0, -1)}
        </Link>
      ) : (
        <span className="button small disabled" aria-disabled="true">
          Previous {tab.slice(0, -1)}
        </span>
      )}
      {next ? (
        <Link to={href(next, index + 1)} className="button small" rel="next">
          Next {tab.slice(0, -1)}
        </Link>
      ) : (
        <span className="button small disabled" aria-disabled="true">
          Next {tab.slice(0, -1)}
        </span>
      )}
      <span className="muted small">#{index + 1}</span>
    </nav>
  );
}
