import { type FormEvent, useState } from 'react';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { get, post } from '../lib/api.ts';
import type { Project } from '../lib/api-types.ts';
import { useApi } from '../lib/use-api.ts';

type Obj = Record<string, any>;
const OUTPUT_TYPES = ['boolean', 'categorical', 'count', 'discrete', 'percentage', 'freeform'];

/** What a preview answers for one record: the prompt sent, each judge's raw answer, the score. */
function PreviewResult({ r }: { r: Obj }) {
  return (
    <article className="panel preview-result" data-record={r.record_id}>
      <h3>
        Record <span className="mono small">{r.record_id}</span>: <span className="status">{r.status}</span>
        {r.value !== null && (
          <>
            {' '}
            score{' '}
            <strong className="preview-score mono">
              {Array.isArray(r.value) ? r.value.join(', ') : String(r.value)}
            </strong>
          </>
        )}
      </h3>
      {r.error && <p className="error-note">{r.error}</p>}
      {r.rendered_prompt !== null && (
        <>
          <h4>Rendered prompt</h4>
          <pre className="rendered-prompt">{r.rendered_prompt}</pre>
        </>
      )}
      {r.judges.length > 0 && (
        <>
          <h4>Judges</h4>
          <ol className="judge-answers">
            {r.judges.map((j: Obj, i: number) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: judges have no id; their order is the calls'
              <li key={i}>
                <pre className="raw-answer">{j.raw ?? ''}</pre>
                <span className={j.abstained ? 'muted' : 'mono'}>
                  {j.abstained ? `abstained: ${j.abstained}` : `vote: ${String(j.value)}`}
                </span>
              </li>
            ))}
          </ol>
        </>
      )}
      {r.explanation && <p>{r.explanation}</p>}
    </article>
  );
}

