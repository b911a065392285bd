/**
 * The only way a model call reaches the network: a `fetch` for the provider SDKs over node:http(s)
 * that connects only to addresses the guard allows (checked on the resolved address the socket then
 * uses, so a name cannot resolve to one address for the check and another for the connection),
 * follows no redirect, and reads at most a bounded number of bytes.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import type { ModelErrorKind } from '../domain/model-errors.ts';
import { addressRefusal, hostRefusal } from '../domain/provider-address.ts';

/** A failure the fetch itself decided, carried through the SDK's error as its cause. */
export class ProviderFetchError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** The raw exchange of one attempt, kept when a caller asks for it (the playground shows it). */
export interface Exchange {
  request: { method: string; url: string; body: string } | null;
  response: { status: number; chunks: Buffer[] } | null;
}

/** The kept response text of an exchange. */
export const responseText = (e: Exchange) =>
  e.response ? Buffer.concat(e.response.chunks).toString('utf8').slice(0, MAX_KEPT_BYTES) : '';

/** The exchange the current attempt writes to, if any (set around an SDK call). */
export const exchangeStore = new AsyncLocalStorage<Exchange>();

const MAX_KEPT_BYTES = 256 * 1024;

export interface GuardOptions {
  allowPrivate: boolean;
  maxResponseBytes: number;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: any, family?: number) => void;

export function guardedFetch(opts: GuardOptions): typeof fetch {
  const lookup = (hostname: string, options: dns.LookupOptions, cb: LookupCallback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return cb(err, undefined);
      for (const a of addresses) {
        const refusal = addressRefusal(a.address, opts.allowPrivate);
        if (refusal)
          return cb(new ProviderFetchError('address_refused', `${hostname}: ${refusal}`), undefined);
      }
      if (options.all) cb(null, addresses);
      else cb(null, addresses[0].address, addresses[0].family);
    });
  };
  const agents = {
    'http:': new http.Agent({ keepAlive: true, lookup } as http.AgentOptions),
    'https:': new https.Agent({ keepAlive: true, lookup } as https.AgentOptions),
  };

  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ProviderFetchError(
        'config',
        `Only http and https provider addresses are called, not ${url.protocol}`,
      );
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const refusal = hostRefusal(host) ?? (isIP(host) ? addressRefusal(host, opts.allowPrivate) : null);
    if (refusal) throw new ProviderFetchError('address_refused', refusal);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => {
      headers[k] = v;
    });
    const body = typeof init.body === 'string' ? init.body : init.body ? String(init.body) : undefined;
    const method = init.method ?? 'GET';
    const exchange = exchangeStore.getStore();
    if (exchange) {
      // The URL and body only: headers carry the token.
      exchange.request = { method, url: url.href, body: body ?? '' };
    }
    return new Promise<Response>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).request(url, {
        method,
        headers,
        agent: agents[url.protocol as 'http:' | 'https:'],
        signal: init.signal ?? undefined,
      });
      req.on('error', (err) => reject(err));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const resHeaders = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          resHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
        if (status >= 300 && status < 400) {
          res.resume();
          const to = resHeaders.get('location');
          let where = 'elsewhere';
          try {
            if (to)
              where =
                new URL(to, url).host === url.host
                  ? 'another path'
                  : `another host (${new URL(to, url).host})`;
          } catch {}
          reject(
            new ProviderFetchError(
              'config',
              `The provider answered ${status}, a redirect to ${where}; redirects are not followed: configure the final address`,
            ),
          );
          return;
        }
        resolve(
          new Response(bounded(res, opts.maxResponseBytes, exchange, status), {
            status,
            headers: resHeaders,
          }),
        );
      });
      req.end(body);
    });
  }) as typeof fetch;
}

/** The response body as a web stream that errors once it passes `max` bytes (and is kept when asked). */
function bounded(res: http.IncomingMessage, max: number, exchange: Exchange | undefined, status: number) {
  let seen = 0;
  let keptBytes = 0;
  if (exchange) exchange.response = { status, chunks: [] };
  res.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > max) {
      res.destroy(
        new ProviderFetchError('bad_response', `The provider's response is larger than ${max} bytes`),
      );
      return;
    }
    if (exchange && keptBytes < MAX_KEPT_BYTES) {
      exchange.response!.chunks.push(chunk);
      keptBytes += chunk.length;
    }
  });
  return Readable.toWeb(res) as ReadableStream<Uint8Array>;
}
