import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError, unauthorized } from '../domain/errors.ts';
import type { Caller } from '../services/auth.ts';
import { CSRF_HEADER, SAFE_METHODS, consoleToken, isCrossSite } from './console-cookies.ts';

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
 *
 * The API's four schemes come first; a request without any of them may carry the web console's
 * session cookie instead.
 */
export function installAuth(app: FastifyInstance): void {
  app.decorateRequest('caller', null as unknown as Caller);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (req.routeOptions.config?.public || !req.routeOptions.url) return;
    const token = consoleToken(req);
    req.caller = token
      ? await consoleCaller(app, req, token)
      : await app.services.auth.authenticate(req.headers, req.ip);
  });
}

/**
 * The user of a console session. A state-changing request must also come from the console's own
 * pages: not cross-site, and with the session's CSRF token in `X-CSRF-Token` (which another site can
 * neither read nor make).
 */
async function consoleCaller(app: FastifyInstance, req: FastifyRequest, token: string): Promise<Caller> {
  const { consoleSessions } = app.services;
  const caller = await consoleSessions.authenticate(token);
  if (!caller) throw unauthorized('Your console session has ended; sign in again');
  if (!SAFE_METHODS.has(req.method)) {
    const given = req.headers[CSRF_HEADER];
    if (isCrossSite(req) || typeof given !== 'string' || !consoleSessions.csrfMatches(token, given)) {
      throw new HttpError(403, "This request needs the console session's X-CSRF-Token, from the same site");
    }
  }
  return caller;
}
