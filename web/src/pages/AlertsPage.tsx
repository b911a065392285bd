/**
 * A log stream's alert rules: the list with each rule's state, a form to create or edit one with a
 * preview of its metric over the last day and the threshold drawn on it, and a rule's history.
 */
import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { COMPARISONS } from '../../../src/domain/alerts.ts';
import { AGGREGATIONS } from '../../../src/domain/dashboards.ts';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../components/Field.tsx';
import { RunHeader, useRunInfo } from '../components/RunHeader.tsx';
import { useAccess } from '../lib/access.tsx';
import { del, get, patch, post } from '../lib/api.ts';
import type { Alert, AlertHistory, AlertList, AlertPreview, Column } from '../lib/api-types.ts';
import { type Catalogues, mergedColumns, metricColumns } from '../lib/dashboard-view.ts';
import { formatTime } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';
import './signals.css';

const FIELDS = ['name', 'metric', 'aggregation', 'window_minutes', 'comparison', 'threshold', 'filter_tree'];
const COMPARISON_SIGN: Record<string, string> = { gt: '>', gte: '≥', lt: '<', lte: '≤' };
/** The preview is asked again this long after the last change of the form. */
const PREVIEW_DELAY_MS = 400;

interface Draft {
  name: string;
  metric: string;
  aggregation: string;
  window_minutes: number;
  comparison: string;
  threshold: string;
  enabled: boolean;
}

const blank: Draft = {
  name: '',
  metric: 'duration_ns',
  aggregation: 'Average',
  window_minutes: 60,
  comparison: 'gt',
  threshold: '',
  enabled: true,
};

const draftOf = (a: Alert): Draft => ({
  name: a.name,
  metric: a.metric,
  aggregation: a.aggregation,
  window_minutes: a.window_minutes,
  comparison: a.comparison,
  threshold: String(a.threshold),
  enabled: a.enabled,
});

const fmt = (v: number | null) =>
  v === null ? '—' : Math.abs(v) >= 1000 ? Math.round(v).toLocaleString() : String(+v.toPrecision(4));

/** The metric's points over the day as a line, the threshold as a dashed line, holding points in red. */
export function PreviewChart({ preview }: { preview: AlertPreview }) {
  const W = 600;
  const H = 180;
  const pad = { l: 56, r: 8, t: 10, b: 22 };
  const values = preview.points.map((p) => p.value).filter((v): v is number => v !== null);
  const all = preview.threshold === null ? values : [...values, preview.threshold];
  if (!all.length) return <p className="muted">No records in the last day.</p>;
  let lo = Math.min(0, ...all);
  let hi = Math.max(...all);
  if (hi === lo) hi = lo + 1;
  const span = hi - lo;
  hi += span * 0.08;
  lo = lo === 0 ? 0 : lo - span * 0.08;
  const n = preview.points.length;
  const x = (i: number) => pad.l + ((W - pad.l - pad.r) * (i + 0.5)) / n;
  const y = (v: number) => pad.t + (H - pad.t - pad.b) * (1 - (v - lo) / (hi - lo));
  // Gaps (windows without records) break the line.
  const path = preview.points
    .map((p, i) => (p.value === null ? null : `${x(i)},${y(p.value)}`))
    .reduce<string[]>((acc, pt, i, arr) => {
      if (pt) acc.push(`${i === 0 || arr[i - 1] === null ? 'M' : 'L'}${pt}`);
      return acc;
    }, [])
    .join(' ');
  const first = preview.points[0];
  const last = preview.points[n - 1];
  return (
    <svg
      viewBox={`0 0 ${W} ${H}`}
      role="img"
      aria-label={`${preview.aggregation} of ${preview.metric} per ${preview.window_minutes} min over the last day${preview.threshold === null ? '' : `, threshold ${preview.threshold}`}`}
    >
      <text x={4} y={y(hi) + 10}>
        {fmt(hi)}
      </text>
      <text x={4} y={y(lo)}>
        {fmt(lo)}
      </text>
      <path className="series" d={path} />
      {preview.points.map((p, i) =>
        p.value === null ? null : (
          <circle
            key={p.start}
            cx={x(i)}
            cy={y(p.value)}
            r={p.holds ? 3 : 1.8}
            className={p.holds ? 'holding' : undefined}
            fill={p.holds ? undefined : '#2f6fb3'}
          >
            <title>{`${formatTime(p.end)}: ${fmt(p.value)}`}</title>
          </circle>
        ),
      )}
      {preview.threshold !== null && (
        <>
          <line
            className="threshold"
            x1={pad.l}
            x2={W - pad.r}
            y1={y(preview.threshold)}
            y2={y(preview.threshold)}
          />
          <text x={W - pad.r - 4} y={y(preview.threshold) - 4} textAnchor="end">
            threshold {fmt(preview.threshold)}
          </text>
        </>
      )}
      {first && (
        <text x={pad.l} y={H - 6}>
          {formatTime(first.start)}
        </text>
      )}
      {last && (
        <text x={W - pad.r} y={H - 6} textAnchor="end">
          {formatTime(last.end)}
        </text>
      )}
    </svg>
  );
}

