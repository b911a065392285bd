/**
 * One trends dashboard: its settings bar, its widgets drawn from the computed data (outside sections,
 * then each section under its coloured heading), and the forms that add and edit widgets and
 * sections. Loaded on demand with the charting code (routes.tsx), so the record pages stay small.
 */
import { memo, useCallback, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { DashboardSettings, SETTINGS_FIELDS } from '../components/DashboardSettings.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { RunHeader, runBase, useRunInfo } from '../components/RunHeader.tsx';
import { SectionForm } from '../components/SectionForm.tsx';
import { WidgetForm } from '../components/WidgetForm.tsx';
import { WidgetGrid } from '../components/WidgetGrid.tsx';
import { Legend, WidgetChart, WidgetView } from '../components/WidgetView.tsx';
import { del, get, post, put } from '../lib/api.ts';
import { columnTitle } from '../lib/cells.ts';
import type { Column, Dashboard, DashboardData, Section, Widget } from '../lib/api-types.ts';
import {
  AGGREGATION_LABELS,
  type Catalogues,
  type Cell,
  dataOf,
  drillDowns,
  formatValue,
  mergedColumns,
  withCells,
} from '../lib/dashboard-view.ts';
import { saveDashboard, trendsPath } from '../lib/dashboards-api.ts';
import { useAccess } from '../lib/access.tsx';
import { FieldErrors } from '../lib/field-errors.ts';
import { usePlainLinks } from '../lib/use-plain-links.ts';
import { dashboardQueryRequest, dashboardRequest } from '../lib/requests.ts';
import { useApi } from '../lib/use-api.ts';
import '../dashboards.css';

/** What the computed data depends on: not the layout, the name or a relative range's moving ends. */
function dataKey(d: Dashboard): string {
  const widgets = [...d.widgets, ...d.sections.flatMap((s) => s.widgets)].map((w) => [
    w.id,
    w.metric,
    w.aggregation,
  ]);
  return JSON.stringify([
    d.id,
    d.interval_mins,
    d.group_by,
    d.filter_tree,
    d.relative_time ?? [d.start_time, d.end_time],
    widgets,
  ]);
}

type Editing =
  | { kind: 'widget'; widget: Widget | null; sectionId: string | null }
  | { kind: 'section'; section: Section | null };

export function DashboardPage() {
  const { projectId = '', runId = '', dashboardId = '' } = useParams();
  const info = useRunInfo(projectId, 'log_streams', runId);
  const navigate = useNavigate();
  // Editors change a dashboard; others see it without the controls the API would refuse them.
  const editable = useAccess().can('editor');
  const trends = trendsPath(projectId, runId);
  const base = runBase(projectId, 'log_streams', runId);
  const dashboardReq = dashboardRequest(projectId, runId, dashboardId);
  const loaded = useApi(dashboardReq.key, dashboardReq.load);
  const [local, setLocal] = useState<Dashboard | null>(null);
  const d = local?.id === dashboardId ? local : loaded.data;
  const [settingsErrors, setSettingsErrors] = useState(FieldErrors.none);
  const [failure, setFailure] = useState<Error | null>(null);
  const [editing, setEditing] = useState<Editing | null>(null);

  // The query needs only the dashboard's id: it is sent with the dashboard's GET, not after it (the
  // route's loader starts both while this page's code loads), and again when a change alters what it
  // computes (not for a move, a rename or a favourite).
  const [dataVersion, setDataVersion] = useState(0);
  const computedFor = useRef<string | null>(null);
  // Before paint, so that no frame shows the old data as current.
  useLayoutEffect(() => {
    if (!d) return;
    const k = dataKey(d);
    if (computedFor.current !== null && computedFor.current !== k) setDataVersion((v) => v + 1);
    computedFor.current = k;
  }, [d]);
  const queryReq = dashboardQueryRequest(projectId, runId, dashboardId, dataVersion);
  const data = useApi(queryReq.key, queryReq.load);
  // A dashboard counts every record type: its choices are the columns of all three tables. Asked
  // once the query has answered, so as not to slow it down.
  const catalogues = useApi(data.data || data.error ? `columns/all/${runId}` : null, async () => {
    const tabs = ['spans', 'traces', 'sessions'] as const;
    const lists = await Promise.all(
      tabs.map((t) =>
        post<{ columns: Column[] }>(`/v2/projects/${projectId}/${t}/available_columns`, {
          log_stream_id: runId,
        }),
      ),
    );
    return Object.fromEntries(tabs.map((t, i) => [t, lists[i].columns])) as Catalogues;
  });
  const columnList = useMemo(() => mergedColumns(catalogues.data ?? {}), [catalogues.data]);
  const queryErrors = data.error ? FieldErrors.of(data.error, SETTINGS_FIELDS) : FieldErrors.none;

  const refresh = useCallback(
    async () => setLocal(await get<Dashboard>(`${trends}/${dashboardId}`)),
    [trends, dashboardId],
  );
  const act = async (what: () => Promise<unknown>) => {
    setFailure(null);
    try {
      await what();
      await refresh();
    } catch (err) {
      setFailure(err as Error);
      throw err;
    }
  };
  // Saves go out one at a time, in the order they were made: two PUTs in flight together may
  // commit in either order, and the answer that came last would show the dashboard without the
  // other's change (a range applied, then an interval picked at once).
  const saving = useRef<Promise<unknown>>(Promise.resolve());
  const save = (body: Partial<Dashboard>) => {
    const done = saving.current.then(() => saveDashboard(trends, dashboardId, body));
    saving.current = done.catch(() => undefined);
    return done;
  };
  const change = async (body: Partial<Dashboard>) => {
    setSettingsErrors(FieldErrors.none);
    try {
      setLocal(await save(body));
    } catch (err) {
      setSettingsErrors(FieldErrors.of(err, SETTINGS_FIELDS));
    }
  };
  const saveLayout = (cells: Cell[]) => {
    if (!d) return;
    const layout_map = withCells(d.layout_map, cells);
    setLocal({ ...d, layout_map });
    save({ layout_map }).catch((err: Error) => setFailure(err));
  };

  // The widgets re-render only when what they show changes (the data, the links, the dashboard),
  // not for the page's other state (the column lists loading, a form opening): the callbacks they
  // get keep their identity and read the page's latest state through a ref.
  const latest = useRef({ act, saveLayout });
  latest.current = { act, saveLayout };
  const onLayout = useCallback((cells: Cell[]) => latest.current.saveLayout(cells), []);
  const editWidget = useCallback(
    (w: Widget) => setEditing({ kind: 'widget', widget: w, sectionId: w.section_id }),
    [],
  );
  const removeWidget = useCallback(
    (w: Widget) => {
      if (window.confirm(`Delete the widget "${w.name}"?`))
        latest.current.act(() => del(`${trends}/${dashboardId}/widgets/${w.id}`)).catch(() => {});
    },
    [trends, dashboardId],
  );
  const filterKey = JSON.stringify(d?.filter_tree ?? null);
  const groupBy = d?.group_by ?? null;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the links depend on the dashboard's filter and group only (filterKey, groupBy), not on its name or layout
  const hrefOf = useMemo(
    () =>
      d && data.data
        ? drillDowns(base, d, data.data, catalogues.data ?? {})
        : (_bucket: number | null, _group: unknown) => base,
    [filterKey, groupBy, data.data, base, catalogues.data],
  );
  const plainLinks = usePlainLinks();

  const sections = d?.sections ?? [];
  const stale = !data.fresh;
  const renderWidget = useCallback(
    (w: Widget) => (
      <WidgetCard
        widget={w}
        metricLabel={columnTitle(
          columnList.find((c) => c.id === w.metric),
          w.metric,
        )}
        data={data.data}
        stale={stale}
        hrefOf={hrefOf}
        open={navigate}
        edit={editable ? editWidget : null}
        remove={editable ? removeWidget : null}
      />
    ),
    [data.data, stale, hrefOf, navigate, editWidget, removeWidget, editable, columnList],
  );
  const grid = (widgets: Widget[]) => (
    <WidgetGrid
      widgets={widgets}
      layoutMap={d?.layout_map ?? {}}
      onLayout={onLayout}
      render={renderWidget}
      editable={editable}
    />
  );

  const allWidgets = d ? [...d.widgets, ...sections.flatMap((s) => s.widgets)] : [];
  const drawn = data.fresh && !!data.data;
  return (
    <>
      <RunHeader
        projectId={projectId}
        kind="log_streams"
        runId={runId}
        info={info}
        tail={[{ label: 'Dashboards', to: `${base}/dashboards` }, { label: d?.name ?? '…' }]}
      />
      {loaded.error && <ErrorNote error={loaded.error} retry={loaded.reload} />}
      {!d && !loaded.error && <Loading what="the dashboard" />}
      {d && (
        // Clicks on the widgets' plain links (legends, tables, figures) navigate within the console.
        // biome-ignore lint/a11y/useKeyWithClickEvents: the clicks are the links' own (Enter on a link clicks it)
        // biome-ignore lint/a11y/noStaticElementInteractions: as above: the element only passes its links' clicks on
        <div
          className="dashboard"
          data-dashboard-id={d.id}
          data-data-ready={drawn ? 'true' : 'false'}
          onClick={plainLinks}
        >
          <div className="section-head">
            <h1>{d.name}</h1>
            <button
              type="button"
              className={d.is_favorited ? 'star on' : 'star'}
              aria-pressed={d.is_favorited}
              aria-label="Favourite"
              disabled={!editable}
              onClick={() => change({ is_favorited: !d.is_favorited })}
            >
              {d.is_favorited ? '★' : '☆'}
            </button>
            {d.is_default && <span className="badge">Default</span>}
            <span className="spacer" />
            {editable && (
              <>
                <button
                  type="button"
                  className="button primary"
                  onClick={() => setEditing({ kind: 'widget', widget: null, sectionId: null })}
                >
                  Add widget
                </button>
                <button
                  type="button"
                  className="button"
                  onClick={() => setEditing({ kind: 'section', section: null })}
                >
                  Add section
                </button>
              </>
            )}
          </div>
          <DashboardSettings
            dashboard={d}
            columns={columnList}
            errors={settingsErrors.any ? settingsErrors : queryErrors}
            change={change}
            readOnly={!editable}
          />
          {failure && <ErrorNote error={failure} />}
          {data.error && queryErrors.unplaced().length > 0 && (
            <ErrorNote error={data.error} retry={data.reload} />
          )}
          {data.data && data.data.other_groups > 0 && (
            <p className="muted">
              The {data.data.groups.length} groups with the most records are shown; {data.data.other_groups}{' '}
              more matched.
            </p>
          )}
          {editing?.kind === 'widget' && (
            <div className="editor">
              <WidgetForm
                widget={editing.widget}
                columns={columnList}
                sections={sections}
                sectionId={editing.sectionId}
                close={() => setEditing(null)}
                save={async (body) => {
                  const w = editing.widget;
                  const path = w
                    ? `${trends}/${dashboardId}/widgets/${w.id}`
                    : `${trends}/${dashboardId}/widgets`;
                  if (w) await put(path, body);
                  else await post(path, body);
                  await refresh();
                }}
              />
            </div>
          )}
          {editing?.kind === 'section' && (
            <div className="editor">
              <SectionForm
                section={editing.section}
                close={() => setEditing(null)}
                save={async (body) => {
                  const s = editing.section;
                  if (s) await put(`${trends}/${dashboardId}/sections/${s.id}`, body);
                  else await post(`${trends}/${dashboardId}/sections`, body);
                  await refresh();
                }}
              />
            </div>
          )}
          {allWidgets.length === 0 && (
            <div className="empty">
              <h2>No widgets yet</h2>
              <p>
                A widget charts an aggregation (count, average, P95…) of a column per {d.interval_mins}-minute
                bucket.{' '}
                {editable ? (
                  <>
                    Choose <strong>Add widget</strong> to make the first.
                  </>
                ) : (
                  'An editor of the project adds them.'
                )}
              </p>
            </div>
          )}
          {d.widgets.length > 0 && grid(d.widgets)}
          {sections.map((s) => (
            <section
              key={s.id}
              className="dash-section"
              style={{ borderTopColor: s.color ?? undefined }}
              aria-labelledby={`section-${s.id}`}
              data-section-id={s.id}
            >
              <div className="section-head">
                <h2 id={`section-${s.id}`}>
                  {s.color && <span className="swatch" style={{ background: s.color }} aria-hidden="true" />}
                  {s.name}
                </h2>
                <span className="spacer" />
                {editable && (
                  <>
                    <button
                      type="button"
                      className="button small"
                      onClick={() => setEditing({ kind: 'widget', widget: null, sectionId: s.id })}
                    >
                      Add widget<span className="visually-hidden"> to {s.name}</span>
                    </button>
                    <button
                      type="button"
                      className="button small ghost"
                      onClick={() => setEditing({ kind: 'section', section: s })}
                    >
                      Edit section<span className="visually-hidden"> {s.name}</span>
                    </button>
                    <button
                      type="button"
                      className="button small ghost danger"
                      onClick={() => {
                        if (window.confirm(`Delete the section "${s.name}" and its widgets?`))
                          act(() => del(`${trends}/${dashboardId}/sections/${s.id}`)).catch(() => {});
                      }}
                    >
                      Delete section<span className="visually-hidden"> {s.name}</span>
                    </button>
                  </>
                )}
              </div>
              {s.widgets.length ? grid(s.widgets) : <p className="muted">No widgets in this section yet.</p>}
            </section>
          ))}
        </div>
      )}
    </>
  );
}

const WidgetCard = memo(function WidgetCard({
  widget,
  metricLabel,
  data,
  stale,
  hrefOf,
  open,
  edit,
  remove,
}: {
  widget: Widget;
  /** The metric's column label (Cost, not metrics/cost). */
  metricLabel: string;
  data: DashboardData | undefined;
  stale: boolean;
  hrefOf: (bucket: number | null, group: unknown) => string;
  open: (href: string) => void;
  /** Null: the caller may not change widgets (no buttons). */
  edit: ((w: Widget) => void) | null;
  remove: ((w: Widget) => void) | null;
}) {
  const computed = dataOf(data, widget.id);
  const series = useMemo(() => computed?.series ?? [], [computed]);
  const chart = widget.type === 'line_chart' || widget.type === 'bar_chart';
  const fmt = (v: number | null | undefined) => formatValue(widget.metric, widget.aggregation, v);
  return (
    <article
      className={stale ? 'widget busy' : 'widget'}
      data-widget-id={widget.id}
      data-widget-type={widget.type}
      aria-labelledby={`widget-${widget.id}`}
    >
      <header className="widget-head">
        <h3 id={`widget-${widget.id}`}>{widget.name}</h3>
        <span className="muted small">
          {AGGREGATION_LABELS[widget.aggregation] ?? widget.aggregation} of {metricLabel}
        </span>
        <span className="spacer" />
        {edit && (
          <button
            type="button"
            className="icon-button"
            onClick={() => edit(widget)}
            aria-label={`Edit ${widget.name}`}
          >
            ✎
          </button>
        )}
        {remove && (
          <button
            type="button"
            className="icon-button"
            onClick={() => remove(widget)}
            aria-label={`Delete ${widget.name}`}
          >
            ×
          </button>
        )}
      </header>
      <div className="widget-body">
        {!data || !computed ? (
          <Loading what="data" />
        ) : chart ? (
          <>
            <WidgetChart
              widget={widget}
              data={data}
              series={series}
              onPoint={(bucket, group) => open(hrefOf(bucket, group))}
            />
            <Legend series={series} fmt={fmt} hrefOf={hrefOf} grouped={data.group_by !== null} />
          </>
        ) : (
          <WidgetView widget={widget} data={data} series={series} hrefOf={hrefOf} />
        )}
      </div>
    </article>
  );
});
