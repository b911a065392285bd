import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withErrors } from '../../schemas/common.ts';
import { DashboardParams } from '../../schemas/dashboards.ts';
import { TokenUsagePage, TokenUsageQuery } from '../../schemas/insights.ts';
import type { TokenUsageQuery as Query } from '../../services/insights.ts';

/** An absent (or null) body means "all defaults". */
async function emptyBodyIsObject(req: FastifyRequest) {
  if (req.body === undefined || req.body === null) req.body = {};
}

export default async function insightRoutes(app: FastifyInstance) {
  const { insights } = app.services;
  app.post<{ Params: { project_id: string; log_stream_id: string }; Body: Query }>(
    '/v2/projects/:project_id/log_streams/:log_stream_id/logstream_insights/token_usage',
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: ['log_stream_insights'],
        summary: 'Get log stream insights token usages',
        params: DashboardParams,
        body: TokenUsageQuery,
        response: withErrors({ 200: TokenUsagePage }),
      },
    },
    async (req) =>
      insights.tokenUsages(req.caller, req.params.project_id, req.params.log_stream_id, req.body as Query),
  );
}
