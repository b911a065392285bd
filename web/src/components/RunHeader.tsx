import { NavLink } from 'react-router';
import type { RecordTab, RunKind } from '../lib/api-types.ts';
import { projectRequest, runRequest } from '../lib/requests.ts';
import { useApi } from '../lib/use-api.ts';
import { type Crumb, Crumbs } from './Crumbs.tsx';
import { ErrorNote } from './ErrorNote.tsx';

export const runBase = (projectId: string, kind: RunKind, runId: string) =>
  `/projects/${projectId}/${kind}/${runId}`;

/** The project and run a page is in (names for the breadcrumb; the run's counts). */
export function useRunInfo(projectId: string, kind: RunKind, runId: string) {
  const p = projectRequest(projectId);
  const r = runRequest(kind, projectId, runId);
  const project = useApi(p.key, p.load);
  const run = useApi(r.key, r.load);
  return { project, run };
}

const TABS: { tab: RecordTab | 'dashboards' | 'token_usage' | 'alerts'; label: string; logStreams?: true }[] =
  [
    { tab: 'traces', label: 'Traces' },
    { tab: 'spans', label: 'Spans' },
    { tab: 'sessions', label: 'Sessions' },
    // Trends and token usage are a log stream's (the API has them for log streams only).
    { tab: 'dashboards', label: 'Dashboards', logStreams: true },
    { tab: 'token_usage', label: 'Token usage', logStreams: true },
    { tab: 'alerts', label: 'Alerts', logStreams: true },
  ];

/** Breadcrumb, run name and the run's record tabs. */
export function RunHeader({
  projectId,
  kind,
  runId,
  info,
  tail = [],
  tabs = true,
}: {
  projectId: string;
  kind: RunKind;
  runId: string;
  info: ReturnType<typeof useRunInfo>;
  tail?: Crumb[];
  tabs?: boolean;
}) {
  const base = runBase(projectId, kind, runId);
  const runName = info.run.data?.name ?? '…';
  const error = info.project.error ?? info.run.error;
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: info.project.data?.name ?? '…', to: `/projects/${projectId}` },
          {
            label: `${kind === 'experiments' ? 'Experiment' : 'Log stream'}: ${runName}`,
            to: `${base}/traces`,
          },
          ...tail,
        ]}
      />
      {error && <ErrorNote error={error} />}
      {tabs && (
        <nav className="tabs" aria-label="Run pages">
          {TABS.filter((t) => !t.logStreams || kind === 'log_streams').map((t) => (
            <NavLink
              key={t.tab}
              to={`${base}/${t.tab}`}
              end={t.tab !== 'dashboards'}
              className={({ isActive }) => (isActive ? 'tab active' : 'tab')}
            >
              {t.label}
            </NavLink>
          ))}
          <NavLink to={`${base}/signals`} className={({ isActive }) => (isActive ? 'tab active' : 'tab')}>
            Signals
          </NavLink>
          <NavLink to={`${base}/scoring`} className={({ isActive }) => (isActive ? 'tab active' : 'tab')}>
            Scoring
          </NavLink>
        </nav>
      )}
    </>
  );
}
