/**
 * fast-check arbitraries derived from JSON schemas (the operation schemas of `/openapi.json`):
 * values that satisfy a schema, values that break it in one place, and hostile values (injection
 * strings, unicode edge cases, prototype keys, extreme numbers).
 */
import fc from 'fast-check';
import type { JsonSchema, RefResolver } from './openapi.ts';

/** Strings that have broken services elsewhere: SQL and JSON-path injection, unicode edge cases. */
export const HOSTILE_STRINGS: readonly string[] = [
  "'; drop table records; --",
  "'); DROP TABLE records; --",
  '" OR 1=1 --',
  "' OR '1'='1",
  '$.a"]',
  '$[*]',
  "$.a') or 1=1 --",
  "user_metadata/x') or 1=1 --",
  'user_metadata/x"; drop table records; --',
  "user_metadata/'",
  'user_metadata/$.a"]',
  'user_metadata/__proto__',
  'user_metadata/constructor',
  'user_metadata/',
  'user_metadata/a/b/c',
  "dataset_metadata/x' || 'y",
  'dataset_metadata/',
  "metrics/x') or 1=1 --",
  'metrics/__proto__',
  'metrics/',
  'metrics/duration_ns; select 1',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'x\ud83dy',
  '\u202eevil\u202c',
  '\u200f\u05e9\u05dc\u05d5\u05dd',
  '\ufeff',
  '\u2028\u2029',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  'é'.normalize('NFD'),
  'İıſK',
  '%',
  '_',
  '%_\\',
  '\\',
  "'",
  '"',
  '`',
  '--',
  '/*',
  '*/',
  ';',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, on purpose
  '${7*7}',
  '{{7*7}}',
  '%s%n%x',
  '../../../../etc/passwd',
  '<script>alert(1)</script>',
  'null',
  'undefined',
  'NaN',
  '-0',
  '1e309',
  '9223372036854775808',
  ' ',
  '',
  '\t\n\r',
  'a'.repeat(300),
  '日本語テキスト',
];

export const HOSTILE_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  "x') or 1=1 --",
  "'; drop table records; --",
  '$.a"]',
  'a.b',
  'a/b',
  '',
  ' ',
  '\u0000',
  '\ud800',
  '👩‍👩‍👧‍👦',
  '\u202e',
  '%',
  '_',
  '"',
  "'",
  '\\',
  'k'.repeat(300),
];

export const HOSTILE_NUMBERS: readonly number[] = [
  0,
  -0,
  -1,
  1,
  0.5,
  -0.5,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53) - 2,
  2 ** 63,
  -(2 ** 63),
  1e20,
  1e300,
  -1e300,
  5e-324,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
];

/** Defines an own, enumerable property even for `__proto__` (plain assignment would set the prototype). */
export function put(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export interface GenOptions {
  resolver: RefResolver;
  /** Real values for a property or parameter of this name (ids that exist); used most of the time. */
  pool?: (name: string) => readonly unknown[] | undefined;
  /** Recursion depth after which recursive schemas are closed off. Default 4. */
  maxDepth?: number;
  /** Longest generated array where the schema sets no bound. Default 4. */
  maxItems?: number;
  /** Longest generated string where the schema sets no bound. Default 24. */
  maxString?: number;
  /** Mix hostile strings into free strings and hostile keys into free-form objects. */
  hostile?: boolean;
  /**
   * Values that mean something for a property of this name (column ids, URLs, cron expressions),
   * so generated bodies get past semantic checks; used most of the time when given.
   */
  hints?: (name: string, schema: JsonSchema) => fc.Arbitrary<unknown> | undefined;
}

interface Ctx {
  o: GenOptions;
  depth: number;
  refs: string[];
}

function types(s: JsonSchema): string[] {
  if (Array.isArray(s.type)) return s.type;
  if (typeof s.type === 'string') return [s.type];
  if (s.properties || s.additionalProperties || s.patternProperties || s.required) return ['object'];
  if (s.items || s.prefixItems) return ['array'];
  if (s.format || s.pattern || s.minLength !== undefined || s.maxLength !== undefined) return ['string'];
  if (s.minimum !== undefined || s.maximum !== undefined) return ['number'];
  return [];
}

/** One `$ref` step, remembering it so recursive schemas can be closed off. */
function enter(schema: JsonSchema, c: Ctx): { s: JsonSchema; c: Ctx } {
  let s = schema;
  let refs = c.refs;
  if (typeof s.$id === 'string') refs = [...refs, s.$id];
  if (typeof s.$ref === 'string') {
    refs = [...refs, s.$ref];
    s = c.o.resolver.deref(s);
    if (typeof s.$id === 'string') refs = [...refs, s.$id];
  }
  return { s, c: { ...c, refs } };
}

function closing(c: Ctx): boolean {
  const max = c.o.maxDepth ?? 4;
  if (c.depth >= max * 3) return true;
  const counts = new Map<string, number>();
  for (const r of c.refs) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts.values()].some((n) => n > max);
}

