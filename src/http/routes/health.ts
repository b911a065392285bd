import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import pkg from '../../../package.json' with { type: 'json' };

export default async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/v2/healthcheck',
    {
      config: { public: true },
      schema: {
        summary: 'Health check (no credentials)',
        tags: ['health'],
        security: [],
        response: {
          200: Type.Object({ api_version: Type.String(), message: Type.String(), version: Type.String() }),
        },
      },
    },
    async () => ({ api_version: 'v2', message: 'ok', version: pkg.version }),
  );
}
