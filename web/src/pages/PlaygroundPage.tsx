/**
 * The playground: pick an integration and a model, write system and user messages with
 * {{variables}}, fill the variables (by hand or from a dataset row), run, and watch the reply stream in, with its tokens, cost,
 * latency and the raw request and response. Runs spend the project's money: editors only (the API
 * says so too).
 */
import { type FormEvent, useMemo, useState } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { templateVariables } from '../../../src/domain/templates.ts';
import { Crumbs } from '../components/Crumbs.tsx';
import { DatasetRowPicker } from '../components/DatasetRowPicker.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useAccess } from '../lib/access.tsx';
import { get, postLines } from '../lib/api.ts';
import type { Integration, PlaygroundResult, Project } from '../lib/api-types.ts';
import { formatCount } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';
import '../dashboards.css';

const money = (v: number | null) => (v === null ? 'no price for this model' : `$${v.toFixed(6)}`);

/** The variables a set of templates uses; a template that does not parse uses none (the API says why). */
function variablesOf(texts: string[]): string[] {
  const names = new Set<string>();
  for (const t of texts) {
    try {
      for (const n of templateVariables(t)) names.add(n);
    } catch {}
  }
  return [...names];
}

/** A variable's value from its field: JSON when it parses as an object or array, else the text. */
function variableValue(text: string): unknown {
  if (/^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {}
  }
  return text;
}

/** { "a.b": v } as { a: { b: v } }, as the renderer looks dotted names up. */
function nest(flat: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, any> = {};
  for (const [path, v] of Object.entries(flat)) {
    const keys = path.split('.');
    let at = out;
    for (const k of keys.slice(0, -1)) at = at[k] = typeof at[k] === 'object' && at[k] !== null ? at[k] : {};
    at[keys.at(-1)!] = v;
  }
  return out;
}

