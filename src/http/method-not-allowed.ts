import type { FastifyInstance, FastifyRequest } from 'fastify';
import Router from 'find-my-way';

/**
 * A request for a path that exists with other methods is answered 405 with `Allow`, not 404. Fastify
 * only tells its not-found handler that nothing matched, so a second index of the route table (the
 * same router library Fastify uses, with the same options) is kept from the onRoute hook, and asked
 * which methods match the URL. Install before any route is registered.
 */
export function installMethodIndex(
  app: FastifyInstance,
  routerOptions: { ignoreTrailingSlash: boolean; maxParamLength: number },
): (req: FastifyRequest) => string[] {
  const index = Router(routerOptions);
  const methods = new Set<Router.HTTPMethod>();
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat() as Router.HTTPMethod[]) {
      methods.add(m);
      if (!index.hasRoute(m, route.url)) index.on(m, route.url, () => {});
    }
  });
  return (req) => {
    const path = req.url.split('?', 1)[0];
    return [...methods].filter((m) => index.find(m, path) !== null).sort();
  };
}
