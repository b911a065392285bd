import { type FormEvent, useEffect, useState } from 'react';
import { useParams } from 'react-router';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../components/Field.tsx';
import { RunHeader, useRunInfo } from '../components/RunHeader.tsx';
import { useAccess } from '../lib/access.tsx';
import { get, post } from '../lib/api.ts';
import type { Integration, RunKind, Scorer, ScorerSettings, ScoringStatus } from '../lib/api-types.ts';
import { formatCost, formatCount } from '../lib/format.ts';
import { scorerDefinition } from '../lib/scorers.ts';
import { useApi } from '../lib/use-api.ts';
import './scoring.css';

type Obj = Record<string, any>;
type Segment = NonNullable<ScorerSettings['segment_filters']>[number];

/** How often the status is asked again while the page is open. */
const POLL_MS = 3000;

const FIELDS = ['scorers', 'segment_filters', 'integration_id'];

const TYPE_LABEL: Record<string, string> = {
  llm: 'LLM judge',
  preset: 'preset',
  rule: 'rule',
  code: 'code',
  luna: 'luna',
};

/**
 * The form edits the catch-all segment (no filter): one sample rate, for every scorer or for the LLM
 * judges only. Segments with a filter (set through the API) are kept as they are, before it.
 */
function splitSegments(segments: Segment[] | null | undefined) {
  const all = segments ?? [];
  return {
    filtered: all.filter((s) => s.filter),
    catchAll: all.find((s) => !s.filter) ?? null,
  };
}

