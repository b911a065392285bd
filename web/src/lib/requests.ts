/**
 * The requests pages share, named once so that a route's loader can start one (lib/prefetch.ts)
 * and the page's useApi takes its answer under the same key.
 */
import { get, post } from './api.ts';
import type { Dashboard, DashboardData, Project, ProjectRole, Run, RunKind } from './api-types.ts';
import { trendsPath } from './dashboards-api.ts';
import type { Request } from './prefetch.ts';

export const projectRequest = (projectId: string): Request<Project> => ({
  key: `project/${projectId}`,
  load: () => get<Project>(`/v2/projects/${projectId}`),
});

/** The caller's role on a project (lib/access.tsx). */
export const projectRoleRequest = (projectId: string): Request<ProjectRole> => ({
  key: `role/${projectId}`,
  load: () => get<ProjectRole>(`/v2/projects/${projectId}/current_user_role`),
});

export const runRequest = (kind: RunKind, projectId: string, runId: string): Request<Run> => ({
  key: `${kind}/${projectId}/${runId}`,
  load: () => get<Run>(`/v2/projects/${projectId}/${kind}/${runId}`),
});

export const dashboardRequest = (projectId: string, logStreamId: string, id: string): Request<Dashboard> => ({
  key: `dashboard/${id}`,
  load: () => get<Dashboard>(`${trendsPath(projectId, logStreamId)}/${id}`),
});

/** The dashboard's computed data; `version` counts the changes that alter what it computes. */
export const dashboardQueryRequest = (
  projectId: string,
  logStreamId: string,
  id: string,
  version = 0,
): Request<DashboardData> => ({
  key: `dashboard-query/${id}/${version}`,
  load: () => post<DashboardData>(`${trendsPath(projectId, logStreamId)}/${id}/query`, {}),
});
