import type { FastifyInstance } from 'fastify';

/**
 * `/` sends a browser to the API reference (`/docs`). The web console, once served, takes this
 * route's place.
 */
export default async function rootRoutes(app: FastifyInstance) {
  app.get('/', { config: { public: true }, schema: { hide: true } }, async (_req, reply) =>
    reply.redirect('/docs', 302),
  );
}
