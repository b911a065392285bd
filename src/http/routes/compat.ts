import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { withErrors } from '../../schemas/common.ts';
import { Project } from '../../schemas/projects.ts';

/**
 * Routes the hosted service's official TypeScript client (npm `galileo`) calls that the API spec
 * does not list, answered with the existing services (decisions.md, "The official TypeScript client").
 */
export default async function compatRoutes(app: FastifyInstance) {
  const { projects } = app.services;

  // `getProjects()` / `Projects.list()`: every project the caller sees, optionally of one type.
  app.get<{ Querystring: { project_type?: string; type?: string } }>(
    '/v2/projects/all',
    {
      schema: {
        tags: ['projects'],
        summary: 'All projects the caller can see (the official client lists projects here)',
        querystring: Type.Object({
          project_type: Type.Optional(Type.String()),
          type: Type.Optional(Type.String()),
        }),
        response: withErrors({ 200: Type.Array(Project) }),
      },
    },
    async (req) => projects.list(req.caller, { type: req.query.project_type ?? req.query.type }),
  );
}
