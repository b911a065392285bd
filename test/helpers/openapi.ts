/**
 * The route table as the OpenAPI document (`GET /openapi.json`) describes it. The fuzzer, the
 * authorization matrix and the load benchmark all read routes from here, so a route added anywhere
 * is picked up without touching them.
 */

export type JsonSchema = Record<string, any>;

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: JsonSchema;
}

export interface Operation {
  /** `METHOD /path/{param}` exactly as in the document, e.g. `POST /v2/projects/{project_id}/log_streams`. */
  key: string;
  method: string;
  path: string;
  pathParams: Param[];
  queryParams: Param[];
  headerParams: Param[];
  /** Request body: content type → schema. Null when the operation takes none. */
  body: { required: boolean; content: Record<string, JsonSchema> } | null;
  /** `security: []` on the operation: answers without credentials. */
  public: boolean;
  tags: string[];
  /** Status codes the document lists. */
  responses: string[];
}

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** Every `$id` in the document, so `$ref`s that name one resolve (TypeBox recursive types emit them). */
function collectIds(node: unknown, out: Map<string, JsonSchema>, seen = new Set<unknown>()): void {
  if (node === null || typeof node !== 'object' || seen.has(node)) return;
  seen.add(node);
  const n = node as JsonSchema;
  if (typeof n.$id === 'string' && !out.has(n.$id)) out.set(n.$id, n);
  for (const v of Object.values(n)) collectIds(v, out, seen);
}

function pointer(doc: unknown, ref: string): JsonSchema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let cur: any = doc;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const seg = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object' || !(seg in cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

/** Resolves `$ref` against the whole document: JSON pointers and `$id` names (`T0`, `FilterExpression#`). */
export class RefResolver {
  private readonly ids = new Map<string, JsonSchema>();
  constructor(readonly doc: JsonSchema) {
    collectIds(doc, this.ids);
  }
  /** Registers extra schemas whose `$id` may be referenced (an operation's own schema). */
  add(schema: unknown): void {
    collectIds(schema, this.ids);
  }
  target(ref: string): JsonSchema | undefined {
    return (
      pointer(this.doc, ref) ??
      this.ids.get(ref) ??
      this.ids.get(ref.replace(/#$/, '')) ??
      this.ids.get(`${ref}#`) ??
      this.ids.get(ref.split('/').pop() ?? '')
    );
  }
  /** The schema itself when it has no `$ref`; the target when it does (one step), `{}` if unknown. */
  deref(schema: JsonSchema | boolean | undefined): JsonSchema {
    if (schema === undefined || schema === true) return {};
    if (schema === false) return { not: {} };
    let s = schema;
    for (let i = 0; i < 32 && typeof s.$ref === 'string'; i++) {
      const t = this.target(s.$ref);
      if (!t) return {};
      const { $ref: _r, ...rest } = s;
      s = Object.keys(rest).length ? { ...t, ...rest } : t;
    }
    return s;
  }
}

function asParam(p: any, resolver: RefResolver): Param {
  const q = resolver.deref(p);
  return {
    name: q.name,
    in: q.in,
    required: q.required === true || q.in === 'path',
    schema: resolver.deref(q.schema ?? {}),
  };
}

/** Every operation of the document, in document order. */
export function operations(doc: JsonSchema): Operation[] {
  const resolver = new RefResolver(doc);
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    const shared: any[] = item.parameters ?? [];
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = [...shared, ...(op.parameters ?? [])].map((p) => asParam(p, resolver));
      const rb = op.requestBody ? resolver.deref(op.requestBody) : null;
      const content: Record<string, JsonSchema> = {};
      for (const [ct, media] of Object.entries<any>(rb?.content ?? {})) content[ct] = media.schema ?? {};
      const security = op.security ?? doc.security ?? [];
      out.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        headerParams: params.filter((p) => p.in === 'header'),
        body: rb ? { required: rb.required === true, content } : null,
        public: Array.isArray(security) && security.length === 0,
        tags: op.tags ?? [],
        responses: Object.keys(op.responses ?? {}),
      });
    }
  }
  return out;
}