function SettingsForm({
  projectId,
  settings,
  scorers,
  readOnly,
  onSaved,
}: {
  projectId: string;
  settings: ScorerSettings;
  scorers: Scorer[];
  readOnly: boolean;
  onSaved: (s: ScorerSettings) => void;
}) {
  const integrations = useApi('integrations', () => get<Integration[]>('/v2/integrations'));
  const { filtered, catchAll } = splitSegments(settings.segment_filters);
  const [enabled, setEnabled] = useState<Set<string>>(() => new Set(settings.scorers.map((c) => c.id)));
  const [rate, setRate] = useState(String(Math.round((catchAll?.sample_rate ?? 1) * 1000) / 10));
  const [llmOnly, setLlmOnly] = useState(catchAll?.llm_scorers ?? false);
  const [integration, setIntegration] = useState(settings.integration_id ?? '');
  const [saved, setSaved] = useState<string | null>(null);
  const [rateError, setRateError] = useState<string | undefined>();
  const { errors, busy, submit } = useFormErrors(FIELDS);
  const f = errors.fields;
  const pinned = new Map(settings.scorers.map((c) => [c.id, c.scorer_version?.version]));

  const toggle = (id: string, on: boolean) => {
    setSaved(null);
    setEnabled((prev) => {
      const next = new Set(prev);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  };

  async function save(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const pct = Number(rate);
    if (rate.trim() === '' || !Number.isFinite(pct) || pct < 0 || pct > 100) {
      setRateError('A percentage from 0 to 100');
      return;
    }
    setRateError(undefined);
    // A scorer kept keeps its filters and node types; each is pinned again to its default version.
    const kept = new Map(settings.scorers.map((c) => [c.id, c]));
    const body = {
      scorers: scorers
        .filter((s) => enabled.has(s.id))
        .map((s) => {
          const { scorer_version: _, ...prior } = (kept.get(s.id) ?? {}) as Obj;
          return { ...prior, id: s.id, name: s.name, scorer_type: s.scorer_type };
        }),
      segment_filters: [
        ...filtered,
        ...(pct < 100 || llmOnly ? [{ filter: null, sample_rate: pct / 100, llm_scorers: llmOnly }] : []),
      ],
      integration_id: integration || null,
    };
    await submit(async () => {
      const answer = await post<ScorerSettings>(
        `/v2/projects/${projectId}/runs/${settings.run_id}/scorer-settings`,
        body,
      );
      onSaved(answer);
      setIntegration(answer.integration_id ?? '');
      setSaved('Saved');
    });
  }

  const scorersError = f.scorers ?? Object.entries(f).find(([k]) => k.startsWith('scorers.'))?.[1];
  return (
    <form className="settings-form scoring-form" onSubmit={save} aria-label="Scorer settings" noValidate>
      <fieldset className="plain" disabled={readOnly}>
        <fieldset>
          <legend>Scorers on this run</legend>
          <div className="scroll-x">
            <table className="table scorer-choices">
              <thead>
                <tr>
                  <th>
                    <span className="visually-hidden">Enabled</span>
                  </th>
                  <th>Scorer</th>
                  <th>Type</th>
                  <th className="wide-only">Definition</th>
                </tr>
              </thead>
              <tbody>
                {scorers.map((s) => (
                  <tr key={s.id} data-scorer={s.name}>
                    <td>
                      <input
                        type="checkbox"
                        id={`scorer-${s.id}`}
                        checked={enabled.has(s.id)}
                        onChange={(e) => toggle(s.id, e.currentTarget.checked)}
                      />
                    </td>
                    <td>
                      <label htmlFor={`scorer-${s.id}`}>{s.name}</label>
                      {pinned.get(s.id) !== undefined && (
                        <span className="muted small"> v{pinned.get(s.id)}</span>
                      )}
                    </td>
                    <td className="nowrap">{TYPE_LABEL[s.scorer_type] ?? s.scorer_type}</td>
                    <td className="muted small definition wide-only">
                      {scorerDefinition(s) || s.description || ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {scorersError && (
            <p className="field-error" role="alert">
              {scorersError}
            </p>
          )}
          <p className="field-hint">
            Saving pins each scorer to its current default version; a later version scores this run once saved
            again.
          </p>
        </fieldset>
        <fieldset>
          <legend>Sampling and integration</legend>
          <div className="two-col">
            <Field
              label="Sample rate (%)"
              error={rateError ?? f.segment_filters}
              hint="Records are sampled by id: the same record is always in or out."
            >
              {(p) => (
                <input
                  {...p}
                  type="number"
                  min={0}
                  max={100}
                  step="any"
                  value={rate}
                  onChange={(e) => {
                    setSaved(null);
                    setRate(e.currentTarget.value);
                  }}
                />
              )}
            </Field>
            <Field
              label="Integration for LLM judges"
              error={f.integration_id}
              hint="Left to the default: the one kept from the last save, else yours."
            >
              {(p) => (
                <select
                  {...p}
                  value={integration}
                  onChange={(e) => {
                    setSaved(null);
                    setIntegration(e.currentTarget.value);
                  }}
                >
                  <option value="">Default</option>
                  {(integrations.data ?? []).map((i) => (
                    <option key={i.id} value={i.id}>
                      {i.name}
                      {i.is_selected ? ' (yours)' : ''}
                    </option>
                  ))}
                  {integration && !integrations.data?.some((i) => i.id === integration) && (
                    <option value={integration}>{integration}</option>
                  )}
                </select>
              )}
            </Field>
          </div>
          <label className="check">
            <input
              type="checkbox"
              checked={llmOnly}
              onChange={(e) => {
                setSaved(null);
                setLlmOnly(e.currentTarget.checked);
              }}
            />
            Sample LLM judges only (rules score every record)
          </label>
          {filtered.length > 0 && (
            <p className="field-hint">
              {filtered.length} segment filter{filtered.length === 1 ? '' : 's'} set through the API apply
              first and are kept.
            </p>
          )}
        </fieldset>
      </fieldset>
      <FormProblem message={errors.general} />
      <div className="form-actions">
        {readOnly ? (
          <span className="muted">Only an editor of the project changes the run's scorers.</span>
        ) : (
          <button type="submit" className="button primary" disabled={busy}>
            Save scorer settings
          </button>
        )}
        <span className="muted" aria-live="polite">
          {saved}
        </span>
      </div>
    </form>
  );
}

const STATE_LABEL: Record<string, string> = {
  not_computed: 'not computed',
  not_applicable: 'not applicable',
};

/** Each scorer's records by state and reason, the pause, today's spend; asked again every few seconds. */
function StatusView({ status }: { status: ScoringStatus }) {
  return (
    <section aria-label="Scoring status" className="scoring-status">
      <div className="status-head">
        <h2>Status</h2>
        <span className="muted">
          Spend today <strong className="spend-today">{formatCost(status.spend_today)}</strong>
        </span>
      </div>
      {status.scorers.length === 0 ? (
        <p className="muted">No scorers are enabled on this run.</p>
      ) : (
        <div className="scroll-x">
          <table className="table status-table">
            <thead>
              <tr>
                <th>Scorer</th>
                <th>State</th>
                <th>Reason</th>
                <th className="num">Records</th>
              </tr>
            </thead>
            {status.scorers.map((s) => (
              <tbody key={s.id} data-status-scorer={s.name}>
                {(s.counts.length ? s.counts : [{ status: '', reason: 'nothing yet', count: 0 }]).map(
                  (c, i) => (
                    <tr key={`${c.status}:${c.reason}`}>
                      {i === 0 && (
                        <th scope="rowgroup" rowSpan={Math.max(1, s.counts.length)} className="status-scorer">
                          {s.name}
                          <span className="muted small"> {TYPE_LABEL[s.kind] ?? s.kind}</span>
                        </th>
                      )}
                      <td>
                        {c.status && (
                          <span className={`state state-${c.status}`}>
                            {STATE_LABEL[c.status] ?? c.status}
                          </span>
                        )}
                      </td>
                      <td className="reason">{c.reason ?? ''}</td>
                      <td className="num count">{c.count ? formatCount(c.count) : '—'}</td>
                    </tr>
                  ),
                )}
              </tbody>
            ))}
          </table>
        </div>
      )}
      <p className="field-hint">
        Rule scorers are computed as records arrive, in the record's <code>metrics</code>. Their records
        without a score are counted together; each record's scores say why it has none.
      </p>
    </section>
  );
}

type Recomputed = {
  records: number;
  estimated_cost: number | null;
  cap: number;
  records_scored: number;
  records_changed: number;
  tasks_queued: number;
};

/** Re-score the run's existing records: a dry run first (how many, what it costs), then confirmed. */
function Rescore({
  projectId,
  runKind,
  runId,
  settings,
}: {
  projectId: string;
  runKind: RunKind;
  runId: string;
  settings: ScorerSettings;
}) {
  const [chosen, setChosen] = useState<Set<string>>(() => new Set(settings.scorers.map((c) => c.id)));
  const [dry, setDry] = useState<Recomputed | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const { errors, busy, submit } = useFormErrors(['scorer_ids', 'max_records']);
  useEffect(() => {
    setChosen(new Set(settings.scorers.map((c) => c.id)));
    setDry(null);
  }, [settings]);
  const ids = settings.scorers.filter((c) => chosen.has(c.id)).map((c) => c.id);
  const body = (extra: Obj) => ({
    [runKind === 'experiments' ? 'experiment_id' : 'log_stream_id']: runId,
    scorer_ids: ids,
    ...extra,
  });
  const url = `/v2/projects/${projectId}/recompute-metrics`;

  async function count(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setDone(null);
    await submit(async () => setDry(await post<Recomputed>(url, body({ dry_run: true }))));
  }
  async function confirm() {
    if (!dry) return;
    await submit(async () => {
      const r = await post<Recomputed>(url, body({ max_records: Math.max(dry.records, 1) }));
      setDry(null);
      setDone(
        `Re-scored: ${formatCount(r.records_scored)} records, ${formatCount(r.records_changed)} changed inline, ${formatCount(r.tasks_queued)} LLM tasks queued.`,
      );
    });
  }

  if (settings.scorers.length === 0) return null;
  return (
    <form className="settings-form rescore" aria-label="Re-score existing records" onSubmit={count}>
      <h2>Re-score existing records</h2>
      <div className="checks">
        {settings.scorers.map((c) => (
          <label key={c.id} className="check">
            <input
              type="checkbox"
              checked={chosen.has(c.id)}
              onChange={(e) => {
                const on = e.currentTarget.checked;
                setDry(null);
                setChosen((prev) => {
                  const next = new Set(prev);
                  if (on) next.add(c.id);
                  else next.delete(c.id);
                  return next;
                });
              }}
            />
            {c.name}
          </label>
        ))}
      </div>
      <FormProblem
        message={errors.general ?? errors.fields.scorer_ids ?? errors.fields.max_records ?? null}
      />
      {dry ? (
        <div className="notice rescore-estimate" role="status">
          <p>
            <strong>{formatCount(dry.records)}</strong> record{dry.records === 1 ? '' : 's'} would be scored
            again; estimated cost{' '}
            <strong>
              {dry.estimated_cost === null
                ? 'unknown (a judge model has no price)'
                : formatCost(dry.estimated_cost)}
            </strong>
            .{dry.records > dry.cap && ` That is more than the cap of ${formatCount(dry.cap)}.`}
          </p>
          <div className="form-actions">
            <button
              type="button"
              className="button primary"
              disabled={busy || dry.records === 0}
              onClick={confirm}
            >
              Re-score {formatCount(dry.records)} record{dry.records === 1 ? '' : 's'}
            </button>
            <button type="button" className="button" disabled={busy} onClick={() => setDry(null)}>
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <div className="form-actions">
          <button type="submit" className="button" disabled={busy || ids.length === 0}>
            Count records (dry run)
          </button>
          <span className="muted" aria-live="polite">
            {done}
          </span>
        </div>
      )}
    </form>
  );
}

/** A log stream's or experiment's scorers, their status ("why didn't it run?") and re-scoring. */
export function ScoringPage({ runKind }: { runKind: RunKind }) {
  const { projectId = '', runId = '' } = useParams();
  const info = useRunInfo(projectId, runKind, runId);
  const access = useAccess();
  const editable = access.can('editor');
  const base = `/v2/projects/${projectId}/runs/${runId}/scorer-settings`;
  const settings = useApi(base, () => get<ScorerSettings>(base));
  const scorers = useApi('scorers:all', () =>
    post<{ scorers: Scorer[] }>('/v2/scorers/list?limit=1000', { sort: { name: 'name', ascending: true } }),
  );
  const status = useApi(`${base}/status`, () => get<ScoringStatus>(`${base}/status`));
  const [current, setCurrent] = useState<ScorerSettings | null>(null);
  useEffect(() => setCurrent(settings.data ?? null), [settings.data]);
  const { reload } = status;
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [reload]);
  const paused = status.data?.paused_reason;
  return (
    <>
      <RunHeader
        projectId={projectId}
        kind={runKind}
        runId={runId}
        info={info}
        tail={[{ label: 'Scoring' }]}
      />
      <div className="page-head">
        <h1>Scoring</h1>
      </div>
      {paused && (
        <div className="error-note pause-banner" role="alert">
          <strong>LLM scorers are paused:</strong> {paused}. Their records wait; they resume when the
          integration is fixed or these settings are saved again.
        </div>
      )}
      <div className="scoring-layout">
        <div>
          {(settings.error ?? scorers.error) && (
            <ErrorNote error={(settings.error ?? scorers.error) as Error} retry={settings.reload} />
          )}
          {(!current || !scorers.data) && !settings.error && !scorers.error && (
            <Loading what="the scorer settings" />
          )}
          {current && scorers.data && !access.loading && (
            <SettingsForm
              key={current.run_id}
              projectId={projectId}
              settings={current}
              scorers={scorers.data.scorers}
              readOnly={!editable}
              onSaved={(s) => {
                setCurrent(s);
                reload();
              }}
            />
          )}
        </div>
        <div>
          {status.error && !status.data && <ErrorNote error={status.error} retry={reload} />}
          {!status.data && !status.error && <Loading what="the scoring status" />}
          {status.data && <StatusView status={status.data} />}
          {current && editable && (
            <Rescore projectId={projectId} runKind={runKind} runId={runId} settings={current} />
          )}
        </div>
      </div>
    </>
  );
}