export function PlaygroundPage() {
  const { projectId = '' } = useParams();
  const project = useApi(projectId, () => get<Project>(`/v2/projects/${projectId}`));
  const integrations = useApi('integrations', () => get<Integration[]>('/v2/integrations'));
  const editor = useAccess().can('editor');
  const [integrationId, setIntegrationId] = useState('');
  const chosen = integrations.data?.find((i) => i.id === integrationId) ?? integrations.data?.[0];
  const models = useApi(`models/${chosen?.name ?? ''}`, () =>
    chosen ? get<string[]>(`/v2/llm_integrations/${chosen.name}/models`) : Promise.resolve([] as string[]),
  );
  // A prefill from the URL (e.g. a prompt template version with a dataset row), so a reload keeps it.
  const [search] = useSearchParams();
  const [model, setModel] = useState(search.get('model') ?? '');
  const [system, setSystem] = useState(search.get('system') ?? '');
  const [user, setUser] = useState(search.get('user') ?? '');
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries([...search].filter(([k]) => k.startsWith('var.')).map(([k, v]) => [k.slice(4), v])),
  );
  const temperature = search.get('temperature');
  const maxTokens = search.get('max_tokens');
  const [reply, setReply] = useState('');
  const [result, setResult] = useState<PlaygroundResult | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const variables = useMemo(() => variablesOf([system, user]), [system, user]);

  const run = async (e: FormEvent) => {
    e.preventDefault();
    if (!chosen) return;
    setBusy(true);
    setReply('');
    setResult(null);
    setProblem(null);
    const vars = nest(Object.fromEntries(variables.map((v) => [v, variableValue(values[v] ?? '')])));
    try {
      await postLines(
        `/v2/projects/${projectId}/playground/runs`,
        {
          integration_id: chosen.id,
          model,
          messages: [
            ...(system.trim() ? [{ role: 'system', content: system }] : []),
            { role: 'user', content: user },
          ],
          variables: vars,
          ...(temperature ? { temperature: Number(temperature) } : {}),
          ...(maxTokens ? { max_tokens: Number(maxTokens) } : {}),
          stream: true,
        },
        (line) => {
          if (line.type === 'delta') setReply((r) => r + line.text);
          else if (line.type === 'result') setResult(line as PlaygroundResult);
          else if (line.type === 'error') setProblem(line.detail);
        },
      );
    } catch (err) {
      setProblem(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Playground' },
        ]}
      />
      <div className="page-head">
        <h1>Playground</h1>
      </div>
      {integrations.error && <ErrorNote error={integrations.error} retry={integrations.reload} />}
      {!integrations.data && !integrations.error && <Loading what="integrations" />}
      {integrations.data?.length === 0 && (
        <p className="muted">No integration yet: add one under Settings, Integrations.</p>
      )}
      {integrations.data && integrations.data.length > 0 && (
        <form className="playground" onSubmit={run}>
          <div className="playground-pick">
            <label>
              <span>Integration</span>
              <select value={chosen?.id ?? ''} onChange={(e) => setIntegrationId(e.target.value)}>
                {integrations.data.map((i) => (
                  <option key={i.id} value={i.id}>
                    {i.name}
                    {i.is_selected ? ' (yours)' : ''} · {i.id.slice(0, 8)}
                  </option>
                ))}
              </select>
            </label>
            <label>
              <span>Model</span>
              <input
                list="playground-models"
                value={model}
                onChange={(e) => setModel(e.target.value)}
                placeholder={models.data?.[0] ?? 'model name'}
                required
              />
              <datalist id="playground-models">
                {models.data?.map((m) => (
                  <option key={m} value={m} />
                ))}
              </datalist>
            </label>
          </div>
          <label className="playground-message">
            <span>System message</span>
            <textarea value={system} onChange={(e) => setSystem(e.target.value)} rows={3} />
          </label>
          <label className="playground-message">
            <span>User message</span>
            <textarea value={user} onChange={(e) => setUser(e.target.value)} rows={5} required />
          </label>
          {variables.length > 0 && (
            <fieldset className="playground-variables">
              <legend>Variables</legend>
              <DatasetRowPicker
                variables={variables}
                onFill={(filled) => setValues((old) => ({ ...old, ...filled }))}
              />
              {variables.map((v) => (
                <label key={v}>
                  <span className="mono">{`{{${v}}}`}</span>
                  <input
                    value={values[v] ?? ''}
                    onChange={(e) => setValues({ ...values, [v]: e.target.value })}
                  />
                </label>
              ))}
            </fieldset>
          )}
          <div className="form-actions">
            <button type="submit" className="button primary" disabled={busy || !editor}>
              {busy ? 'Running…' : 'Run'}
            </button>
            {!editor && <span className="muted">Runs spend the project's money: editors only.</span>}
          </div>
        </form>
      )}
      {problem && (
        <p className="form-error" role="alert">
          {problem}
        </p>
      )}
      {(reply || result) && (
        <section
          className="section playground-result"
          aria-label="Reply"
          data-done={result ? 'true' : 'false'}
        >
          <h2>Reply</h2>
          {result?.error ? (
            <p className="form-error" role="alert" data-kind={result.error.kind}>
              {result.error.kind}: {result.error.message}
            </p>
          ) : (
            <pre className="playground-reply">{result ? result.text : reply}</pre>
          )}
          {result && (
            <>
              <dl className="usage-totals" aria-label="Call figures">
                <div data-kind="tokens_in">
                  <dt>Input tokens</dt>
                  <dd>{formatCount(result.tokens_in)}</dd>
                </div>
                <div data-kind="tokens_out">
                  <dt>Output tokens</dt>
                  <dd>{formatCount(result.tokens_out)}</dd>
                </div>
                <div data-kind="cost">
                  <dt>Cost</dt>
                  <dd>{money(result.cost_usd)}</dd>
                </div>
                <div data-kind="latency">
                  <dt>Latency</dt>
                  <dd>{result.latency_ms === null ? '–' : `${result.latency_ms} ms`}</dd>
                </div>
                <div data-kind="attempts">
                  <dt>Attempts</dt>
                  <dd>{result.attempts}</dd>
                </div>
              </dl>
              <details>
                <summary>Raw request</summary>
                <pre className="playground-raw">
                  {result.request
                    ? `${result.request.method} ${result.request.url}\n\n${result.request.body}`
                    : '–'}
                </pre>
              </details>
              <details>
                <summary>Raw response</summary>
                <pre className="playground-raw">
                  {result.response ? `${result.response.status}\n\n${result.response.body}` : '–'}
                </pre>
              </details>
            </>
          )}
        </section>
      )}
    </>
  );
}
