import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type ErrorItem, ValidationError } from '../../domain/errors.ts';
import type { Role } from '../../domain/roles.ts';
import { withErrors } from '../../schemas/common.ts';
import {
  AnthropicIntegrationBody,
  AvailableIntegrations,
  AzureIntegrationBody,
  CustomIntegrationBody,
  GatewayIntegrationBody,
  GroupCollaborator,
  Integration,
  IntegrationGroupParams,
  IntegrationParams,
  IntegrationRefParams,
  IntegrationSettings,
  IntegrationStatus,
  IntegrationUserParams,
  type KindBody,
  MODEL_KINDS,
  type ModelKind,
  OpenAIIntegrationBody,
  SetRole,
  ShareWithGroups,
  ShareWithUsers,
  UserCollaborator,
} from '../../schemas/integrations.ts';
import { toErrorItems } from '../validation.ts';

const Message = Type.Object({ message: Type.String() });

/**
 * The 422 of the gateway PUT, from its schema faults, echoing no value that could hold the token:
 * validation.ts already leaves out `token`'s own value; here, whole bodies and objects are left out
 * too (a token sent as the body itself, or nested where an object was expected).
 */
function tokenSafeFaults(req: FastifyRequest): ValidationError {
  const err = req.validationError as (Error & { validation?: any[]; validationContext?: string }) | undefined;
  const context = err?.validationContext ?? 'body';
  if (context === 'body' && req.body === undefined)
    return new ValidationError({ loc: ['body'], msg: 'Field required', type: 'missing' });
  const data = context === 'body' ? req.body : context === 'querystring' ? req.query : req.params;
  const items: ErrorItem[] = toErrorItems(err?.validation ?? [], context, data).map((item) => {
    if (item.loc.length < 2 || (typeof item.input === 'object' && item.input !== null)) {
      const { input: _dropped, ...rest } = item;
      return rest;
    }
    return item;
  });
  return new ValidationError(items);
}
const tags = ['integrations'];

