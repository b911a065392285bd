import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  Alert,
  AlertHistory,
  AlertList,
  AlertParams,
  AlertPreview,
  AlertPreviewBody,
  AlertsParams,
  CreateAlert,
  CreateWebhook,
  CreatedWebhook,
  DeliveryList,
  UpdateAlert,
  UpdateWebhook,
  Webhook,
  WebhookList,
  WebhookParams,
} from '../../schemas/alerts.ts';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import { Type } from '@sinclair/typebox';

const Deleted = Type.Object({ deleted: Type.Boolean() });

/** Alert rules of a log stream, and a project's notification webhooks. */
export default async function alertRoutes(app: FastifyInstance) {
  const { alerts, notifications } = app.services;
  const tags = ['alerts'];
  const base = '/v2/projects/:project_id/log_streams/:log_stream_id/alerts';
  type P = { project_id: string; log_stream_id: string };
  type A = P & { alert_id: string };

  app.get<{ Params: P }>(
    base,
    {
      schema: {
        summary: 'List the alert rules of a log stream',
        tags,
        params: AlertsParams,
        response: withErrors({ 200: AlertList }),
      },
    },
    async (req) => alerts.list(req.caller, req.params.project_id, req.params.log_stream_id),
  );
  app.post<{ Params: P; Body: Static<typeof CreateAlert> }>(
    base,
    {
      schema: {
        summary: 'Create an alert rule (editors)',
        description:
          'Evaluated every minute over the window ending then: the aggregation of the metric (as a dashboard widget computes it) over the records matching the filter, compared with the threshold. Fires once when the condition starts holding and recovers once when it stops; both are kept in the history and sent to the project webhooks.',
        tags,
        params: AlertsParams,
        body: CreateAlert,
        response: withErrors({ 200: Alert }),
      },
    },
    async (req) => alerts.create(req.caller, req.params.project_id, req.params.log_stream_id, req.body),
  );
  app.post<{ Params: P; Body: Static<typeof AlertPreviewBody> }>(
    `${base}/preview`,
    {
      schema: {
        summary: 'The metric of a rule over the last day, one point per window',
        tags,
        params: AlertsParams,
        body: AlertPreviewBody,
        response: withErrors({ 200: AlertPreview }),
      },
    },
    async (req) => alerts.preview(req.caller, req.params.project_id, req.params.log_stream_id, req.body),
  );
  app.get<{ Params: A }>(
    `${base}/:alert_id`,
    {
      schema: {
        summary: 'Get an alert rule',
        tags,
        params: AlertParams,
        response: withErrors({ 200: Alert }),
      },
    },
    async (req) =>
      alerts.get(req.caller, req.params.project_id, req.params.log_stream_id, req.params.alert_id),
  );
  app.patch<{ Params: A; Body: Static<typeof UpdateAlert> }>(
    `${base}/:alert_id`,
    {
      schema: {
        summary: 'Change an alert rule (editors)',
        tags,
        params: AlertParams,
        body: UpdateAlert,
        response: withErrors({ 200: Alert }),
      },
    },
    async (req) =>
      alerts.update(
        req.caller,
        req.params.project_id,
        req.params.log_stream_id,
        req.params.alert_id,
        req.body,
      ),
  );
  app.delete<{ Params: A }>(
    `${base}/:alert_id`,
    {
      schema: {
        summary: 'Delete an alert rule with its history (editors)',
        tags,
        params: AlertParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await alerts.remove(req.caller, req.params.project_id, req.params.log_stream_id, req.params.alert_id);
      return { deleted: true };
    },
  );
  app.get<{ Params: A }>(
    `${base}/:alert_id/history`,
    {
      schema: {
        summary: 'When an alert rule fired and recovered, latest first',
        tags,
        params: AlertParams,
        response: withErrors({ 200: AlertHistory }),
      },
    },
    async (req) =>
      alerts.history(req.caller, req.params.project_id, req.params.log_stream_id, req.params.alert_id),
  );

  const hooks = '/v2/projects/:project_id/webhooks';
  const hookTags = ['notifications'];
  type W = { project_id: string; webhook_id: string };
  app.get<{ Params: { project_id: string } }>(
    hooks,
    {
      schema: {
        summary: 'List the webhooks of a project (editors)',
        tags: hookTags,
        params: ProjectParams,
        response: withErrors({ 200: WebhookList }),
      },
    },
    async (req) => notifications.list(req.caller, req.params.project_id),
  );
  app.post<{ Params: { project_id: string }; Body: Static<typeof CreateWebhook> }>(
    hooks,
    {
      schema: {
        summary: 'Add a webhook to a project (editors)',
        description:
          'Signals of the configured severities and alert transitions are POSTed to the URL, with header `X-Spanbase-Signature: sha256=<hex HMAC-SHA256 of the body under the secret>`; failed deliveries are retried with backoff. `format: slack` sends a Slack incoming-webhook body `{"text": ...}`. The secret is answered only here. Loopback and private addresses are refused unless SPANBASE_ALLOW_PRIVATE_PROVIDERS=1; link-local and metadata addresses always.',
        tags: hookTags,
        params: ProjectParams,
        body: CreateWebhook,
        response: withErrors({ 200: CreatedWebhook }),
      },
    },
    async (req) => notifications.create(req.caller, req.params.project_id, req.body),
  );
  app.patch<{ Params: W; Body: Static<typeof UpdateWebhook> }>(
    `${hooks}/:webhook_id`,
    {
      schema: {
        summary: 'Change a webhook (editors)',
        tags: hookTags,
        params: WebhookParams,
        body: UpdateWebhook,
        response: withErrors({ 200: Webhook }),
      },
    },
    async (req) => notifications.update(req.caller, req.params.project_id, req.params.webhook_id, req.body),
  );
  app.delete<{ Params: W }>(
    `${hooks}/:webhook_id`,
    {
      schema: {
        summary: 'Delete a webhook with its deliveries (editors)',
        tags: hookTags,
        params: WebhookParams,
        response: withErrors({ 200: Deleted }),
      },
    },
    async (req) => {
      await notifications.remove(req.caller, req.params.project_id, req.params.webhook_id);
      return { deleted: true };
    },
  );
  app.get<{ Params: W }>(
    `${hooks}/:webhook_id/deliveries`,
    {
      schema: {
        summary: 'The latest deliveries to a webhook, each with its status and attempts (editors)',
        tags: hookTags,
        params: WebhookParams,
        response: withErrors({ 200: DeliveryList }),
      },
    },
    async (req) => notifications.deliveries(req.caller, req.params.project_id, req.params.webhook_id),
  );
}
