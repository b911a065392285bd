import { type FormEvent, useState } from 'react';
import { patch, post } from '../lib/api.ts';
import type { AnnotationTemplate } from '../lib/api-types.ts';

const TYPES: [AnnotationTemplate['type'], string][] = [
  ['thumbs', 'Thumbs up or down'],
  ['stars', 'Stars (1 to 5)'],
  ['score', 'Score (a number in a range)'],
  ['categorical', 'One or more of some options'],
  ['tags', 'Tags'],
  ['text', 'Free text'],
];

/** What a failing save says, for the form's alert; null when it worked. */
async function attempt(what: () => Promise<unknown>): Promise<string | null> {
  try {
    await what();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** One template: its name and kind, renamed in place. */
function TemplateRow({
  base,
  template,
  changed,
}: {
  base: string;
  template: AnnotationTemplate;
  changed: () => void;
}) {
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function save(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const failed = await attempt(() =>
      patch(`${base}/${template.id}`, {
        name: String(d.get('name') ?? '').trim(),
        description: String(d.get('description') ?? '').trim() || null,
      }),
    );
    setError(failed);
    if (!failed) {
      setEditing(false);
      changed();
    }
  }
  return (
    <li data-template={template.name}>
      {editing ? (
        <form className="inline-form" onSubmit={save}>
          <input
            name="name"
            aria-label={`New name of ${template.name}`}
            defaultValue={template.name}
            required
            maxLength={255}
          />
          <input
            name="description"
            aria-label={`Description of ${template.name}`}
            defaultValue={template.description ?? ''}
            placeholder="Description"
          />
          <button type="submit" className="button small primary">
            Save
          </button>
          <button type="button" className="button small ghost" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <>
          <strong>{template.name}</strong> <span className="muted small">{template.type}</span>
          {template.description && <span className="muted small"> · {template.description}</span>}{' '}
          <button type="button" className="button small ghost" onClick={() => setEditing(true)}>
            Edit<span className="visually-hidden"> {template.name}</span>
          </button>
        </>
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </li>
  );
}

/**
 * A project's annotation templates (what a queue asks of each record): the list, each editable, and
 * a form for a new one with what its kind needs (options, a range).
 */
export function TemplatesEditor({
  projectId,
  templates,
  changed,
}: {
  projectId: string;
  templates: AnnotationTemplate[];
  changed: () => void;
}) {
  const base = `/v2/projects/${projectId}/annotation_templates`;
  const [type, setType] = useState<AnnotationTemplate['type']>('thumbs');
  const [error, setError] = useState<string | null>(null);
  async function create(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const lines = (name: string) =>
      String(d.get(name) ?? '')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
    const number = (name: string) => (d.get(name) ? Number(d.get(name)) : undefined);
    const failed = await attempt(() =>
      post(base, {
        name: String(d.get('name') ?? '').trim(),
        type,
        ...(type === 'categorical' || type === 'tags' ? { options: lines('options') } : {}),
        ...(type === 'categorical' ? { multiple: d.get('multiple') === 'on' } : {}),
        ...(type === 'score' ? { min: number('min'), max: number('max') } : {}),
      }),
    );
    setError(failed);
    if (!failed) {
      form.reset();
      setType('thumbs');
      changed();
    }
  }
  return (
    <section className="panel templates" aria-labelledby="templates-title">
      <h2 id="templates-title">Annotation templates</h2>
      {templates.length === 0 ? (
        <p className="muted">No templates yet: make the first below.</p>
      ) : (
        <ul className="template-list">
          {templates.map((t) => (
            <TemplateRow key={t.id} base={base} template={t} changed={changed} />
          ))}
        </ul>
      )}
      <form className="template-create" onSubmit={create} aria-label="New template">
        <label className="field">
          <span>Template name</span>
          <input name="name" required maxLength={255} />
        </label>
        <label className="field">
          <span>Kind</span>
          <select
            name="type"
            value={type}
            onChange={(e) => setType(e.currentTarget.value as AnnotationTemplate['type'])}
          >
            {TYPES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        {(type === 'categorical' || type === 'tags') && (
          <label className="field">
            <span>Options (one per line)</span>
            <textarea name="options" rows={3} required={type === 'categorical'} />
          </label>
        )}
        {type === 'categorical' && (
          <label className="check">
            <input type="checkbox" name="multiple" /> Several choices per record
          </label>
        )}
        {type === 'score' && (
          <span className="pair">
            <label className="field">
              <span>Lowest score</span>
              <input name="min" type="number" step="any" defaultValue={0} />
            </label>
            <label className="field">
              <span>Highest score</span>
              <input name="max" type="number" step="any" defaultValue={10} />
            </label>
          </span>
        )}
        <div>
          <button type="submit" className="button">
            Create template
          </button>
        </div>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
      </form>
    </section>
  );
}
