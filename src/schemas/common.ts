import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** `T | null` as one JSON Schema type list, so validation errors name the real type. */
export function Nullable<T extends TSchema>(schema: T) {
  const s = schema as any;
  if (typeof s.type === 'string') return Type.Unsafe<T['static'] | null>({ ...s, type: [s.type, 'null'] });
  return Type.Union([schema, Type.Null()]);
}

/**
 * An object whose keys are any strings, each holding a `value`. Not `Type.Record(Type.String(), ...)`:
 * that names its keys by the pattern `^(.*)$`, which a key holding a line terminator does not match,
 * and the response serializer drops the keys its schema does not describe.
 */
export function AnyKeyMap<T extends TSchema>(value: T, options: { description?: string } = {}) {
  return Type.Unsafe<Record<string, Static<T>>>({ ...options, type: 'object', additionalProperties: value });
}

export const Uuid = Type.String({ format: 'uuid' });
export const DateTime = Type.String({ format: 'date-time' });

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
