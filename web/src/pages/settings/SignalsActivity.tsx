/**
 * What Signals found in a run and how its runs went: the signals by severity (each opens to its
 * occurrences, one click from their traces, and is resolved or dismissed there), the run history
 * with its figures and spend, and "Run now". Beside the configuration form on the Signals page.
 */
import { Fragment, useEffect, useState } from 'react';
import { Link } from 'react-router';
import { SEVERITIES } from '../../../../src/domain/signals.ts';
import { ErrorNote, Loading } from '../../components/ErrorNote.tsx';
import { runBase } from '../../components/RunHeader.tsx';
import { get, patch, post } from '../../lib/api.ts';
import type { RunKind, Signal, SignalList, SignalRunList } from '../../lib/api-types.ts';
import { formatCost, formatCount, formatTime } from '../../lib/format.ts';
import { useApi } from '../../lib/use-api.ts';

const STATUS_LABEL: Record<string, string> = { open: 'Open', resolved: 'Resolved', dismissed: 'Dismissed' };
/** Runs still going are asked again this often, so a started run's figures appear without a reload. */
const POLL_MS = 2000;

/** Where an occurrence opens: its span, else its trace, else its session. */
function occurrencePath(base: string, o: Signal['all_occurrences'][number]): string | null {
  if (o.span_id) return `${base}/spans/${o.span_id}`;
  if (o.trace_id) return `${base}/traces/${o.trace_id}`;
  if (o.session_id) return `${base}/sessions/${o.session_id}`;
  return null;
}

function SignalItem({
  s,
  base,
  editable,
  onChanged,
}: {
  s: Signal;
  base: string;
  editable: boolean;
  onChanged: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  async function setStatus(status: string) {
    setBusy(true);
    setError(null);
    try {
      await patch(`/v2/projects/${s.project_id}/runs/${s.run_id}/signals/${s.id}`, { status });
      onChanged();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }
  const narrative = new Map(s.example_occurrences.map((e) => [e.record_id, e.example_narrative]));
  return (
    <li className={`signal severity-${s.severity.toLowerCase()}`}>
      <details>
        <summary>
          <span className={`severity-badge severity-${s.severity.toLowerCase()}`}>
            {s.severity.toLowerCase()}
          </span>
          <span className="signal-title">{s.title}</span>
          <span className="muted">
            {formatCount(s.occurrence_count)} occurrence{s.occurrence_count === 1 ? '' : 's'} · {s.source} ·{' '}
            {STATUS_LABEL[s.status] ?? s.status} · last seen {formatTime(s.last_seen)}
          </span>
        </summary>
        <div className="signal-body">
          {s.observation && <p>{s.observation}</p>}
          {s.details && <p className="muted">{s.details}</p>}
          {s.suggested_action && (
            <p>
              <strong>Suggested action:</strong> {s.suggested_action}
            </p>
          )}
          <p className="muted">
            First seen {formatTime(s.first_seen)}, in {s.runs_seen} run{s.runs_seen === 1 ? '' : 's'}.
          </p>
          <h4>Occurrences</h4>
          <ul className="occurrences">
            {s.all_occurrences.map((o) => {
              const to = occurrencePath(base, o);
              const label = `${o.record_type} ${o.record_id.slice(0, 8)}`;
              return (
                <li key={o.record_id}>
                  {to ? <Link to={to}>{label}</Link> : label}{' '}
                  <span className="muted">{formatTime(o.created_at)}</span>
                  {narrative.has(o.record_id) && <span> — {narrative.get(o.record_id)}</span>}
                </li>
              );
            })}
          </ul>
          {editable && (
            <div className="form-actions">
              {s.status !== 'resolved' && (
                <button
                  type="button"
                  className="button"
                  disabled={busy}
                  onClick={() => setStatus('resolved')}
                >
                  Resolve
                </button>
              )}
              {s.status !== 'dismissed' && (
                <button
                  type="button"
                  className="button"
                  disabled={busy}
                  onClick={() => setStatus('dismissed')}
                >
                  Dismiss
                </button>
              )}
              {s.status !== 'open' && (
                <button type="button" className="button" disabled={busy} onClick={() => setStatus('open')}>
                  Open again
                </button>
              )}
            </div>
          )}
          {error && <ErrorNote error={error} />}
        </div>
      </details>
    </li>
  );
}

function RunHistory({ runs }: { runs: SignalRunList['runs'] }) {
  if (!runs.length) return <p className="muted">No Signals run yet.</p>;
  return (
    <table className="table signal-runs">
      <thead>
        <tr>
          <th>Started</th>
          <th>Trigger</th>
          <th>Status</th>
          <th className="num">Records</th>
          <th className="num">Sent</th>
          <th className="num">Tokens in/out</th>
          <th className="num">Spend</th>
          <th className="num">Signals</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <Fragment key={r.id}>
            <tr>
              <td title={`Window ${formatTime(r.window_start)} – ${formatTime(r.window_end)}`}>
                {formatTime(r.started_at ?? r.created_at)}
              </td>
              <td>{r.trigger === 'on_demand' ? 'on demand' : 'scheduled'}</td>
              <td>
                <span className={`run-status status-${r.status}`}>{r.status}</span>
              </td>
              <td className="num">{formatCount(r.records_read)}</td>
              <td className="num">{formatCount(r.records_sampled)}</td>
              <td className="num">
                {formatCount(r.tokens_in)} / {formatCount(r.tokens_out)}
              </td>
              <td className="num">{formatCost(r.cost)}</td>
              <td className="num">{formatCount(r.signals_found)}</td>
            </tr>
            {(r.error ?? r.skipped_reason) && (
              <tr className="run-note">
                <td colSpan={8} className="muted">
                  {r.error ?? r.skipped_reason}
                </td>
              </tr>
            )}
          </Fragment>
        ))}
      </tbody>
    </table>
  );
}