/** Whether a schema (shallowly, through properties, items and unions) leads back into a ref being expanded. */
function recurses(s: JsonSchema, c: Ctx, seen = new Set<unknown>()): boolean {
  if (!s || typeof s !== 'object' || seen.has(s)) return false;
  seen.add(s);
  if (typeof s.$ref === 'string') {
    if (c.refs.includes(s.$ref)) return true;
    return recurses(c.o.resolver.deref(s), c, seen);
  }
  const kids: JsonSchema[] = [
    ...Object.values<JsonSchema>(s.properties ?? {}).filter((_, i) => {
      const key = Object.keys(s.properties)[i];
      return (s.required ?? []).includes(key);
    }),
    ...(s.anyOf ?? []),
    ...(s.oneOf ?? []),
    ...(s.allOf ?? []),
  ];
  if (s.items && typeof s.items === 'object' && (s.minItems ?? 0) > 0) kids.push(s.items);
  return kids.some((k) => recurses(k, c, seen));
}

function branchesOf(s: JsonSchema): JsonSchema[] | null {
  return s.anyOf ?? s.oneOf ?? null;
}

function mergeAllOf(s: JsonSchema, c: Ctx): JsonSchema {
  const { allOf, ...rest } = s;
  let out: JsonSchema = { ...rest };
  for (const part of allOf as JsonSchema[]) {
    const p = c.o.resolver.deref(part);
    out = {
      ...out,
      ...p,
      properties: { ...(out.properties ?? {}), ...(p.properties ?? {}) },
      required: [...(out.required ?? []), ...(p.required ?? [])],
    };
  }
  return out;
}

function safeRegex(pattern: string): RegExp | null {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    try {
      return new RegExp(pattern);
    } catch {
      return null;
    }
  }
}

/** Ajv counts string length in code points. */
function cpLength(v: string): number {
  let n = 0;
  for (const _ of v) n++;
  return n;
}

function lengthOk(v: string, s: JsonSchema): boolean {
  const n = cpLength(v);
  return n >= (s.minLength ?? 0) && n <= (s.maxLength ?? Number.POSITIVE_INFINITY);
}

function dateArb() {
  return fc.date({
    min: new Date('1971-01-01T00:00:00Z'),
    max: new Date('2099-12-31T00:00:00Z'),
    noInvalidDate: true,
  });
}

function stringArb(s: JsonSchema, c: Ctx): fc.Arbitrary<string> {
  const cap = c.o.maxString ?? 24;
  switch (s.format) {
    case 'uuid':
      return fc.uuid({ version: 4 });
    case 'date-time':
      return dateArb().map((d) => d.toISOString());
    case 'date':
      return dateArb().map((d) => d.toISOString().slice(0, 10));
    case 'email':
      return fc
        .tuple(fc.stringMatching(/^[a-z][a-z0-9]{0,10}$/), fc.stringMatching(/^[a-z]{1,8}$/))
        .map(([a, b]) => `${a}@${b}.example.com`);
    case 'uri':
    case 'url':
      return fc.webUrl({ validSchemes: ['http', 'https'] }).filter((u) => lengthOk(u, s));
    default:
  }
  if (typeof s.pattern === 'string') {
    const re = safeRegex(s.pattern);
    if (re) {
      return fc.stringMatching(re).filter((v) => lengthOk(v, s) && re.test(v));
    }
  }
  const min = s.minLength ?? 0;
  const max = Math.max(min, Math.min(s.maxLength ?? min + cap, min + cap));
  const plain = fc.oneof(
    { weight: 3, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' }) },
    { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'grapheme' }) },
    { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'binary' }) },
  );
  if (!c.o.hostile) return plain;
  const hostile = HOSTILE_STRINGS.filter((v) => lengthOk(v, s));
  return hostile.length
    ? fc.oneof({ weight: 1, arbitrary: plain }, { weight: 2, arbitrary: fc.constantFrom(...hostile) })
    : plain;
}

