import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Caller } from '../services/auth.ts';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** Routes that answer without credentials (health, login, OpenAPI). */
    public?: boolean;
  }
}

/**
 * Every route requires credentials unless its config says `public`. The check runs on request,
 * before the body is parsed or validated, so a missing credential is always a 401 first.
 */
export function installAuth(app: FastifyInstance): void {
  app.decorateRequest('caller', null as unknown as Caller);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (req.routeOptions.config?.public || !req.routeOptions.url) return;
    req.caller = await app.services.auth.authenticate(req.headers, req.ip);
  });
}
