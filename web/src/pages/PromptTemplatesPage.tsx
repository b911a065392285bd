import { type FormEvent, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useAccess } from '../lib/access.tsx';
import { get, post } from '../lib/api.ts';
import type { Project } from '../lib/api-types.ts';
import { formatTime } from '../lib/format.ts';
import type { PromptTemplate } from '../lib/prompt-templates.ts';
import { useApi } from '../lib/use-api.ts';
import './prompts.css';

/** A new template: its name, its first version's text and model. */
function CreateTemplate({ projectId }: { projectId: string }) {
  const navigate = useNavigate();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const model = String(data.get('model') ?? '').trim();
    setBusy(true);
    setError(null);
    try {
      const t = await post<PromptTemplate>(`/v2/projects/${projectId}/templates`, {
        name: String(data.get('name') ?? '').trim(),
        template: String(data.get('template') ?? ''),
        settings: model ? { model_alias: model } : {},
      });
      navigate(`/projects/${projectId}/templates/${t.id}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  }
  return (
    <form className="panel prompt-form" onSubmit={submit} aria-labelledby="new-template">
      <h2 id="new-template">New template</h2>
      <label className="field">
        <span>Name</span>
        <input name="name" required maxLength={255} />
      </label>
      <label className="field">
        <span>Template</span>
        <textarea
          name="template"
          rows={5}
          required
          placeholder="Answer the question about {{topic}}: {{question}}"
        />
      </label>
      <label className="field">
        <span>Model</span>
        <input name="model" placeholder="gpt-4o-mini" maxLength={255} />
      </label>
      <div>
        <button type="submit" className="button primary" disabled={busy}>
          Create template
        </button>
      </div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** A project's prompt templates (its own and the global ones shared with it). */
export function PromptTemplatesPage() {
  const { projectId = '' } = useParams();
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  const list = useApi(`${projectId}/templates`, () =>
    get<PromptTemplate[]>(`/v2/projects/${projectId}/templates`),
  );
  const editable = useAccess().can('editor');
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Prompt templates' },
        ]}
      />
      <div className="page-head">
        <h1>Prompt templates</h1>
      </div>
      <div className={editable ? 'prompt-layout' : undefined}>
        <section aria-labelledby="templates-title">
          <h2 id="templates-title" className="visually-hidden">
            Templates
          </h2>
          {list.error && <ErrorNote error={list.error} retry={list.reload} />}
          {!list.data && !list.error && <Loading what="prompt templates" />}
          {list.data?.length === 0 && <p className="muted">No prompt templates yet.</p>}
          {list.data && list.data.length > 0 && (
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Selected version</th>
                  <th scope="col">Versions</th>
                  <th scope="col">Model</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((t) => (
                  <tr key={t.id}>
                    <td>
                      <Link to={`/projects/${projectId}/templates/${t.id}`}>{t.name}</Link>
                      {t.project_id === null && <span className="tag">global</span>}
                    </td>
                    <td>v{t.selected_version.version}</td>
                    <td>{t.total_versions}</td>
                    <td className="mono">{t.selected_version.settings.model_alias ?? '—'}</td>
                    <td>{formatTime(t.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        {editable && <CreateTemplate projectId={projectId} />}
      </div>
    </>
  );
}
