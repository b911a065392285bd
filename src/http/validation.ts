import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsPlugin from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { type ErrorItem, type Loc, ValidationError } from '../domain/errors.ts';

/**
 * Two validators: bodies are checked without type coercion (a union such as `string | number` must
 * keep the client's type), while path and query strings are coerced from text.
 */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    discriminator: true,
  });
  // ajv-formats is CommonJS; its default export arrives wrapped under ESM.
  ((formatsPlugin as any).default ?? formatsPlugin)(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

/**
 * Closes two gaps of JSON Schema as Ajv applies it, for every request schema of every route:
 * - `discriminator` is an object-only keyword, so a discriminated union without `type: 'object'`
 *   lets any string, number or array through (found by fuzzing: `"sort": "x"` reached SQL).
 * - `integer` without bounds accepts 1e20, which no store can take as an offset or a bigint;
 *   integers are bounded to the safe range (±2^53 − 1).
 * The schema objects are amended in place (idempotently), so the OpenAPI document shows the same.
 */
export function hardenSchema(schema: unknown, seen = new Set<unknown>()): void {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
  seen.add(schema);
  const s = schema as Record<string, any>;
  if (s.discriminator && s.type === undefined) s.type = 'object';
  const isInteger = s.type === 'integer' || (Array.isArray(s.type) && s.type.includes('integer'));
  if (isInteger) {
    if (s.maximum === undefined && s.exclusiveMaximum === undefined) s.maximum = Number.MAX_SAFE_INTEGER;
    if (s.minimum === undefined && s.exclusiveMinimum === undefined) s.minimum = -Number.MAX_SAFE_INTEGER;
  }
  for (const k of SCHEMA_MAPS)
    if (s[k] && typeof s[k] === 'object') for (const v of Object.values(s[k])) hardenSchema(v, seen);
  for (const k of SCHEMA_LISTS) if (Array.isArray(s[k])) for (const v of s[k]) hardenSchema(v, seen);
  for (const k of SCHEMA_ONE) {
    if (Array.isArray(s[k])) for (const v of s[k]) hardenSchema(v, seen);
    else hardenSchema(s[k], seen);
  }
}

/** Keywords whose value is a map of names to schemas, a list of schemas, or one schema. */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SCHEMA_ONE = [
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
];

/**
 * Each route's validator is compiled by Ajv on its first request, not at start: compiling the ~400
 * schemas of every route took about a second of a two-second start, for routes most servers seldom
 * see. The schema is hardened at once (the OpenAPI document shows it so from the start).
 */
export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  hardenSchema(schema);
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  let compiled: ValidateFunction | null = null;
  // Fastify reads the faults from the function's `errors`, as Ajv's own validators carry them.
  const validate = (data: unknown) => {
    compiled ??= ajv.compile(schema as object);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null as ValidateFunction['errors'];
  return validate as any;
};

const bodyCheckers = new WeakMap<object, ValidateFunction>();

/**
 * Checks a value against a route's body schema exactly as the route would (same validator, same 422
 * items, `loc` starting at `body`), for callers outside HTTP: the command line takes the same input
 * as the API and refuses what the API refuses.
 */
export function checkBody<T>(schema: object, value: unknown): T {
  let validate = bodyCheckers.get(schema);
  if (!validate) {
    hardenSchema(schema);
    validate = bodyAjv.compile(schema);
    bodyCheckers.set(schema, validate);
  }
  if (!validate(value)) throw new ValidationError(toErrorItems(validate.errors ?? [], 'body', value));
  return value as T;
}

const PART: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** Fields whose value must never be echoed back in an error item. */
const SECRET_FIELDS = new Set(['token', 'password', 'api_key', 'secret']);

const TYPE_NAMES: Record<string, string> = {
  string: 'string_type',
  integer: 'int_type',
  number: 'float_type',
  boolean: 'bool_type',
  object: 'dict_type',
  array: 'list_type',
  null: 'none_required',
};

const FORMAT_NAMES: Record<string, string> = {
  uuid: 'uuid_parsing',
  'date-time': 'datetime_parsing',
  date: 'date_parsing',
  uri: 'url_parsing',
};

const KEYWORD_NAMES: Record<string, string> = {
  enum: 'enum',
  const: 'literal_error',
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  pattern: 'string_pattern_mismatch',
  minItems: 'too_short',
  maxItems: 'too_long',
  minProperties: 'too_short',
  maxProperties: 'too_long',
  minimum: 'greater_than_equal',
  exclusiveMinimum: 'greater_than',
  maximum: 'less_than_equal',
  exclusiveMaximum: 'less_than',
  multipleOf: 'multiple_of',
  required: 'missing',
  additionalProperties: 'extra_forbidden',
  discriminator: 'union_tag_invalid',
};

function pathOf(instancePath: string): Loc {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^(0|[1-9]\d*)$/.test(seg) ? Number(seg) : seg));
}

function valueAt(data: unknown, loc: Loc): unknown {
  let cur: any = data;
  for (const k of loc) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[k as any];
  }
  return cur;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** Bounds said as sentences, in the hosted API's words (Ajv's are "must NOT have fewer than 8 characters"). */
