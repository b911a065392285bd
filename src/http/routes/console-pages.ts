import fs from 'node:fs/promises';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from '../console-cookies.ts';

/** Where `vite build` writes the console (web/vite.config.ts). */
export const CONSOLE_DIST = path.resolve(import.meta.dirname, '../../../web/dist');

/** Paths the console's router owns; each answers its single page. */
const PAGES = [
  '/',
  '/login',
  '/projects',
  '/projects/*',
  '/settings',
  '/settings/*',
  '/datasets',
  '/datasets/*',
  '/scorers',
];

/**
 * The page scripts may only talk to this origin and load their own files: no inline script or style,
 * no third-party anything. (React sets the waterfall's positions through the CSSOM, which style-src
 * does not restrict.) One inline style is allowed by its hash: the fixed rule react-draggable (the
 * dashboard grid's drag and resize) adds while dragging, so that text is not selected on the way.
 */
const DRAG_SELECTION_STYLE = "'sha256-s8oZn728h+t0WNV6s+2xieaG3i2RB5cO2MMiUDIdinY='";
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  `style-src 'self' ${DRAG_SELECTION_STYLE}`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Spanbase</title>
<p>The Spanbase console is not built. Run <code>npm run build:web</code> (or <code>npm install</code>) and reload.
The API is up: see <a href="/docs">/docs</a>.</p>`;

/** Paths of the API, its documents and the console's files: an unknown one answers JSON. */
const NOT_CONSOLE = /^\/(v\d+|otel|docs|openapi\.json|assets)(\/|$)/;

/** A browser asking for a page at an address the console does not have (it shows its not-found page). */
export const isConsoleNavigation = (req: FastifyRequest) =>
  req.method === 'GET' && !NOT_CONSOLE.test(req.url) && /\btext\/html\b/.test(req.headers.accept ?? '');

/** The console's single page, with its headers (the console's router decides what it shows). */
export async function sendConsolePage(reply: FastifyReply, status = 200) {
  reply.header('cache-control', 'no-store').header('content-security-policy', CSP);
  reply.header('x-content-type-options', 'nosniff').header('referrer-policy', 'same-origin');
  let html: string;
  try {
    html = await fs.readFile(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
  } catch {
    return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT);
  }
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

/**
 * The web console: its built files under /assets (public: they hold no data) and its pages. A page
 * other than /login opened without a console session redirects to /login?next=..., so a browser that
 * has not signed in gets nothing but the sign-in form.
 */
export default async function consolePages(app: FastifyInstance) {
  const { consoleSessions } = app.services;
  // Public like the documentation: reaches the static plugin's own routes too (this scope only).
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), public: true } as typeof route.config;
  });
  await app.register(fastifyStatic, {
    root: path.join(CONSOLE_DIST, 'assets'),
    prefix: '/assets/',
    // build:web writes .br and .gz beside each file; file names carry a content hash.
    preCompressed: true,
    immutable: true,
    maxAge: '365d',
    decorateReply: false,
  });

  const signedIn = async (req: FastifyRequest) => {
    const token = req.cookies[SESSION_COOKIE];
    return token !== undefined && (await consoleSessions.authenticate(token)) !== undefined;
  };

  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.routeOptions.url !== '/login' && !(await signedIn(req))) {
      reply.header('cache-control', 'no-store');
      return reply.redirect(`/login?next=${encodeURIComponent(req.url)}`, 302);
    }
    return sendConsolePage(reply);
  };
  for (const url of PAGES) app.get(url, { schema: { hide: true } }, page);
}
