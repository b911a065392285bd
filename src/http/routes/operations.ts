import { timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '../../domain/errors.ts';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * `/metrics` answers any client on loopback; others must give SPANBASE_METRICS_TOKEN as a bearer
 * token (without one configured, only loopback is served).
 */
function mayReadMetrics(req: FastifyRequest, token: string | null): boolean {
  if (LOOPBACK.has(req.socket.remoteAddress ?? '')) return true;
  if (!token) return false;
  const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
  if (!m) return false;
  const given = Buffer.from(m[1]);
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/** Readiness, Prometheus metrics, and the background jobs' start and stop with the app. */
export default async function operationsRoutes(app: FastifyInstance) {
  const {
    metrics,
    retention,
    tableStats,
    rollupFold,
    lifecycle,
    readiness,
    config,
    signalRuns,
    alerts,
    notifications,
  } = app.services;
  let closing = false;

  app.addHook('onReady', async () => {
    retention.job.start();
    tableStats?.job.start();
    for (const job of [signalRuns.job, alerts.job, notifications.job, rollupFold.job]) job.start();
  });
  // Before the server stops accepting: deletes and exports under way stop at their next batch and
  // the retention job at its next safe point, so that draining the requests in flight is quick.
  app.addHook('preClose', async () => {
    closing = true;
    lifecycle.close();
    await Promise.all([
      retention.job.stop(),
      tableStats?.job.stop(),
      signalRuns.job.stop(),
      alerts.job.stop(),
      notifications.job.stop(),
      rollupFold.job.stop(),
    ]);
  });

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        tags: ['health'],
        summary: 'Ready: the store answers and is migrated (503 otherwise, and while shutting down)',
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal('ready') }),
          503: Type.Object({ detail: Type.String() }),
        },
      },
    },
    async () => {
      if (closing) throw new HttpError(503, 'Shutting down');
      const problem = await readiness.problem();
      if (problem) throw new HttpError(503, problem);
      return { status: 'ready' as const };
    },
  );

  app.get(
    '/metrics',
    {
      config: { public: true },
      schema: {
        tags: ['health'],
        summary: 'Prometheus metrics (open on loopback; elsewhere a bearer token, SPANBASE_METRICS_TOKEN)',
        security: [],
        response: { 200: Type.String(), 403: Type.Object({ detail: Type.String() }) },
      },
    },
    async (req, reply) => {
      if (!mayReadMetrics(req, config.metricsToken)) throw new HttpError(403, 'Metrics are not open to you');
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    },
  );
}
