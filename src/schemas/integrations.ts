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
