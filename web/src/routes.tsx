import { Navigate, createBrowserRouter, useParams } from 'react-router';
import { Layout } from './components/Layout.tsx';
import { LoginPage } from './pages/LoginPage.tsx';
import { NotFoundPage } from './pages/NotFoundPage.tsx';
import { ProjectPage } from './pages/ProjectPage.tsx';
import { ProjectsPage } from './pages/ProjectsPage.tsx';
import { RecordsPage } from './pages/RecordsPage.tsx';
import { SessionPage } from './pages/SessionPage.tsx';
import { TracePage } from './pages/TracePage.tsx';

function RunHome() {
  const { projectId, runId } = useParams();
  return <Navigate to="traces" replace relative="path" key={`${projectId}/${runId}`} />;
}

/**
 * A log stream's dashboards and token usage (the API has them for log streams only). Loaded on
 * demand: the charting and grid code stays out of the record pages' first load.
 */
const logStreamPages = [
  {
    path: 'dashboards',
    lazy: () => import('./pages/DashboardsPage.tsx').then((m) => ({ Component: m.DashboardsPage })),
  },
  {
    path: 'dashboards/:dashboardId',
    lazy: () => import('./pages/DashboardPage.tsx').then((m) => ({ Component: m.DashboardPage })),
  },
  {
    path: 'token_usage',
    lazy: () => import('./pages/TokenUsagePage.tsx').then((m) => ({ Component: m.TokenUsagePage })),
  },
];

/** One run's pages, the same under log_streams/ and experiments/. */
const runRoutes = (kind: 'log_streams' | 'experiments') => ({
  path: `projects/:projectId/${kind}/:runId`,
  handle: { runKind: kind },
  children: [
    { index: true, element: <RunHome /> },
    { path: 'traces', element: <RecordsPage tab="traces" runKind={kind} /> },
    { path: 'spans', element: <RecordsPage tab="spans" runKind={kind} /> },
    { path: 'sessions', element: <RecordsPage tab="sessions" runKind={kind} /> },
    { path: 'traces/:traceId', element: <TracePage runKind={kind} /> },
    { path: 'spans/:spanId', element: <TracePage runKind={kind} /> },
    { path: 'sessions/:sessionId', element: <SessionPage runKind={kind} /> },
    ...(kind === 'log_streams' ? logStreamPages : []),
  ],
});

export const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  {
    path: '/',
    element: <Layout />,
    children: [
      { index: true, element: <ProjectsPage /> },
      { path: 'projects', element: <ProjectsPage /> },
      { path: 'projects/:projectId', element: <ProjectPage /> },
      runRoutes('log_streams'),
      runRoutes('experiments'),
      { path: '*', element: <NotFoundPage /> },
    ],
  },
]);
