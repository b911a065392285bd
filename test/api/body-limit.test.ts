/**
 * A body over the limit gets its 413 over a connection that stays usable: the server reads and
 * discards the rest of the body (up to a bound) instead of closing a socket the client is still
 * writing to, which resets the connection and loses the answer (EPIPE on the client).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { installUnreadBodyDrain } from '../../src/http/unread-body.ts';
import { type TestServer, startTestServer, storesUnderTest } from '../helpers/server.ts';

interface Exchange {
  /** Every byte the server sent back. */
  response: string;
  /** A write or socket error the client saw, if any. */
  error: string | null;
  /** Whether the server ended the connection. */
  closed: boolean;
}

/**
 * Sends `head` then `size` bytes of body as fast as the socket takes them, then `next` (another
 * request on the same connection), reading the whole time; resolves once `until` matches what was
 * read, or the connection ends.
 */
function exchange(port: number, head: string, size: number, next: string, until: RegExp): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const out: Exchange = { response: '', error: null, closed: false };
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(out);
    };
    socket.setTimeout(60_000, finish);
    socket.on('data', (d) => {
      out.response += d.toString('latin1');
      if (until.test(out.response)) finish();
    });
    socket.on('error', (err) => {
      out.error = (err as NodeJS.ErrnoException).code ?? err.message;
    });
    socket.on('close', () => {
      out.closed = true;
      finish();
    });
    socket.on('connect', async () => {
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      socket.write(head);
      for (let sent = 0; sent < size && !done && !socket.destroyed; sent += chunk.length) {
        const piece = size - sent < chunk.length ? chunk.subarray(0, size - sent) : chunk;
        if (!socket.write(piece)) await new Promise((r) => socket.once('drain', r));
      }
      if (!done && !socket.destroyed) socket.write(next);
    });
  });
}

const MiB = 1024 * 1024;

for (const store of storesUnderTest()) {
  describe(`a body over the limit [${store}]`, () => {
    let s: TestServer;
    let port: number;
    let project: string;
    before(async () => {
      s = await startTestServer(store, { SPANBASE_BODY_LIMIT_BYTES: String(MiB) });
      await s.running.app.listen({ port: 0, host: '127.0.0.1' });
      port = (s.running.app.server.address() as net.AddressInfo).port;
      project = (await s.call('POST', '/v2/projects', { name: 'limit' })).body.id;
    });
    after(() => s.close());

    const health = 'GET /v2/healthcheck HTTP/1.1\r\nhost: x\r\n\r\n';
    const twoAnswers = /HTTP\/1\.1 413[\s\S]*\r\n\r\n\{"detail":[^}]*\}HTTP\/1\.1 200[\s\S]*"message":"ok"/;

    test('declared too large: the 413 and its JSON arrive while the client sends 33 MiB, and the connection serves the next request', async () => {
      for (let i = 0; i < 5; i++) {
        const size = 33 * MiB;
        const head =
          `POST /v2/projects/${project}/sessions/search HTTP/1.1\r\nhost: x\r\nservice-api-key: ${s.adminKey}\r\n` +
          `content-type: application/json\r\ncontent-length: ${size}\r\n\r\n`;
        const r = await exchange(port, head, size, health, twoAnswers);
        assert.equal(r.error, null, `round ${i}: the client saw ${r.error}`);
        assert.match(r.response, twoAnswers, `round ${i}: ${r.response.slice(0, 300)}`);
        assert.match(r.response, /"detail":"Request body is larger than the configured limit"/);
      }
    });

    test('chunked past the limit: the same', async () => {
      for (let i = 0; i < 5; i++) {
        const head =
          `POST /v2/projects/${project}/sessions/search HTTP/1.1\r\nhost: x\r\nservice-api-key: ${s.adminKey}\r\n` +
          'content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n';
        // One chunk of 8 MiB and the terminating chunk, then the next request.
        const size = 8 * MiB;
        const r = await exchange(
          port,
          `${head}${size.toString(16)}\r\n`,
          size,
          `\r\n0\r\n\r\n${health}`,
          twoAnswers,
        );
        assert.equal(r.error, null, `round ${i}: the client saw ${r.error}`);
        assert.match(r.response, twoAnswers, `round ${i}: ${r.response.slice(0, 300)}`);
      }
    });

    test('refused before the body is read (no credentials): the 401 arrives and the connection stays usable', async () => {
      const size = 8 * MiB;
      const head = `POST /v2/projects HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`;
      const r = await exchange(port, head, size, health, /HTTP\/1\.1 401[\s\S]*HTTP\/1\.1 200/);
      assert.equal(r.error, null);
      assert.match(r.response, /HTTP\/1\.1 401[\s\S]*HTTP\/1\.1 200/);
    });
  });
}

test('past the bound, the server stops reading and closes the connection', async () => {
  const app = Fastify({ bodyLimit: 1024 });
  installUnreadBodyDrain(app, 4 * MiB);
  app.post('/x', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const port = (app.server.address() as net.AddressInfo).port;
    const size = 64 * MiB;
    const head = `POST /x HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`;
    const r = await exchange(port, head, size, '', /$^/);
    assert.ok(r.closed, 'the server closed the connection');
  } finally {
    await app.close();
  }
});