export function SignalsActivity({
  projectId,
  runId,
  runKind,
  editable,
}: {
  projectId: string;
  runId: string;
  runKind: RunKind;
  editable: boolean;
}) {
  const base = runBase(projectId, runKind, runId);
  const api = `/v2/projects/${projectId}/runs/${runId}/signals`;
  const [status, setStatus] = useState('open');
  const [severity, setSeverity] = useState('');
  const query = new URLSearchParams({ limit: '200' });
  if (status) query.append('status', status);
  if (severity) query.append('severity', severity);
  const signalsUrl = `${api}?${query}`;
  const signals = useApi(signalsUrl, () => get<SignalList>(signalsUrl));
  const runs = useApi(`${api}/runs`, () => get<SignalRunList>(`${api}/runs?limit=20`));
  const [starting, setStarting] = useState(false);
  const [startError, setStartError] = useState<Error | null>(null);
  const going = runs.data?.runs.some((r) => r.status === 'queued' || r.status === 'running') ?? false;
  const { reload: reloadRuns } = runs;
  const { reload: reloadSignals } = signals;
  // While a run is queued or running, its figures are asked again; when the latest run changes
  // (started, finished), the signals are.
  // biome-ignore lint/correctness/useExhaustiveDependencies: each answer (runs.data) sets the next poll
  useEffect(() => {
    if (!going) return;
    const t = setTimeout(reloadRuns, POLL_MS);
    return () => clearTimeout(t);
  }, [going, reloadRuns, runs.data]);
  const latest = runs.data?.runs[0];
  const latestKey = latest ? `${latest.id}/${latest.status}` : '';
  useEffect(() => {
    if (latestKey) reloadSignals();
  }, [latestKey, reloadSignals]);

  async function runNow() {
    setStarting(true);
    setStartError(null);
    try {
      await post(`${api}/runs`);
      reloadRuns();
    } catch (err) {
      setStartError(err as Error);
    } finally {
      setStarting(false);
    }
  }

  // Most severe first (the API answers so); grouped under a heading per severity.
  const bySeverity = [...SEVERITIES].reverse().map((sev) => ({
    sev,
    items: (signals.data?.signals ?? []).filter((s) => s.severity === sev),
  }));
  return (
    <section className="signals-activity" aria-label="Signals found">
      <div className="page-head">
        <h2>Signals found</h2>
        <label>
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any</option>
            {Object.entries(STATUS_LABEL).map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <label>
          Severity{' '}
          <select value={severity} onChange={(e) => setSeverity(e.currentTarget.value)}>
            <option value="">Any</option>
            {SEVERITIES.map((s) => (
              <option key={s} value={s}>
                {s.toLowerCase()}
              </option>
            ))}
          </select>
        </label>
      </div>
      {signals.error && <ErrorNote error={signals.error} retry={signals.reload} />}
      {!signals.data && !signals.error && <Loading what="the signals" />}
      {signals.data && !signals.data.signals.length && <p className="muted">No signals here.</p>}
      {bySeverity
        .filter((g) => g.items.length)
        .map((g) => (
          <div key={g.sev}>
            <h3 className="severity-head">
              {g.sev.toLowerCase()} ({g.items.length})
            </h3>
            <ul className="signals">
              {g.items.map((s) => (
                <SignalItem key={s.id} s={s} base={base} editable={editable} onChanged={reloadSignals} />
              ))}
            </ul>
          </div>
        ))}
      <div className="page-head">
        <h2>Runs</h2>
        {editable && (
          <button type="button" className="button primary" disabled={starting || going} onClick={runNow}>
            {going ? 'Running…' : 'Run now'}
          </button>
        )}
      </div>
      {startError && <ErrorNote error={startError} />}
      {runs.error && <ErrorNote error={runs.error} retry={runs.reload} />}
      {runs.data && <RunHistory runs={runs.data.runs} />}
    </section>
  );
}