function integerArb(s: JsonSchema): fc.Arbitrary<number> {
  let lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? Math.floor(s.exclusiveMinimum) + 1 : undefined);
  let hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? Math.ceil(s.exclusiveMaximum) - 1 : undefined);
  lo = Math.ceil(lo ?? -(2 ** 31));
  hi = Math.floor(hi ?? 2 ** 31);
  if (hi < lo) hi = lo;
  const edges = [lo, hi, 0, 1].filter((v) => v >= lo! && v <= hi!);
  return fc.oneof({ weight: 4, arbitrary: fc.integer({ min: lo, max: hi }) }, fc.constantFrom(...edges));
}

function numberArb(s: JsonSchema): fc.Arbitrary<number> {
  const lo = s.minimum ?? s.exclusiveMinimum ?? -1e9;
  const hi = s.maximum ?? s.exclusiveMaximum ?? 1e9;
  return fc
    .double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true })
    .filter(
      (v) =>
        (s.exclusiveMinimum === undefined || v > s.exclusiveMinimum) &&
        (s.exclusiveMaximum === undefined || v < s.exclusiveMaximum) &&
        !Object.is(v, -0),
    );
}

function keyArb(s: JsonSchema, c: Ctx): fc.Arbitrary<string> {
  const pattern = s.patternProperties ? Object.keys(s.patternProperties)[0] : undefined;
  const re = pattern ? safeRegex(pattern) : null;
  const plain = re
    ? fc.stringMatching(re).filter((k) => k.length <= 40)
    : fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme-ascii' });
  if (!c.o.hostile) return plain;
  const hostile = HOSTILE_KEYS.filter((k) => !re || re.test(k));
  return hostile.length ? fc.oneof(plain, fc.constantFrom(...hostile)) : plain;
}

function objectArb(s: JsonSchema, c: Ctx): fc.Arbitrary<Record<string, unknown>> {
  const props: Record<string, JsonSchema> = s.properties ?? {};
  const required = new Set<string>(s.required ?? []);
  const close = closing(c);
  const keys = Object.keys(props);
  const entries: fc.Arbitrary<[string, unknown] | null>[] = keys.map((k) => {
    const p = c.o.resolver.deref(props[k]);
    const must = required.has(k) && !('default' in p);
    // Built lazily: an optional property of a recursive schema must not be expanded once closing.
    if (!must && close) return fc.constant(null);
    const arb = gen(props[k], { ...c, depth: c.depth + 1 }, k).map((v) => [k, v] as [string, unknown]);
    if (must) return arb;
    return fc.option(arb, { nil: null, freq: 2 });
  });
  const extraSchema = s.patternProperties
    ? Object.values<JsonSchema>(s.patternProperties)[0]
    : s.additionalProperties && typeof s.additionalProperties === 'object'
      ? s.additionalProperties
      : null;
  const extras: fc.Arbitrary<[string, unknown][]> =
    extraSchema && !close
      ? fc.array(fc.tuple(keyArb(s, c), gen(extraSchema, { ...c, depth: c.depth + 1 })), {
          maxLength: Math.min(s.maxProperties ?? 3, 3),
        })
      : fc.constant([]);
  return fc.tuple(fc.tuple(...entries), extras).map(([fixed, extra]) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of extra) if (!(k in props)) put(out, k, v);
    for (const e of fixed) if (e) put(out, e[0], e[1]);
    return out;
  });
}

function gen(schema0: JsonSchema | boolean, c0: Ctx, name?: string): fc.Arbitrary<unknown> {
  if (schema0 === true || schema0 === undefined) return fc.jsonValue({ maxDepth: 1 });
  if (schema0 === false) return fc.constant(null);
  const { s: raw, c } = enter(schema0, c0);
  const s = raw.allOf ? mergeAllOf(raw, c) : raw;
  const inner = genInner(s, c, name);
  const pooled = name ? c.o.pool?.(name) : undefined;
  if (pooled?.length) {
    return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...pooled) }, { weight: 1, arbitrary: inner });
  }
  const hinted = name ? c.o.hints?.(name, s) : undefined;
  if (hinted) return fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: inner });
  return inner;
}

