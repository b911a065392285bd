import {
  type LoaderFunctionArgs,
  Navigate,
  type RouteObject,
  createBrowserRouter,
  useParams,
} from 'react-router';
import { Loading } from './components/ErrorNote.tsx';
import { Layout } from './components/Layout.tsx';
import type { RunKind } from './lib/api-types.ts';
import { prefetch } from './lib/prefetch.ts';
import {
  dashboardQueryRequest,
  dashboardRequest,
  projectRequest,
  projectRoleRequest,
  runRequest,
} from './lib/requests.ts';
import { LoginPage } from './pages/LoginPage.tsx';
import { NotFoundPage } from './pages/NotFoundPage.tsx';
import { ProjectPage } from './pages/ProjectPage.tsx';
import { ProjectsPage } from './pages/ProjectsPage.tsx';
import { RecordsPage } from './pages/RecordsPage.tsx';

function RunHome() {
  const { projectId, runId } = useParams();
  return <Navigate to="traces" replace relative="path" key={`${projectId}/${runId}`} />;
}

const tracePage = (kind: RunKind) => async () => {
  const { TracePage } = await import('./pages/TracePage.tsx');
  return { element: <TracePage runKind={kind} /> };
};
const sessionPage = (kind: RunKind) => async () => {
  const { SessionPage } = await import('./pages/SessionPage.tsx');
  return { element: <SessionPage runKind={kind} /> };
};
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
    // The dashboard, its computed data and the breadcrumb's names are asked while the page's code
    // (and the charting code) downloads, not after: a loader defined beside `lazy` runs with it.
    // It waits for none of them (the page shows each as it comes) and does not run again for a
    // navigation within the page.
    loader: ({ params: { projectId = '', runId = '', dashboardId = '' } }: LoaderFunctionArgs) => {
      prefetch(
        dashboardRequest(projectId, runId, dashboardId),
        dashboardQueryRequest(projectId, runId, dashboardId),
        projectRequest(projectId),
        runRequest('log_streams', projectId, runId),
        projectRoleRequest(projectId),
      );
      return null;
    },
    shouldRevalidate: () => false,
    lazy: () => import('./pages/DashboardPage.tsx').then((m) => ({ Component: m.DashboardPage })),
  },
  {
    path: 'alerts',
    lazy: () => import('./pages/AlertsPage.tsx').then((m) => ({ Component: m.AlertsPage })),
  },
  {
    path: 'token_usage',
    lazy: () => import('./pages/TokenUsagePage.tsx').then((m) => ({ Component: m.TokenUsagePage })),
  },
];

/** One run's pages, the same under log_streams/ and experiments/. */
const runRoutes = (kind: RunKind) => ({
  path: `projects/:projectId/${kind}/:runId`,
  handle: { runKind: kind },
  children: [
    { index: true, element: <RunHome /> },
    { path: 'traces', element: <RecordsPage tab="traces" runKind={kind} /> },
    { path: 'spans', element: <RecordsPage tab="spans" runKind={kind} /> },
    { path: 'sessions', element: <RecordsPage tab="sessions" runKind={kind} /> },
    // The record views load on first use: the tables are what a console opens on, and what it
    // parses before its first page counts against that page.
    { path: 'traces/:traceId', lazy: tracePage(kind) },
    { path: 'spans/:spanId', lazy: tracePage(kind) },
    { path: 'sessions/:sessionId', lazy: sessionPage(kind) },
    {
      path: 'signals',
      lazy: async () => {
        const { SignalsPage } = await import('./pages/settings/SignalsPage.tsx');
        return { element: <SignalsPage runKind={kind} /> };
      },
    },
    {
      path: 'scoring',
      lazy: async () => {
        const { ScoringPage } = await import('./pages/ScoringPage.tsx');
        return { element: <ScoringPage runKind={kind} /> };
      },
    },
    ...(kind === 'log_streams' ? logStreamPages : []),
  ],
});

/** The settings pages, loaded when first opened: the traces page's first load does not carry them. */
const settingsRoutes: RouteObject[] = [
  { path: 'settings', element: <Navigate to="/settings/api-keys" replace /> },
  {
    path: 'settings/api-keys',
    lazy: async () => ({ Component: (await import('./pages/settings/ApiKeysPage.tsx')).ApiKeysPage }),
  },
  {
    path: 'settings/users',
    lazy: async () => ({ Component: (await import('./pages/settings/UsersPage.tsx')).UsersPage }),
  },
  {
    path: 'settings/integrations',
    lazy: async () => ({
      Component: (await import('./pages/settings/IntegrationsPage.tsx')).IntegrationsPage,
    }),
  },
  {
    path: 'projects/:projectId/collaborators',
    lazy: async () => ({
      Component: (await import('./pages/settings/CollaboratorsPage.tsx')).CollaboratorsPage,
    }),
  },
];

/** What shows while a page loaded on demand arrives on a direct load (before the first render). */
function PageLoading() {
  return (
    <main className="page">
      <Loading what="the page" />
    </main>
  );
}

export const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  {
    path: '/',
    element: <Layout />,
    HydrateFallback: PageLoading,
    children: [
      { index: true, element: <ProjectsPage /> },
      { path: 'projects', element: <ProjectsPage /> },
      { path: 'projects/:projectId', element: <ProjectPage /> },
      // Annotation queues load on first visit: the traces page does not carry their code.
      {
        path: 'projects/:projectId/annotation_queues',
        lazy: async () => ({ Component: (await import('./pages/QueuesPage.tsx')).QueuesPage }),
      },
      {
        path: 'projects/:projectId/annotation_queues/:queueId',
        lazy: async () => ({ Component: (await import('./pages/QueuePage.tsx')).QueuePage }),
      },
      {
        path: 'projects/:projectId/templates',
        lazy: async () => ({
          Component: (await import('./pages/PromptTemplatesPage.tsx')).PromptTemplatesPage,
        }),
      },
      {
        path: 'projects/:projectId/templates/:templateId',
        lazy: async () => ({
          Component: (await import('./pages/PromptTemplatePage.tsx')).PromptTemplatePage,
        }),
      },
      {
        path: 'projects/:projectId/webhooks',
        lazy: async () => ({ Component: (await import('./pages/WebhooksPage.tsx')).WebhooksPage }),
      },
      {
        path: 'projects/:projectId/experiments',
        lazy: async () => ({ Component: (await import('./pages/ExperimentsPage.tsx')).ExperimentsPage }),
      },
      {
        path: 'projects/:projectId/experiments/compare',
        lazy: async () => ({
          Component: (await import('./pages/ExperimentsPage.tsx')).ExperimentComparePage,
        }),
      },
      runRoutes('log_streams'),
      runRoutes('experiments'),
      {
        path: 'projects/:projectId/playground',
        lazy: async () => ({ Component: (await import('./pages/PlaygroundPage.tsx')).PlaygroundPage }),
      },
      ...settingsRoutes,
      {
        path: 'scorers',
        lazy: async () => ({ Component: (await import('./pages/ScorersPage.tsx')).ScorersPage }),
      },
      {
        path: 'datasets',
        lazy: async () => ({ Component: (await import('./pages/DatasetsPage.tsx')).DatasetsPage }),
      },
      {
        path: 'datasets/:datasetId',
        lazy: async () => ({ Component: (await import('./pages/DatasetPage.tsx')).DatasetPage }),
      },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
]);
