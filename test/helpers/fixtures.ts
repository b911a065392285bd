import assert from 'node:assert/strict';
import type { TestServer } from './server.ts';

/** A project and a log stream in it, created by the given key (default admin). */
export async function projectWithLogStream(s: TestServer, key = s.adminKey, name?: string) {
  const p = await s.call(
    'POST',
    '/v2/projects',
    { name: name ?? `p-${Math.random().toString(36).slice(2)}` },
    key,
  );
  assert.equal(p.status, 200, p.text);
  const ls = await s.call('POST', `/v2/projects/${p.body.id}/log_streams`, { name: 'default' }, key);
  assert.equal(ls.status, 200, ls.text);
  return { projectId: p.body.id as string, logStreamId: ls.body.id as string };
}