/** Path parameter names of a template, in order. */
export function pathParamNames(template: string): string[] {
  return [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
}

/**
 * A concrete URL for a template. Values are percent-encoded unless `raw` is set (to send hostile
 * bytes as they are); a missing value is left as the literal `{name}`.
 */
export function fillPath(
  template: string,
  values: Record<string, unknown>,
  query?: Record<string, unknown> | string,
  raw = false,
): string {
  const path = template.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    if (!(name in values)) return whole;
    const v = String(values[name]);
    return raw ? v : encodeLoose(v);
  });
  if (query === undefined) return path;
  const qs = typeof query === 'string' ? query : queryString(query);
  return qs ? `${path}?${qs}` : path;
}

/**
 * encodeURIComponent that also takes lone surrogates, percent-encoding them as the (invalid) UTF-8
 * bytes a careless client would send (WTF-8), so such values still reach the server.
 */
export function encodeLoose(text: string): string {
  return text.replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]|[^\ud800-\udfff]+/g, (part) => {
    if (part.length === 1 && /[\ud800-\udfff]/.test(part)) {
      const c = part.charCodeAt(0);
      return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    }
    return encodeURIComponent(part);
  });
}

/** `k=v&k=v` from an object; arrays repeat the key, objects are sent as JSON text. */
export function queryString(values: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined) continue;
    const list = Array.isArray(v) ? v : [v];
    for (const item of list) {
      const text = item !== null && typeof item === 'object' ? JSON.stringify(item) : String(item);
      parts.push(`${encodeLoose(k)}=${encodeLoose(text)}`);
    }
  }
  return parts.join('&');
}

/** A stable name for a route used in rules and summaries. */
export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}

/** True when the operation only reads (GET, or a POST whose path ends in a query verb). */
export function isReadOnly(op: Operation): boolean {
  if (op.method === 'GET' || op.method === 'HEAD') return true;
  return (
    op.method === 'POST' &&
    /\/(search|available_columns|query|token_usage|export|count|aggregate|partial_search)$/.test(op.path)
  );
}

/**
 * Why an answer breaks the service's contract, or null when it keeps it: every answer is a 2xx or a
 * 4xx, and a 4xx carries `{detail: string}` or `{detail: [{loc, msg, type}]}` as JSON.
 */
export function contractProblem(
  status: number,
  text: string,
  contentType: string | undefined,
): string | null {
  if (status >= 500) return `server error ${status}`;
  if (status < 200 || (status >= 300 && status < 400) || status >= 600) return `unexpected status ${status}`;
  if (status < 300) {
    // JSON lines (exports): every line JSON.
    if (/ndjson/.test(contentType ?? '')) {
      const bad = text.split('\n').find((line) => {
        if (line === '') return false;
        try {
          JSON.parse(line);
          return false;
        } catch {
          return true;
        }
      });
      return bad === undefined ? null : 'a 2xx with a JSON lines content type and a line that is not JSON';
    }
    if (/json/.test(contentType ?? '') && text !== '') {
      try {
        JSON.parse(text);
      } catch {
        return 'a 2xx with a JSON content type and a body that is not JSON';
      }
    }
    return null;
  }
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return `a ${status} whose body is not JSON: ${text.slice(0, 120)}`;
  }
  if (!/json/.test(contentType ?? '')) return `a ${status} without a JSON content type (${contentType})`;
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return `a ${status} body that is not an object`;
  if (typeof body.detail === 'string') return null;
  if (!Array.isArray(body.detail)) return `a ${status} body without a detail string or list`;
  if (body.detail.length === 0) return `a ${status} with an empty detail list`;
  for (const item of body.detail) {
    if (item === null || typeof item !== 'object') return `a ${status} detail item that is not an object`;
    if (
      !Array.isArray(item.loc) ||
      !item.loc.every((x: unknown) => typeof x === 'string' || Number.isInteger(x))
    )
      return `a ${status} detail item whose loc is not a list of strings and integers`;
    if (typeof item.msg !== 'string') return `a ${status} detail item without a msg string`;
    if (typeof item.type !== 'string') return `a ${status} detail item without a type string`;
  }
  return null;
}
