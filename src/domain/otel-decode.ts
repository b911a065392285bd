/**
 * OTLP/HTTP trace exports → plain spans, and the ExportTraceServiceResponse back.
 *
 * Decoding uses the protobufjs static code generated from the official opentelemetry-proto
 * definitions that @opentelemetry/otlp-transformer 0.216.0 ships (build/src/generated/root.js), for
 * both encodings: protobuf bodies go through `ExportTraceServiceRequest.decode`, JSON bodies (OTLP/JSON:
 * lowerCamelCase field names, hex trace and span ids, int64 as strings or numbers, enums as numbers or
 * names) through `ExportTraceServiceRequest.fromObject` after the hex ids become bytes. One walker then
 * reads the decoded message. Pure: no I/O.
 */
import { createRequire } from 'node:module';
import { setKey } from './keys.ts';

const require = createRequire(import.meta.url);
// The generated module is CommonJS and not in the package's exports map (the package has none), so it
// is loaded by path. It registers itself in protobufjs' default root.
const generated = require('@opentelemetry/otlp-transformer/build/src/generated/root.js') as any;
const v1 = generated.opentelemetry.proto;
const Request = v1.collector.trace.v1.ExportTraceServiceRequest;
const Response = v1.collector.trace.v1.ExportTraceServiceResponse;

/** An attribute value as plain JSON (int64 values beyond 2^53 become decimal strings, bytes base64). */
export type AttrValue = string | number | boolean | null | AttrValue[] | { [key: string]: AttrValue };
export type Attrs = Record<string, AttrValue>;

export interface OtelEvent {
  name: string;
  timeNs: bigint;
  attributes: Attrs;
}

/**
 * One span of an export, with its resource and scope. Ids are lowercase hex ('' when absent); an
 * OTLP/JSON id that is not hex keeps the text the client sent, so its refusal names that id.
 */
export interface OtelSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Attrs;
  events: OtelEvent[];
  /** StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  resource: Attrs;
  scope: { name: string; version: string };
}

/** The body is not an OTLP trace export (answered 400). */
export class OtlpDecodeError extends Error {}

/** Nesting of attribute values kept; deeper values are replaced by a marker string. */
const MAX_VALUE_DEPTH = 32;

/** PostgreSQL text cannot hold NUL and JSON cannot carry lone surrogates: both are dropped. */
export function cleanText(s: string): string {
  const t = s.includes('\u0000') ? s.replaceAll('\u0000', '') : s;
  return (t as any).isWellFormed?.() === false ? (t as any).toWellFormed() : t;
}

function hex(bytes: unknown): string {
  if (bytes instanceof Uint8Array)
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  return '';
}

function toBig(v: unknown): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
  try {
    return BigInt(String(v));
  } catch {
    return 0n;
  }
}

function int64(v: unknown): number | string {
  const b = toBig(v);
  return b <= BigInt(Number.MAX_SAFE_INTEGER) && b >= BigInt(-Number.MAX_SAFE_INTEGER)
    ? Number(b)
    : b.toString();
}

function anyValue(v: any, depth: number): AttrValue {
  if (v === null || v === undefined) return null;
  if (depth > MAX_VALUE_DEPTH) return '[nested too deep]';
  switch (v.value) {
    case 'stringValue':
      return cleanText(String(v.stringValue));
    case 'boolValue':
      return Boolean(v.boolValue);
    case 'intValue':
      return int64(v.intValue);
    case 'doubleValue': {
      const n = Number(v.doubleValue);
      return Number.isFinite(n) ? n : String(n);
    }
    case 'arrayValue':
      return (v.arrayValue?.values ?? []).map((x: any) => anyValue(x, depth + 1));
    case 'kvlistValue':
      return keyValues(v.kvlistValue?.values ?? [], depth + 1);
    case 'bytesValue':
      return v.bytesValue instanceof Uint8Array ? Buffer.from(v.bytesValue).toString('base64') : null;
    default:
      return null;
  }
}

function keyValues(list: any[], depth = 0): Attrs {
  const out: Attrs = {};
  for (const kv of list ?? []) {
    if (!kv || kv.key === null || kv.key === undefined) continue;
    setKey(out, cleanText(String(kv.key)), anyValue(kv.value, depth));
  }
  return out;
}

