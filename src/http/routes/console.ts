import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { forbidden } from '../../domain/errors.ts';
import { toIso } from '../../domain/time.ts';
import { withErrors } from '../../schemas/common.ts';
import { ConsoleLogin, ConsoleSession } from '../../schemas/console.ts';
import type { ConsoleSignIn } from '../../services/console-sessions.ts';
import { SESSION_COOKIE, clearSessionCookies, isCrossSite, setSessionCookies } from '../console-cookies.ts';

/** Sign-in and sign-out of the web console (a cookie session; see src/http/console-cookies.ts). */
export default async function consoleRoutes(app: FastifyInstance) {
  const { consoleSessions } = app.services;

  app.post<{ Body: ConsoleSignIn }>(
    '/v2/console/login',
    {
      config: { public: true },
      schema: {
        tags: ['console'],
        summary: 'Sign the browser in to the web console',
        description:
          'Checks an email and password, or an API key (with the same throttling as the other logins), and ' +
          'sets an HttpOnly session cookie and a CSRF cookie. Requests made with the cookie that change ' +
          'anything must send the CSRF token in `X-CSRF-Token`. JSON bodies only; cross-site requests are refused.',
        security: [],
        body: ConsoleLogin,
        response: withErrors({ 200: ConsoleSession, 415: Type.Object({ detail: Type.String() }) }),
      },
    },
    // JSON only (other bodies answer 415 before this runs): a cross-site form can post urlencoded or
    // text bodies without asking, while JSON needs the browser's permission, so a sign-in another site
    // forces on the browser does not reach here.
    async (req, reply) => {
      if (isCrossSite(req)) throw forbidden('Cross-site sign-in refused');
      const session = await consoleSessions.signIn(req.body, req.ip);
      setSessionCookies(req, reply, session);
      return { user: session.user, csrf_token: session.csrfToken, expires_at: toIso(session.expiresAt) };
    },
  );

  app.post(
    '/v2/console/logout',
    {
      schema: {
        tags: ['console'],
        summary: 'End the console session',
        description: "Deletes the cookie's session on the server and clears the cookies.",
        response: withErrors({ 200: Type.Object({ message: Type.String() }) }),
      },
    },
    async (req, reply) => {
      const token = req.cookies[SESSION_COOKIE];
      if (token) await consoleSessions.signOut(token);
      clearSessionCookies(req, reply);
      return { message: 'Signed out' };
    },
  );
}
