import { isUtf8 } from 'node:buffer';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, ValidationError } from '../domain/errors.ts';
import { invalidUtf8At, jsonMayNeedCleaning, storableValue } from '../domain/text.ts';
import { toErrorItems } from './validation.ts';
import { isConsoleNavigation, sendConsolePage } from './routes/console-pages.ts';

/**
 * V8's JSON syntax errors quote the text around the fault (`Unexpected token 'x', "{"token":x..." is
 * not valid JSON`). A body may hold a secret (a provider token, a password), so the quote is cut.
 */
export function safeJsonMessage(message: string): string {
  const m = /^(Unexpected token '[\s\S]{1,2}?'), [\s\S]* is not valid JSON$/.exec(message);
  if (m) return `${m[1]} in JSON`;
  if (/ is not valid JSON$/.test(message)) return 'Invalid JSON';
  return message;
}

/** Position of a JSON syntax error, from V8's message; the end of the text when it names none. */
function jsonErrorOffset(err: Error, text: string): number {
  const m = /position (\d+)/.exec(err.message);
  return m ? Number(m[1]) : text.length;
}

/**
 * Deepest JSON nesting a body may have. Deeper input would overflow the stack of any recursive code
 * that walks it (validation, error echoing, serialization, filter compilers) and answer 500.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * Offset of the first bracket that opens level `limit + 1`, or -1 when the text is shallower. Skips
 * strings with indexOf, so it costs about a third of JSON.parse on large bodies.
 */
export function tooDeepAt(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return -1;
        let b = j - 1;
        let slashes = 0;
        while (text.charCodeAt(b) === 92) {
          slashes++;
          b--;
        }
        if ((slashes & 1) === 0) break;
      }
      i = j;
    } else if (c === 91 || c === 123) {
      if (++depth > limit) return i;
    } else if (c === 93 || c === 125) {
      depth--;
    }
  }
  return -1;
}

/**
 * JSON text must be UTF-8 (RFC 8259). A body that is not answers 400 naming the first bad byte,
 * instead of being decoded with U+FFFD in place of those bytes, which would hide the client's bug
 * in stored data. `isUtf8` is vectorised, so a valid body pays little; the offset is looked for only
 * on failure. `decompressed`: the offset counts in the body once its Content-Encoding is undone.
 */
export function utf8Fault(body: Buffer, decompressed = false): HttpError | null {
  if (isUtf8(body)) return null;
  const at = invalidUtf8At(body);
  const hex = body[at].toString(16).toUpperCase().padStart(2, '0');
  return new HttpError(
    400,
    `The request body is not valid UTF-8 (JSON text must be UTF-8): byte 0x${hex} at offset ${at}` +
      `${decompressed ? ' of the decompressed body' : ''} does not start a well-formed sequence`,
  );
}

/** The media types a route takes: its schema's `consumes`, its body's `content`, or JSON. */
function acceptedTypes(req: FastifyRequest): string[] {
  const schema = req.routeOptions.schema as
    | { consumes?: string[]; body?: { content?: Record<string, unknown> } }
    | undefined;
  const types = schema?.consumes ?? Object.keys(schema?.body?.content ?? {});
  return types.length ? types : ['application/json'];
}

/** A 415 that names the content type the route takes (curl's `-d` sends form data by default). */
function unsupportedMediaType(req: FastifyRequest): string {
  const sent = req.headers['content-type'];
  const takes = acceptedTypes(req).join(' or ');
  const hint = takes.includes('application/json') ? " (with curl: -H 'content-type: application/json')" : '';
  return sent
    ? `Unsupported Content-Type '${sent}': this route takes ${takes}${hint}`
    : `The request has a body but no Content-Type header: this route takes ${takes}${hint}`;
}

/** Registers the JSON body parser and the mapping of every fault to its 4xx JSON body. */
/** `allowedMethods` names the methods a path takes (http/method-not-allowed.ts): a 405's `Allow`. */
export function installErrorHandling(
  app: FastifyInstance,
  allowedMethods: (req: FastifyRequest) => string[],
): void {
  // Bodies are JSON (login forms and OTLP register their own parsers); a text/plain body would
  // otherwise reach validation as a string and answer a confusing 422.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    /^application\/([\w.+-]*\+)?json$/,
    // As a Buffer, decoded once: `parseAs: 'string'` decodes each chunk and joins the pieces, which
    // then has to be flattened again (about 1.5 ms more per 2 MB ingest batch).
    { parseAs: 'buffer' },
    (req: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const notUtf8 = utf8Fault(body);
      if (notUtf8) return done(notUtf8);
      const text = body.toString('utf8');
      if (text.trim() === '') return done(null, undefined);
      const deep = tooDeepAt(text);
      if (deep >= 0) {
        const msg = `JSON decode error: nesting deeper than ${MAX_JSON_DEPTH} levels`;
        return done(
          new ValidationError({ loc: ['body', deep], msg, type: 'json_invalid', ctx: { error: msg } }),
        );
      }
      try {
        const value = JSON.parse(text);
        // Record ingestion keeps captured text whole: NUL and lone surrogates become U+FFFD there
        // (see domain/text.ts); other routes check text themselves and answer 422.
        const clean = req.routeOptions.config?.storableText;
        done(null, clean && jsonMayNeedCleaning(text) ? storableValue(value) : value);
      } catch (err) {
        const offset = jsonErrorOffset(err as Error, text);
        const message = safeJsonMessage((err as Error).message);
        done(
          new ValidationError({
            loc: ['body', offset],
            msg: `JSON decode error: ${message}`,
            type: 'json_invalid',
            ctx: { error: message },
          }),
        );
      }
    },
  );

  app.setNotFoundHandler((req, reply) => {
    const allowed = allowedMethods(req);
    // A route of this method that answered not found itself (a missing static file) stays a 404.
    if (allowed.length > 0 && !allowed.includes(req.method))
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send({ detail: `Method ${req.method} is not allowed here; this path takes ${allowed.join(', ')}` });
    // A browser opening an unknown console address gets the console's not-found page, not JSON.
    if (isConsoleNavigation(req)) return sendConsolePage(reply, 404);
    reply.code(404).send({ detail: 'Not Found' });
  });

  app.setErrorHandler((err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof ValidationError) return reply.code(422).send({ detail: err.items });
    if (err instanceof HttpError)
      return reply.code(err.statusCode).headers(err.headers).send({ detail: err.message });
    const fe = err as FastifyError;
    if (fe.validation) {
      const context = fe.validationContext ?? 'body';
      if (context === 'body' && req.body === undefined) {
        return reply.code(422).send({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
      }
      const data =
        context === 'body'
          ? req.body
          : context === 'querystring'
            ? req.query
            : context === 'params'
              ? req.params
              : req.headers;
      return reply.code(422).send({ detail: toErrorItems(fe.validation as any, context, data) });
    }
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.code(415).send({ detail: unsupportedMediaType(req) });
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send({ detail: 'Request body is larger than the configured limit' });
    }
    const status = fe.statusCode ?? 500;
    if (status >= 400 && status < 500) return reply.code(status).send({ detail: fe.message });
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ detail: 'Internal server error' });
  });
}
