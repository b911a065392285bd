import { type FormEvent, useState } from 'react';
import { NODE_TYPES, RULE_KINDS, type RuleKind } from '../../../src/domain/scorer-types.ts';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../components/Field.tsx';
import { get, post } from '../lib/api.ts';
import type { Project, Scorer } from '../lib/api-types.ts';
import { scorerDefinition } from '../lib/scorers.ts';
import { useApi } from '../lib/use-api.ts';
import './scoring.css';

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

const RULE_LABEL: Record<RuleKind, string> = {
  regex: 'Matches a regular expression',
  contains: 'Contains a text',
  equals_ground_truth: 'Equals the ground truth',
  json_valid: 'Is valid JSON',
  json_schema: 'Matches a JSON Schema',
  length: 'Length (characters)',
  latency_ms: 'Latency (ms)',
  cost: 'Cost (USD)',
};
/** Rules that measure (a number, or 1/0 within bounds); the others check (1/0, negatable). */
const MEASURES: readonly RuleKind[] = ['length', 'latency_ms', 'cost'];
/** Rules that read the record itself, not a field. */
const NO_FIELD: readonly RuleKind[] = ['latency_ms', 'cost'];
const RULE_FIELDS = ['name', 'rule', 'field', 'params', 'negate', 'scoreable_node_types'];

