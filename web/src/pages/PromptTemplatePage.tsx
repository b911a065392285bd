import { type FormEvent, useState } from 'react';
import { Link, useParams } from 'react-router';
import { type TemplateContent, contentText, lineDiff } from '../../../src/domain/prompt-templates.ts';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useAccess } from '../lib/access.tsx';
import { get, post, put } from '../lib/api.ts';
import type { Project } from '../lib/api-types.ts';
import { formatTime } from '../lib/format.ts';
import type { PromptTemplate, TemplateVersion } from '../lib/prompt-templates.ts';
import { useApi } from '../lib/use-api.ts';
import './prompts.css';

/** What a version changed from the one before it, in a few words. */
function Changes({ v }: { v: TemplateVersion }) {
  const parts: string[] = [];
  if (v.content_changed) parts.push(`+${v.lines_added} ~${v.lines_edited} −${v.lines_removed} lines`);
  if (v.model_changed) parts.push('model');
  if (v.settings_changed) parts.push('settings');
  return <span className="muted small">{parts.length ? parts.join(' · ') : 'no change'}</span>;
}

/** The playground's URL prefilled with a version's messages and model settings (see PlaygroundPage). */
function playgroundUrl(projectId: string, v: TemplateVersion): string {
  const messages = typeof v.template === 'string' ? [{ role: 'user', content: v.template }] : v.template;
  const join = (keep: (role: string) => boolean) =>
    messages
      .filter((m) => keep(m.role))
      .map((m) => m.content)
      .join('\n\n');
  const q = new URLSearchParams({ system: join((r) => r === 'system'), user: join((r) => r !== 'system') });
  if (v.settings.model_alias) q.set('model', v.settings.model_alias);
  if (v.settings.temperature !== undefined) q.set('temperature', String(v.settings.temperature));
  if (typeof v.settings.max_tokens === 'number') q.set('max_tokens', String(v.settings.max_tokens));
  return `/projects/${projectId}/playground?${q}`;
}

