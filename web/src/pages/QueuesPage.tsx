import { type FormEvent, useState } from 'react';
import { Link, useParams } from 'react-router';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useUser } from '../components/Layout.tsx';
import { TemplatesEditor } from '../components/TemplatesEditor.tsx';
import { useAccess } from '../lib/access.tsx';
import { api, get, post } from '../lib/api.ts';
import type { AnnotationQueue, AnnotationTemplate, Project } from '../lib/api-types.ts';
import { formatCount, formatTime } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';
import './queue.css';

/** A new queue: its name and description, the project's templates to annotate on, the caller as member. */
function CreateQueue({
  projectId,
  templates,
  created,
}: {
  projectId: string;
  templates: AnnotationTemplate[];
  created: () => void;
}) {
  const me = useUser();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    setBusy(true);
    setError(null);
    try {
      await post(`/v2/projects/${projectId}/annotation_queues`, {
        name: String(data.get('name') ?? '').trim(),
        description: String(data.get('description') ?? '').trim() || null,
        template_ids: data.getAll('template').map(String),
        user_ids: data.get('member') && me ? [me.id] : [],
      });
      form.reset();
      created();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="queue-create panel" onSubmit={submit} aria-labelledby="create-title">
      <h2 id="create-title">New queue</h2>
      <label className="field">
        <span>Name</span>
        <input name="name" required maxLength={255} />
      </label>
      <label className="field">
        <span>Description</span>
        <input name="description" maxLength={1000} />
      </label>
      <fieldset>
        <legend>Templates</legend>
        {templates.length === 0 && (
          <span className="muted small">
            The project has no annotation templates yet: make one under Annotation templates below.
          </span>
        )}
        {templates.map((t) => (
          <label key={t.id} className="check">
            <input type="checkbox" name="template" value={t.id} defaultChecked />
            {t.name} <span className="muted small">{t.type}</span>
          </label>
        ))}
      </fieldset>
      <label className="check">
        <input type="checkbox" name="member" defaultChecked /> I annotate in it (a member)
      </label>
      <div>
        <button type="submit" className="button primary" disabled={busy}>
          Create queue
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

/** One queue's row: open it, rename it in place, delete it (asked twice). */
function QueueRow({
  projectId,
  queue,
  changed,
  editable,
}: {
  projectId: string;
  queue: AnnotationQueue;
  changed: () => void;
  /** An editor of the project: may rename and delete it. */
  editable: boolean;
}) {
  const [mode, setMode] = useState<'view' | 'rename' | 'delete'>('view');
  const [error, setError] = useState<string | null>(null);
  const path = `/v2/projects/${projectId}/annotation_queues/${queue.id}`;
  const run = async (action: () => Promise<unknown>) => {
    setError(null);
    try {
      await action();
      setMode('view');
      changed();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const rename = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const name = String(new FormData(e.currentTarget).get('name') ?? '').trim();
    void run(() => api('PATCH', path, { name }));
  };
  return (
    <tr>
      <td>
        {mode === 'rename' ? (
          <form className="create-form" onSubmit={rename}>
            <input
              name="name"
              aria-label={`New name of ${queue.name}`}
              defaultValue={queue.name}
              required
              maxLength={255}
              // biome-ignore lint/a11y/noAutofocus: the rename button opened this field to type in it
              autoFocus
            />
            <button type="submit" className="button small primary">
              Save
            </button>
            <button type="button" className="button small ghost" onClick={() => setMode('view')}>
              Cancel
            </button>
          </form>
        ) : (
          <Link to={`/projects/${projectId}/annotation_queues/${queue.id}`}>{queue.name}</Link>
        )}
        {queue.description && <div className="muted small">{queue.description}</div>}
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
      </td>
      <td className="num">{formatCount(queue.num_records)}</td>
      <td className="num wide-only">{formatCount(queue.template_ids.length)}</td>
      <td className="num wide-only">{formatCount(queue.user_ids.length)}</td>
      <td className="nowrap wide-only">{formatTime(queue.created_at)}</td>
      <td>
        <div className="row-actions">
          {mode === 'delete' ? (
            <>
              <button type="button" className="button small" onClick={() => run(() => api('DELETE', path))}>
                Delete {queue.name}
              </button>
              <button type="button" className="button small ghost" onClick={() => setMode('view')}>
                Keep it
              </button>
            </>
          ) : (
            mode === 'view' &&
            editable && (
              <>
                <button
                  type="button"
                  className="button small ghost"
                  aria-label={`Rename ${queue.name}`}
                  onClick={() => setMode('rename')}
                >
                  Rename
                </button>
                <button
                  type="button"
                  className="button small ghost"
                  aria-label={`Delete ${queue.name}…`}
                  onClick={() => setMode('delete')}
                >
                  Delete…
                </button>
              </>
            )
          )}
        </div>
      </td>
    </tr>
  );
}

/** A project's annotation queues (annotators see those they are members of), and a new one. */
export function QueuesPage() {
  const { projectId = '' } = useParams();
  // Editors make, rename and delete queues; annotators see theirs; viewers have none.
  const access = useAccess();
  const editable = access.can('editor');
  const viewer = access.role !== null && !access.can('annotator');
  const project = useApi(`project/${projectId}`, () => get<Project>(`/v2/projects/${projectId}`));
  // Asked once the role is known: a viewer's request would only be refused.
  const queues = useApi(viewer || access.loading ? null : `queues/${projectId}`, () =>
    get<AnnotationQueue[]>(`/v2/projects/${projectId}/annotation_queues`),
  );
  const templates = useApi(`templates/${projectId}`, () =>
    get<AnnotationTemplate[]>(`/v2/projects/${projectId}/annotation_templates`),
  );
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Annotation queues' },
        ]}
      />
      <div className="page-head">
        <h1>Annotation queues</h1>
        <span className="muted">Records handed to reviewers, one at a time</span>
      </div>
      {viewer && (
        <p className="muted" role="note">
          Annotation queues are for the project's annotators and editors; your role on it is viewer.
        </p>
      )}
      {queues.error && <ErrorNote error={queues.error} retry={queues.reload} />}
      {!viewer && !queues.data && !queues.error && <Loading what="the queues" />}
      {queues.data?.length === 0 && <p className="muted">No annotation queues yet.</p>}
      {queues.data && queues.data.length > 0 && (
        <div className="table-wrap">
          <table className="table queue-list">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" className="num">
                  Records
                </th>
                <th scope="col" className="num wide-only">
                  Templates
                </th>
                <th scope="col" className="num wide-only">
                  Members
                </th>
                <th scope="col" className="wide-only">
                  Created
                </th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {queues.data.map((q) => (
                <QueueRow
                  key={q.id}
                  projectId={projectId}
                  queue={q}
                  changed={queues.reload}
                  editable={editable}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {templates.error && <ErrorNote error={templates.error} retry={templates.reload} />}
      {templates.data && editable && (
        <section className="section">
          <CreateQueue projectId={projectId} templates={templates.data} created={queues.reload} />
        </section>
      )}
      {templates.data && editable && (
        <section className="section">
          <TemplatesEditor projectId={projectId} templates={templates.data} changed={templates.reload} />
        </section>
      )}
    </>
  );
}
