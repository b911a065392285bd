import { type FormEvent, useId, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { CreateForm } from '../components/CreateForm.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { FieldError, FormErrors, invalidProps } from '../components/FieldError.tsx';
import { RunHeader, runBase, useRunInfo } from '../components/RunHeader.tsx';
import { del, get, post, put } from '../lib/api.ts';
import type { Dashboard } from '../lib/api-types.ts';
import { intervalLabel, rangeLabel } from '../lib/dashboard-view.ts';
import { saveDashboard, trendsPath } from '../lib/dashboards-api.ts';
import { useAccess } from '../lib/access.tsx';
import { FieldErrors } from '../lib/field-errors.ts';
import { useApi } from '../lib/use-api.ts';
import '../dashboards.css';

const widgetCount = (d: Dashboard) => d.widgets.length + d.sections.reduce((n, s) => n + s.widgets.length, 0);

function RenameForm({ trends, d, done }: { trends: string; d: Dashboard; done: (saved: boolean) => void }) {
  const [errors, setErrors] = useState(FieldErrors.none);
  const id = useId();
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const name = String(new FormData(e.currentTarget).get('name') ?? '');
    try {
      await saveDashboard(trends, d.id, { name });
      done(true);
    } catch (err) {
      setErrors(FieldErrors.of(err, ['name']));
    }
  };
  return (
    <form className="inline-form" onSubmit={submit}>
      <label htmlFor={`${id}-name`} className="visually-hidden">
        New name of {d.name}
      </label>
      <input id={`${id}-name`} name="name" defaultValue={d.name} {...invalidProps(errors, 'name', id)} />
      <button type="submit" className="button small">
        Save
      </button>
      <button type="button" className="button small ghost" onClick={() => done(false)}>
        Cancel
      </button>
      <FieldError errors={errors} field="name" id={id} />
      <FormErrors errors={errors} />
    </form>
  );
}

/** A log stream's trends dashboards: the default, then favourites; create, rename, favourite, delete. */
export function DashboardsPage() {
  const { projectId = '', runId = '' } = useParams();
  const info = useRunInfo(projectId, 'log_streams', runId);
  const navigate = useNavigate();
  // Editors create, rename, favourite and delete; others see the list.
  const editable = useAccess().can('editor');
  const trends = trendsPath(projectId, runId);
  const list = useApi(`dashboards/${runId}`, () => get<Dashboard[]>(trends));
  const [renaming, setRenaming] = useState<string | null>(null);
  const [failure, setFailure] = useState<Error | null>(null);
  const base = `${runBase(projectId, 'log_streams', runId)}/dashboards`;
  const act = async (what: () => Promise<unknown>) => {
    setFailure(null);
    try {
      await what();
      list.reload();
    } catch (err) {
      setFailure(err as Error);
    }
  };
  // The default first (as the API lists it), then favourites.
  const dashboards = [...(list.data ?? [])].sort(
    (a, b) => Number(b.is_default) - Number(a.is_default) || Number(b.is_favorited) - Number(a.is_favorited),
  );
  const hasDefault = dashboards.some((d) => d.is_default);
  return (
    <>
      <RunHeader projectId={projectId} kind="log_streams" runId={runId} info={info} />
      <div className="section-head">
        <h1>Dashboards</h1>
        {editable && (
          <CreateForm
            label="New dashboard name"
            button="Create dashboard"
            create={async (name) => {
              const d = await post<Dashboard>(trends, { name });
              navigate(`${base}/${d.id}`);
            }}
          />
        )}
      </div>
      {failure && <ErrorNote error={failure} />}
      {list.error && <ErrorNote error={list.error} retry={list.reload} />}
      {!list.data && !list.error && <Loading what="dashboards" />}
      {list.data && !hasDefault && (
        <div className="empty">
          <h2>No default dashboard yet</h2>
          <p>
            Each log stream has a default dashboard of trends: widgets that chart an aggregation of a column
            per time bucket.{' '}
            {editable ? (
              <button
                type="button"
                className="button"
                onClick={() => act(async () => navigate(`${base}/${(await put<Dashboard>(trends, {})).id}`))}
              >
                Create the default dashboard
              </button>
            ) : (
              'An editor of the project makes it.'
            )}
          </p>
        </div>
      )}
      {dashboards.length > 0 && (
        <div className="table-wrap">
          <table className="table dashboards">
            <thead>
              <tr>
                <th scope="col">
                  <span className="visually-hidden">Favourite</span>
                </th>
                <th scope="col">Name</th>
                <th scope="col" className="num">
                  Widgets
                </th>
                <th scope="col">Time range</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {dashboards.map((d) => (
                <tr key={d.id} data-dashboard-id={d.id}>
                  <td>
                    <button
                      type="button"
                      className={d.is_favorited ? 'star on' : 'star'}
                      aria-pressed={d.is_favorited}
                      aria-label={`Favourite ${d.name}`}
                      disabled={!editable}
                      onClick={() =>
                        act(() => saveDashboard(trends, d.id, { is_favorited: !d.is_favorited }))
                      }
                    >
                      {d.is_favorited ? '★' : '☆'}
                    </button>
                  </td>
                  <td>
                    {renaming === d.id ? (
                      <RenameForm
                        trends={trends}
                        d={d}
                        done={(saved) => {
                          setRenaming(null);
                          if (saved) list.reload();
                        }}
                      />
                    ) : (
                      <>
                        <Link to={`${base}/${d.id}`}>{d.name}</Link>
                        {d.is_default && <span className="badge">Default</span>}
                      </>
                    )}
                  </td>
                  <td className="num">{widgetCount(d)}</td>
                  <td>
                    {d.relative_time
                      ? rangeLabel(d.relative_time)
                      : `${new Date(d.start_time * 1000).toLocaleString()} – ${new Date(d.end_time * 1000).toLocaleString()}`}
                    , by {intervalLabel(d.interval_mins)}
                  </td>
                  <td className="row-actions">
                    {editable && (
                      <>
                        <button
                          type="button"
                          className="button small ghost"
                          onClick={() => setRenaming(d.id)}
                        >
                          Rename<span className="visually-hidden"> {d.name}</span>
                        </button>
                        <button
                          type="button"
                          className="button small ghost danger"
                          onClick={() => {
                            if (window.confirm(`Delete the dashboard "${d.name}" and its widgets?`))
                              act(() => del(`${trends}/${d.id}`));
                          }}
                        >
                          Delete<span className="visually-hidden"> {d.name}</span>
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
