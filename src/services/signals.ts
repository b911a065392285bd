import { type ErrorItem, ValidationError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import {
  type SignalsSettings,
  cronProblem,
  defaultSettings,
  isCalendarDate,
  isTimeZone,
} from '../domain/signals.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type { SignalsUpdate } from '../schemas/signals.ts';
import { parseJson } from '../store/db.ts';
import type { SignalsRepo, SignalsRow } from '../store/signals.ts';
import type { Caller } from './auth.ts';
import { textProblem } from '../domain/text.ts';
import type { IntegrationsService } from './integrations.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';

function settingsOf(row: SignalsRow): SignalsSettings {
  return {
    run_mode: row.run_mode,
    schedule: { type: row.schedule_type, cron: row.schedule_cron, timezone: row.schedule_timezone },
    start_date: row.start_date,
    end_date: row.end_date,
    scheduled_runs_enabled: Boolean(row.scheduled_runs_enabled),
    model: row.model,
    integration_id: row.integration_id,
    user_preferences: { focus_on: row.focus_on, dont_focus_on: row.dont_focus_on },
    notification_severities: parseJson<string[]>(row.notification_severities) ?? [],
  };
}

function describe(
  projectId: string,
  runId: string,
  s: SignalsSettings,
  meta: { id: string; created_at: number; updated_at: number } | null,
) {
  return {
    id: meta?.id ?? null,
    project_id: projectId,
    run_id: runId,
    ...s,
    schedule: { cron: s.schedule.cron, type: s.schedule.type, timezone: s.schedule.timezone },
    created_at: meta ? toIso(meta.created_at) : null,
    updated_at: meta ? toIso(meta.updated_at) : null,
  };
}

/** The fields a PUT gives replace the saved ones (or the defaults); the others are kept. */
function merge(current: SignalsSettings, u: SignalsUpdate): SignalsSettings {
  const pick = <T>(given: T | undefined, kept: T): T => (given === undefined ? kept : given);
  return {
    run_mode: pick(u.run_mode, current.run_mode),
    schedule: {
      type: pick(u.schedule?.type, current.schedule.type),
      cron: pick(u.schedule?.cron, current.schedule.cron),
      timezone: pick(u.schedule?.timezone, current.schedule.timezone),
    },
    start_date: pick(u.start_date, current.start_date),
    end_date: pick(u.end_date, current.end_date),
    scheduled_runs_enabled: pick(u.scheduled_runs_enabled, current.scheduled_runs_enabled),
    model: pick(u.model, current.model),
    integration_id: pick(u.integration_id, current.integration_id),
    user_preferences: {
      focus_on: pick(u.user_preferences?.focus_on, current.user_preferences.focus_on),
      dont_focus_on: pick(u.user_preferences?.dont_focus_on, current.user_preferences.dont_focus_on),
    },
    notification_severities: u.notification_severities
      ? [...new Set(u.notification_severities)]
      : current.notification_severities,
  };
}

/** Signals configuration of a log stream or experiment: read by its viewers, saved by editors. */
export class SignalsService {
  constructor(
    private readonly repo: SignalsRepo,
    private readonly runs: RunsService,
    private readonly projects: ProjectsService,
    private readonly integrations: IntegrationsService,
  ) {}

  async get(caller: Caller, projectId: string, runId: string) {
    const run = await this.runs.resolve(caller, projectId, runId);
    const row = await this.repo.byRun(run.id);
    return {
      data: row
        ? describe(run.project_id, run.id, settingsOf(row), row)
        : describe(run.project_id, run.id, defaultSettings(), null),
    };
  }

  async put(caller: Caller, projectId: string, runId: string, update: SignalsUpdate) {
    const run = await this.runs.resolve(caller, projectId, runId);
    await this.projects.access(caller, projectId, 'editor');
    const existing = await this.repo.byRun(run.id);
    const s = merge(existing ? settingsOf(existing) : defaultSettings(), update);
    await this.check(caller, update, s);
    const now = nowUs();
    const saved = await this.repo.upsert({
      id: existing?.id ?? newId(),
      project_id: run.project_id,
      run_id: run.id,
      run_mode: s.run_mode,
      schedule_type: s.schedule.type,
      schedule_cron: s.schedule.cron.trim().split(/\s+/).join(' '),
      schedule_timezone: s.schedule.timezone,
      start_date: s.start_date,
      end_date: s.end_date,
      scheduled_runs_enabled: s.scheduled_runs_enabled ? 1 : 0,
      model: s.model,
      integration_id: s.integration_id,
      focus_on: s.user_preferences.focus_on,
      dont_focus_on: s.user_preferences.dont_focus_on,
      notification_severities: JSON.stringify(s.notification_severities),
      created_by: existing?.created_by ?? caller.id,
      created_at: existing?.created_at ?? now,
      updated_at: now,
    });
    return { data: describe(run.project_id, run.id, settingsOf(saved), saved) };
  }

  /** The rules a schema cannot express, on the fields the request gives; every fault at once. */
  private async check(caller: Caller, u: SignalsUpdate, s: SignalsSettings): Promise<void> {
    const items: ErrorItem[] = [];
    const bad = (loc: ErrorItem['loc'], msg: string, input: unknown, type = 'value_error') =>
      items.push({ loc: ['body', ...loc], msg, type, input });
    const texts: [ErrorItem['loc'], unknown][] = [
      [['model'], u.model],
      [['schedule', 'cron'], u.schedule?.cron],
      [['schedule', 'timezone'], u.schedule?.timezone],
      [['user_preferences', 'focus_on'], u.user_preferences?.focus_on],
      [['user_preferences', 'dont_focus_on'], u.user_preferences?.dont_focus_on],
    ];
    for (const [loc, value] of texts) {
      const problem = typeof value === 'string' ? textProblem(value) : null;
      if (problem) bad(loc, problem, value);
    }
    const zoneOk = isTimeZone(s.schedule.timezone);
    if (u.schedule?.timezone !== undefined && !zoneOk)
      bad(['schedule', 'timezone'], 'Input should be a valid IANA time zone name', u.schedule.timezone);
    if (u.schedule?.cron !== undefined) {
      const problem = cronProblem(u.schedule.cron, zoneOk ? s.schedule.timezone : 'UTC');
      if (problem) bad(['schedule', 'cron'], problem, u.schedule.cron);
    }
    for (const field of ['start_date', 'end_date'] as const) {
      const v = u[field];
      if (typeof v === 'string' && !isCalendarDate(v))
        bad([field], 'Input should be a valid date in the format YYYY-MM-DD', v, 'date_parsing');
    }
    if (
      s.start_date &&
      s.end_date &&
      isCalendarDate(s.start_date) &&
      isCalendarDate(s.end_date) &&
      s.start_date > s.end_date
    ) {
      const field = u.end_date !== undefined ? 'end_date' : 'start_date';
      bad([field], 'start_date must be on or before end_date', u[field]);
    }
    if (u.integration_id && !(await this.integrations.canSee(caller, u.integration_id))) {
      bad(['integration_id'], 'No integration with this id is visible to you', u.integration_id);
    }
    if (items.length) throw new ValidationError(items);
  }
}
