import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { parseTimestamp, toIso } from '../../src/domain/time.ts';

test('configuration defaults and validation', () => {
  const c = loadConfig({});
  assert.equal(c.port, 8088);
  assert.equal(c.databaseUrl, null);
  assert.throws(() => loadConfig({ SPANBASE_PORT: 'eighty' }), ConfigError);
  assert.throws(() => loadConfig({ SPANBASE_PORT: '70000' }), ConfigError);
  assert.throws(() => loadConfig({ SPANBASE_DATABASE_URL: 'mysql://x' }), ConfigError);
  assert.throws(() => loadConfig({ SPANBASE_SECRET_KEY: 'short' }), ConfigError);
  assert.throws(() => loadConfig({ SPANBASE_LOG_LEVEL: 'loud' }), ConfigError);
  assert.equal(loadConfig({ SPANBASE_SECRET_KEY: 'ab'.repeat(32) }).secretKey, 'ab'.repeat(32));
  assert.equal(c.rollups, true);
  assert.equal(loadConfig({ SPANBASE_ROLLUPS: 'off' }).rollups, false);
  assert.throws(() => loadConfig({ SPANBASE_ROLLUPS: 'no' }), ConfigError);
});

test('metrics token and retention interval', () => {
  assert.equal(loadConfig({}).metricsToken, null);
  assert.equal(loadConfig({}).retentionIntervalMs, 600_000);
  assert.equal(
    loadConfig({ SPANBASE_METRICS_TOKEN: 'a-long-enough-token' }).metricsToken,
    'a-long-enough-token',
  );
  assert.throws(() => loadConfig({ SPANBASE_METRICS_TOKEN: 'short' }), ConfigError);
  assert.throws(() => loadConfig({ SPANBASE_METRICS_TOKEN: 'has a space in the token' }), ConfigError);
  assert.equal(loadConfig({ SPANBASE_RETENTION_INTERVAL_SECONDS: '60' }).retentionIntervalMs, 60_000);
  assert.throws(() => loadConfig({ SPANBASE_RETENTION_INTERVAL_SECONDS: '0' }), ConfigError);
});

test('timestamps round-trip with microseconds and offsets', () => {
  assert.equal(parseTimestamp('2024-01-02T03:04:05Z'), Date.UTC(2024, 0, 2, 3, 4, 5) * 1000);
  assert.equal(parseTimestamp('2024-01-02T03:04:05.123456Z')! % 1_000_000, 123456);
  assert.equal(parseTimestamp('2024-01-02T05:04:05+02:00'), parseTimestamp('2024-01-02T03:04:05Z'));
  assert.equal(parseTimestamp('2024-01-02T03:04:05'), parseTimestamp('2024-01-02T03:04:05Z'));
  assert.equal(parseTimestamp('2024-02-30T00:00:00Z'), null);
  assert.equal(parseTimestamp('yesterday'), null);
  assert.equal(toIso(parseTimestamp('2024-01-02T03:04:05.123456Z')!), '2024-01-02T03:04:05.123456Z');
  assert.equal(toIso(parseTimestamp('2024-01-02T03:04:05.120Z')!), '2024-01-02T03:04:05.120Z');
});
