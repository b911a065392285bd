import type { Config } from '../config.ts';
import { type Clock, systemClock } from '../domain/clock.ts';
import { AlertsRepo } from '../store/alerts.ts';
import { SignalRunsRepo } from '../store/signal-runs.ts';
import { WebhooksRepo } from '../store/webhooks.ts';
import { AnnotationQueuesRepo } from '../store/annotation-queues.ts';
import { AnnotationsRepo } from '../store/annotations.ts';
import { ConsoleSessionsRepo } from '../store/console-sessions.ts';
import { DashboardsRepo } from '../store/dashboards.ts';
import { DatasetsRepo } from '../store/datasets.ts';
import type { Store } from '../store/db.ts';
import { ingestStore } from '../store/ingest.ts';
import { leasesOf } from '../store/leases.ts';
import { RollupsRepo } from '../store/rollups.ts';
import { ROLLUP_FOLD_JOB, RollupFoldService } from './rollup-fold.ts';
import { RecordDeletes } from '../store/record-deletes.ts';
import { RecordSelection } from '../store/record-selection.ts';
import { RetentionRepo } from '../store/retention.ts';
import { PgTableStats } from '../store/table-stats.ts';
import { TEXT_INDEX_JOB } from '../store/search-text-pg.ts';
import { IntegrationsRepo } from '../store/integrations.ts';
import { ModelCallsRepo } from '../store/model-calls.ts';
import { ModelPricesRepo } from '../store/model-prices.ts';
import { ProjectsRepo } from '../store/projects.ts';
import { RecordsRepo } from '../store/records.ts';
import { RunsRepo } from '../store/runs.ts';
import { readStores } from '../store/read-stores.ts';
import { SignalsRepo } from '../store/signals.ts';
import { TokenUsageRepo } from '../store/token-usage.ts';
import { UsersRepo } from '../store/users.ts';
import { PromptTemplatesRepo } from '../store/prompt-templates.ts';
import { JobsRepo } from '../store/jobs.ts';
import { ScorersRepo } from '../store/scorers.ts';
import { JobQueue } from './job-queue.ts';
import { ExperimentsRepo } from '../store/experiments.ts';
import { ExperimentsService } from './experiments.ts';
import { ScorersService } from './scorers.ts';
import { ScoringService } from './scoring.ts';
import { ScoreBackfillService } from './score-backfill.ts';
import { JudgesService } from './judges.ts';
import { ScoreWorker } from './score-worker.ts';
import { ScorerPreviewService } from './scorer-preview.ts';
import { AnnotationQueuesService } from './annotation-queues.ts';
import { AnnotationsService } from './annotations.ts';
import { AuthService } from './auth.ts';
import { ConsoleSessionsService } from './console-sessions.ts';
import { DashboardAccess } from './dashboard-access.ts';
import { DashboardColumns } from './dashboard-columns.ts';
import { DashboardsService } from './dashboards.ts';
import { DatasetsService } from './datasets.ts';
import { IngestService } from './ingest.ts';
import { InsightsService } from './insights.ts';
import { IntegrationsService } from './integrations.ts';
import { Keyring } from './keyring.ts';
import { LlmIntegrationsService } from './llm-integrations.ts';
import { ModelCallsService } from './model-calls.ts';
import { ModelSpendService } from './model-spend.ts';
import { PlaygroundService } from './playground.ts';
import { ModelPricesService } from './model-prices.ts';
import { Metrics } from './metrics.ts';
import { RecordLifecycleService } from './record-lifecycle.ts';
import { OtelService } from './otel.ts';
import { ProjectsService } from './projects.ts';
import { RecordsService } from './records.ts';
import { ReadinessService } from './readiness.ts';
import { RETENTION_JOB, RetentionService } from './retention.ts';
import { TABLE_STATS_JOB, TableStatsService } from './table-stats.ts';
import { RunsService } from './runs.ts';
import { SearchService } from './search.ts';
import { SignalsService } from './signals.ts';
import { UsersService } from './users.ts';
import { WidgetDataService } from './widget-data.ts';
import { PromptTemplatesService } from './prompt-templates.ts';
import { ALERTS_JOB, AlertsService } from './alerts.ts';
import { DELIVERY_JOB, NotificationsService } from './notifications.ts';
import { SIGNALS_JOB, SignalRunsService } from './signal-runs.ts';

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
  prices: ModelPricesService;
  otel: OtelService;
  records: RecordsService;
  search: SearchService;
  dashboards: DashboardsService;
  widgetData: WidgetDataService;
  insights: InsightsService;
  integrations: IntegrationsService;
  signals: SignalsService;
  annotations: AnnotationsService;
  annotationQueues: AnnotationQueuesService;
  metrics: Metrics;
  lifecycle: RecordLifecycleService;
  retention: RetentionService;
  /** PostgreSQL: planner statistics kept current (null on SQLite). */
  tableStats: TableStatsService | null;
  /** The dashboard rollups' deltas folded in the background. */
  rollupFold: RollupFoldService;
  rollups: RollupsRepo;
  readiness: ReadinessService;
  modelCalls: ModelCallsService;
  promptTemplates: PromptTemplatesService;
  datasets: DatasetsService;
  clock: Clock;
  notifications: NotificationsService;
  signalRuns: SignalRunsService;
  alerts: AlertsService;
  llmIntegrations: LlmIntegrationsService;
  modelSpend: ModelSpendService;
  playground: PlaygroundService;
  /** THE job queue of this process (every kind of background work registers its handler here). */
  jobs: JobQueue;
  scorers: ScorersService;
  scoring: ScoringService;
  judges: JudgesService;
  scoreWorker: ScoreWorker;
  scorerPreview: ScorerPreviewService;
  backfill: ScoreBackfillService;
  experiments: ExperimentsService;
}

