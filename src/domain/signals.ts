import { CronExpressionParser } from 'cron-parser';

/** Signals configuration: allowed values, defaults and the checks a schema cannot express. */

export const RUN_MODES = ['ON_DEMAND', 'SCHEDULED'] as const;
export const SCHEDULE_TYPES = ['CRON'] as const;
export const SEVERITIES = ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'] as const;
export const PREFERENCE_MAX = 2000;

export interface SignalsSettings {
  run_mode: string;
  schedule: { type: string; cron: string; timezone: string };
  start_date: string | null;
  end_date: string | null;
  scheduled_runs_enabled: boolean;
  model: string | null;
  integration_id: string | null;
  user_preferences: { focus_on: string; dont_focus_on: string };
  notification_severities: string[];
}

/** What a run answers before anything is saved. */
export function defaultSettings(): SignalsSettings {
  return {
    run_mode: 'ON_DEMAND',
    schedule: { type: 'CRON', cron: '0 0 * * *', timezone: 'UTC' },
    start_date: null,
    end_date: null,
    scheduled_runs_enabled: false,
    model: null,
    integration_id: null,
    user_preferences: { focus_on: '', dont_focus_on: '' },
    notification_severities: ['LOW'],
  };
}

/** A real calendar date written YYYY-MM-DD (2024-02-30 is not one). */
export function isCalendarDate(text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  const date = new Date(Date.UTC(2000, mo - 1, d));
  date.setUTCFullYear(y);
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

const ZONE_SHAPE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/**
 * An IANA time zone name the runtime's time zone database knows (ICU, through Intl): 'UTC',
 * 'Europe/Paris', 'America/Argentina/Buenos_Aires'. Offsets such as '+02:00' are not zone names.
 */
export function isTimeZone(name: string): boolean {
  if (name.length > 64 || !ZONE_SHAPE.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a cron expression is not a usable 5-field expression (minute hour day-of-month month
 * day-of-week), or null when it is. Parsing and the search for a next run are cron-parser's; this
 * only insists on exactly five fields (no seconds field, no @macros) and on a schedule that fires.
 */
export function cronProblem(expression: string, timezone: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (expression.trim() === '' || fields.length !== 5) {
    return 'A cron expression has exactly 5 fields: minute hour day-of-month month day-of-week';
  }
  // 'H' (a Jenkins hash) would pick a random minute; not part of standard cron.
  if (fields.some((f) => /(^|[^A-Za-z])H($|[^A-Za-z])/i.test(f))) return "The 'H' hash is not supported";
  try {
    const parsed = CronExpressionParser.parse(fields.join(' '), {
      tz: isTimeZone(timezone) ? timezone : 'UTC',
    });
    parsed.next();
    return null;
  } catch (err) {
    return `Invalid cron expression: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * The next `count` times a usable expression (cronProblem null) fires after `from`, in `timezone`:
 * the console's preview, computed by the same parser that judges the expression on the server.
 */
export function nextRuns(expression: string, timezone: string, count: number, from = new Date()): Date[] {
  const parsed = CronExpressionParser.parse(expression.trim().split(/\s+/).join(' '), {
    tz: timezone,
    currentDate: from,
  });
  return Array.from({ length: count }, () => parsed.next().toDate());
}
