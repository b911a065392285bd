import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OpenedSession } from '../services/console-sessions.ts';

/** The console's session cookie (HttpOnly: scripts never see the token). */
export const SESSION_COOKIE = 'spanbase_session';
/** The CSRF token, readable by the console's scripts, which echo it in CSRF_HEADER. */
export const CSRF_COOKIE = 'spanbase_csrf';
export const CSRF_HEADER = 'x-csrf-token';

/** https directly, or behind a proxy that says so (only ever used to add `Secure`). */
function overHttps(req: FastifyRequest): boolean {
  const forwarded = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
  return req.protocol === 'https' || first === 'https';
}

export function setSessionCookies(req: FastifyRequest, reply: FastifyReply, session: OpenedSession): void {
  const expires = new Date(Math.floor(session.expiresAt / 1000));
  const common = { path: '/', expires, secure: overHttps(req) };
  reply.setCookie(SESSION_COOKIE, session.token, { ...common, httpOnly: true, sameSite: 'lax' });
  reply.setCookie(CSRF_COOKIE, session.csrfToken, { ...common, httpOnly: false, sameSite: 'strict' });
}

export function clearSessionCookies(req: FastifyRequest, reply: FastifyReply): void {
  const common = { path: '/', secure: overHttps(req) };
  reply.clearCookie(SESSION_COOKIE, { ...common, httpOnly: true, sameSite: 'lax' });
  reply.clearCookie(CSRF_COOKIE, { ...common, httpOnly: false, sameSite: 'strict' });
}

/** The session token of a request that carries the console cookie and no API credentials. */
export function consoleToken(req: FastifyRequest): string | undefined {
  const h = req.headers;
  if (h.authorization || h['service-api-key'] || h['platform-ao-api-key'] || h['galileo-api-key']) {
    return undefined;
  }
  return req.cookies?.[SESSION_COOKIE] || undefined;
}

/**
 * A request another site made the browser send: browsers name the page's origin in `Origin` on
 * cross-origin requests and say `cross-site`/`same-site` in `Sec-Fetch-Site`.
 */
export function isCrossSite(req: FastifyRequest): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true; // "null" (sandboxed frames, some redirects) or garbage
  }
}

export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
