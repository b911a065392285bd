import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** Bytes of an unread body discarded at least, whatever the body limit. */
export const MIN_DISCARD_BYTES = 64 * 1024 * 1024;

/**
 * An answer sent before the request body was read whole (413 for a body over the limit, 401 before
 * an upload, a parse error mid-body) must reach the client. Closing the socket while the client is
 * still sending makes the kernel reset the connection, and the client sees EPIPE or ECONNRESET
 * instead of the answer (Fastify asks for `Connection: close` after a body error). So, as
 * mainstream servers do (nginx's lingering close), the connection stays open and the rest of the
 * body is read and discarded, up to `maxDiscardBytes`; past that the connection is closed. Node's
 * server also ends a request that takes longer than its `requestTimeout`.
 */
export function installUnreadBodyDrain(app: FastifyInstance, maxDiscardBytes: number): void {
  // A callback hook, not an async one: it runs on every reply and almost always does nothing.
  app.addHook('onSend', (req, reply, payload, done) => {
    if (!req.raw.complete && !req.raw.readableEnded) {
      reply.removeHeader('connection');
      discardRest(req.raw, maxDiscardBytes);
    }
    done(null, payload);
  });
}

function discardRest(raw: IncomingMessage, maxBytes: number): void {
  let seen = 0;
  raw.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > maxBytes) raw.socket.destroy();
  });
  raw.resume();
}
