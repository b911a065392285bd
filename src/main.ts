import { claimDataDir } from './cli/backup.ts';
import { ConfigError, type Config, loadConfig } from './config.ts';
import { startServices } from './server.ts';

/**
 * Logger options for a served process: readable lines on a terminal (pino-pretty, written
 * synchronously so that the last lines before exit are not lost), one JSON object a line otherwise,
 * for log collectors.
 */
export async function loggerOptions(format: Config['logFormat'], isTTY: boolean): Promise<object> {
  if (format === 'json' || (format === 'auto' && !isTTY)) return {};
  const { default: pretty } = await import('pino-pretty');
  return {
    stream: pretty({
      colorize: isTTY,
      sync: true,
      singleLine: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  };
}

/** Where the data lives, for the start-up line (a PostgreSQL URL without its credentials). */
function storeDescription(config: Config): string {
  if (!config.databaseUrl) return `SQLite in ${config.dataDir}`;
  const url = new URL(config.databaseUrl);
  return `PostgreSQL at ${url.host}${url.pathname}${config.pgSearchPath ? ` (schema ${config.pgSearchPath})` : ''}`;
}

/** Serves the API until SIGINT or SIGTERM. */
export async function serve(config: Config): Promise<void> {
  const running = await startServices(config, {
    logger: await loggerOptions(config.logFormat, process.stdout.isTTY === true),
  });
  if (running.bootstrap && config.announceBootstrap) {
    process.stdout.write(
      `\nSpanbase created the first admin (${running.bootstrap.email}).\n` +
        `Its API key, shown once here and saved to ${running.bootstrap.file} (mode 0600):\n\n` +
        `  ${running.bootstrap.apiKey}\n\n` +
        'Sign in to the web console with it (Sign in with an API key instead).\n\n',
    );
  }
  const { app } = running;
  const address = await app.listen({ port: config.port, host: config.host });
  app.log.info(
    `Spanbase ready: ${storeDescription(config)}; web console at ${address}/, API reference at ${address}/docs`,
  );
  // SQLite: `spanbase restore` refuses to replace the files of a running server.
  const release = config.databaseUrl ? () => {} : claimDataDir(config.dataDir);
  // Graceful: stop accepting, finish the requests in flight (an answered write is committed), stop
  // background jobs at a safe point, close the store. A second signal exits at once.
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      app.log.warn(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    app.log.info(`${signal}: shutting down (no new connections; requests under way finish first)`);
    try {
      await running.close();
      release();
      app.log.info('stopped');
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`spanbase: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  serve(config).catch((err) => {
    process.stderr.write(`spanbase: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
