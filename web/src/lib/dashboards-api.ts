/** The trends API calls both dashboard pages make. */
import { put } from './api.ts';
import type { Dashboard } from './api-types.ts';

export const trendsPath = (projectId: string, logStreamId: string) =>
  `/v2/projects/${projectId}/log_streams/${logStreamId}/trends`;

/** Changes one dashboard: PUT .../trends?trends_dashboard_id= (the API's update). */
export const saveDashboard = (trends: string, id: string, body: Partial<Dashboard>) =>
  put<Dashboard>(`${trends}?trends_dashboard_id=${encodeURIComponent(id)}`, body);
