/**
 * What a served process writes: JSON lines for log collectors, readable lines on a terminal, and
 * its shutdown. Logging does not depend on the store: SQLite only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loggerOptions } from '../../src/main.ts';
import { startChildServer } from '../helpers/child-server.ts';

test('readable lines on a terminal, JSON otherwise, unless SPANBASE_LOG_FORMAT says', async () => {
  assert.deepEqual(await loggerOptions('auto', false), {});
  assert.deepEqual(await loggerOptions('json', true), {});
  assert.ok('stream' in (await loggerOptions('auto', true)));
  assert.ok('stream' in (await loggerOptions('pretty', false)));
});

test('JSON lines: the start-up line names the store and /docs; SIGTERM logs the shutdown and its end', async () => {
  const server = await startChildServer('sqlite', {
    captureOutput: true,
    env: { SPANBASE_LOG_LEVEL: 'info' },
  });
  try {
    await server.kill('SIGTERM');
    const records = server.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    const messages = records.map((r) => r.msg);
    assert.ok(
      messages.some(
        (m) =>
          m ===
          `Spanbase ready: SQLite in ${server.dataDir}; web console at ${server.url}/, API reference at ${server.url}/docs`,
      ),
      messages.join('\n'),
    );
    const down = messages.indexOf(
      'SIGTERM: shutting down (no new connections; requests under way finish first)',
    );
    assert.ok(down >= 0, messages.join('\n'));
    assert.equal(messages.at(-1), 'stopped');
    assert.equal(server.proc().exitCode, 0);
  } finally {
    await server.close();
  }
});

test('SPANBASE_LOG_FORMAT=pretty: readable lines, one per event', async () => {
  const server = await startChildServer('sqlite', {
    captureOutput: true,
    env: { SPANBASE_LOG_LEVEL: 'info', SPANBASE_LOG_FORMAT: 'pretty' },
  });
  try {
    await server.call('GET', '/v2/healthcheck', undefined, null);
    await server.kill('SIGTERM');
    const logLines = server.lines.filter((l) => /^\[\d\d:\d\d:\d\d\.\d{3}\] /.test(l));
    assert.ok(
      logLines.some((l) => /INFO: Spanbase ready: SQLite in /.test(l)),
      server.lines.join('\n'),
    );
    assert.ok(
      logLines.some((l) => /INFO: request completed .*"statusCode":200/.test(l)),
      server.lines.join('\n'),
    );
    assert.ok(logLines.at(-1)?.endsWith('INFO: stopped'), logLines.at(-1));
    assert.ok(!server.lines.some((l) => l.startsWith('{"level"')), 'no JSON lines');
  } finally {
    await server.close();
  }
});
