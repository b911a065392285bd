import { Link, useNavigate, useParams } from 'react-router';
import { CreateForm } from '../components/CreateForm.tsx';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useAccess } from '../lib/access.tsx';
import { get, post } from '../lib/api.ts';
import type { Project, Run, RunKind } from '../lib/api-types.ts';
import { formatCount, formatTime } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';

const KIND_LABEL: Record<RunKind, { title: string; one: string }> = {
  log_streams: { title: 'Log streams', one: 'log stream' },
  experiments: { title: 'Experiments', one: 'experiment' },
};

function RunList({ projectId, kind }: { projectId: string; kind: RunKind }) {
  const runs = useApi(`${projectId}/${kind}`, () => get<Run[]>(`/v2/projects/${projectId}/${kind}`));
  const navigate = useNavigate();
  const label = KIND_LABEL[kind];
  // Editors create log streams and experiments.
  const editable = useAccess().can('editor');
  return (
    <section className="section" aria-labelledby={`${kind}-title`}>
      <div className="section-head">
        <h2 id={`${kind}-title`}>{label.title}</h2>
        {editable && (
          <CreateForm
            label={`New ${label.one} name`}
            button={`Create ${label.one}`}
            create={async (name) => {
              const run = await post<Run>(`/v2/projects/${projectId}/${kind}`, { name });
              navigate(`/projects/${projectId}/${kind}/${run.id}/traces`);
            }}
          />
        )}
      </div>
      {runs.error && <ErrorNote error={runs.error} retry={runs.reload} />}
      {!runs.data && !runs.error && <Loading what={label.title.toLowerCase()} />}
      {runs.data?.length === 0 && <p className="muted">No {label.one}s yet.</p>}
      {runs.data && runs.data.length > 0 && (
        <table className="table runs">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" className="num">
                Traces
              </th>
              <th scope="col" className="num">
                Spans
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.map((r) => (
              <tr key={r.id}>
                <td>
                  <Link to={`/projects/${projectId}/${kind}/${r.id}/traces`}>{r.name}</Link>
                </td>
                <td className="num">{formatCount(r.num_traces ?? 0)}</td>
                <td className="num">{formatCount(r.num_spans ?? 0)}</td>
                <td>{formatTime(r.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function ProjectPage() {
  const { projectId = '' } = useParams();
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  // Annotation queues are for annotators and up.
  const annotator = useAccess().can('annotator');
  return (
    <>
      <Crumbs items={[{ label: 'Projects', to: '/' }, { label: project.data?.name ?? '…' }]} />
      {project.error ? (
        <ErrorNote error={project.error} retry={project.reload} />
      ) : (
        <>
          <div className="page-head">
            <h1>{project.data?.name ?? 'Project'}</h1>
            <span className="muted mono">{projectId}</span>
            {annotator && (
              <Link to={`/projects/${projectId}/annotation_queues`} className="button small">
                Annotation queues
              </Link>
            )}
            <Link to={`/projects/${projectId}/templates`} className="button small">
              Prompt templates
            </Link>
            <Link to={`/projects/${projectId}/collaborators`} className="button small">
              Collaborators
            </Link>
            <Link to={`/projects/${projectId}/experiments`} className="button small">
              Experiments
            </Link>
            <Link to={`/projects/${projectId}/playground`} className="button small">
              Playground
            </Link>
          </div>
          <RunList projectId={projectId} kind="log_streams" />
          <RunList projectId={projectId} kind="experiments" />
        </>
      )}
    </>
  );
}