function genInner(s: JsonSchema, c: Ctx, name?: string): fc.Arbitrary<unknown> {
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum) && s.enum.length) return fc.constantFrom(...s.enum);
  const branches = branchesOf(s);
  if (branches) {
    const { anyOf: _a, oneOf: _o, discriminator: _d, ...rest } = s;
    let list = branches.map((b) => (Object.keys(rest).length ? { ...rest, ...c.o.resolver.deref(b) } : b));
    if (closing(c)) {
      const flat = list.filter((b) => !recurses(b, c));
      if (flat.length) list = flat;
    }
    return fc.oneof(...list.map((b) => gen(b, c, name)));
  }
  const ts = types(s);
  if (ts.length === 0) return fc.jsonValue({ maxDepth: 1 });
  if (ts.length > 1) return fc.oneof(...ts.map((t) => genInner({ ...s, type: t }, c, name)));
  switch (ts[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return integerArb(s);
    case 'number':
      return numberArb(s);
    case 'string':
      return stringArb(s, c);
    case 'array': {
      const cap = c.o.maxItems ?? 4;
      const min = s.minItems ?? 0;
      const max = closing(c) ? min : Math.min(s.maxItems ?? min + cap, min + cap);
      const items = s.items && typeof s.items === 'object' ? s.items : {};
      if (max === 0) return fc.constant([]);
      return fc.array(gen(items, { ...c, depth: c.depth + 1 }), { minLength: min, maxLength: max });
    }
    case 'object':
      return objectArb(s, c);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

/** Values that satisfy the schema (best effort: cross-field rules and overlapping unions are not modelled). */
export function validArb(schema: JsonSchema, o: GenOptions, name?: string): fc.Arbitrary<unknown> {
  return gen(schema, { o, depth: 0, refs: [] }, name);
}

// ---------------------------------------------------------------------------------------------
// Invalid values: a valid value with one fault.

const TYPE_SAMPLES: [string, unknown][] = [
  ['string', 'x'],
  ['string', ''],
  ['integer', 17],
  ['number', 1.5],
  ['boolean', true],
  ['null', null],
  ['array', []],
  ['array', ['x', 1]],
  ['object', {}],
  ['object', { a: 1 }],
];

function allows(ts: string[], t: string): boolean {
  if (ts.length === 0) return true;
  if (ts.includes(t)) return true;
  return t === 'integer' && ts.includes('number');
}

function wrongTypeArb(s: JsonSchema, c: Ctx): fc.Arbitrary<unknown> | null {
  let ts = types(s);
  const branches = branchesOf(s);
  if (branches) {
    const all = branches.map((b) => types(c.o.resolver.deref(b)));
    if (all.some((t) => t.length === 0)) return null;
    ts = all.flat();
  }
  if (s.enum) ts = [...new Set(s.enum.map((v: unknown) => (v === null ? 'null' : typeof v)))] as string[];
  if ('const' in s) return fc.constantFrom('__not_the_const__', 12345, null);
  const wrong = TYPE_SAMPLES.filter(([t]) => !allows(ts, t)).map(([, v]) => v);
  return wrong.length ? fc.constantFrom(...wrong) : null;
}

function leafViolations(s: JsonSchema): fc.Arbitrary<unknown>[] {
  const out: fc.Arbitrary<unknown>[] = [];
  const ts = types(s);
  if (Array.isArray(s.enum)) {
    const bad = [
      'not-a-valid-choice',
      ...s.enum.filter((v: unknown) => typeof v === 'string').map((v: string) => v.toUpperCase()),
    ].filter((v) => !s.enum.includes(v));
    out.push(fc.constantFrom(...bad));
  }
  if (ts.includes('string')) {
    if (s.maxLength !== undefined) out.push(fc.constant('x'.repeat(s.maxLength + 1)));
    if ((s.minLength ?? 0) > 0) out.push(fc.constant('x'.repeat(s.minLength - 1)));
    if (s.format === 'uuid')
      out.push(
        fc.constantFrom(
          'not-a-uuid',
          '00000000-0000-0000-0000-00000000000g',
          'e2b4d9c0a1f24c1e9a2b3c4d5e6f7a8b',
          ' 5f1c2b3a-1d2e-4f3a-8b9c-0d1e2f3a4b5c',
          '{5f1c2b3a-1d2e-4f3a-8b9c-0d1e2f3a4b5c}',
          "5f1c2b3a-1d2e-4f3a-8b9c-0d1e2f3a4b5c' or 1=1 --",
        ),
      );
    if (s.format === 'date-time' || s.format === 'date')
      out.push(
        fc.constantFrom(
          '2024-13-45T99:99:99Z',
          'yesterday',
          '2024-02-30',
          '0000-00-00T00:00:00Z',
          '1e309',
          '-1',
        ),
      );
    if (s.format === 'email') out.push(fc.constantFrom('no-at-sign', '@', 'a@', "x'@y.z"));
    if (s.format === 'uri' || s.format === 'url')
      out.push(fc.constantFrom('not a url', 'javascript:alert(1)', 'ftp://', '//no-scheme', 'http://'));
    if (typeof s.pattern === 'string') {
      const re = safeRegex(s.pattern);
      if (re) out.push(fc.constantFrom(...[...HOSTILE_STRINGS, 'x', '0'].filter((v) => !re.test(v))));
    }
  }
  if (ts.includes('integer') || ts.includes('number')) {
    const bad: number[] = [];
    if (ts.includes('integer') && !ts.includes('number')) bad.push(1.5, -0.25);
    if (s.minimum !== undefined) bad.push(s.minimum - 1);
    if (s.exclusiveMinimum !== undefined) bad.push(s.exclusiveMinimum);
    if (s.maximum !== undefined) bad.push(s.maximum + 1);
    if (s.exclusiveMaximum !== undefined) bad.push(s.exclusiveMaximum);
    if (bad.length) out.push(fc.constantFrom(...bad));
    out.push(fc.constantFrom(...HOSTILE_NUMBERS));
  }
  return out;
}

function invalidGen(schema0: JsonSchema, c0: Ctx): fc.Arbitrary<unknown> {
  const { s: raw, c } = enter(schema0, c0);
  const s = raw.allOf ? mergeAllOf(raw, c) : raw;
  const cands: fc.Arbitrary<unknown>[] = [];
  const wrong = wrongTypeArb(s, c);
  if (wrong) cands.push(wrong);
  cands.push(...leafViolations(s));
  const deeper = c.depth < 4;
  const branches = branchesOf(s);
  if (branches && deeper) {
    const disc = s.discriminator?.propertyName;
    if (disc) {
      cands.push(
        validArb(c.o.resolver.deref(branches[0]), c.o).map((v) =>
          v && typeof v === 'object' && !Array.isArray(v) ? { ...(v as object), [disc]: 'no_such_kind' } : v,
        ),
      );
    }
    cands.push(
      fc.oneof(...branches.map((b) => invalidGen(c.o.resolver.deref(b), { ...c, depth: c.depth + 1 }))),
    );
  }
  const ts = types(s);
  if (ts.includes('object') && !branches) {
    const props: Record<string, JsonSchema> = s.properties ?? {};
    const keys = Object.keys(props);
    const base = objectArb(s, c);
    const required = (s.required ?? []).filter(
      (k: string) => !('default' in c.o.resolver.deref(props[k] ?? {})),
    );
    if (required.length) {
      cands.push(
        fc.tuple(base, fc.constantFrom(...required)).map(([v, k]) => {
          const copy = { ...v };
          delete copy[k as string];
          return copy;
        }),
      );
    }
    if (keys.length && deeper) {
      cands.push(
        fc.constantFrom(...keys).chain((k) =>
          fc.tuple(base, invalidGen(props[k], { ...c, depth: c.depth + 1 })).map(([v, bad]) => {
            const copy = { ...v };
            put(copy, k, bad);
            return copy;
          }),
        ),
      );
    }
    if (s.additionalProperties === false) {
      cands.push(base.map((v) => ({ ...v, unexpected_field: 1 })));
    }
  }
  if (ts.includes('array') && !branches) {
    const items = s.items && typeof s.items === 'object' ? s.items : {};
    if (s.maxItems !== undefined && s.maxItems < 5000) {
      cands.push(
        validArb(items, { ...c.o, maxDepth: 1 }).map((one) =>
          Array.from({ length: s.maxItems + 1 }, () => one),
        ),
      );
    }
    if ((s.minItems ?? 0) > 0) cands.push(fc.constant([]));
    if (deeper) {
      cands.push(
        fc
          .tuple(
            fc.array(validArb(items, { ...c.o, maxDepth: 1 }), { maxLength: 2 }),
            invalidGen(items, { ...c, depth: c.depth + 1 }),
          )
          .map(([good, bad]) => [...good, bad]),
      );
    }
  }
  if (cands.length === 0) return fc.constant({ __unexpected__: [Symbol.for('none').toString()] });
  return fc.oneof(...cands);
}

/** Values with (usually) exactly one fault against the schema: wrong type, bound, format, missing field. */
export function invalidArb(schema: JsonSchema, o: GenOptions): fc.Arbitrary<unknown> {
  return invalidGen(schema, { o, depth: 0, refs: [] });
}

/** Any JSON value built from hostile strings, keys and numbers. */
export function hostileJsonArb(maxDepth = 3): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    fc.constantFrom(...HOSTILE_STRINGS),
    fc.constantFrom(...HOSTILE_NUMBERS),
    fc.constantFrom(true, false, null),
    fc.string({ unit: 'binary', maxLength: 16 }),
  );
  const { value } = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', maxDepth, withCrossShrink: true },
      leaf,
      fc.array(tie('value'), { maxLength: 3 }),
      fc
        .array(
          fc.tuple(fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 6 })), tie('value')),
          {
            maxLength: 3,
          },
        )
        .map((pairs) => {
          const o: Record<string, unknown> = {};
          for (const [k, v] of pairs) put(o, k, v);
          return o;
        }),
    ),
  }));
  return value;
}

