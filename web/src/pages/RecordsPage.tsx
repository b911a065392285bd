import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { AddToQueue } from '../components/AddToQueue.tsx';
import { ColumnChooser } from '../components/ColumnChooser.tsx';
import { EmptyStream } from '../components/EmptyStream.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { FilterBuilder } from '../components/FilterBuilder.tsx';
import { RecordTable } from '../components/RecordTable.tsx';
import { RunHeader, runBase, useRunInfo } from '../components/RunHeader.tsx';
import { TimeRangePicker } from '../components/TimeRangePicker.tsx';
import { useAccess } from '../lib/access.tsx';
import { post } from '../lib/api.ts';
import type { ApiRecord, Column, RecordTab, RecordsPage as Page, RunKind } from '../lib/api-types.ts';
import { useFailures } from '../lib/failures.ts';
import { formatCount } from '../lib/format.ts';
import {
  DEFAULT_COLUMNS,
  type ListView,
  PAGE_SIZES,
  matchingBody,
  parseView,
  runScope,
  searchBody,
  viewToParams,
} from '../lib/list-view.ts';
import { countConditions, treeToForm } from '../lib/filter-form.ts';
import { rememberColumns, rememberedColumns } from '../lib/remembered-columns.ts';
import { useApi } from '../lib/use-api.ts';

const TITLE: Record<RecordTab, string> = { traces: 'Traces', spans: 'Spans', sessions: 'Sessions' };

/** How many conditions a filter tree holds, for the Filters button (0 when the builder cannot say). */
function filterCount(tree: ListView['filter']): number {
  if (!tree) return 0;
  try {
    return countConditions(treeToForm(tree));
  } catch {
    return 1;
  }
}

