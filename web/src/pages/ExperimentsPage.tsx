/**
 * A project's experiments (issue #34): each one's dataset, prompt version, model, progress (polled
 * while a job runs), metric averages, cost and latency; a form that creates an experiment and posts
 * its `playground_run` job as the official client does; and a row-by-row comparison of two or more
 * experiments over the same dataset.
 */
import { type FormEvent, useEffect, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useAccess } from '../lib/access.tsx';
import { get, post } from '../lib/api.ts';
import type { Integration, Project } from '../lib/api-types.ts';
import type { Dataset } from '../lib/datasets-api.ts';
import { formatCost, formatDuration, formatTime } from '../lib/format.ts';
import type { PromptTemplate } from '../lib/prompt-templates.ts';
import { useApi } from '../lib/use-api.ts';
import './experiments.css';

type Obj = Record<string, any>;
const RUNNING = ['pending', 'processing'];
const num = (v: unknown) => (typeof v === 'number' ? v.toFixed(3).replace(/\.?0+$/, '') : '—');
const text = (v: unknown) =>
  v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);

/** The score averages of an experiment's aggregate metrics (cost and latency shown apart). */
function scoreAverages(e: Obj): [string, number][] {
  return Object.entries((e.aggregate_metrics ?? {}) as Record<string, number>)
    .filter(([k]) => k.startsWith('average_') && k !== 'average_cost' && k !== 'average_latency_ms')
    .map(([k, v]) => [k.slice('average_'.length), v]);
}

function Progress({ e }: { e: Obj }) {
  const job = e.job as Obj | null;
  const pct = Math.round((e.status?.log_generation?.progress_percent ?? 0) as number);
  const running = job && RUNNING.includes(job.status);
  return (
    <div className="exp-progress">
      {running ? (
        <>
          <progress max={100} value={pct} aria-label={`${e.name} progress`} />
          <span className="small muted">{job.progress_message ?? `${pct}%`}</span>
        </>
      ) : (
        <span className={`status ${job?.status ?? ''}`}>{job ? job.status : 'logged'}</span>
      )}
      {job && !running && job.progress_message && (
        <span className="small muted"> {job.progress_message}</span>
      )}
    </div>
  );
}

