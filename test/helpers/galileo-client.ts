/**
 * Points the hosted service's official client (npm `galileo`), unchanged, at a test server: it
 * listens on one loopback port (the client fixes its base URL, so every store's server reuses it in
 * turn), the client's environment is set and restored, and its cached configuration and first
 * bearer token (a static of its generated layer) are reset.
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { GalileoConfig } from 'galileo';
import type { TestServer } from './server.ts';

const { BaseEntity } = createRequire(import.meta.url)('galileo-generated/entities/base-entity.js');

const ENV = [
  'GALILEO_API_URL',
  'GALILEO_API_KEY',
  'GALILEO_PROJECT',
  'GALILEO_LOG_STREAM',
  'GALILEO_CONSOLE_URL',
];
let port = 0;

/** Listens, points the client at `s` (with `env` added), and answers the function that undoes it. */
export async function pointClientAt(s: TestServer, env: Record<string, string> = {}): Promise<() => void> {
  await s.running.app.listen({ port, host: '127.0.0.1' });
  port = (s.running.app.server.address() as AddressInfo).port;
  const saved: Record<string, string | undefined> = {};
  for (const k of ENV) saved[k] = process.env[k];
  for (const k of ENV) delete process.env[k];
  process.env.GALILEO_API_URL = `http://127.0.0.1:${port}/v2`;
  process.env.GALILEO_API_KEY = s.adminKey;
  Object.assign(process.env, env);
  GalileoConfig.reset();
  BaseEntity.resetForTesting();
  return () => {
    GalileoConfig.reset();
    for (const k of ENV) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
}
