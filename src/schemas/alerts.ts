import { Type } from '@sinclair/typebox';
import { COMPARISONS, MAX_WINDOW_MINUTES } from '../domain/alerts.ts';
import { AGGREGATIONS } from '../domain/dashboards.ts';
import { WEBHOOK_FORMATS } from '../domain/webhooks.ts';
import { DateTime, Nullable, Uuid } from './common.ts';

const enumOf = (values: readonly string[]) => Type.Unsafe<any>({ type: 'string', enum: [...values] });

export const AlertsParams = Type.Object({ project_id: Uuid, log_stream_id: Uuid });
export const AlertParams = Type.Object({ project_id: Uuid, log_stream_id: Uuid, alert_id: Uuid });

const metricFields = {
  metric: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'A column as in a dashboard widget: `duration_ns`, `metrics/cost`, `metrics/<score>`, ...',
  }),
  aggregation: enumOf(AGGREGATIONS),
  filter_tree: Type.Optional(
    Nullable(Type.Unknown({ description: 'A filter expression, as a dashboard filter_tree' })),
  ),
  window_minutes: Type.Integer({ minimum: 1, maximum: MAX_WINDOW_MINUTES }),
};

export const CreateAlert = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  ...metricFields,
  comparison: enumOf(COMPARISONS),
  threshold: Type.Number(),
  enabled: Type.Optional(Type.Boolean()),
});

export const UpdateAlert = Type.Partial(CreateAlert);

export const AlertPreviewBody = Type.Object({
  ...metricFields,
  comparison: Type.Optional(enumOf(COMPARISONS)),
  threshold: Type.Optional(Type.Number()),
});

export const Alert = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    log_stream_id: Uuid,
    name: Type.String(),
    metric: Type.String(),
    aggregation: Type.String(),
    filter_tree: Type.Unknown(),
    window_minutes: Type.Integer(),
    comparison: Type.String(),
    threshold: Type.Number(),
    enabled: Type.Boolean(),
    state: Type.String({ description: '`ok` or `firing`' }),
    last_value: Nullable(Type.Number()),
    last_evaluated_at: Nullable(DateTime),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { title: 'Alert' },
);
export const AlertList = Type.Object({ alerts: Type.Array(Alert) });
export const AlertHistory = Type.Object({
  events: Type.Array(
    Type.Object({
      id: Uuid,
      kind: Type.String({ description: '`fired` or `recovered`' }),
      value: Nullable(Type.Number()),
      threshold: Type.Number(),
      at: DateTime,
    }),
  ),
});
export const AlertPreview = Type.Object({
  metric: Type.String(),
  aggregation: Type.String(),
  window_minutes: Type.Integer(),
  threshold: Nullable(Type.Number()),
  comparison: Nullable(Type.String()),
  points: Type.Array(
    Type.Object({
      start: DateTime,
      end: DateTime,
      value: Nullable(Type.Number()),
      holds: Nullable(Type.Boolean()),
    }),
  ),
});

export const WebhookParams = Type.Object({ project_id: Uuid, webhook_id: Uuid });
export const CreateWebhook = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  format: Type.Optional(enumOf(WEBHOOK_FORMATS)),
  enabled: Type.Optional(Type.Boolean()),
});
export const UpdateWebhook = Type.Partial(CreateWebhook);
export const Webhook = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    url: Type.String(),
    format: Type.String({ description: '`json` (the event) or `slack` (an incoming-webhook `{text}` body)' }),
    enabled: Type.Boolean(),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { title: 'Webhook' },
);
export const CreatedWebhook = Type.Composite([
  Webhook,
  Type.Object({ secret: Type.String({ description: 'The signing secret, shown this once' }) }),
]);
export const WebhookList = Type.Object({ webhooks: Type.Array(Webhook) });
export const DeliveryList = Type.Object({
  deliveries: Type.Array(
    Type.Object({
      id: Uuid,
      webhook_id: Uuid,
      event: Type.String(),
      status: Type.String({ description: 'pending | delivered | failed' }),
      attempts: Type.Integer(),
      response_status: Nullable(Type.Integer()),
      error: Nullable(Type.String()),
      next_attempt_at: DateTime,
      created_at: DateTime,
      finished_at: Nullable(DateTime),
    }),
  ),
});