/** Creates an experiment, saves nothing else, then posts its playground_run job with the scorers. */
function NewExperiment({ projectId, onStarted }: { projectId: string; onStarted: () => void }) {
  const datasets = useApi('datasets', () => get<{ datasets: Dataset[] }>('/v2/datasets?limit=1000'));
  const templates = useApi(`${projectId}/templates`, () =>
    get<PromptTemplate[]>(`/v2/projects/${projectId}/templates`),
  );
  const integrations = useApi('integrations', () => get<Integration[]>('/v2/integrations'));
  const scorers = useApi('scorers:exp', () => post<{ scorers: Obj[] }>('/v2/scorers/list?limit=100', {}));
  const [datasetId, setDatasetId] = useState('');
  const [versionId, setVersionId] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const dataset = datasets.data?.datasets.find((d) => d.id === datasetId) ?? datasets.data?.datasets[0];
  const versions = (templates.data ?? []).flatMap((t) =>
    (t.all_versions?.length ? t.all_versions : [t.selected_version]).map((v) => ({ t, v })),
  );
  const chosenVersion = versions.find((x) => x.v.id === versionId) ?? versions[0];
  async function submit(ev: FormEvent<HTMLFormElement>) {
    ev.preventDefault();
    const form = ev.currentTarget;
    const data = new FormData(form);
    const dsId = String(data.get('dataset') ?? '');
    const dsVersion = data.get('dataset_version') ? Number(data.get('dataset_version')) : null;
    const model = String(data.get('model') ?? '').trim();
    const scorerIds = data.getAll('scorer').map(String);
    setBusy(true);
    setError(null);
    try {
      const e = await post<Obj>(`/v2/projects/${projectId}/experiments`, {
        name: String(data.get('name') ?? '').trim(),
        task_type: 16,
        dataset: { dataset_id: dsId, version_index: dsVersion },
        prompt_template_version_id: String(data.get('template_version') ?? ''),
        prompt_settings: { model_alias: model },
      });
      await post<Obj>('/v2/jobs', {
        job_name: 'playground_run',
        project_id: projectId,
        run_id: e.id,
        prompt_template_version_id: String(data.get('template_version') ?? ''),
        dataset_id: dsId,
        dataset_version_index: dsVersion,
        prompt_settings: { model_alias: model },
        integration_id: String(data.get('integration') ?? '') || null,
        concurrency: Number(data.get('concurrency') ?? 8),
        task_type: 16,
        scorers: scorerIds.map((id) => ({ id, scoreable_node_types: ['trace'] })),
      });
      form.reset();
      onStarted();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  const loading = !datasets.data || !templates.data || !integrations.data;
  return (
    <form className="panel exp-form" onSubmit={submit} aria-labelledby="new-experiment">
      <h2 id="new-experiment">New experiment</h2>
      {(datasets.error || templates.error || integrations.error) && (
        <ErrorNote error={(datasets.error ?? templates.error ?? integrations.error) as Error} />
      )}
      {loading ? (
        <Loading what="datasets, templates and integrations" />
      ) : (
        <>
          <label className="field">
            <span>Name</span>
            <input name="name" required maxLength={255} />
          </label>
          <label className="field">
            <span>Dataset</span>
            <select
              name="dataset"
              required
              value={dataset?.id ?? ''}
              onChange={(e) => setDatasetId(e.target.value)}
            >
              {datasets.data?.datasets.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.name} ({d.num_rows ?? 0} rows)
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Dataset version</span>
            <select
              name="dataset_version"
              key={dataset?.id}
              defaultValue={dataset?.current_version_index ?? ''}
            >
              {dataset &&
                Array.from(
                  { length: dataset.current_version_index + 1 },
                  (_, i) => dataset.current_version_index - i,
                ).map((i) => (
                  <option key={i} value={i}>
                    v{i}
                    {i === dataset.current_version_index ? ' (current)' : ''}
                  </option>
                ))}
            </select>
          </label>
          <label className="field">
            <span>Prompt template version</span>
            <select
              name="template_version"
              required
              value={chosenVersion?.v.id ?? ''}
              onChange={(e) => setVersionId(e.target.value)}
            >
              {versions.map(({ t, v }) => (
                <option key={v.id} value={v.id}>
                  {t.name} v{v.version}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Integration</span>
            <select name="integration">
              {integrations.data?.map((i) => (
                <option key={i.id} value={i.id}>
                  {i.name}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Model</span>
            <input
              name="model"
              required
              key={chosenVersion?.v.id}
              defaultValue={chosenVersion?.v.settings.model_alias ?? ''}
              maxLength={255}
            />
          </label>
          <label className="field">
            <span>Concurrency</span>
            <input name="concurrency" type="number" min={1} max={32} defaultValue={8} />
          </label>
          <fieldset className="field exp-scorers">
            <legend>Scorers</legend>
            {scorers.data?.scorers.length === 0 && <span className="muted small">No scorers yet.</span>}
            {scorers.data?.scorers.map((s) => (
              <label key={s.id} className="check">
                <input type="checkbox" name="scorer" value={s.id} /> {s.name}
              </label>
            ))}
          </fieldset>
          <div>
            <button type="submit" className="button primary" disabled={busy || versions.length === 0}>
              Start experiment
            </button>
          </div>
          {versions.length === 0 && <p className="muted small">Create a prompt template first.</p>}
        </>
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** A project's experiments, polled while any runs. */
export function ExperimentsPage() {
  const { projectId = '' } = useParams();
  const navigate = useNavigate();
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  const list = useApi(`${projectId}/experiments`, () => get<Obj[]>(`/v2/projects/${projectId}/experiments`));
  const editable = useAccess().can('editor');
  const [picked, setPicked] = useState<string[]>([]);
  const running = list.data?.some((e) => e.job && RUNNING.includes(e.job.status)) ?? false;
  const { reload } = list;
  useEffect(() => {
    if (!running) return;
    const t = setInterval(reload, 1000);
    return () => clearInterval(t);
  }, [running, reload]);
  const pickedExps = (list.data ?? []).filter((e) => picked.includes(e.id));
  const datasetsOfPicked = new Set(pickedExps.map((e) => e.dataset?.dataset_id ?? null));
  const comparable = pickedExps.length >= 2 && datasetsOfPicked.size === 1 && !datasetsOfPicked.has(null);
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Experiments' },
        ]}
      />
      <div className="page-head">
        <h1>Experiments</h1>
        <button
          type="button"
          className="button primary"
          disabled={!comparable}
          title={comparable ? undefined : 'Select two or more experiments over the same dataset'}
          onClick={() => navigate(`/projects/${projectId}/experiments/compare?ids=${picked.join(',')}`)}
        >
          Compare {picked.length >= 2 ? picked.length : ''} selected
        </button>
      </div>
      <section aria-labelledby="experiments-title">
        <h2 id="experiments-title" className="visually-hidden">
          Experiments
        </h2>
        {list.error && <ErrorNote error={list.error} retry={list.reload} />}
        {!list.data && !list.error && <Loading what="experiments" />}
        {list.data?.length === 0 && <p className="muted">No experiments yet.</p>}
        {list.data && list.data.length > 0 && (
          <div className="table-wrap">
            <table className="table exp-table">
              <thead>
                <tr>
                  <th scope="col">
                    <span className="visually-hidden">Select</span>
                  </th>
                  <th scope="col">Name</th>
                  <th scope="col">Dataset</th>
                  <th scope="col">Prompt</th>
                  <th scope="col">Model</th>
                  <th scope="col">Status</th>
                  <th scope="col">Scores</th>
                  <th scope="col" className="num">
                    Cost
                  </th>
                  <th scope="col" className="num">
                    Latency
                  </th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((e) => (
                  <tr key={e.id} data-experiment={e.name}>
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select ${e.name}`}
                        checked={picked.includes(e.id)}
                        onChange={(ev) =>
                          setPicked((p) => (ev.target.checked ? [...p, e.id] : p.filter((x) => x !== e.id)))
                        }
                      />
                    </td>
                    <td>
                      <Link to={`/projects/${projectId}/experiments/${e.id}/traces`}>{e.name}</Link>
                      {e.winner && <span className="tag">winner</span>}
                    </td>
                    <td>
                      {e.dataset ? (
                        <Link to={`/datasets/${e.dataset.dataset_id}`}>
                          {e.dataset.name ?? 'dataset'} v{e.dataset.version_index ?? '—'}
                        </Link>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td>
                      {e.prompt ? (
                        <Link to={`/projects/${projectId}/templates/${e.prompt.prompt_template_id}`}>
                          {e.prompt.name} v{e.prompt.version_index}
                        </Link>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td className="mono nowrap">{e.prompt_model ?? '—'}</td>
                    <td>
                      <Progress e={e} />
                    </td>
                    <td>
                      <div className="exp-scores">
                        {scoreAverages(e).map(([k, v]) => (
                          <span key={k} className="exp-score" data-score={k}>
                            {k} <strong className="mono">{num(v)}</strong>
                          </span>
                        ))}
                        {scoreAverages(e).length === 0 && <span className="muted">—</span>}
                      </div>
                    </td>
                    <td className="num mono">{formatCost(e.aggregate_metrics?.total_cost)}</td>
                    <td className="num mono">
                      {typeof e.aggregate_metrics?.average_latency_ms === 'number'
                        ? formatDuration(e.aggregate_metrics.average_latency_ms)
                        : '—'}
                    </td>
                    <td>{formatTime(e.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {editable && <NewExperiment projectId={projectId} onStarted={reload} />}
    </>
  );
}

/** Two or more experiments over one dataset, aligned by row, sortable by a score's difference. */
export function ExperimentComparePage() {
  const { projectId = '' } = useParams();
  const [search, setSearch] = useSearchParams();
  const ids = search.get('ids') ?? '';
  const sortBy = search.get('sort') ?? '';
  const [start, setStart] = useState(0);
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  const q = new URLSearchParams({ experiment_ids: ids, starting_token: String(start), limit: '50' });
  if (sortBy) q.set('sort_by', sortBy);
  const cmp = useApi(`${projectId}/compare?${q}`, () =>
    get<Obj>(`/v2/projects/${projectId}/experiments/compare?${q}`),
  );
  const exps = (cmp.data?.experiments ?? []) as Obj[];
  const scoreNames = (cmp.data?.score_names ?? []) as string[];
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Experiments', to: `/projects/${projectId}/experiments` },
          { label: 'Comparison' },
        ]}
      />
      <div className="page-head">
        <h1>Comparison</h1>
        <label className="field inline">
          <span>Sort by difference in</span>
          <select
            value={sortBy}
            onChange={(e) => {
              setStart(0);
              const next = new URLSearchParams(search);
              if (e.target.value) next.set('sort', e.target.value);
              else next.delete('sort');
              setSearch(next);
            }}
          >
            <option value="">dataset order</option>
            {scoreNames.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
      </div>
      {cmp.error && <ErrorNote error={cmp.error} retry={cmp.reload} />}
      {!cmp.data && !cmp.error && <Loading what="the comparison" />}
      {cmp.data && (
        <>
          <p className="muted small">
            {cmp.data.total_rows} rows; rows whose outputs differ are marked, score deltas highlighted.
          </p>
          <div className="table-wrap">
            <table className="table exp-compare">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Input</th>
                  <th scope="col">Ground truth</th>
                  {exps.map((e) => (
                    <th scope="col" key={e.id} className="exp-col">
                      <Link to={`/projects/${projectId}/experiments/${e.id}/traces`}>{e.name}</Link>
                    </th>
                  ))}
                  {scoreNames.length > 0 && <th scope="col">Δ</th>}
                </tr>
              </thead>
              <tbody>
                {(cmp.data.rows as Obj[]).map((r) => (
                  <tr
                    key={r.row_id}
                    data-row={r.index}
                    className={r.outputs_differ || r.scores_differ ? 'exp-differs' : undefined}
                  >
                    <td className="mono">{r.index}</td>
                    <td className="exp-text">{text(r.input)}</td>
                    <td className="exp-text">{text(r.ground_truth)}</td>
                    {(r.cells as (Obj | null)[]).map((c, i) => (
                      <td
                        key={exps[i]?.id ?? i}
                        className={`exp-cell${r.outputs_differ ? ' output-differs' : ''}`}
                        data-experiment={exps[i]?.name}
                      >
                        {c ? (
                          <Link
                            className="exp-cell-link"
                            to={`/projects/${projectId}/experiments/${exps[i].id}/traces/${c.trace_id}`}
                            title="Open the trace"
                          >
                            <span className="exp-output">
                              {c.error ? `Error: ${c.error}` : text(c.output)}
                            </span>
                            <span className="exp-cell-scores">
                              {Object.entries((c.scores ?? {}) as Record<string, number>).map(([n, v]) => (
                                <span
                                  key={n}
                                  className={`exp-score${r.score_differences?.[n] ? ' delta' : ''}`}
                                  data-score={n}
                                >
                                  {n} <strong className="mono">{num(v)}</strong>
                                </span>
                              ))}
                            </span>
                          </Link>
                        ) : (
                          <span className="muted">no trace</span>
                        )}
                      </td>
                    ))}
                    {scoreNames.length > 0 && (
                      <td className="mono small">
                        {scoreNames
                          .filter((n) => r.score_differences?.[n])
                          .map((n) => (
                            <div key={n} className="delta">
                              {n} {num(r.score_differences[n])}
                            </div>
                          ))}
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="pager">
            <button
              type="button"
              className="button small"
              disabled={start === 0}
              onClick={() => setStart(Math.max(0, start - 50))}
            >
              Previous
            </button>
            <button
              type="button"
              className="button small"
              disabled={cmp.data.next_starting_token === null}
              onClick={() => setStart(cmp.data?.next_starting_token ?? 0)}
            >
              Next
            </button>
          </div>
        </>
      )}
    </>
  );
}
