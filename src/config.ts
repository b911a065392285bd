import path from 'node:path';

/** Typed configuration, read once from SPANBASE_* environment variables. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** postgres://... selects PostgreSQL; absent means embedded SQLite in dataDir. */
  databaseUrl: string | null;
  /** Extra PostgreSQL connection options (tests use a schema per run). */
  pgSearchPath: string | null;
  bodyLimitBytes: number;
  /** Largest dataset file an upload may send (streamed, so not held in memory). */
  datasetMaxBytes: number;
  tokenTtlSeconds: number;
  /** Lifetime of a console (browser) session, from sign-in. */
  consoleSessionTtlSeconds: number;
  /** 32-byte key (hex or base64) for tokens and secret encryption; generated into dataDir when absent. */
  secretKey: string | null;
  logLevel: string;
  /** `pretty` (readable lines), `json` (one JSON object a line), or `auto`: pretty on a terminal. */
  logFormat: 'auto' | 'pretty' | 'json';
  /** scrypt cost parameter N (power of two). */
  scryptCost: number;
  adminEmail: string;
  adminPassword: string | null;
  /** Print the first admin key to stdout on bootstrap (off in tests). */
  announceBootstrap: boolean;
  /** Bearer token `GET /metrics` asks of clients not on loopback (null: loopback only). */
  metricsToken: string | null;
  /** How often the retention job looks for expired records, in milliseconds. */
  retentionIntervalMs: number;
  /** Model calls (src/services/model-calls.ts): the hard timeout of one attempt, in milliseconds. */
  modelTimeoutMs: number;
  /** Attempts of one model call, the first included (429, 5xx, timeouts and network errors are retried). */
  modelMaxAttempts: number;
  /** Base of the exponential backoff between attempts, in milliseconds (tests set a few). */
  modelRetryBaseMs: number;
  /** A call gives up once its next wait would end later than this after it started. */
  modelRetryMaxTotalMs: number;
  /** Calls in flight at once per integration (the adaptive rate lowers it on 429). */
  modelConcurrency: number;
  /** Largest provider response read, in bytes; a larger one fails the call. */
  modelMaxResponseBytes: number;
  /** Allow provider addresses on loopback and private ranges (link-local and metadata stay refused). */
  allowPrivateProviders: boolean;
  /** SQLite: reader threads that searches, widget data and exports share (store/reader-pool.ts). */
  readerThreads: number;
  /** Keep the dashboard rollups at ingestion (store/rollups.ts); off: dashboards scan. */
  rollups: boolean;
  /** The job queue (services/job-queue.ts): jobs run at once per process, lease, poll and retry base. */
  jobConcurrency: number;
  /** A session's LLM scorers wait until nothing was written to it for this long. */
  scorerQuietMs: number;
  jobLeaseMs: number;
  jobPollMs: number;
  jobRetryBaseMs: number;
  /** Attempts of a webhook delivery, and the first retry's wait (doubling after each). */
  webhookMaxAttempts: number;
  webhookRetryBaseMs: number;
  webhookTimeoutMs: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.SPANBASE_DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('SPANBASE_DATABASE_URL must start with postgres:// or postgresql://');
  }
  const logLevel = env.SPANBASE_LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`SPANBASE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const rollups = env.SPANBASE_ROLLUPS || 'on';
  if (rollups !== 'on' && rollups !== 'off')
    throw new ConfigError(`SPANBASE_ROLLUPS must be on or off, got "${rollups}"`);
  const logFormat = env.SPANBASE_LOG_FORMAT || 'auto';
  if (logFormat !== 'auto' && logFormat !== 'pretty' && logFormat !== 'json') {
    throw new ConfigError(`SPANBASE_LOG_FORMAT must be auto, pretty or json, got "${logFormat}"`);
  }
  const scryptCost = intVar(env, 'SPANBASE_SCRYPT_COST', 32768, 1024, 1048576);
  if ((scryptCost & (scryptCost - 1)) !== 0)
    throw new ConfigError('SPANBASE_SCRYPT_COST must be a power of two');
  const secretKey = env.SPANBASE_SECRET_KEY || null;
  if (secretKey !== null && decodeKey(secretKey) === null) {
    throw new ConfigError('SPANBASE_SECRET_KEY must be 32 bytes as 64 hex characters or base64');
  }
  const adminEmail = env.SPANBASE_ADMIN_EMAIL || 'admin@localhost';
  const metricsToken = env.SPANBASE_METRICS_TOKEN || null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,256}$/.test(metricsToken)) {
    throw new ConfigError('SPANBASE_METRICS_TOKEN must be 16 to 256 visible ASCII characters');
  }
  return {
    port: intVar(env, 'SPANBASE_PORT', 8088, 0, 65535),
    host: env.SPANBASE_HOST || '127.0.0.1',
    dataDir: path.resolve(env.SPANBASE_DATA_DIR || './data'),
    databaseUrl,
    pgSearchPath: env.SPANBASE_PG_SCHEMA || null,
    bodyLimitBytes: intVar(env, 'SPANBASE_BODY_LIMIT_BYTES', 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    datasetMaxBytes: intVar(
      env,
      'SPANBASE_DATASET_MAX_BYTES',
      1024 * 1024 * 1024,
      1,
      64 * 1024 * 1024 * 1024,
    ),
    tokenTtlSeconds: intVar(env, 'SPANBASE_TOKEN_TTL_SECONDS', 24 * 3600, 60, 365 * 24 * 3600),
    consoleSessionTtlSeconds: intVar(
      env,
      'SPANBASE_CONSOLE_SESSION_TTL_SECONDS',
      12 * 3600,
      60,
      90 * 24 * 3600,
    ),
    secretKey,
    logLevel,
    logFormat,
    scryptCost,
    adminEmail,
    adminPassword: env.SPANBASE_ADMIN_PASSWORD || null,
    announceBootstrap: env.SPANBASE_QUIET_BOOTSTRAP !== '1',
    metricsToken,
    retentionIntervalMs: intVar(env, 'SPANBASE_RETENTION_INTERVAL_SECONDS', 600, 1, 7 * 24 * 3600) * 1000,
    modelTimeoutMs: intVar(env, 'SPANBASE_MODEL_TIMEOUT_MS', 60_000, 1, 3_600_000),
    modelMaxAttempts: intVar(env, 'SPANBASE_MODEL_MAX_ATTEMPTS', 4, 1, 20),
    modelRetryBaseMs: intVar(env, 'SPANBASE_MODEL_RETRY_BASE_MS', 1000, 0, 600_000),
    modelRetryMaxTotalMs: intVar(env, 'SPANBASE_MODEL_RETRY_MAX_TOTAL_MS', 600_000, 0, 24 * 3_600_000),
    modelConcurrency: intVar(env, 'SPANBASE_MODEL_CONCURRENCY', 8, 1, 1000),
    modelMaxResponseBytes: intVar(
      env,
      'SPANBASE_MODEL_MAX_RESPONSE_BYTES',
      16 * 1024 * 1024,
      1024,
      1024 ** 3,
    ),
    allowPrivateProviders: env.SPANBASE_ALLOW_PRIVATE_PROVIDERS === '1',
    rollups: rollups === 'on',
    readerThreads: intVar(env, 'SPANBASE_READER_THREADS', 3, 1, 64),
    jobConcurrency: intVar(env, 'SPANBASE_JOB_CONCURRENCY', 4, 1, 256),
    scorerQuietMs: intVar(env, 'SPANBASE_SCORER_QUIET_MS', 60_000, 0, 86_400_000),
    jobLeaseMs: intVar(env, 'SPANBASE_JOB_LEASE_MS', 30_000, 50, 3_600_000),
    jobPollMs: intVar(env, 'SPANBASE_JOB_POLL_MS', 1000, 5, 600_000),
    jobRetryBaseMs: intVar(env, 'SPANBASE_JOB_RETRY_BASE_MS', 30_000, 1, 3_600_000),
    webhookMaxAttempts: intVar(env, 'SPANBASE_WEBHOOK_MAX_ATTEMPTS', 6, 1, 50),
    webhookRetryBaseMs: intVar(env, 'SPANBASE_WEBHOOK_RETRY_BASE_MS', 5000, 1, 3_600_000),
    webhookTimeoutMs: intVar(env, 'SPANBASE_WEBHOOK_TIMEOUT_MS', 10_000, 100, 300_000),
  };
}

/** A 32-byte key from 64 hex characters or base64; null when it is neither. */
export function decodeKey(text: string): Buffer | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  const b = Buffer.from(text, 'base64');
  return b.length === 32 ? b : null;
}
