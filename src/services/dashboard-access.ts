/** The access every dashboard route checks: the caller may see the log stream's project, and the dashboard is on it. */
import { notFound } from '../domain/errors.ts';
import type { Role } from '../domain/roles.ts';
import type { DashboardRow, DashboardsRepo } from '../store/dashboards.ts';
import type { RunRow, RunsRepo } from '../store/runs.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

export class DashboardAccess {
  constructor(
    private readonly repo: DashboardsRepo,
    private readonly runs: RunsRepo,
    private readonly projects: ProjectsService,
  ) {}

  /** The log stream, if the caller may see its project with `role` (404 / 403 as for projects). */
  async logStream(caller: Caller, projectId: string, logStreamId: string, role: Role): Promise<RunRow> {
    await this.projects.access(caller, projectId, role);
    const run = await this.runs.byId(projectId, logStreamId, 'log_stream');
    if (!run) throw notFound('Log stream');
    return run;
  }

  async dashboard(logStreamId: string, id: string): Promise<DashboardRow> {
    const d = await this.repo.byId(logStreamId, id);
    if (!d) throw notFound('Trends dashboard');
    return d;
  }
}
