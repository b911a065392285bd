import type { Config } from '../config.ts';
import { ConsoleSessionsRepo } from '../store/console-sessions.ts';
import { DashboardsRepo } from '../store/dashboards.ts';
import type { Store } from '../store/db.ts';
import { ingestStore } from '../store/ingest.ts';
import { IntegrationsRepo } from '../store/integrations.ts';
import { ProjectsRepo } from '../store/projects.ts';
import { RecordsRepo } from '../store/records.ts';
import { RunsRepo } from '../store/runs.ts';
import { readStores } from '../store/read-stores.ts';
import { SignalsRepo } from '../store/signals.ts';
import { TokenUsageRepo } from '../store/token-usage.ts';
import { UsersRepo } from '../store/users.ts';
import { AuthService } from './auth.ts';
import { ConsoleSessionsService } from './console-sessions.ts';
import { DashboardAccess } from './dashboard-access.ts';
import { DashboardColumns } from './dashboard-columns.ts';
import { DashboardsService } from './dashboards.ts';
import { IngestService } from './ingest.ts';
import { InsightsService } from './insights.ts';
import { IntegrationsService } from './integrations.ts';
import { Keyring } from './keyring.ts';
import { OtelService } from './otel.ts';
import { ProjectsService } from './projects.ts';
import { RecordsService } from './records.ts';
import { RunsService } from './runs.ts';
import { SearchService } from './search.ts';
import { SignalsService } from './signals.ts';
import { UsersService } from './users.ts';
import { WidgetDataService } from './widget-data.ts';

/** Every service, wired to one store. Routes reach the database only through these. */
export interface Services {
  config: Config;
  store: Store;
  keyring: Keyring;
  auth: AuthService;
  consoleSessions: ConsoleSessionsService;
  users: UsersService;
  projects: ProjectsService;
  runs: RunsService;
  ingest: IngestService;
  otel: OtelService;
  records: RecordsService;
  search: SearchService;
  dashboards: DashboardsService;
  widgetData: WidgetDataService;
  insights: InsightsService;
  integrations: IntegrationsService;
  signals: SignalsService;
}

export function createServices(store: Store, config: Config, keyring = Keyring.load(config)): Services {
  const usersRepo = new UsersRepo(store.db);
  const auth = new AuthService(usersRepo, config, keyring);
  const users = new UsersService(usersRepo, auth, config);
  const consoleSessions = new ConsoleSessionsService(
    new ConsoleSessionsRepo(store.db),
    auth,
    config,
    keyring,
  );
  const projects = new ProjectsService(new ProjectsRepo(store.db), usersRepo);
  const runs = new RunsService(new RunsRepo(store.db, store.dialect), usersRepo, projects);
  const read = readStores(store);
  const search = new SearchService(read.search, read.catalogue, projects, runs, read.textIndexer);
  const ingest = new IngestService(projects, new RunsRepo(store.db, store.dialect), ingestStore(store));
  const records = new RecordsService(projects, new RecordsRepo(store.db));
  const otel = new OtelService(projects, runs, ingest);
  const dashboardsRepo = new DashboardsRepo(store.db, store.dialect);
  const dashboardAccess = new DashboardAccess(
    dashboardsRepo,
    new RunsRepo(store.db, store.dialect),
    projects,
  );
  const dashboards = new DashboardsService(
    dashboardsRepo,
    dashboardAccess,
    new DashboardColumns(read.catalogue),
  );
  const widgetData = new WidgetDataService(dashboardsRepo, dashboardAccess, read.widgetCells);
  const insights = new InsightsService(new TokenUsageRepo(store.db), runs);
  const integrations = new IntegrationsService(
    new IntegrationsRepo(store.db, store.dialect),
    usersRepo,
    keyring,
  );
  const signals = new SignalsService(new SignalsRepo(store.db), runs, projects, integrations);
  return {
    config,
    store,
    keyring,
    auth,
    consoleSessions,
    users,
    projects,
    runs,
    ingest,
    otel,
    records,
    search,
    dashboards,
    widgetData,
    insights,
    integrations,
    signals,
  };
}