// ---------------------------------------------------------------------------------------------
// Deep nesting along a recursive schema (filter trees): the text of a value nested `depth` times.

type Step = { prop: string } | { index: true };

/**
 * Finds, from the root schema, a path to a recursive schema R and a cycle of steps from R back to
 * R (e.g. `{not: R}` or `{and: [R]}`). Null when the schema is not recursive.
 */
export function findRecursion(
  root: JsonSchema,
  resolver: RefResolver,
): { toR: Step[]; cycle: Step[]; leaf: JsonSchema } | null {
  type Frame = { s: JsonSchema; steps: Step[]; ids: Map<string, number> };
  const start: Frame = { s: root, steps: [], ids: new Map() };
  const queue: Frame[] = [start];
  let guard = 0;
  while (queue.length && guard++ < 5000) {
    const f = queue.shift()!;
    let s = f.s;
    const ids = new Map(f.ids);
    const mark = (id: string) => {
      if (!ids.has(id)) ids.set(id, f.steps.length);
    };
    if (typeof s.$ref === 'string') {
      if (ids.has(s.$ref)) {
        const at = ids.get(s.$ref)!;
        return { toR: f.steps.slice(0, at), cycle: f.steps.slice(at), leaf: resolver.deref(s) };
      }
      mark(s.$ref);
      s = resolver.deref(s);
    }
    if (typeof s.$id === 'string') mark(s.$id);
    if (f.steps.length > 12) continue;
    for (const b of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])])
      queue.push({ s: b, steps: f.steps, ids });
    for (const [k, p] of Object.entries<JsonSchema>(s.properties ?? {}))
      queue.push({ s: p, steps: [...f.steps, { prop: k }], ids });
    if (s.items && typeof s.items === 'object')
      queue.push({ s: s.items, steps: [...f.steps, { index: true }], ids });
  }
  return null;
}

/** JSON text opening and closing one level of a step path: `{"not":` … `}` or `{"and":[` … `]}`. */
function wrapText(steps: Step[]): [string, string] {
  let open = '';
  let close = '';
  for (const st of steps) {
    if ('prop' in st) {
      open += `{${JSON.stringify(st.prop)}:`;
      close = `}${close}`;
    } else {
      open += '[';
      close = `]${close}`;
    }
  }
  return [open, close];
}

/** The text of `leaf` nested `depth` times along `cycle`, placed at `toR` in an otherwise empty body. */
export function deepText(rec: { toR: Step[]; cycle: Step[] }, leafText: string, depth: number): string {
  const [o, c] = wrapText(rec.cycle);
  const [ro, rc] = wrapText(rec.toR);
  return ro + o.repeat(depth) + leafText + c.repeat(depth) + rc;
}

/** `[[[...]]]` and `{"a":{"a":...}}` `depth` levels deep. */
export function nestedArrays(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}
export function nestedObjects(depth: number, key = 'a'): string {
  return `{"${key}":`.repeat(depth) + '{}' + '}'.repeat(depth);
}
