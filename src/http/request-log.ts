/**
 * One log line per request (at info level), when its answer has gone: the request id (also answered in the
 * `x-request-id` header), method, route pattern and path (never the query string, where a client
 * might have put a credential), status (`statusCode`), time in ms (`responseTime`), and the user and project ids when known. The same
 * figures feed the request metrics.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** A request id: the client's `x-request-id` when it is a short plain token, else a new one. */
export function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
}

/** A URL without its query string. */
const pathOf = (url: string) => url.split('?', 1)[0];

export function installRequestLog(app: FastifyInstance): void {
  const { metrics } = app.services;
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    // At debug level, a request also shows when it arrives (one that never ends shows there only).
    req.log.debug({ method: req.method, path: pathOf(req.url) }, 'incoming request');
  });
  app.addHook('onResponse', async (req: FastifyRequest, reply) => {
    const route = req.routeOptions.url ?? '(unmatched)';
    const status = reply.statusCode;
    const ms = reply.elapsedTime;
    metrics.httpRequests.observe({ method: req.method, route, status: String(status) }, ms / 1000);
    const path = pathOf(req.url);
    const projectId = (req.params as { project_id?: string } | undefined)?.project_id;
    req.log[status >= 500 ? 'error' : 'info'](
      {
        method: req.method,
        route,
        path,
        statusCode: status,
        responseTime: Math.round(ms * 100) / 100,
        ...(req.caller ? { user_id: req.caller.id } : {}),
        ...(projectId ? { project_id: projectId } : {}),
      },
      'request completed',
    );
  });
}