/** Reads a decoded (or fromObject-built) ExportTraceServiceRequest message. */
function walk(message: any): OtelSpan[] {
  const spans: OtelSpan[] = [];
  for (const rs of message.resourceSpans ?? []) {
    if (!rs) continue;
    const resource = keyValues(rs.resource?.attributes ?? []);
    for (const ss of rs.scopeSpans ?? []) {
      if (!ss) continue;
      const scope = {
        name: cleanText(String(ss.scope?.name ?? '')),
        version: cleanText(String(ss.scope?.version ?? '')),
      };
      for (const s of ss.spans ?? []) {
        if (!s) continue;
        spans.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: cleanText(String(s.name ?? '')),
          kind: Number(s.kind ?? 0) || 0,
          startNs: toBig(s.startTimeUnixNano),
          endNs: toBig(s.endTimeUnixNano),
          attributes: keyValues(s.attributes ?? []),
          events: (s.events ?? []).filter(Boolean).map((e: any) => ({
            name: cleanText(String(e.name ?? '')),
            timeNs: toBig(e.timeUnixNano),
            attributes: keyValues(e.attributes ?? []),
          })),
          status: {
            code: Number(s.status?.code ?? 0) || 0,
            message: cleanText(String(s.status?.message ?? '')),
          },
          resource,
          scope,
        });
      }
    }
  }
  return spans;
}

/** Decodes an OTLP/protobuf ExportTraceServiceRequest. */
export function decodeProtobuf(body: Uint8Array): OtelSpan[] {
  let message: unknown;
  try {
    message = Request.decode(body);
  } catch (err) {
    throw new OtlpDecodeError(`The body is not an OTLP/protobuf trace export: ${(err as Error).message}`);
  }
  return walk(message);
}

const HEX = /^[0-9a-fA-F]*$/;

type IdKey = 'traceId' | 'spanId' | 'parentSpanId';

/**
 * OTLP/JSON writes trace and span ids as hex; protobufjs' fromObject would read any other string as
 * base64 and so invent an id. Hex becomes bytes; other text is taken out (into `sent`) and put back
 * on the decoded span.
 */
function hexToBytes(o: any, key: IdKey, sent?: Partial<Record<IdKey, string>>) {
  const v = o[key];
  if (typeof v !== 'string') return;
  if (HEX.test(v) && v.length % 2 === 0) o[key] = Buffer.from(v, 'hex');
  else if (sent) {
    sent[key] = cleanText(v);
    o[key] = Buffer.alloc(0);
  }
}

function list(v: unknown): any[] {
  return Array.isArray(v) ? v : [];
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Decodes an OTLP/JSON ExportTraceServiceRequest (the parsed JSON value). */
export function decodeJson(value: unknown): OtelSpan[] {
  if (!isObject(value))
    throw new OtlpDecodeError('The body is not an OTLP/JSON trace export: expected an object');
  // The ids each span sent that are not hex, in the order walk() meets the spans (fromObject
  // refuses a body whose lists hold anything but objects, so the orders agree).
  const sentIds: Partial<Record<IdKey, string>>[] = [];
  for (const rs of list(value.resourceSpans)) {
    if (!isObject(rs)) continue;
    for (const ss of list(rs.scopeSpans)) {
      if (!isObject(ss)) continue;
      for (const s of list(ss.spans)) {
        if (!isObject(s)) continue;
        const sent: Partial<Record<IdKey, string>> = {};
        hexToBytes(s, 'traceId', sent);
        hexToBytes(s, 'spanId', sent);
        hexToBytes(s, 'parentSpanId', sent);
        sentIds.push(sent);
        for (const l of list(s.links)) {
          if (!isObject(l)) continue;
          hexToBytes(l, 'traceId');
          hexToBytes(l, 'spanId');
        }
      }
    }
  }
  let message: unknown;
  try {
    // fromObject refuses wrong shapes (an object where a list belongs, ...) with a TypeError;
    // scalars are converted as protobufjs does (OTLP/JSON int64 may be strings, enums names).
    message = Request.fromObject(value);
  } catch (err) {
    throw new OtlpDecodeError(`The body is not an OTLP/JSON trace export: ${(err as Error).message}`);
  }
  const spans = walk(message);
  for (const [i, span] of spans.entries()) Object.assign(span, sentIds[i]);
  return spans;
}

/** The answer to an export: empty on full success, `partialSuccess` when spans were rejected. */
export function exportResponse(
  rejected: number,
  errorMessage: string,
): {
  protobuf: Buffer;
  json: Record<string, unknown>;
} {
  if (rejected <= 0 && !errorMessage) return { protobuf: Buffer.alloc(0), json: {} };
  const partialSuccess = { rejectedSpans: rejected, errorMessage };
  const protobuf = Buffer.from(Response.encode(Response.fromObject({ partialSuccess })).finish());
  return { protobuf, json: { partialSuccess: { rejectedSpans: String(rejected), errorMessage } } };
}
