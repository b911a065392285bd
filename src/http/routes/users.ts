import formbody from '@fastify/formbody';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Uuid, withErrors } from '../../schemas/common.ts';
import {
  AddMembers,
  ApiKey,
  ApiKeyLogin,
  CreateApiKey,
  CreateGroup,
  CreatedApiKey,
  CreateUser,
  Group,
  LoginForm,
  SetSystemRole,
  Token,
  User,
} from '../../schemas/users.ts';

export default async function userRoutes(app: FastifyInstance) {
  const { auth, users } = app.services;

  // The OAuth2 password flow posts a form; only these routes parse one (a JSON route sent a form,
  // curl's default for -d, answers 415 naming the content type instead of a puzzling 422).
  await app.register(async (login) => {
    await login.register(formbody);
    for (const url of ['/login', '/v2/login']) {
      login.post<{ Body: { username: string; password: string } }>(
        url,
        {
          config: { public: true },
          schema: {
            summary: 'Log in with email and password',
            description:
              'The OAuth2 password flow: form fields `username` (the email) and `password`; answers a bearer token. Repeated failures for one account or address answer 429 with Retry-After.',
            tags: ['auth'],
            security: [],
            consumes: ['application/x-www-form-urlencoded'],
            body: LoginForm,
            response: withErrors({ 200: Token }),
          },
        },
        async (req) => {
          const user = await auth.loginWithPassword(req.body.username, req.body.password, req.ip);
          return auth.issueToken(user.id);
        },
      );
    }
  });

  app.post<{ Body: { api_key: string } }>(
    '/v2/login/api_key',
    {
      config: { public: true },
      schema: {
        summary: 'Exchange an API key for a bearer token',
        tags: ['auth'],
        security: [],
        body: ApiKeyLogin,
        response: withErrors({ 200: Token }),
      },
    },
    async (req) => {
      const user = await auth.loginWithApiKey(req.body.api_key, req.ip);
      return auth.issueToken(user.id);
    },
  );

  app.get(
    '/v2/current_user',
    { schema: { summary: "The caller's own user", tags: ['users'], response: withErrors({ 200: User }) } },
    async (req) => users.get(req.caller, req.caller.id),
  );

  app.post<{ Body: any }>(
    '/v2/users',
    {
      schema: {
        summary: 'Create a user (admins)',
        description:
          'Without a password the user can only use API keys. The email is kept lower-cased and must be unique (409).',
        tags: ['users'],
        body: CreateUser,
        response: withErrors({ 200: User }),
      },
    },
    async (req) => users.create(req.caller, req.body as any),
  );
  app.get(
    '/v2/users',
    {
      schema: {
        summary: 'List users (admins)',
        tags: ['users'],
        response: withErrors({ 200: Type.Array(User) }),
      },
    },
    async (req) => users.list(req.caller),
  );
  app.get<{ Params: { user_id: string } }>(
    '/v2/users/:user_id',
    {
      schema: {
        summary: 'Get a user (yourself, or anyone for admins)',
        tags: ['users'],
        params: Type.Object({ user_id: Uuid }),
        response: withErrors({ 200: User }),
      },
    },
    async (req) => users.get(req.caller, req.params.user_id),
  );

  app.patch<{ Params: { user_id: string }; Body: { role: 'admin' | 'user' } }>(
    '/v2/users/:user_id',
    {
      schema: {
        summary: "Change a user's system role (admins)",
        description: 'The last admin cannot be demoted (422).',
        tags: ['users'],
        params: Type.Object({ user_id: Uuid }),
        body: SetSystemRole,
        response: withErrors({ 200: User }),
      },
    },
    async (req) => users.setRole(req.caller, req.params.user_id, req.body.role),
  );

  app.post<{ Body: { description?: string; expires_at?: string | null } }>(
    '/v2/users/api_keys',
    {
      schema: {
        summary: 'Create an API key for yourself',
        description: 'The key is in this answer only; Spanbase keeps a hash of it.',
        tags: ['api_keys'],
        body: CreateApiKey,
        response: withErrors({ 200: CreatedApiKey }),
      },
    },
    async (req) => auth.createApiKey(req.caller.id, req.body.description ?? '', req.body.expires_at),
  );
  app.get(
    '/v2/users/api_keys',
    {
      schema: {
        summary: 'List your API keys (never the secrets)',
        tags: ['api_keys'],
        response: withErrors({ 200: Type.Array(ApiKey) }),
      },
    },
    async (req) => auth.listApiKeys(req.caller.id),
  );
  app.delete<{ Params: { api_key_id: string } }>(
    '/v2/users/api_keys/:api_key_id',
    {
      schema: {
        summary: 'Revoke one of your API keys',
        tags: ['api_keys'],
        params: Type.Object({ api_key_id: Uuid }),
        response: withErrors({ 200: Type.Object({ message: Type.String() }) }),
      },
    },
    async (req) => {
      await auth.revokeApiKey(req.caller.id, req.params.api_key_id);
      return { message: 'API key revoked' };
    },
  );

  app.post<{ Body: { name: string; description?: string | null } }>(
    '/v2/groups',
    {
      schema: {
        summary: 'Create a group (admins)',
        tags: ['groups'],
        body: CreateGroup,
        response: withErrors({ 200: Group }),
      },
    },
    async (req) => users.createGroup(req.caller, req.body),
  );
  app.get(
    '/v2/groups',
    {
      schema: { summary: 'List groups', tags: ['groups'], response: withErrors({ 200: Type.Array(Group) }) },
    },
    async (req) => users.listGroups(req.caller),
  );
  const GroupParams = Type.Object({ group_id: Uuid });
  app.post<{ Params: { group_id: string }; Body: { user_id: string }[] }>(
    '/v2/groups/:group_id/members',
    {
      schema: {
        summary: 'Add users to a group (admins)',
        tags: ['groups'],
        params: GroupParams,
        body: AddMembers,
        response: withErrors({ 200: Type.Array(User) }),
      },
    },
    async (req) =>
      users.addMembers(
        req.caller,
        req.params.group_id,
        req.body.map((m) => m.user_id),
      ),
  );
  app.get<{ Params: { group_id: string } }>(
    '/v2/groups/:group_id/members',
    {
      schema: {
        summary: "List a group's members",
        tags: ['groups'],
        params: GroupParams,
        response: withErrors({ 200: Type.Array(User) }),
      },
    },
    async (req) => users.members(req.caller, req.params.group_id),
  );
  app.delete<{ Params: { group_id: string; user_id: string } }>(
    '/v2/groups/:group_id/members/:user_id',
    {
      schema: {
        summary: 'Remove a user from a group (admins)',
        tags: ['groups'],
        params: Type.Object({ group_id: Uuid, user_id: Uuid }),
        response: withErrors({ 200: Type.Object({ message: Type.String() }) }),
      },
    },
    async (req) => {
      await users.removeMember(req.caller, req.params.group_id, req.params.user_id);
      return { message: 'Member removed' };
    },
  );
}
