import { useParams } from 'react-router';
import { Crumbs } from '../../components/Crumbs.tsx';
import { ErrorNote } from '../../components/ErrorNote.tsx';
import { get, post } from '../../lib/api.ts';
import type { Project } from '../../lib/api-types.ts';
import { useApi } from '../../lib/use-api.ts';
import { type Share, SharingEditor } from './SharingEditor.tsx';

/** Who a project is shared with and their roles; owners add, change and remove them. */
export function CollaboratorsPage() {
  const { projectId = '' } = useParams();
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  const base = `/v2/projects/${projectId}`;
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Collaborators' },
        ]}
      />
      <div className="page-head">
        <h1>Collaborators</h1>
        <span className="muted">{project.data?.name}</span>
      </div>
      {project.error ? (
        <ErrorNote error={project.error} retry={project.reload} />
      ) : (
        <SharingEditor
          base={base}
          share={(s: Share) =>
            post(`${base}/collaborators`, {
              ...(s.kind === 'user' ? { user_id: s.id } : { group_id: s.id }),
              role: s.role,
            }).then(() => undefined)
          }
        />
      )}
    </>
  );
}
