/**
 * The API's shapes, as the server's TypeBox schemas define them (type-only imports: nothing of the
 * server reaches the bundle).
 */
import type { Static } from '@sinclair/typebox';
import type {
  Queue as QueueSchema,
  QueueProgress as QueueProgressSchema,
  Template as TemplateSchema,
} from '../../../src/schemas/annotations.ts';
import type {
  ModelSpend as ModelSpendSchema,
  PlaygroundResult as PlaygroundResultSchema,
} from '../../../src/schemas/model-calls.ts';
import type { ConsoleSession as ConsoleSessionSchema } from '../../../src/schemas/console.ts';
import type {
  DashboardData as DashboardDataSchema,
  Dashboard as DashboardSchema,
  Section as SectionSchema,
  Widget as WidgetSchema,
} from '../../../src/schemas/dashboards.ts';
import type { TokenUsagePage as TokenUsagePageSchema } from '../../../src/schemas/insights.ts';
import type {
  Project as ProjectSchema,
  ProjectRole as ProjectRoleSchema,
  Run as RunSchema,
} from '../../../src/schemas/projects.ts';
import type { RecordSchema } from '../../../src/schemas/records.ts';
import type { ColumnDescriptor, SearchRecordsPage } from '../../../src/schemas/search.ts';
import type {
  ApiKey as ApiKeySchema,
  CreatedApiKey as CreatedApiKeySchema,
  Group as GroupSchema,
  User as UserSchema,
} from '../../../src/schemas/users.ts';
import type {
  GroupCollaborator as GroupCollaboratorSchema,
  Integration as IntegrationSchema,
  UserCollaborator as UserCollaboratorSchema,
} from '../../../src/schemas/integrations.ts';
import type {
  SignalList as SignalListSchema,
  SignalRunEnvelope as SignalRunEnvelopeSchema,
  SignalRunList as SignalRunListSchema,
  Signal as SignalSchema,
  SignalsConfigurationEnvelope,
} from '../../../src/schemas/signals.ts';
import type {
  AlertHistory as AlertHistorySchema,
  AlertList as AlertListSchema,
  AlertPreview as AlertPreviewSchema,
  Alert as AlertSchema,
  CreatedWebhook as CreatedWebhookSchema,
  DeliveryList as DeliveryListSchema,
  WebhookList as WebhookListSchema,
  Webhook as WebhookSchema,
} from '../../../src/schemas/alerts.ts';
import type {
  Scorer as ScorerSchema,
  ScoringStatus as ScoringStatusSchema,
  SettingsResponse as ScorerSettingsSchema,
} from '../../../src/schemas/scorers.ts';

export type ApiRecord = Static<typeof RecordSchema>;
export type Project = Static<typeof ProjectSchema>;
export type ProjectRole = Static<typeof ProjectRoleSchema>;
export type Run = Static<typeof RunSchema>;
export type Column = Static<typeof ColumnDescriptor>;
export type RecordsPage = Static<typeof SearchRecordsPage>;
export type User = Static<typeof UserSchema>;
export type ConsoleSession = Static<typeof ConsoleSessionSchema>;
export type AnnotationQueue = Static<typeof QueueSchema>;
export type AnnotationTemplate = Static<typeof TemplateSchema>;
export type QueueProgress = Static<typeof QueueProgressSchema>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;
export type Group = Static<typeof GroupSchema>;
export type Integration = Static<typeof IntegrationSchema>;
/** GET /v2/integrations/example_gateway: the saved settings of the caller's gateway (no token). */
// (Written out: the server's IntegrationSettings views are built by a helper TypeBox cannot type.)
export interface GatewaySettings {
  id: string;
  name: 'example_gateway';
  endpoint: string;
  use_case: string;
}
export type UserCollaborator = Static<typeof UserCollaboratorSchema>;
export type GroupCollaborator = Static<typeof GroupCollaboratorSchema>;
export type SignalsEnvelope = Static<typeof SignalsConfigurationEnvelope>;
export type Signal = Static<typeof SignalSchema>;
export type SignalList = Static<typeof SignalListSchema>;
export type SignalRunList = Static<typeof SignalRunListSchema>;
export type SignalRunEnvelope = Static<typeof SignalRunEnvelopeSchema>;
export type Alert = Static<typeof AlertSchema>;
export type AlertList = Static<typeof AlertListSchema>;
export type AlertHistory = Static<typeof AlertHistorySchema>;
export type AlertPreview = Static<typeof AlertPreviewSchema>;
export type Webhook = Static<typeof WebhookSchema>;
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;
export type WebhookList = Static<typeof WebhookListSchema>;
export type DeliveryList = Static<typeof DeliveryListSchema>;
export type Dashboard = Static<typeof DashboardSchema>;
export type Widget = Static<typeof WidgetSchema>;
export type Section = Static<typeof SectionSchema>;
export type DashboardData = Static<typeof DashboardDataSchema>;
export type TokenUsagePage = Static<typeof TokenUsagePageSchema>;
export type ModelSpend = Static<typeof ModelSpendSchema>;
export type PlaygroundResult = Static<typeof PlaygroundResultSchema>;

/** A trace or span as GET .../traces/{id} answers it: each node carries its children in `spans`. */
export type TreeRecord = ApiRecord & { spans?: TreeRecord[] };
/** A session as GET .../sessions/{id} answers it. */
export type SessionRecord = ApiRecord & { traces: ApiRecord[] };

export type RecordTab = 'traces' | 'spans' | 'sessions';
export type RunKind = 'log_streams' | 'experiments';

export type Scorer = Static<typeof ScorerSchema>;
export type ScorerSettings = Static<typeof ScorerSettingsSchema>;
export type ScoringStatus = Static<typeof ScoringStatusSchema>;
