import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/** `/openapi.json`, generated from the route schemas, and an API reference page at `/docs`. */
export default async function docsRoutes(app: FastifyInstance) {
  // Documentation is public; this hook reaches the reference page's own routes too.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), public: true } as typeof route.config;
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // swagger-ui serves its assets from the package itself: no CDN, works offline.
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
}