/** Two versions side by side, line against line, with their settings. */
function VersionDiff({ before, after }: { before: TemplateVersion; after: TemplateVersion }) {
  const rows = lineDiff(contentText(before.template), contentText(after.template));
  const keys = [...new Set([...Object.keys(before.settings), ...Object.keys(after.settings)])].sort();
  const show = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v));
  return (
    <>
      <table className="table diff" aria-label={`Version ${before.version} against version ${after.version}`}>
        <thead>
          <tr>
            <th scope="col">v{before.version}</th>
            <th scope="col">v{after.version}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the rows of one diff, in order
            <tr key={i} className={`diff-${r.kind}`} data-kind={r.kind}>
              <td className="mono">{r.before ?? ''}</td>
              <td className="mono">{r.after ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {keys.length > 0 && (
        <table className="table diff settings-diff" aria-label="Settings">
          <tbody>
            {keys.map((k) => {
              const a = show(before.settings[k]);
              const b = show(after.settings[k]);
              return (
                <tr key={k} className={a === b ? 'diff-same' : 'diff-edited'}>
                  <td className="mono">
                    {k}: {a}
                  </td>
                  <td className="mono">
                    {k}: {b}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}

/** A new version from the selected one's content and model: it becomes the selected version. */
function NewVersion({ base, from, created }: { base: string; from: TemplateVersion; created: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const messages = typeof from.template === 'string' ? null : from.template;
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const template: TemplateContent = messages
      ? messages.map((m, i) => ({ role: m.role, content: String(data.get(`content-${i}`) ?? '') }))
      : String(data.get('content') ?? '');
    const model = String(data.get('model') ?? '').trim();
    const { model_alias: _, ...rest } = from.settings;
    setBusy(true);
    setError(null);
    try {
      await post(`${base}/versions`, { template, settings: model ? { ...rest, model_alias: model } : rest });
      created();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="panel prompt-form" onSubmit={submit} aria-labelledby="new-version" key={from.id}>
      <h2 id="new-version">New version</h2>
      {messages ? (
        messages.map((m, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the messages of one version, in their order
          <label className="field" key={`${from.id}-${i}`}>
            <span>{m.role}</span>
            <textarea name={`content-${i}`} rows={4} defaultValue={m.content} />
          </label>
        ))
      ) : (
        <label className="field">
          <span>Template</span>
          <textarea name="content" rows={6} defaultValue={from.template as string} />
        </label>
      )}
      <label className="field">
        <span>Model</span>
        <input name="model" defaultValue={from.settings.model_alias ?? ''} maxLength={255} />
      </label>
      <div>
        <button type="submit" className="button primary" disabled={busy}>
          Save as new version
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

interface Rendered {
  result: string;
  warning: string | null;
}

/**
 * Renders a version for variables typed as JSON, or for the first rows of a dataset (its rows'
 * columns and input keys are the variables), with the server's warning per missing variable.
 */
function Preview({ version }: { version: TemplateVersion }) {
  const [vars, setVars] = useState('{}');
  const [dataset, setDataset] = useState('');
  const [out, setOut] = useState<Rendered[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const datasets = useApi('datasets', () =>
    get<{ datasets: { id: string; name: string }[] }>('/v2/datasets?limit=100'),
  );
  async function render(data: unknown) {
    setError(null);
    try {
      const r = await post<{ rendered_templates: Rendered[] }>('/v2/render_template?limit=5', {
        template: contentText(version.template),
        data,
      });
      setOut(r.rendered_templates);
    } catch (err) {
      setError((err as Error).message);
    }
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void render({ input_strings: [vars] });
  };
  return (
    <form className="panel prompt-form" onSubmit={submit} aria-labelledby="preview">
      <h2 id="preview">Try v{version.version}</h2>
      <label className="field">
        <span>Variables (JSON)</span>
        <textarea className="mono" rows={3} value={vars} onChange={(e) => setVars(e.target.value)} />
      </label>
      <div>
        <button type="submit" className="button">
          Render
        </button>
      </div>
      {(datasets.data?.datasets.length ?? 0) > 0 && (
        <div className="dataset-pick">
          <label className="field">
            <span>Or a dataset's first rows</span>
            <select value={dataset} onChange={(e) => setDataset(e.target.value)}>
              <option value="">Choose a dataset</option>
              {datasets.data?.datasets.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.name}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            className="button"
            disabled={!dataset}
            onClick={() => void render({ dataset_id: dataset })}
          >
            Render rows
          </button>
        </div>
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {out?.map((o, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: one answer's results, in row order
        <div key={i}>
          <pre className="rendered">{o.result}</pre>
          {o.warning && <p className="field-problem">{o.warning}</p>}
        </div>
      ))}
    </form>
  );
}

/** A prompt template: its versions with what each changed, two of them side by side, a new version. */
export function PromptTemplatePage() {
  const { projectId = '', templateId = '' } = useParams();
  const base = `/v2/projects/${projectId}/templates/${templateId}`;
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  const t = useApi(base, () => get<PromptTemplate>(base));
  const editable = useAccess().can('editor');
  const [pair, setPair] = useState<{ a: number; b: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const versions = t.data?.all_versions ?? [];
  const latest = versions[versions.length - 1];
  const b = versions.find((v) => v.version === pair?.b) ?? latest;
  const a =
    versions.find((v) => v.version === pair?.a) ?? versions[versions.indexOf(b as TemplateVersion) - 1] ?? b;
  async function select(version: number) {
    setError(null);
    try {
      await put(`${base}/versions/${version}`, undefined);
      t.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  }
  const picker = (label: string, value: number | undefined, set: (n: number) => void) => (
    <label className="field inline">
      <span>{label}</span>
      <select value={value} onChange={(e) => set(Number(e.target.value))}>
        {versions.map((v) => (
          <option key={v.id} value={v.version}>
            v{v.version}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Prompt templates', to: `/projects/${projectId}/templates` },
          { label: t.data?.name ?? '…' },
        ]}
      />
      {t.error && <ErrorNote error={t.error} retry={t.reload} />}
      {!t.data && !t.error && <Loading what="the prompt template" />}
      {t.data && a && b && (
        <>
          <div className="page-head">
            <h1>{t.data.name}</h1>
            <span className="muted">selected: v{t.data.selected_version.version}</span>
          </div>
          {error && (
            <p className="form-error" role="alert">
              {error}
            </p>
          )}
          <div className="prompt-layout">
            <div>
              <section className="section" aria-labelledby="versions-title">
                <h2 id="versions-title">Versions</h2>
                <table className="table versions">
                  <thead>
                    <tr>
                      <th scope="col">Version</th>
                      <th scope="col">Changes from the one before</th>
                      <th scope="col">Model</th>
                      <th scope="col">Created</th>
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {[...versions].reverse().map((v) => (
                      <tr key={v.id}>
                        <td>v{v.version}</td>
                        <td>
                          <Changes v={v} />
                        </td>
                        <td className="mono">{v.settings.model_alias ?? '—'}</td>
                        <td>
                          {formatTime(v.created_at)}
                          {v.created_by_user && <div className="muted small">{v.created_by_user.email}</div>}
                        </td>
                        <td>
                          <Link
                            className="button small"
                            to={playgroundUrl(projectId, v)}
                            aria-label={`Open v${v.version} in the playground`}
                          >
                            Playground
                          </Link>{' '}
                          {v.version === t.data?.selected_version.version ? (
                            <span className="tag selected">Selected</span>
                          ) : (
                            editable && (
                              <button
                                type="button"
                                className="button small"
                                onClick={() => void select(v.version)}
                                aria-label={`Select v${v.version}`}
                              >
                                Select
                              </button>
                            )
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </section>
              <section className="section" aria-labelledby="compare-title">
                <div className="section-head">
                  <h2 id="compare-title">Compare</h2>
                  {picker('From', a.version, (n) => setPair({ a: n, b: b.version }))}
                  {picker('To', b.version, (n) => setPair({ a: a.version, b: n }))}
                </div>
                <VersionDiff before={a} after={b} />
              </section>
            </div>
            <div className="prompt-side">
              {editable && (
                <NewVersion
                  base={base}
                  from={t.data.selected_version}
                  created={() => {
                    setPair(null);
                    t.reload();
                  }}
                />
              )}
              <Preview version={b} />
            </div>
          </div>
        </>
      )}
    </>
  );
}