export default async function integrationRoutes(app: FastifyInstance) {
  const { integrations, llmIntegrations } = app.services;
  type P = { integration_id: string };

  const kinds: [ModelKind, string, TSchema, string][] = [
    [
      'example_gateway',
      'gateway',
      GatewayIntegrationBody,
      'An OpenAI-compatible base URL and a bearer token.',
    ],
    ['openai', 'OpenAI', OpenAIIntegrationBody, 'An OpenAI API key and optional organization id.'],
    [
      'anthropic',
      'Anthropic',
      AnthropicIntegrationBody,
      'An Anthropic API key; `endpoint` replaces https://api.anthropic.com (its base URL, without /v1).',
    ],
    [
      'azure',
      'Azure OpenAI',
      AzureIntegrationBody,
      'The resource endpoint, API version and key; `deployments` maps model names to deployment names.',
    ],
    [
      'custom',
      'custom OpenAI-compatible',
      CustomIntegrationBody,
      'An OpenAI-compatible base URL, the models it serves (it is not asked for a list), a default model, and a bearer token.',
    ],
  ];
  for (const [kind, label, body, detail] of kinds) {
    app.put<{ Body: KindBody }>(
      `/v2/integrations/${kind}`,
      {
        attachValidation: true,
        schema: {
          summary: `Create or update your ${label} integration`,
          description: `${detail} One per user and kind: a second PUT updates it. The token is stored sealed and never answered.`,
          tags,
          body,
          response: withErrors({ 200: Integration }),
        },
      },
      async (req) => {
        if (req.validationError) throw tokenSafeFaults(req);
        return integrations.put(req.caller, kind, req.body);
      },
    );
  }
  app.get(
    '/v2/integrations/available',
    {
      schema: {
        summary: 'List the integration kinds that can be created',
        tags,
        response: withErrors({ 200: AvailableIntegrations }),
      },
    },
    async () => ({ integrations: [...MODEL_KINDS] }),
  );
  app.get(
    '/v2/integrations',
    {
      schema: {
        summary: 'List the integrations you own or that are shared with you',
        tags,
        response: withErrors({ 200: Type.Array(Integration) }),
      },
    },
    async (req) => integrations.list(req.caller),
  );
  app.get<{ Params: P }>(
    '/v2/integrations/:integration_id',
    {
      schema: {
        summary: 'Get an integration, or the settings of yours of a kind',
        description:
          'By id: the integration. By kind (e.g. /v2/integrations/openai): the settings of your selected integration of that kind, never its token.',
        tags,
        params: IntegrationRefParams,
        response: withErrors({ 200: Type.Union([Integration, ...IntegrationSettings.anyOf]) }),
      },
    },
    async (req) => integrations.getByRef(req.caller, req.params.integration_id),
  );
  app.delete<{ Params: P }>(
    '/v2/integrations/:integration_id',
    {
      schema: {
        summary: 'Delete an integration (owners), by id or kind',
        description: 'By kind: your selected integration of that kind.',
        tags,
        params: IntegrationRefParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await integrations.deleteByRef(req.caller, req.params.integration_id);
      return { message: 'Integration deleted' };
    },
  );
  app.get<{ Params: P }>(
    '/v2/integrations/:integration_id/status',
    {
      schema: {
        summary: 'Check that an integration works (by id or kind)',
        description:
          "Makes one cheap real call: the provider's model list where it has one, else a one-token chat with the default model (recorded as a `status` call). Answers status ok, or error with error_kind and the provider's own error text (token redacted).",
        tags,
        params: IntegrationRefParams,
        response: withErrors({ 200: IntegrationStatus }),
      },
    },
    async (req) => llmIntegrations.status(req.caller, req.params.integration_id),
  );
  app.put<{ Params: P }>(
    '/v2/integrations/:integration_id/select',
    {
      schema: {
        summary: 'Select this integration as yours of its kind',
        description:
          'Features that call a model (scorers, experiments, Signals, the playground) use your selected integration of a kind by default. Any integration you can see may be selected.',
        tags,
        params: IntegrationParams,
        response: withErrors({ 200: Integration }),
      },
    },
    async (req) => integrations.select(req.caller, req.params.integration_id),
  );

  // Sharing with users.
  app.get<{ Params: P }>(
    '/v2/integrations/:integration_id/users',
    {
      schema: {
        summary: 'List the users an integration is shared with',
        tags,
        params: IntegrationParams,
        response: withErrors({ 200: Type.Array(UserCollaborator) }),
      },
    },
    async (req) => integrations.listUsers(req.caller, req.params.integration_id),
  );
  app.post<{ Params: P; Body: { user_id: string; role: Role }[] }>(
    '/v2/integrations/:integration_id/users',
    {
      schema: {
        summary: 'Share an integration with users (owners)',
        tags,
        params: IntegrationParams,
        body: ShareWithUsers,
        response: withErrors({ 200: Type.Array(UserCollaborator) }),
      },
    },
    async (req) => integrations.shareWithUsers(req.caller, req.params.integration_id, req.body),
  );
  app.patch<{ Params: P & { user_id: string }; Body: { role: Role } }>(
    '/v2/integrations/:integration_id/users/:user_id',
    {
      schema: {
        summary: "Change a user's role on an integration (owners)",
        description: 'The last owner cannot be demoted (422).',
        tags,
        params: IntegrationUserParams,
        body: SetRole,
        response: withErrors({ 200: UserCollaborator }),
      },
    },
    async (req) =>
      integrations.setUserRole(req.caller, req.params.integration_id, req.params.user_id, req.body.role),
  );
  app.delete<{ Params: P & { user_id: string } }>(
    '/v2/integrations/:integration_id/users/:user_id',
    {
      schema: {
        summary: 'Stop sharing an integration with a user (owners)',
        description: 'The last owner cannot be removed (422).',
        tags,
        params: IntegrationUserParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await integrations.removeUser(req.caller, req.params.integration_id, req.params.user_id);
      return { message: 'User collaborator removed' };
    },
  );

  // Sharing with groups.
  app.get<{ Params: P }>(
    '/v2/integrations/:integration_id/groups',
    {
      schema: {
        summary: 'List the groups an integration is shared with',
        tags,
        params: IntegrationParams,
        response: withErrors({ 200: Type.Array(GroupCollaborator) }),
      },
    },
    async (req) => integrations.listGroups(req.caller, req.params.integration_id),
  );
  app.post<{ Params: P; Body: { group_id: string; role: Role }[] }>(
    '/v2/integrations/:integration_id/groups',
    {
      schema: {
        summary: 'Share an integration with groups (owners)',
        tags,
        params: IntegrationParams,
        body: ShareWithGroups,
        response: withErrors({ 200: Type.Array(GroupCollaborator) }),
      },
    },
    async (req) => integrations.shareWithGroups(req.caller, req.params.integration_id, req.body),
  );
  app.patch<{ Params: P & { group_id: string }; Body: { role: Role } }>(
    '/v2/integrations/:integration_id/groups/:group_id',
    {
      schema: {
        summary: "Change a group's role on an integration (owners)",
        description: 'The last owner cannot be demoted (422).',
        tags,
        params: IntegrationGroupParams,
        body: SetRole,
        response: withErrors({ 200: GroupCollaborator }),
      },
    },
    async (req) =>
      integrations.setGroupRole(req.caller, req.params.integration_id, req.params.group_id, req.body.role),
  );
  app.delete<{ Params: P & { group_id: string } }>(
    '/v2/integrations/:integration_id/groups/:group_id',
    {
      schema: {
        summary: 'Stop sharing an integration with a group (owners)',
        description: 'The last owner cannot be removed (422).',
        tags,
        params: IntegrationGroupParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => {
      await integrations.removeGroup(req.caller, req.params.integration_id, req.params.group_id);
      return { message: 'Group collaborator removed' };
    },
  );
}