/** A rule scorer: created (POST /v2/scorers) and given its rule (POST .../version/rule). */
function RuleEditor({ onSaved }: { onSaved: () => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<RuleKind>('contains');
  const [source, setSource] = useState<'input' | 'output' | 'metadata'>('output');
  const [metaKey, setMetaKey] = useState('');
  const [p, setP] = useState<Record<string, string>>({});
  const [caseSensitive, setCaseSensitive] = useState(true);
  const [negate, setNegate] = useState(false);
  const [nodeTypes, setNodeTypes] = useState<string[]>(['trace', 'llm']);
  const [local, setLocal] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | null>(null);
  // The scorer a refused rule was for: sending again adds the rule to it rather than a second scorer.
  const [pending, setPending] = useState<{ id: string; name: string } | null>(null);
  const { errors, busy, submit } = useFormErrors(RULE_FIELDS);
  const f = { ...errors.fields, ...local };
  const param = (k: string) => p[k] ?? '';
  const setParam = (k: string, v: string) => setP((prev) => ({ ...prev, [k]: v }));

  /** The params the kind takes, read from the inputs; problems by field. */
  function params(): { params: Record<string, unknown>; problems: Record<string, string> } {
    const out: Record<string, unknown> = {};
    const problems: Record<string, string> = {};
    if (kind === 'regex') {
      out.pattern = param('pattern');
      if (!param('pattern')) problems.pattern = 'Give a pattern';
      if (param('flags')) out.flags = param('flags');
    } else if (kind === 'contains') {
      out.value = param('value');
      if (!param('value')) problems.value = 'Give the text to look for';
      out.case_sensitive = caseSensitive;
    } else if (kind === 'json_schema') {
      try {
        const schema = JSON.parse(param('schema') || 'null');
        if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
          problems.schema = 'A JSON Schema is an object, such as {"type": "object"}';
        out.schema = schema;
      } catch (err) {
        problems.schema = `Not JSON: ${(err as Error).message}`;
      }
    } else if (MEASURES.includes(kind)) {
      for (const k of ['min', 'max']) {
        const text = param(k).trim();
        if (!text) continue;
        const n = Number(text);
        if (!Number.isFinite(n)) problems[k] = 'A number';
        else out[k] = n;
      }
    }
    return { params: out, problems };
  }

  async function save(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setSaved(null);
    const { params: ps, problems } = params();
    if (!name.trim()) problems.name = 'Give the scorer a name';
    if (source === 'metadata' && !NO_FIELD.includes(kind) && !metaKey.trim())
      problems.field = 'Give the metadata key';
    if (nodeTypes.length === 0) problems.scoreable_node_types = 'Choose at least one kind of record';
    setLocal(problems);
    if (Object.keys(problems).length) return;
    const ok = await submit(async () => {
      const id =
        pending && pending.name === name.trim()
          ? pending.id
          : (await post<Scorer>('/v2/scorers', { name: name.trim(), scorer_type: 'rule' })).id;
      setPending({ id, name: name.trim() });
      await post(`/v2/scorers/${id}/version/rule`, {
        rule: kind,
        ...(NO_FIELD.includes(kind)
          ? {}
          : { field: source === 'metadata' ? `metadata.${metaKey.trim()}` : source }),
        params: ps,
        negate: MEASURES.includes(kind) ? false : negate,
        scoreable_node_types: nodeTypes,
      });
    });
    if (ok) {
      setPending(null);
      setSaved(`Created ${name.trim()}`);
      setName('');
      onSaved();
    }
  }

  return (
    <form className="settings-form rule-editor" aria-labelledby="rule-title" onSubmit={save} noValidate>
      <h2 id="rule-title">New rule scorer</h2>
      <p className="muted small">
        Rules run as records arrive: cheap, deterministic, no model call. A check scores 1 or 0; a measure
        scores the number, or 1 or 0 within bounds.
      </p>
      <div className="two-col">
        <Field label="Rule name" error={f.name}>
          {(c) => (
            <input
              {...c}
              value={name}
              maxLength={255}
              placeholder="mentions_refund"
              onChange={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Rule" error={f.rule}>
          {(c) => (
            <select {...c} value={kind} onChange={(e) => setKind(e.currentTarget.value as RuleKind)}>
              {RULE_KINDS.map((k) => (
                <option key={k} value={k}>
                  {RULE_LABEL[k]}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      {!NO_FIELD.includes(kind) && (
        <div className="two-col">
          <Field label="Field" error={source === 'metadata' ? undefined : f.field}>
            {(c) => (
              <select
                {...c}
                value={source}
                onChange={(e) => setSource(e.currentTarget.value as typeof source)}
              >
                <option value="output">output</option>
                <option value="input">input</option>
                <option value="metadata">a metadata key</option>
              </select>
            )}
          </Field>
          {source === 'metadata' && (
            <Field label="Metadata key" error={f.field}>
              {(c) => (
                <input
                  {...c}
                  value={metaKey}
                  maxLength={290}
                  onChange={(e) => setMetaKey(e.currentTarget.value)}
                />
              )}
            </Field>
          )}
        </div>
      )}
      {kind === 'regex' && (
        <div className="two-col">
          <Field label="Pattern" error={f.pattern}>
            {(c) => (
              <input
                {...c}
                className="mono"
                value={param('pattern')}
                onChange={(e) => setParam('pattern', e.currentTarget.value)}
              />
            )}
          </Field>
          <Field label="Flags" error={f.flags} hint="i, m, s and u">
            {(c) => (
              <input
                {...c}
                className="mono"
                value={param('flags')}
                maxLength={4}
                onChange={(e) => setParam('flags', e.currentTarget.value)}
              />
            )}
          </Field>
        </div>
      )}
      {kind === 'contains' && (
        <>
          <Field label="Text" error={f.value}>
            {(c) => (
              <input
                {...c}
                value={param('value')}
                onChange={(e) => setParam('value', e.currentTarget.value)}
              />
            )}
          </Field>
          <label className="check">
            <input
              type="checkbox"
              checked={caseSensitive}
              onChange={(e) => setCaseSensitive(e.currentTarget.checked)}
            />
            Case sensitive
          </label>
        </>
      )}
      {kind === 'json_schema' && (
        <Field label="JSON Schema" error={f.schema}>
          {(c) => (
            <textarea
              {...c}
              className="mono"
              rows={4}
              placeholder={'{"type": "object", "required": ["answer"]}'}
              value={param('schema')}
              onChange={(e) => setParam('schema', e.currentTarget.value)}
            />
          )}
        </Field>
      )}
      {MEASURES.includes(kind) && (
        <div className="two-col">
          <Field label="At least (optional)" error={f.min}>
            {(c) => (
              <input
                {...c}
                inputMode="decimal"
                value={param('min')}
                onChange={(e) => setParam('min', e.currentTarget.value)}
              />
            )}
          </Field>
          <Field label="At most (optional)" error={f.max} hint="Without bounds the score is the number.">
            {(c) => (
              <input
                {...c}
                inputMode="decimal"
                value={param('max')}
                onChange={(e) => setParam('max', e.currentTarget.value)}
              />
            )}
          </Field>
        </div>
      )}
      {!MEASURES.includes(kind) && (
        <label className="check">
          <input type="checkbox" checked={negate} onChange={(e) => setNegate(e.currentTarget.checked)} />
          Negate (1 when the check fails)
        </label>
      )}
      <fieldset className="plain rule-nodes">
        <legend>Scores these records</legend>
        <div className="checks">
          {NODE_TYPES.map((t) => (
            <label key={t} className="check">
              <input
                type="checkbox"
                checked={nodeTypes.includes(t)}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  setNodeTypes((prev) => (on ? [...prev, t] : prev.filter((x) => x !== t)));
                }}
              />
              {t}
            </label>
          ))}
        </div>
        {f.scoreable_node_types && (
          <p className="field-error" role="alert">
            {f.scoreable_node_types}
          </p>
        )}
      </fieldset>
      <FormProblem message={errors.general ?? f.params ?? f.negate ?? null} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy}>
          Create rule scorer
        </button>
        <span className="muted" aria-live="polite">
          {saved}
        </span>
      </div>
    </form>
  );
}

/** The scorers: presets, LLM judges and rules; a new LLM judge with its preview. */
export function ScorersPage() {
  const [gen, setGen] = useState(0);
  const list = useApi(`scorers:${gen}`, () => post<{ scorers: Scorer[] }>('/v2/scorers/list?limit=1000', {}));
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
        <div className="scroll-x">
          <table className="table scorers-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Type</th>
                <th>Output</th>
                <th>Definition</th>
                <th>Description</th>
              </tr>
            </thead>
            <tbody>
              {list.data.scorers.map((s) => (
                <tr key={s.id} data-scorer={s.name}>
                  <td>{s.name}</td>
                  <td>{s.scorer_type}</td>
                  <td>{s.output_type ?? s.latest_version?.output_type ?? ''}</td>
                  <td className="definition small">{scorerDefinition(s)}</td>
                  <td className="muted">{s.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="scorer-editors">
        <RuleEditor onSaved={() => setGen((g) => g + 1)} />
        {projects.data && <JudgeEditor projects={projects.data} onSaved={() => setGen((g) => g + 1)} />}
      </div>
    </div>
  );
}
