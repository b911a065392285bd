import { Link, useNavigate } from 'react-router';
import { CreateForm } from '../components/CreateForm.tsx';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { get, post } from '../lib/api.ts';
import type { Project } from '../lib/api-types.ts';
import { formatTime } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';

export function ProjectsPage() {
  const projects = useApi('projects', () => get<Project[]>('/v2/projects'));
  const navigate = useNavigate();
  const list = projects.data ? [...projects.data].sort((a, b) => a.name.localeCompare(b.name)) : [];
  return (
    <>
      <Crumbs items={[{ label: 'Projects' }]} />
      <div className="page-head">
        <h1>Projects</h1>
        <CreateForm
          label="New project name"
          button="Create project"
          create={async (name) => {
            const p = await post<Project>('/v2/projects', { name });
            navigate(`/projects/${p.id}`);
          }}
        />
      </div>
      {projects.error && <ErrorNote error={projects.error} retry={projects.reload} />}
      {!projects.data && !projects.error && <Loading what="projects" />}
      {projects.data && list.length === 0 && (
        <div className="empty">
          <h2>No projects yet</h2>
          <p>
            Create one above, or send a first trace: the hosted client and OpenTelemetry create projects by
            name.
          </p>
        </div>
      )}
      {list.length > 0 && (
        <ul className="cards">
          {list.map((p) => (
            <li key={p.id}>
              <Link to={`/projects/${p.id}`} className="card">
                <span className="card-title">{p.name}</span>
                <span className="muted">Created {formatTime(p.created_at)}</span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
