import { Type } from '@sinclair/typebox';
import { ROLES, type Role } from '../domain/roles.ts';
import { DateTime, Nullable, Uuid } from './common.ts';

export const INTEGRATION_NAMES = [
  'anthropic',
  'aws_bedrock',
  'aws_sagemaker',
  'azure',
  'custom',
  'databricks',
  'example_gateway',
  'mistral',
  'nvidia',
  'openai',
  'vertex_ai',
  'writer',
] as const;

export const RoleValue = Type.Unsafe<Role>({ type: 'string', enum: [...ROLES].reverse() });

/** Body of PUT /v2/integrations/example_gateway. `token` is a secret: never echoed, never logged. */
export const GatewayIntegrationBody = Type.Object({
  endpoint: Type.String({ minLength: 1, maxLength: 2083 }),
  use_case: Type.String({ minLength: 1, maxLength: 255 }),
  token: Type.String({ minLength: 1, maxLength: 16384, writeOnly: true }),
  multi_modal_config: Type.Optional(
    Nullable(
      Type.Object({
        max_files: Type.Optional(Type.Integer({ minimum: 1 })),
        max_file_size_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
    ),
  ),
});

export type GatewayIntegrationInput = {
  endpoint: string;
  use_case: string;
  token: string;
  multi_modal_config?: { max_files?: number; max_file_size_bytes?: number } | null;
};

const Token = Type.String({ minLength: 1, maxLength: 16384, writeOnly: true });
const Endpoint = Type.String({ minLength: 1, maxLength: 2083 });
const StringMap = Type.Record(
  Type.String({ minLength: 1, maxLength: 255 }),
  Type.String({ minLength: 1, maxLength: 255 }),
);

/** The kinds that call a model, each with its own PUT body; the token is a secret, as the gateway's. */
export const MODEL_KINDS = ['example_gateway', 'openai', 'anthropic', 'azure', 'custom'] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];
export const ModelKindValue = Type.Unsafe<ModelKind>({ type: 'string', enum: [...MODEL_KINDS] });

export const OpenAIIntegrationBody = Type.Object({
  token: Token,
  organization_id: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
});
export const AnthropicIntegrationBody = Type.Object({
  token: Token,
  endpoint: Type.Optional(Nullable(Endpoint)),
  authentication_type: Type.Optional(Type.Literal('api_key')),
});
export const AzureIntegrationBody = Type.Object({
  token: Token,
  endpoint: Endpoint,
  api_version: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  azure_deployment: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
  deployments: Type.Optional(StringMap),
  authentication_type: Type.Optional(Type.Literal('api_key')),
});
export const CustomIntegrationBody = Type.Object({
  token: Token,
  endpoint: Endpoint,
  models: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { minItems: 1, maxItems: 500 }),
  default_model: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
});

export type KindBody = { token: string } & Record<string, any>;

const view = (name: string, props: Record<string, any>, title: string) =>
  Type.Object(
    {
      id: Uuid,
      name: Type.Literal(name),
      ...props,
      extra: Nullable(Type.Record(Type.String(), Type.Unknown())),
    },
    { title },
  );

/** GET /v2/integrations/{name}: the settings of the caller's integration of that kind, no token. */
export const IntegrationSettings = Type.Union([
  view(
    'example_gateway',
    {
      endpoint: Type.String(),
      use_case: Type.String(),
      multi_modal_config: Nullable(
        Type.Object({
          max_files: Type.Optional(Type.Integer()),
          max_file_size_bytes: Type.Optional(Type.Integer()),
        }),
      ),
    },
    'GatewayIntegration',
  ),
  view('openai', { organization_id: Nullable(Type.String()) }, 'OpenAIIntegration'),
  view(
    'anthropic',
    { endpoint: Nullable(Type.String()), authentication_type: Type.Literal('api_key') },
    'AnthropicIntegration',
  ),
  view(
    'azure',
    {
      endpoint: Type.String(),
      api_version: Type.String(),
      azure_deployment: Nullable(Type.String()),
      deployments: Type.Record(Type.String(), Type.String()),
      authentication_type: Type.Literal('api_key'),
    },
    'AzureIntegration',
  ),
  view(
    'custom',
    { endpoint: Type.String(), models: Type.Array(Type.String()), default_model: Nullable(Type.String()) },
    'CustomIntegration',
  ),
]);

export const AvailableIntegrations = Type.Object(
  { integrations: Type.Array(ModelKindValue) },
  { title: 'AvailableIntegrations' },
);

/** An integration id, or a kind name standing for the caller's selected integration of that kind. */
export const IntegrationRefParams = Type.Object({
  integration_id: Type.Union([Uuid, ModelKindValue], {
    description:
      'An integration id, or a kind (openai, anthropic, ...): your selected integration of that kind',
  }),
});
export const KindParams = Type.Object({ name: ModelKindValue });

export const IntegrationStatus = Type.Record(Type.String(), Type.String(), {
  title: 'IntegrationStatus',
  description:
    "status: ok or error; on error, error_kind and message (the provider's own error text, token redacted)",
});

export const IntegrationModels = Type.Object(
  {
    integration_name: Type.String(),
    models: Type.Array(Type.String()),
    scorer_models: Type.Array(Type.String()),
    supports_num_judges: Type.Boolean(),
  },
  { title: 'IntegrationModelsResponse' },
);

export const Permission = Type.Object({ action: Type.String(), allowed: Type.Boolean() });

export const Integration = Type.Object(
  {
    id: Uuid,
    name: Type.Unsafe<string>({ type: 'string', enum: [...INTEGRATION_NAMES] }),
    provider: Type.String(),
    created_at: DateTime,
    updated_at: DateTime,
    created_by: Type.String(),
    permissions: Type.Array(Permission),
    is_selected: Type.Boolean(),
    is_disabled: Type.Boolean(),
  },
  { title: 'Integration' },
);

export const UserCollaborator = Type.Object(
  {
    id: Uuid,
    created_at: DateTime,
    user_id: Uuid,
    first_name: Type.String(),
    last_name: Type.String(),
    email: Type.String(),
    role: RoleValue,
    permissions: Type.Array(Permission),
  },
  { title: 'UserCollaborator' },
);

export const GroupCollaborator = Type.Object(
  {
    id: Uuid,
    created_at: DateTime,
    group_id: Uuid,
    group_name: Type.String(),
    role: RoleValue,
    permissions: Type.Array(Permission),
  },
  { title: 'GroupCollaborator' },
);

export const IntegrationParams = Type.Object({ integration_id: Uuid });
export const IntegrationUserParams = Type.Object({ integration_id: Uuid, user_id: Uuid });
export const IntegrationGroupParams = Type.Object({ integration_id: Uuid, group_id: Uuid });

export const ShareWithUsers = Type.Array(Type.Object({ user_id: Uuid, role: RoleValue }), { maxItems: 100 });
export const ShareWithGroups = Type.Array(Type.Object({ group_id: Uuid, role: RoleValue }), {
  maxItems: 100,
});
export const SetRole = Type.Object({ role: RoleValue });