const BOUND_MESSAGES: Record<string, (limit: number) => string> = {
  minLength: (n) => `String should have at least ${plural(n, 'character')}`,
  maxLength: (n) => `String should have at most ${plural(n, 'character')}`,
  minItems: (n) => `List should have at least ${plural(n, 'item')}`,
  maxItems: (n) => `List should have at most ${plural(n, 'item')}`,
  minProperties: (n) => `Object should have at least ${plural(n, 'field')}`,
  maxProperties: (n) => `Object should have at most ${plural(n, 'field')}`,
  minimum: (n) => `Input should be greater than or equal to ${n}`,
  exclusiveMinimum: (n) => `Input should be greater than ${n}`,
  maximum: (n) => `Input should be less than or equal to ${n}`,
  exclusiveMaximum: (n) => `Input should be less than ${n}`,
  multipleOf: (n) => `Input should be a multiple of ${n}`,
};

function describe(e: ErrorObject): { type: string; msg: string } {
  const bound = BOUND_MESSAGES[e.keyword];
  const limit = e.params.limit ?? e.params.multipleOf;
  if (bound && typeof limit === 'number') return { type: KEYWORD_NAMES[e.keyword], msg: bound(limit) };
  switch (e.keyword) {
    case 'type': {
      const t = Array.isArray(e.params.type) ? e.params.type[0] : e.params.type;
      return { type: TYPE_NAMES[t] ?? 'value_error', msg: `Input should be a valid ${e.params.type}` };
    }
    case 'format':
      return {
        type: FORMAT_NAMES[e.params.format] ?? 'value_error',
        msg: `Input should be a valid ${e.params.format}`,
      };
    case 'required':
      return { type: 'missing', msg: 'Field required' };
    case 'enum':
      return {
        type: 'enum',
        msg: `Input should be ${e.params.allowedValues.map((v: unknown) => `'${v}'`).join(', ')}`,
      };
    case 'const':
      return { type: 'literal_error', msg: `Input should be '${e.params.allowedValue}'` };
    default:
      return { type: KEYWORD_NAMES[e.keyword] ?? 'value_error', msg: e.message ?? 'Invalid value' };
  }
}

/** Ajv errors → the 422 items of decisions.md, one per fault, with `loc` starting at the request part. */
export function toErrorItems(errors: ErrorObject[], context: string, data: unknown): ErrorItem[] {
  const part = PART[context] ?? context;
  // A failed union reports each branch; keep one item for the union itself, described by its first
  // branch's fault. Unions are found by key (schema path and instance path, each prefix of an error's
  // own), so a body with thousands of faults is answered in linear time, not quadratic.
  const unions = new Map<string, ErrorObject>();
  for (const e of errors)
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') unions.set(`${e.schemaPath}\0${e.instancePath}`, e);
  const enclosing = (e: ErrorObject): ErrorObject[] => {
    if (!unions.size) return [];
    const out: ErrorObject[] = [];
    const instancePrefixes = [''];
    for (let i = e.instancePath.indexOf('/', 1); i !== -1; i = e.instancePath.indexOf('/', i + 1))
      instancePrefixes.push(e.instancePath.slice(0, i));
    if (e.instancePath) instancePrefixes.push(e.instancePath);
    for (const m of e.schemaPath.matchAll(/\/(anyOf|oneOf)(?=\/)/g)) {
      const schemaPrefix = e.schemaPath.slice(0, m.index + m[0].length);
      for (const ip of instancePrefixes) {
        const u = unions.get(`${schemaPrefix}\0${ip}`);
        if (u && u !== e) out.push(u);
      }
    }
    return out;
  };
  const firstBranch = new Map<ErrorObject, ErrorObject>();
  const inUnion = new Set<ErrorObject>();
  for (const e of errors) {
    for (const u of enclosing(e)) {
      inUnion.add(e);
      if (!firstBranch.has(u)) firstBranch.set(u, e);
    }
  }
  const insideUnion = (e: ErrorObject) => inUnion.has(e);
  const items: ErrorItem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (insideUnion(e)) continue;
    let loc = pathOf(e.instancePath);
    let described = describe(e);
    if (e.keyword === 'required') loc = [...loc, e.params.missingProperty];
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      const branch = firstBranch.get(e);
      described = branch
        ? describe(branch)
        : { type: 'value_error', msg: 'Input does not match any allowed shape' };
      if (e.keyword === 'oneOf' && e.params?.passingSchemas)
        described = { type: 'value_error', msg: 'Input matches more than one shape' };
    }
    const key = `${JSON.stringify(loc)}|${described.type}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const item: ErrorItem = { loc: [part, ...loc], msg: described.msg, type: described.type };
    const last = loc[loc.length - 1];
    if (e.keyword !== 'required' && !(typeof last === 'string' && SECRET_FIELDS.has(last))) {
      const input = valueAt(data, loc);
      if (input !== undefined) item.input = input;
    }
    if (e.keyword === 'enum') item.ctx = { expected: e.params.allowedValues };
    else if (
      ['minLength', 'maxLength', 'minItems', 'maxItems', 'minimum', 'maximum', 'pattern'].includes(e.keyword)
    ) {
      item.ctx = { ...e.params };
    }
    items.push(item);
  }
  return items;
}
