import { type TSchema, Type } from '@sinclair/typebox';
import { Nullable, Uuid } from '../domain/schema-types.ts';

export { AnyKeyMap, DateTime, Nullable, Uuid } from '../domain/schema-types.ts';

export const ErrorItem = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
  input: Type.Optional(Type.Unknown()),
  ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const ValidationErrorBody = Type.Object(
  { detail: Type.Array(ErrorItem) },
  { $id: 'HTTPValidationError' },
);
export const ErrorBody = Type.Object({ detail: Type.String() }, { $id: 'ErrorBody' });

/** The error answers every authenticated route may give, for the OpenAPI document. */
export function withErrors<R extends Record<number, TSchema>>(responses: R) {
  return {
    ...responses,
    401: ErrorBody,
    403: ErrorBody,
    404: ErrorBody,
    409: ErrorBody,
    413: ErrorBody,
    422: ValidationErrorBody,
    429: ErrorBody,
  };
}

export const Pagination = {
  starting_token: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
};

export const PageEnvelope = {
  starting_token: Type.Integer(),
  limit: Type.Integer(),
  paginated: Type.Boolean(),
  next_starting_token: Nullable(Type.Integer()),
};

export const ProjectParams = Type.Object({ project_id: Uuid });
