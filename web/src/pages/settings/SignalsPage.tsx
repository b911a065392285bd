import { type FormEvent, useEffect, useState } from 'react';
import { useParams } from 'react-router';
import { RUN_MODES, SEVERITIES } from '../../../../src/domain/signals.ts';
import { ErrorNote, Loading } from '../../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../../components/Field.tsx';
import { RunHeader, useRunInfo } from '../../components/RunHeader.tsx';
import { useAccess } from '../../lib/access.tsx';
import { get, put } from '../../lib/api.ts';
import type { Integration, RunKind, SignalsEnvelope } from '../../lib/api-types.ts';
import { formatTime } from '../../lib/format.ts';
import { useApi } from '../../lib/use-api.ts';
import { CronPreview } from './CronPreview.tsx';
import { SignalsActivity } from './SignalsActivity.tsx';
import '../signals.css';

type Config = SignalsEnvelope['data'];

const FIELDS = [
  'run_mode',
  'schedule',
  'schedule.cron',
  'schedule.timezone',
  'schedule.type',
  'start_date',
  'end_date',
  'scheduled_runs_enabled',
  'model',
  'integration_id',
  'user_preferences.focus_on',
  'user_preferences.dont_focus_on',
  'notification_severities',
];

const RUN_MODE_LABEL: Record<string, string> = { ON_DEMAND: 'On demand', SCHEDULED: 'Scheduled' };

/** The time zones this browser knows, for the time zone input's suggestions. */
const ZONES: string[] = (() => {
  try {
    return ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')];
  } catch {
    return ['UTC'];
  }
})();

/** The fields a PUT sends: everything the form edits (fields left out would keep their saved value). */
function body(c: Config) {
  return {
    run_mode: c.run_mode,
    schedule: { type: c.schedule.type, cron: c.schedule.cron, timezone: c.schedule.timezone },
    start_date: c.start_date || null,
    end_date: c.end_date || null,
    scheduled_runs_enabled: c.scheduled_runs_enabled,
    model: c.model || null,
    integration_id: c.integration_id || null,
    user_preferences: c.user_preferences,
    notification_severities: c.notification_severities,
  };
}

