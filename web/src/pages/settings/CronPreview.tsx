import cronstrue from 'cronstrue';
import { cronProblem, isTimeZone, nextRuns } from '../../../../src/domain/signals.ts';

const RUNS = 5;

/** The plain-language meaning of a cron expression. */
export function describeCron(cron: string): string {
  return cronstrue.toString(cron.trim(), { use24HourTimeFormat: true, verbose: true });
}

function formatIn(zone: string, d: Date): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone: zone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(d);
}

/**
 * What a schedule means before it is saved: its description and next runs in the chosen time zone.
 * The expression is judged and stepped by the server's own rules (src/domain/signals.ts, cron-parser),
 * so the preview agrees with what the API will accept; the API's answer on saving is still the word.
 */
export function CronPreview({ cron, timezone }: { cron: string; timezone: string }) {
  if (!isTimeZone(timezone))
    return (
      <div className="cron-preview" aria-live="polite">
        <p className="muted">
          Choose a time zone from the list (such as UTC or Europe/Paris) to see the next runs.
        </p>
      </div>
    );
  const problem = cronProblem(cron, timezone);
  if (problem)
    return (
      <div className="cron-preview" aria-live="polite">
        <p className="muted">Not a schedule yet: {problem}</p>
      </div>
    );
  const runs = nextRuns(cron, timezone, RUNS);
  return (
    <div className="cron-preview" aria-live="polite" data-testid="cron-preview">
      <p>
        <strong>{describeCron(cron)}</strong> <span className="muted">({timezone} time)</span>
      </p>
      <p className="muted small">Next runs:</p>
      <ol className="next-runs">
        {runs.map((d) => (
          <li key={d.toISOString()}>
            <time dateTime={d.toISOString()}>{formatIn(timezone, d)}</time>
          </li>
        ))}
      </ol>
    </div>
  );
}