export function createServices(
  store: Store,
  config: Config,
  keyring = Keyring.load(config),
  clock: Clock = systemClock,
): Services {
  const usersRepo = new UsersRepo(store.db);
  const auth = new AuthService(usersRepo, config, keyring);
  const users = new UsersService(usersRepo, auth, config);
  const consoleSessions = new ConsoleSessionsService(
    new ConsoleSessionsRepo(store.db),
    auth,
    config,
    keyring,
  );
  const projects = new ProjectsService(new ProjectsRepo(store.db, store.dialect), usersRepo);
  const runs = new RunsService(new RunsRepo(store.db, store.dialect), usersRepo, projects);
  const read = readStores(store);
  const recordsRepo = new RecordsRepo(store.db);
  const annotationsRepo = new AnnotationsRepo(store.db, store.dialect);
  const annotations = new AnnotationsService(annotationsRepo, recordsRepo, projects);
  const search = new SearchService(
    read.search,
    read.catalogue,
    projects,
    runs,
    read.textIndexer,
    annotations,
  );
  const rollups = new RollupsRepo(store);
  const backlogs = { text: () => read.textIndexer.pending(), rollupDays: () => rollups.unbuiltDays() };
  const metrics = new Metrics(store, backlogs, leasesOf(store.db), [
    RETENTION_JOB,
    SIGNALS_JOB,
    ROLLUP_FOLD_JOB,
    ALERTS_JOB,
    DELIVERY_JOB,
    ...(store.dialect === 'postgres' ? [TEXT_INDEX_JOB, TABLE_STATS_JOB] : []),
  ]);
  const prices = new ModelPricesService(new ModelPricesRepo(store.db), projects, runs);
  const jobs = new JobQueue(new JobsRepo(store.db, store.dialect), {
    concurrency: config.jobConcurrency,
    leaseMs: config.jobLeaseMs,
    pollMs: config.jobPollMs,
    retryBaseMs: config.jobRetryBaseMs,
  });
  const integrations = new IntegrationsService(
    new IntegrationsRepo(store.db, store.dialect),
    usersRepo,
    keyring,
  );
  const scorersRepo = new ScorersRepo(store.db, store.dialect);
  const scorers = new ScorersService(scorersRepo);
  const scoring = new ScoringService(scorersRepo, scorers, runs, projects, jobs, integrations, rollups);
  jobs.pausedRuns = () => scoring.pausedRuns();
  const ingest = new IngestService(
    projects,
    runs,
    new RunsRepo(store.db, store.dialect),
    metrics.countIngest(ingestStore(store, { rollups: config.rollups })),
    prices,
    scoring,
  );
  const deletes = new RecordDeletes(store);
  const selection = new RecordSelection(store, read.search);
  const lifecycle = new RecordLifecycleService(search, projects, selection, deletes, metrics);
  const retention = new RetentionService(
    new RetentionRepo(store.db),
    deletes,
    leasesOf(store.db),
    metrics,
    config.retentionIntervalMs,
  );
  const tableStats =
    store.dialect === 'postgres'
      ? new TableStatsService(new PgTableStats(store.db), leasesOf(store.db))
      : null;
  const records = new RecordsService(projects, recordsRepo, scoring);
  const backfill = new ScoreBackfillService(search, selection, ingest, scoring, projects, prices);
  const annotationQueues = new AnnotationQueuesService(
    new AnnotationQueuesRepo(store.db, store.dialect),
    annotationsRepo,
    usersRepo,
    projects,
    search,
  );
  const otel = new OtelService(projects, runs, ingest);
  const dashboardsRepo = new DashboardsRepo(store.db, store.dialect);
  const dashboardAccess = new DashboardAccess(
    dashboardsRepo,
    new RunsRepo(store.db, store.dialect),
    projects,
  );
  const dashboardColumns = new DashboardColumns(read.catalogue, annotations);
  const dashboards = new DashboardsService(dashboardsRepo, dashboardAccess, dashboardColumns);
  const widgetData = new WidgetDataService(
    dashboardsRepo,
    dashboardAccess,
    read.widgetCells,
    dashboardColumns,
    rollups,
  );
  const rollupFold = new RollupFoldService(rollups, leasesOf(store.db));
  const insights = new InsightsService(new TokenUsageRepo(store.db), runs);
  const modelCallsRepo = new ModelCallsRepo(store.db);
  const modelCalls = new ModelCallsService(modelCallsRepo, integrations, prices, config);
  const signalsRepo = new SignalsRepo(store.db);
  const signals = new SignalsService(signalsRepo, runs, projects, integrations);
  const notifications = new NotificationsService(
    new WebhooksRepo(store.db),
    projects,
    keyring,
    clock,
    leasesOf(store.db),
    {
      allowPrivate: config.allowPrivateProviders,
      maxAttempts: config.webhookMaxAttempts,
      retryBaseMs: config.webhookRetryBaseMs,
      timeoutMs: config.webhookTimeoutMs,
      tickMs: 5000,
    },
  );
  const signalRuns = new SignalRunsService(
    new SignalRunsRepo(store.db, store.dialect),
    signalsRepo,
    runs,
    projects,
    notifications,
    clock,
    leasesOf(store.db),
    modelCalls,
  );
  const alerts = new AlertsService(
    new AlertsRepo(store.db),
    dashboardAccess,
    dashboardColumns,
    read.widgetCells,
    notifications,
    clock,
    leasesOf(store.db),
  );
  const datasets = new DatasetsService(new DatasetsRepo(store.db, store.dialect), projects, usersRepo);
  const promptTemplates = new PromptTemplatesService(
    new PromptTemplatesRepo(store.db, store.dialect),
    projects,
    usersRepo,
    datasets,
  );
  const llmIntegrations = new LlmIntegrationsService(integrations, modelCalls);
  const experiments = new ExperimentsService(
    new ExperimentsRepo(store.db),
    runs,
    projects,
    usersRepo,
    datasets,
    promptTemplates,
    integrations,
    llmIntegrations,
    modelCalls,
    ingest,
    scoring,
    jobs,
  );
  const judges = new JudgesService(modelCalls, integrations);
  const scoreWorker = new ScoreWorker(scorersRepo, scoring, judges, ingest, jobs, {
    quietMs: config.scorerQuietMs,
    resumeCheckMs: Math.max(50, config.jobPollMs * 5),
  });
  const scorerPreview = new ScorerPreviewService(scorersRepo, scorers, judges, projects, integrations);
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
    prices,
    otel,
    records,
    search,
    dashboards,
    widgetData,
    insights,
    integrations,
    signals,
    annotations,
    annotationQueues,
    metrics,
    lifecycle,
    retention,
    tableStats,
    rollupFold,
    rollups,
    readiness: new ReadinessService(store),
    promptTemplates,
    experiments,
    datasets,
    clock,
    notifications,
    signalRuns,
    alerts,
    modelCalls,
    llmIntegrations,
    modelSpend: new ModelSpendService(modelCallsRepo, projects),
    playground: new PlaygroundService(projects, integrations, modelCalls),
    jobs,
    scorers,
    scoring,
    backfill,
    judges,
    scoreWorker,
    scorerPreview,
  };
}
