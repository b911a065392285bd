import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Role } from '../../domain/roles.ts';
import { ProjectParams, Uuid, withErrors } from '../../schemas/common.ts';
import { GroupCollaborator, SetRole, UserCollaborator } from '../../schemas/integrations.ts';
import {
  CreateProject,
  ListProjectsQuery,
  Project,
  ProjectRole,
  ShareProject,
} from '../../schemas/projects.ts';

export default async function projectRoutes(app: FastifyInstance) {
  const { projects } = app.services;
  type P = { project_id: string };

  app.post<{ Body: { name: string; type?: string } }>(
    '/v2/projects',
    {
      schema: {
        summary: 'Create a project',
        description: 'Names are unique across the service (409 when taken); the caller becomes its owner.',
        tags: ['projects'],
        body: CreateProject,
        response: withErrors({ 200: Project }),
      },
    },
    async (req) => projects.create(req.caller, req.body),
  );
  app.get<{ Querystring: { project_name?: string; type?: string } }>(
    '/v2/projects',
    {
      schema: {
        summary: 'List the projects you can see',
        description: 'Filter with `project_name` (exact) and `type`.',
        tags: ['projects'],
        querystring: ListProjectsQuery,
        response: withErrors({ 200: Type.Array(Project) }),
      },
    },
    async (req) => projects.list(req.caller, { name: req.query.project_name, type: req.query.type }),
  );
  app.get<{ Params: P }>(
    '/v2/projects/:project_id',
    {
      schema: {
        summary: 'Get a project',
        tags: ['projects'],
        params: ProjectParams,
        response: withErrors({ 200: Project }),
      },
    },
    async (req) => projects.get(req.caller, req.params.project_id),
  );
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/current_user_role',
    {
      schema: {
        summary: 'Your role on a project',
        description:
          "The strongest of your own share and your groups' shares (admins: owner). Viewers read; annotators also annotate; editors also change records, dashboards, queues and Signals; owners also share and delete. The console hides what your role may not do.",
        tags: ['projects'],
        params: ProjectParams,
        response: withErrors({ 200: ProjectRole }),
      },
    },
    async (req) => projects.callerRole(req.caller, req.params.project_id),
  );
  app.delete<{ Params: P }>(
    '/v2/projects/:project_id',
    {
      schema: {
        summary: 'Delete a project and everything in it (owners)',
        tags: ['projects'],
        params: ProjectParams,
        response: withErrors({ 200: Type.Object({ message: Type.String() }) }),
      },
    },
    async (req) => {
      await projects.delete(req.caller, req.params.project_id);
      return { message: 'Project deleted' };
    },
  );
  app.post<{ Params: P; Body: { user_id?: string; group_id?: string; role: Role } }>(
    '/v2/projects/:project_id/collaborators',
    {
      schema: {
        summary: 'Share a project with a user or a group (owners)',
        description: 'Gives `user_id` or `group_id` a role: owner, editor, annotator or viewer.',
        tags: ['projects'],
        params: ProjectParams,
        body: ShareProject,
        response: withErrors({
          200: Type.Object({
            project_id: Type.String(),
            user_id: Type.Union([Type.String(), Type.Null()]),
            group_id: Type.Union([Type.String(), Type.Null()]),
            role: Type.String(),
          }),
        }),
      },
    },
    async (req) => projects.share(req.caller, req.params.project_id, req.body, req.body.role),
  );

  // The collaborators a project is shared with, as the hosted service's /projects/{id}/users and
  // /groups routes answer them; adding one is POST .../collaborators above.
  const Message = Type.Object({ message: Type.String() });
  const UserParams = Type.Object({ project_id: Uuid, user_id: Uuid });
  const GroupParams = Type.Object({ project_id: Uuid, group_id: Uuid });
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/users',
    {
      schema: {
        summary: 'List the users a project is shared with',
        tags: ['projects'],
        params: ProjectParams,
        response: withErrors({ 200: Type.Array(UserCollaborator) }),
      },
    },
    async (req) => projects.listUsers(req.caller, req.params.project_id),
  );
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/groups',
    {
      schema: {
        summary: 'List the groups a project is shared with',
        tags: ['projects'],
        params: ProjectParams,
        response: withErrors({ 200: Type.Array(GroupCollaborator) }),
      },
    },
    async (req) => projects.listGroups(req.caller, req.params.project_id),
  );
  app.patch<{ Params: P & { user_id: string }; Body: { role: Role } }>(
    '/v2/projects/:project_id/users/:user_id',
    {
      schema: {
        summary: "Change a user's role on a project (owners)",
        description: 'The last owner cannot be demoted (422).',
        tags: ['projects'],
        params: UserParams,
        body: SetRole,
        response: withErrors({ 200: UserCollaborator }),
      },
    },
    async (req) => projects.setUserRole(req.caller, req.params.project_id, req.params.user_id, req.body.role),
  );
  app.patch<{ Params: P & { group_id: string }; Body: { role: Role } }>(
    '/v2/projects/:project_id/groups/:group_id',
    {
      schema: {
        summary: "Change a group's role on a project (owners)",
        description: 'The last owner cannot be demoted (422).',
        tags: ['projects'],
        params: GroupParams,
        body: SetRole,
        response: withErrors({ 200: GroupCollaborator }),
      },
    },
    async (req) =>
      projects.setGroupRole(req.caller, req.params.project_id, req.params.group_id, req.body.role),
  );
  app.delete<{ Params: P & { user_id: string } }>(
    '/v2/projects/:project_id/users/:user_id',
    {
      schema: {
        summary: 'Stop sharing a project with a user (owners)',
        description: 'The last owner cannot be removed (422).',
        tags: ['projects'],
        params: UserParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await projects.removeUser(req.caller, req.params.project_id, req.params.user_id);
      return { message: 'User collaborator removed' };
    },
  );
  app.delete<{ Params: P & { group_id: string } }>(
    '/v2/projects/:project_id/groups/:group_id',
    {
      schema: {
        summary: 'Stop sharing a project with a group (owners)',
        description: 'The last owner cannot be removed (422).',
        tags: ['projects'],
        params: GroupParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await projects.removeGroup(req.caller, req.params.project_id, req.params.group_id);
      return { message: 'Group collaborator removed' };
    },
  );
}
