/**
 * A POST to a user-given URL whose every resolved address is checked when the connection is made
 * (domain/outbound-address.ts), so a name that resolves to a refused address, even after it was
 * checked once (DNS rebinding), is never connected to.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { addressRefusal } from '../domain/outbound-address.ts';

export class AddressRefused extends Error {}

export interface PostResult {
  status: number;
  body: string;
}

export function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: { allowPrivate: boolean; timeoutMs: number },
): Promise<PostResult> {
  const u = new URL(url);
  const lookup: typeof dns.lookup = ((
    host: string,
    options: dns.LookupOptions,
    cb: (...a: unknown[]) => void,
  ) => {
    dns.lookup(host, { ...options, all: true }, (err, addresses) => {
      if (err) return cb(err);
      for (const a of addresses) {
        const why = addressRefusal(a.address, opts.allowPrivate);
        if (why) return cb(new AddressRefused(why));
      }
      if (options.all) return cb(null, addresses);
      cb(null, addresses[0].address, addresses[0].family);
    });
  }) as typeof dns.lookup;
  return new Promise((resolve, reject) => {
    // A literal IP address skips the lookup: judge it here.
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const direct = isIP(host) ? addressRefusal(host, opts.allowPrivate) : null;
    if (direct) return reject(new AddressRefused(direct));
    const req = (u.protocol === 'https:' ? https : http).request(
      u,
      {
        method: 'POST',
        lookup,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
        timeout: opts.timeoutMs,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (text.length < 2000) text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text.slice(0, 2000) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`No answer within ${opts.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