export function RecordsPage({ tab, runKind }: { tab: RecordTab; runKind: RunKind }) {
  const { projectId = '', runId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const view = useMemo(() => parseView(params), [params]);
  const info = useRunInfo(projectId, runKind, runId);
  const scope = runScope(runKind, runId);
  const [builderOpen, setBuilderOpen] = useState(() => view.filter !== null);

  const catalogue = useApi(`columns/${tab}/${runId}`, () =>
    post<{ columns: Column[] }>(`/v2/projects/${projectId}/${tab}/available_columns`, scope),
  );
  const byId = useMemo(
    () => new Map((catalogue.data?.columns ?? []).map((c) => [c.id, c])),
    [catalogue.data],
  );
  const chosen = view.columns ?? rememberedColumns(tab) ?? DEFAULT_COLUMNS[tab];
  // Default columns the run does not have (no llm spans, no tokens) are left out once the catalogue is in.
  const shown = view.columns || !catalogue.data ? chosen : chosen.filter((c) => byId.has(c));

  const queryKey = `${tab}/${runId}/${params.toString()}`;
  const page = useApi(queryKey, () =>
    post<Page>(`/v2/projects/${projectId}/${tab}/search`, searchBody(view, scope, chosen, Date.now())),
  );

  const setView = (next: Partial<ListView>, keepPage = false) =>
    setParams(viewToParams({ ...view, ...next, start: keepPage ? (next.start ?? view.start) : 0 }));
  const base = runBase(projectId, runKind, runId);
  const from = params.toString();
  const hrefOf = (r: ApiRecord, i: number) =>
    `${base}/${tab}/${r.id}?${new URLSearchParams({ from, i: String(view.start + i) }).toString()}`;

  const filtered = view.filter !== null || view.q !== '' || view.range.kind !== 'all';
  const records = page.error ? [] : (page.data?.records ?? []);
  // Rows picked for an annotation queue; a new search starts with none.
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  // biome-ignore lint/correctness/useExhaustiveDependencies: queryKey stands for the search
  useEffect(() => setSelected(new Set()), [queryKey]);
  const selection = {
    selected,
    set: (ids: string[], on: boolean) =>
      setSelected((prev) => {
        const next = new Set(prev);
        for (const id of ids) on ? next.add(id) : next.delete(id);
        return next;
      }),
  };
  const queueable = useAccess().can('editor') && page.fresh && records.length > 0;
  const failures = useFailures(projectId, scope, records, tab === 'traces' && page.fresh);
  // Headings and cells wait for the catalogue's labels and types (or its failure) so they never flash raw ids.
  const labelled = catalogue.data !== undefined || catalogue.error !== undefined;
  // A refused search is its error alone: it matched nothing because it did not run.
  const empty = page.fresh && !page.error && records.length === 0;

  const submitSearch = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    setView({ q: String(new FormData(e.currentTarget).get('q') ?? '').trim() });
  };

  return (
    <>
      <RunHeader projectId={projectId} kind={runKind} runId={runId} info={info} />
      <div className="toolbar">
        <form className="quick-search" onSubmit={submitSearch} key={view.q}>
          <label htmlFor="quick-search" className="visually-hidden">
            Input or output contains
          </label>
          <input
            id="quick-search"
            name="q"
            type="search"
            defaultValue={view.q}
            placeholder="Input or output contains…"
          />
          <button type="submit" className="button">
            Search
          </button>
        </form>
        <TimeRangePicker range={view.range} onChange={(range) => setView({ range })} />
        <button
          type="button"
          className={builderOpen ? 'button active' : 'button'}
          aria-expanded={builderOpen}
          aria-controls="filter-builder"
          onClick={() => setBuilderOpen(!builderOpen)}
        >
          Filters{view.filter ? ` (${filterCount(view.filter)})` : ''}
        </button>
        {catalogue.data && (
          <ColumnChooser
            catalogue={catalogue.data.columns}
            chosen={shown}
            onChange={(columns) => {
              rememberColumns(tab, columns);
              setView({ columns }, true);
            }}
            onReset={() => {
              rememberColumns(tab, null);
              setView({ columns: null }, true);
            }}
          />
        )}
        <button type="button" className="button ghost" onClick={page.reload}>
          Refresh
        </button>
      </div>
      {builderOpen && (
        <div id="filter-builder">
          {catalogue.error && <ErrorNote error={catalogue.error} retry={catalogue.reload} />}
          {catalogue.data && (
            <FilterBuilder
              applied={view.filter}
              columns={catalogue.data.columns}
              onApply={(filter) => setView({ filter })}
            />
          )}
        </div>
      )}
      {page.error && <ErrorNote error={page.error} retry={page.reload} />}
      {((!page.data && !page.error) || (records.length > 0 && !labelled)) && <Loading what={tab} />}
      {empty && !filtered && view.start === 0 && info.project.data && info.run.data ? (
        <EmptyStream
          projectId={projectId}
          projectName={info.project.data.name}
          runId={runId}
          runName={info.run.data.name}
          kind={runKind}
        />
      ) : empty ? (
        <div className="empty">
          <h2>No {tab} match</h2>
          <p>
            {view.start > 0
              ? 'This page is past the last record. '
              : 'Loosen the filters, the search or the time range. '}
            <button type="button" className="link-button" onClick={() => setParams(new URLSearchParams())}>
              Show all {tab}
            </button>
          </p>
        </div>
      ) : (
        records.length > 0 &&
        labelled && (
          <div className={page.loading ? 'results busy' : 'results'} aria-busy={page.loading}>
            {queueable && (
              <AddToQueue
                projectId={projectId}
                selectedIds={[...selected]}
                matching={() => matchingBody(view, scope, tab, Date.now())}
                count={view.start + records.length}
                exact={view.start === 0 && page.data?.next_starting_token == null}
                onAdded={() => setSelected(new Set())}
              />
            )}
            <RecordTable
              records={records}
              selection={queueable ? selection : undefined}
              columnIds={shown}
              catalogue={byId}
              sort={view.sort}
              onSort={(sort) => setView({ sort })}
              hrefOf={hrefOf}
              failures={failures}
              label={`${tab} of ${info.run.data?.name ?? 'the run'}`}
            />
            <div className="pager">
              <span className="muted" aria-live="polite">
                {TITLE[tab]} {formatCount(view.start + 1)}–{formatCount(view.start + records.length)}
              </span>
              <label className="page-size">
                <span>Rows per page</span>
                <select
                  value={view.limit}
                  onChange={(e) => setView({ limit: Number(e.currentTarget.value) })}
                >
                  {PAGE_SIZES.map((n) => (
                    <option key={n} value={n}>
                      {n}
                    </option>
                  ))}
                </select>
              </label>
              <button
                type="button"
                className="button"
                disabled={view.start === 0}
                onClick={() => setView({ start: Math.max(0, view.start - view.limit) }, true)}
              >
                Previous page
              </button>
              <button
                type="button"
                className="button"
                disabled={page.data?.next_starting_token == null}
                onClick={() => setView({ start: page.data?.next_starting_token ?? view.start }, true)}
              >
                Next page
              </button>
            </div>
          </div>
        )
      )}
    </>
  );
}