/** An LLM judge: name, template and settings; saved as a new version; previewed on chosen records. */
function JudgeEditor({ projects, onSaved }: { projects: Project[]; onSaved: () => void }) {
  const [id, setId] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [preview, setPreview] = useState<Obj | null>(null);
  const [saved, setSaved] = useState<string | null>(null);

  function draft(form: HTMLFormElement) {
    const d = new FormData(form);
    return {
      name: String(d.get('name') ?? '').trim(),
      version: {
        model_name: String(d.get('model') ?? '').trim() || null,
        num_judges: Number(d.get('judges') ?? 3),
        cot_enabled: d.get('cot') === 'on',
        output_type: String(d.get('output_type')),
        chain_poll_template: {
          template: String(d.get('template') ?? ''),
          metric_system_prompt: String(d.get('system') ?? '').trim() || null,
        },
      },
      project: String(d.get('project') ?? ''),
      records: String(d.get('records') ?? '')
        .split(/[\s,]+/)
        .filter(Boolean),
    };
  }

  /** The scorer the editor works on (created the first time it is saved or previewed). */
  async function scorerId(name: string): Promise<string> {
    if (id) return id;
    const s = await post<Obj>('/v2/scorers', { name, scorer_type: 'llm' });
    setId(s.id);
    return s.id;
  }

  async function run(e: FormEvent<HTMLFormElement>, action: 'save' | 'preview') {
    e.preventDefault();
    const d = draft(e.currentTarget);
    setError(null);
    setBusy(true);
    try {
      if (!d.name) throw new Error('Give the judge a name');
      const sid = await scorerId(d.name);
      if (action === 'save') {
        const v = await post<Obj>(`/v2/scorers/${sid}/version/llm`, d.version);
        setSaved(`Saved version ${v.version}`);
        onSaved();
      } else {
        if (!d.project || d.records.length === 0)
          throw new Error('Choose a project and at least one record id');
        setPreview(
          await post<Obj>(`/v2/projects/${d.project}/scorers/${sid}/preview`, {
            record_ids: d.records.slice(0, 20),
            version: d.version,
          }),
        );
      }
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="panel judge-editor"
      aria-labelledby="judge-title"
      onSubmit={(e) =>
        run(
          e,
          (e.nativeEvent as SubmitEvent).submitter?.getAttribute('value') === 'save' ? 'save' : 'preview',
        )
      }
    >
      <h2 id="judge-title">LLM judge</h2>
      <label className="field">
        <span>Name</span>
        <input name="name" maxLength={255} required />
      </label>
      <label className="field">
        <span>System prompt (optional)</span>
        <textarea name="system" rows={2} maxLength={50000} />
      </label>
      <label className="field">
        <span>
          Template (<code>{'{{input}}'}</code>, <code>{'{{output}}'}</code>, <code>{'{{ground_truth}}'}</code>
          , <code>{'{{metadata.key}}'}</code>)
        </span>
        <textarea
          name="template"
          rows={5}
          maxLength={50000}
          required
          defaultValue={'Question: {{input}}\nAnswer: {{output}}\nIs the answer correct?'}
        />
      </label>
      <div className="row">
        <label className="field">
          <span>Output type</span>
          <select name="output_type" defaultValue="boolean">
            {OUTPUT_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Judges</span>
          <input name="judges" type="number" min={1} max={10} defaultValue={3} />
        </label>
        <label className="field">
          <span>Model</span>
          <input name="model" maxLength={255} placeholder="The integration's default" />
        </label>
        <label className="field checkbox">
          <input name="cot" type="checkbox" defaultChecked /> <span>Chain of thought</span>
        </label>
      </div>
      <h3>Preview on records</h3>
      <div className="row">
        <label className="field">
          <span>Project</span>
          <select name="project" defaultValue={projects[0]?.id ?? ''}>
            {projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label className="field grow">
          <span>Record ids (up to 20)</span>
          <input name="records" maxLength={800} />
        </label>
      </div>
      {error && (
        <p className="error-note" role="alert">
          {error}
        </p>
      )}
      {saved && <p className="muted">{saved}</p>}
      <div className="row">
        <button type="submit" value="preview" className="button" disabled={busy}>
          Preview
        </button>
        <button type="submit" value="save" className="button primary" disabled={busy}>
          Save version
        </button>
      </div>
      {preview && (
        <section aria-label="Preview" className="preview">
          <p className="muted small">Model {preview.model ?? '—'}; nothing was stored.</p>
          {preview.results.map((r: Obj) => (
            <PreviewResult key={r.record_id} r={r} />
          ))}
        </section>
      )}
    </form>
  );
}

/** The scorers: presets, LLM judges and rules; a new LLM judge with its preview. */
export function ScorersPage() {
  const [gen, setGen] = useState(0);
  const list = useApi(`scorers:${gen}`, () => post<{ scorers: Obj[] }>('/v2/scorers/list?limit=100', {}));
  const projects = useApi('projects', () => get<Project[]>('/v2/projects'));
  return (
    <div className="page">
      <Crumbs items={[{ label: 'Scorers' }]} />
      <h1>Scorers</h1>
      {list.error ? (
        <ErrorNote error={list.error} />
      ) : !list.data ? (
        <Loading what="scorers" />
      ) : (
        <table className="table scorers-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Type</th>
              <th>Output</th>
              <th>Description</th>
            </tr>
          </thead>
          <tbody>
            {list.data.scorers.map((s) => (
              <tr key={s.id}>
                <td>{s.name}</td>
                <td>{s.scorer_type}</td>
                <td>{s.output_type ?? s.latest_version?.output_type ?? ''}</td>
                <td className="muted">{s.description ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="muted small">
        Rule scorers (regex, contains, JSON, length, latency, cost) are created with{' '}
        <code>POST /v2/scorers</code> and <code>/version/rule</code>; see docs/scorers.md.
      </p>
      {projects.data && <JudgeEditor projects={projects.data} onSaved={() => setGen((g) => g + 1)} />}
    </div>
  );
}
