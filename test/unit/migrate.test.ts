import assert from 'node:assert/strict';
import { test } from 'node:test';
import { otherSchemaVanished } from '../../src/store/migrate.ts';

test('a migration is retried when another schema, or a table of one, vanished under the introspection', () => {
  assert.equal(otherSchemaVanished('schema "t_1" does not exist', 'c_2'), true);
  assert.equal(otherSchemaVanished('relation "t_1.records" does not exist', 'c_2'), true);
  assert.equal(otherSchemaVanished('schema "c_2" does not exist', 'c_2'), false);
  assert.equal(otherSchemaVanished('relation "c_2.records" does not exist', 'c_2'), false);
  assert.equal(otherSchemaVanished('relation "records" does not exist', 'c_2'), false);
  assert.equal(otherSchemaVanished('syntax error at or near "x"', 'c_2'), false);
});
