import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { HttpError } from '../../domain/errors.ts';
import {
  OtlpDecodeError,
  type OtelSpan,
  decodeJson,
  decodeProtobuf,
  exportResponse,
} from '../../domain/otel-decode.ts';
import { OtelHeaders, OtelRequestBody, OtelResponses } from '../../schemas/otel.ts';
import { MAX_JSON_DEPTH, tooDeepAt, utf8Fault } from '../errors.ts';
import { validatorCompiler } from '../validation.ts';
import { storableValue } from '../../domain/text.ts';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const brotli = promisify(zlib.brotliDecompress);

/** OTLP/HTTP trace export routes (decisions.md, "OpenTelemetry ingestion"). */
export const OTEL_PATHS = ['/otel/v1/traces', '/otel/traces', '/v2/otel/v1/traces', '/v2/otel/traces'];

const PROTOBUF = /^application\/(x-)?protobuf\b/i;

const badRequest = (detail: string) => new HttpError(400, detail);

/**
 * Undoes `Content-Encoding`. The configured body limit applies to the decompressed size as well:
 * zlib stops at `maxOutputLength`, so a small gzip bomb answers 413 without inflating it in memory.
 */
async function decompress(body: Buffer, encoding: string | undefined, limit: number): Promise<Buffer> {
  const codings = (encoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  let out = body;
  // Codings are listed in the order they were applied; undo them from the last.
  for (const c of codings.reverse()) {
    const fn =
      c === 'gzip' || c === 'x-gzip' ? gunzip : c === 'deflate' ? inflate : c === 'br' ? brotli : null;
    if (!fn) throw new HttpError(415, `Unsupported Content-Encoding '${c}' (use gzip, deflate, br or none)`);
    try {
      out = await fn(out, { maxOutputLength: limit } as zlib.ZlibOptions);
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
        throw new HttpError(413, 'Request body is larger than the configured limit once decompressed');
      }
      throw badRequest(`The body is not valid ${c} data`);
    }
  }
  return out;
}

/**
 * Protobuf strings that are not valid UTF-8 are decoded with U+FFFD, as protobuf runtimes do, and
 * stored so (a binary export cannot name a JSON byte offset); OTLP/JSON must be UTF-8 like every
 * JSON body (400 naming the offset).
 */
function decode(body: Buffer, protobuf: boolean, decompressed: boolean): OtelSpan[] {
  try {
    if (protobuf) return storableValue(decodeProtobuf(body));
    const notUtf8 = utf8Fault(body, decompressed);
    if (notUtf8) throw notUtf8;
    const text = body.toString('utf8');
    if (text.trim() === '') throw badRequest('The body is empty: expected an OTLP/JSON trace export');
    if (tooDeepAt(text) >= 0) throw badRequest(`The JSON body nests deeper than ${MAX_JSON_DEPTH} levels`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw badRequest(`The body is not valid JSON: ${(err as Error).message}`);
    }
    return storableValue(decodeJson(value));
  } catch (err) {
    if (err instanceof OtlpDecodeError) throw badRequest(err.message);
    // Malformed input that overflows a recursive decoder (deeply nested values) is the client's fault.
    if (err instanceof RangeError) throw badRequest('The body is not a valid OTLP trace export');
    throw err;
  }
}

/** Bodies are raw bytes (protobuf or JSON, maybe compressed): no schema validation of the body here. */
const bodyCheckedByDecoder: FastifySchemaCompiler<any> = (route) =>
  route.httpPart === 'body' ? () => true : validatorCompiler(route);

/**
 * Encapsulated plugin: the raw-body content-type parsers below apply to these routes only; every
 * other route keeps the JSON parser of http/errors.ts.
 */
export default async function otelRoutes(app: FastifyInstance) {
  const { otel, config } = app.services;
  const limit = config.bodyLimitBytes;

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ['application/x-protobuf', 'application/protobuf', 'application/json'],
    { parseAs: 'buffer' },
    (_req: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) =>
      done(null, body),
  );

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const protobuf = PROTOBUF.test(String(req.headers['content-type'] ?? ''));
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const body = await decompress(raw, req.headers['content-encoding'] as string | undefined, limit);
    const spans = decode(body, protobuf, body !== raw);
    const target = await otel.target(req.caller, req.headers);
    const result = await otel.export(req.caller, target, spans);
    const answer = exportResponse(result.rejected, result.errorMessage);
    if (protobuf) return reply.type('application/x-protobuf').send(answer.protobuf);
    return reply.type('application/json').send(answer.json);
  };

  for (const url of OTEL_PATHS) {
    app.post(
      url,
      {
        validatorCompiler: bodyCheckedByDecoder,
        schema: {
          tags: ['opentelemetry'],
          summary:
            url === OTEL_PATHS[0]
              ? 'OTLP/HTTP trace export (protobuf or JSON, optionally gzip)'
              : `OTLP/HTTP trace export (the same as POST ${OTEL_PATHS[0]})`,
          description:
            'Target from the headers projectid or project, and logstreamid, logstream (created when missing), experimentid or experiment; optional sessionid. Authenticate with an API-key header. A JSON body must be UTF-8 (400 naming the offset of the first bad byte); protobuf strings that are not UTF-8 are stored with U+FFFD in place of the bad bytes.',
          headers: OtelHeaders,
          body: OtelRequestBody,
          response: OtelResponses,
        } as any,
      },
      handler,
    );
  }
}
