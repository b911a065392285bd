import { ConfigError, type Config, loadConfig } from './config.ts';
import { startServices } from './server.ts';

/** Serves the API until SIGINT or SIGTERM. */
export async function serve(config: Config): Promise<void> {
  const running = await startServices(config);
  if (running.bootstrap && config.announceBootstrap) {
    process.stdout.write(
      `\nSpanbase created the first admin (${running.bootstrap.email}).\n` +
        `Its API key, shown once here and saved to ${running.bootstrap.file} (mode 0600):\n\n` +
        `  ${running.bootstrap.apiKey}\n\n`,
    );
  }
  await running.app.listen({ port: config.port, host: config.host });
  const stop = async () => {
    await running.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
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
