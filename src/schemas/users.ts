import { Type } from '@sinclair/typebox';
import { DateTime, Nullable, Uuid } from './common.ts';

export const LoginForm = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
});

export const ApiKeyLogin = Type.Object({ api_key: Type.String({ minLength: 1, maxLength: 256 }) });

export const Token = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('bearer'),
  expires_in: Type.Integer(),
});

export const User = Type.Object({
  id: Uuid,
  email: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  role: Type.String(),
  created_at: DateTime,
});

export const CreateUser = Type.Object({
  email: Type.String({ format: 'email', maxLength: 320 }),
  password: Type.Optional(Nullable(Type.String({ minLength: 8, maxLength: 1024 }))),
  first_name: Type.Optional(Type.String({ maxLength: 255 })),
  last_name: Type.Optional(Type.String({ maxLength: 255 })),
  role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('user')])),
});

export const SetSystemRole = Type.Object({
  role: Type.Union([Type.Literal('admin'), Type.Literal('user')]),
});

export const ApiKey = Type.Object({
  id: Uuid,
  description: Type.String(),
  key_prefix: Type.String(),
  created_at: DateTime,
  expires_at: Nullable(DateTime),
  last_used_at: Nullable(DateTime),
});

export const CreatedApiKey = Type.Object({ ...ApiKey.properties, api_key: Type.String() });

export const CreateApiKey = Type.Object({
  description: Type.Optional(Type.String({ maxLength: 1000 })),
  expires_at: Type.Optional(Nullable(DateTime)),
});

export const Group = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  created_at: DateTime,
});

export const CreateGroup = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
});

export const AddMembers = Type.Array(Type.Object({ user_id: Uuid }), { minItems: 1, maxItems: 1000 });
