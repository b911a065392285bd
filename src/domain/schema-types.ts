/**
 * JSON Schema building blocks (TypeBox) shared by the API schemas (src/schemas) and the record's
 * response shape (domain/record-json.ts), which the store renders too.
 */
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
