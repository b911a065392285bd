import { Type } from '@sinclair/typebox';
import { DateTime, Uuid } from './common.ts';

export const ConsoleLogin = Type.Object(
  {
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { title: 'ConsoleLogin', description: '`email` and `password`, or `api_key`.' },
);

export const ConsoleUser = Type.Object({
  id: Uuid,
  email: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  role: Type.String(),
});

export const ConsoleSession = Type.Object(
  {
    user: ConsoleUser,
    csrf_token: Type.String({
      description: 'Echo in `X-CSRF-Token` on state-changing requests made with the cookie',
    }),
    expires_at: DateTime,
  },
  { title: 'ConsoleSession' },
);