function AlertForm({
  projectId,
  runId,
  rule,
  columns,
  onSaved,
  onCancel,
}: {
  projectId: string;
  runId: string;
  rule: Alert | null;
  columns: Column[];
  onSaved: () => void;
  onCancel: () => void;
}) {
  const base = `/v2/projects/${projectId}/log_streams/${runId}/alerts`;
  const [d, setD] = useState<Draft>(rule ? draftOf(rule) : blank);
  const { errors, busy, submit } = useFormErrors(FIELDS);
  const [preview, setPreview] = useState<AlertPreview | null>(null);
  const [previewError, setPreviewError] = useState<Error | null>(null);
  const set = (p: Partial<Draft>) => setD((prev) => ({ ...prev, ...p }));
  const threshold = d.threshold.trim() === '' ? undefined : Number(d.threshold);
  const choices = metricColumns(columns, d.aggregation);

  // The preview follows the form, asked a moment after the last change.
  useEffect(() => {
    const t = setTimeout(async () => {
      try {
        setPreview(
          await post<AlertPreview>(`${base}/preview`, {
            metric: d.metric,
            aggregation: d.aggregation,
            window_minutes: d.window_minutes,
            ...(threshold !== undefined && Number.isFinite(threshold)
              ? { threshold, comparison: d.comparison }
              : {}),
          }),
        );
        setPreviewError(null);
      } catch (err) {
        setPreviewError(err as Error);
      }
    }, PREVIEW_DELAY_MS);
    return () => clearTimeout(t);
  }, [base, d.metric, d.aggregation, d.window_minutes, d.comparison, threshold]);

  async function save(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    await submit(async () => {
      const body = {
        name: d.name,
        metric: d.metric,
        aggregation: d.aggregation,
        window_minutes: d.window_minutes,
        comparison: d.comparison,
        threshold: threshold ?? Number.NaN,
        enabled: d.enabled,
      };
      if (rule) await patch(`${base}/${rule.id}`, body);
      else await post(base, body);
      onSaved();
    });
  }
  const f = errors.fields;
  return (
    <form
      className="settings-form"
      onSubmit={save}
      aria-label={rule ? 'Edit alert rule' : 'New alert rule'}
      noValidate
    >
      <h2>{rule ? `Edit “${rule.name}”` : 'New alert rule'}</h2>
      <Field label="Name" error={f.name}>
        {(p) => (
          <input
            {...p}
            value={d.name}
            maxLength={255}
            onChange={(e) => set({ name: e.currentTarget.value })}
          />
        )}
      </Field>
      <div className="two-col">
        <Field label="Aggregation" error={f.aggregation}>
          {(p) => (
            <select
              {...p}
              value={d.aggregation}
              onChange={(e) => set({ aggregation: e.currentTarget.value })}
            >
              {AGGREGATIONS.map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Metric" error={f.metric} hint="A column, as in a dashboard widget.">
          {(p) => (
            <>
              <input
                {...p}
                className="mono"
                list="alert-metrics"
                value={d.metric}
                maxLength={255}
                onChange={(e) => set({ metric: e.currentTarget.value })}
              />
              <datalist id="alert-metrics">
                {choices.map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.label}
                  </option>
                ))}
              </datalist>
            </>
          )}
        </Field>
      </div>
      <div className="two-col">
        <Field label="Window (minutes)" error={f.window_minutes}>
          {(p) => (
            <input
              {...p}
              type="number"
              min={1}
              max={1440}
              value={d.window_minutes}
              onChange={(e) => set({ window_minutes: Number(e.currentTarget.value) || 1 })}
            />
          )}
        </Field>
        <Field label="Fires when the value is" error={f.comparison ?? f.threshold}>
          {(p) => (
            <span className="inline-fields">
              <select
                value={d.comparison}
                aria-label="Comparison"
                onChange={(e) => set({ comparison: e.currentTarget.value })}
              >
                {COMPARISONS.map((c) => (
                  <option key={c} value={c}>
                    {COMPARISON_SIGN[c]}
                  </option>
                ))}
              </select>
              <input
                {...p}
                type="number"
                step="any"
                aria-label="Threshold"
                placeholder="threshold"
                value={d.threshold}
                onChange={(e) => set({ threshold: e.currentTarget.value })}
              />
            </span>
          )}
        </Field>
      </div>
      <label className="check">
        <input
          type="checkbox"
          checked={d.enabled}
          onChange={(e) => set({ enabled: e.currentTarget.checked })}
        />
        Evaluated every minute
      </label>
      <section className="alert-preview" aria-label="Preview">
        <h3>The last day</h3>
        {previewError && <ErrorNote error={previewError} />}
        {!preview && !previewError && <Loading what="the preview" />}
        {preview && !previewError && <PreviewChart preview={preview} />}
        {preview && !previewError && threshold !== undefined && (
          <p className="muted">
            Would have held in {preview.points.filter((p) => p.holds).length} of {preview.points.length}{' '}
            windows.
          </p>
        )}
      </section>
      <FormProblem message={errors.general} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy}>
          {rule ? 'Save alert rule' : 'Create alert rule'}
        </button>
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function History({ base, rule }: { base: string; rule: Alert }) {
  const url = `${base}/${rule.id}/history`;
  const h = useApi(url, () => get<AlertHistory>(url));
  return (
    <section aria-label="Alert history">
      <h2>History of “{rule.name}”</h2>
      {h.error && <ErrorNote error={h.error} retry={h.reload} />}
      {h.data && !h.data.events.length && <p className="muted">It has not fired.</p>}
      {h.data && h.data.events.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th>At</th>
              <th>Event</th>
              <th className="num">Value</th>
              <th className="num">Threshold</th>
            </tr>
          </thead>
          <tbody>
            {h.data.events.map((e) => (
              <tr key={e.id}>
                <td>{formatTime(e.at)}</td>
                <td className={e.kind === 'fired' ? 'alert-state state-firing' : 'alert-state state-ok'}>
                  {e.kind}
                </td>
                <td className="num">{fmt(e.value)}</td>
                <td className="num">{fmt(e.threshold)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function AlertsPage() {
  const { projectId = '', runId = '' } = useParams();
  const info = useRunInfo(projectId, 'log_streams', runId);
  const access = useAccess();
  const editable = access.can('editor');
  const base = `/v2/projects/${projectId}/log_streams/${runId}/alerts`;
  const list = useApi(base, () => get<AlertList>(base));
  const [editing, setEditing] = useState<Alert | 'new' | null>(null);
  const [shown, setShown] = useState<Alert | null>(null);
  const [failure, setFailure] = useState<Error | null>(null);
  const catalogues = useApi(`columns/all/${runId}`, async () => {
    const tabs = ['spans', 'traces', 'sessions'] as const;
    const lists = await Promise.all(
      tabs.map((t) =>
        post<{ columns: Column[] }>(`/v2/projects/${projectId}/${t}/available_columns`, {
          log_stream_id: runId,
        }),
      ),
    );
    return Object.fromEntries(tabs.map((t, i) => [t, lists[i].columns])) as Catalogues;
  });
  const columns = useMemo(() => mergedColumns(catalogues.data ?? {}), [catalogues.data]);

  async function remove(a: Alert) {
    setFailure(null);
    try {
      await del(`${base}/${a.id}`);
      if (shown?.id === a.id) setShown(null);
      list.reload();
    } catch (err) {
      setFailure(err as Error);
    }
  }

  return (
    <>
      <RunHeader
        projectId={projectId}
        kind="log_streams"
        runId={runId}
        info={info}
        tail={[{ label: 'Alerts' }]}
      />
      <div className="page-head">
        <h1>Alerts</h1>
        <Link to={`/projects/${projectId}/webhooks`}>Webhooks of the project</Link>
        {editable && !editing && (
          <button type="button" className="button primary" onClick={() => setEditing('new')}>
            New alert rule
          </button>
        )}
      </div>
      {failure && <ErrorNote error={failure} />}
      {list.error && <ErrorNote error={list.error} retry={list.reload} />}
      {!list.data && !list.error && <Loading what="the alert rules" />}
      <div className="signals-layout">
        <div>
          {list.data && !list.data.alerts.length && <p className="muted">No alert rules yet.</p>}
          {list.data && list.data.alerts.length > 0 && (
            <table className="table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Condition</th>
                  <th>State</th>
                  <th className="num">Last value</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {list.data.alerts.map((a) => (
                  <tr key={a.id}>
                    <td>
                      {a.name}
                      {!a.enabled && <span className="muted"> (off)</span>}
                    </td>
                    <td className="mono">
                      {a.aggregation}({a.metric}) over {a.window_minutes} min {COMPARISON_SIGN[a.comparison]}{' '}
                      {fmt(a.threshold)}
                    </td>
                    <td className={`alert-state state-${a.state}`}>{a.state}</td>
                    <td
                      className="num"
                      title={a.last_evaluated_at ? `at ${formatTime(a.last_evaluated_at)}` : undefined}
                    >
                      {fmt(a.last_value)}
                    </td>
                    <td>
                      <button type="button" className="button" onClick={() => setShown(a)}>
                        History
                      </button>{' '}
                      {editable && (
                        <>
                          <button type="button" className="button" onClick={() => setEditing(a)}>
                            Edit
                          </button>{' '}
                          <button type="button" className="button" onClick={() => remove(a)}>
                            Delete
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {shown && <History key={shown.id} base={base} rule={shown} />}
        </div>
        <aside>
          {editing && (
            <AlertForm
              key={editing === 'new' ? 'new' : editing.id}
              projectId={projectId}
              runId={runId}
              rule={editing === 'new' ? null : editing}
              columns={columns}
              onSaved={() => {
                setEditing(null);
                list.reload();
              }}
              onCancel={() => setEditing(null)}
            />
          )}
        </aside>
      </div>
    </>
  );
}