function SignalsForm({
  initial,
  onSaved,
  readOnly,
}: {
  initial: Config;
  onSaved: (c: Config) => void;
  /** A caller below editor: the configuration shown, not changeable. */
  readOnly: boolean;
}) {
  const [c, setC] = useState<Config>(initial);
  const [saved, setSaved] = useState<string | null>(null);
  const { errors, busy, submit } = useFormErrors(FIELDS);
  const integrations = useApi('integrations', () => get<Integration[]>('/v2/integrations'));
  useEffect(() => setC(initial), [initial]);
  const set = (patch: Partial<Config>) => {
    setSaved(null);
    setC((prev) => ({ ...prev, ...patch }));
  };
  const setSchedule = (patch: Partial<Config['schedule']>) => set({ schedule: { ...c.schedule, ...patch } });
  const setPrefs = (patch: Partial<Config['user_preferences']>) =>
    set({ user_preferences: { ...c.user_preferences, ...patch } });
  const f = errors.fields;

  async function save(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    await submit(async () => {
      const answer = await put<SignalsEnvelope>(
        `/v2/projects/${c.project_id}/runs/${c.run_id}/signals/configuration`,
        body(c),
      );
      onSaved(answer.data);
      setSaved(`Saved ${formatTime(answer.data.updated_at)}`);
    });
  }

  return (
    <form
      className="settings-form signals-form"
      onSubmit={save}
      aria-label="Signals configuration"
      noValidate
    >
      <fieldset className="plain" disabled={readOnly}>
        <fieldset>
          <legend>When Signals runs</legend>
          <Field label="Run mode" error={f.run_mode}>
            {(p) => (
              <select {...p} value={c.run_mode} onChange={(e) => set({ run_mode: e.currentTarget.value })}>
                {RUN_MODES.map((m) => (
                  <option key={m} value={m}>
                    {RUN_MODE_LABEL[m] ?? m}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <label className="check">
            <input
              type="checkbox"
              checked={c.scheduled_runs_enabled}
              onChange={(e) => set({ scheduled_runs_enabled: e.currentTarget.checked })}
            />
            Scheduled runs enabled
          </label>
          <div className="two-col">
            <Field
              label="Cron schedule"
              error={f['schedule.cron'] ?? f.schedule}
              hint="Five fields: minute hour day-of-month month day-of-week, such as 0 9 * * 1-5."
            >
              {(p) => (
                <input
                  {...p}
                  className="mono"
                  value={c.schedule.cron}
                  onChange={(e) => setSchedule({ cron: e.currentTarget.value })}
                />
              )}
            </Field>
            <Field label="Time zone" error={f['schedule.timezone']}>
              {(p) => (
                <>
                  <input
                    {...p}
                    list="signals-zones"
                    value={c.schedule.timezone}
                    onChange={(e) => setSchedule({ timezone: e.currentTarget.value })}
                  />
                  <datalist id="signals-zones">
                    {ZONES.map((z) => (
                      <option key={z} value={z} />
                    ))}
                  </datalist>
                </>
              )}
            </Field>
          </div>
          <CronPreview cron={c.schedule.cron} timezone={c.schedule.timezone} />
          <div className="two-col">
            <Field label="Start date" error={f.start_date}>
              {(p) => (
                <input
                  {...p}
                  type="date"
                  value={c.start_date ?? ''}
                  onChange={(e) => set({ start_date: e.currentTarget.value || null })}
                />
              )}
            </Field>
            <Field label="End date" error={f.end_date}>
              {(p) => (
                <input
                  {...p}
                  type="date"
                  value={c.end_date ?? ''}
                  onChange={(e) => set({ end_date: e.currentTarget.value || null })}
                />
              )}
            </Field>
          </div>
        </fieldset>
        <fieldset>
          <legend>What it uses</legend>
          <div className="two-col">
            <Field label="Model" error={f.model}>
              {(p) => (
                <input
                  {...p}
                  value={c.model ?? ''}
                  maxLength={255}
                  placeholder="gpt-4o-mini"
                  onChange={(e) => set({ model: e.currentTarget.value || null })}
                />
              )}
            </Field>
            <Field label="Integration" error={f.integration_id}>
              {(p) => (
                <select
                  {...p}
                  value={c.integration_id ?? ''}
                  onChange={(e) => set({ integration_id: e.currentTarget.value || null })}
                >
                  <option value="">None</option>
                  {(integrations.data ?? []).map((i) => (
                    <option key={i.id} value={i.id}>
                      {i.name}
                      {i.is_selected ? ' (yours)' : ''}
                    </option>
                  ))}
                  {c.integration_id && !integrations.data?.some((i) => i.id === c.integration_id) && (
                    <option value={c.integration_id}>{c.integration_id}</option>
                  )}
                </select>
              )}
            </Field>
          </div>
          <Field label="Focus on" error={f['user_preferences.focus_on']}>
            {(p) => (
              <textarea
                {...p}
                rows={3}
                value={c.user_preferences.focus_on}
                onChange={(e) => setPrefs({ focus_on: e.currentTarget.value })}
              />
            )}
          </Field>
          <Field label="Don't focus on" error={f['user_preferences.dont_focus_on']}>
            {(p) => (
              <textarea
                {...p}
                rows={3}
                value={c.user_preferences.dont_focus_on}
                onChange={(e) => setPrefs({ dont_focus_on: e.currentTarget.value })}
              />
            )}
          </Field>
        </fieldset>
        <fieldset aria-describedby={f.notification_severities ? 'severities-error' : undefined}>
          <legend>Notify me of findings of severity</legend>
          <div className="checks">
            {SEVERITIES.map((s) => (
              <label key={s} className="check">
                <input
                  type="checkbox"
                  checked={c.notification_severities.includes(s)}
                  onChange={(e) =>
                    set({
                      notification_severities: e.currentTarget.checked
                        ? SEVERITIES.filter((x) => x === s || c.notification_severities.includes(x))
                        : c.notification_severities.filter((x) => x !== s),
                    })
                  }
                />
                {s.toLowerCase()}
              </label>
            ))}
          </div>
          {f.notification_severities && (
            <p id="severities-error" className="field-error" role="alert">
              {f.notification_severities}
            </p>
          )}
        </fieldset>
      </fieldset>
      <FormProblem message={errors.general} />
      <div className="form-actions">
        {readOnly ? (
          <span className="muted">Only an editor of the project changes the Signals configuration.</span>
        ) : (
          <button type="submit" className="button primary" disabled={busy}>
            Save Signals configuration
          </button>
        )}
        <span className="muted" aria-live="polite">
          {saved}
        </span>
      </div>
    </form>
  );
}

/** A log stream's or experiment's Signals: what was found and the runs, beside the configuration. */
export function SignalsPage({ runKind }: { runKind: RunKind }) {
  const { projectId = '', runId = '' } = useParams();
  const info = useRunInfo(projectId, runKind, runId);
  const access = useAccess();
  const editable = access.can('editor');
  const url = `/v2/projects/${projectId}/runs/${runId}/signals/configuration`;
  const config = useApi(url, () => get<SignalsEnvelope>(url));
  const [current, setCurrent] = useState<Config | null>(null);
  useEffect(() => setCurrent(config.data?.data ?? null), [config.data]);
  return (
    <>
      <RunHeader
        projectId={projectId}
        kind={runKind}
        runId={runId}
        info={info}
        tail={[{ label: 'Signals' }]}
      />
      <div className="page-head">
        <h1>Signals</h1>
        <span className="muted">
          {current?.updated_at
            ? `Last saved ${formatTime(current.updated_at)}`
            : 'Not saved yet: the defaults'}
        </span>
      </div>
      <div className="signals-layout">
        <SignalsActivity projectId={projectId} runId={runId} runKind={runKind} editable={editable} />
        <aside aria-label="Configuration">
          <h2>Configuration</h2>
          {config.error && <ErrorNote error={config.error} retry={config.reload} />}
          {!current && !config.error && <Loading what="the Signals configuration" />}
          {current && !access.loading && (
            <SignalsForm initial={current} onSaved={setCurrent} readOnly={!editable} />
          )}
        </aside>
      </div>
    </>
  );
}
