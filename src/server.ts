import type { Config } from './config.ts';
import type { Clock } from './domain/clock.ts';
import { type App, buildApp } from './http/app.ts';
import { type Services, createServices } from './services/index.ts';
import { openStore } from './store/db.ts';
import { migrate } from './store/migrate.ts';

export interface Running {
  app: App;
  services: Services;
  bootstrap: { email: string; apiKey: string; file: string } | null;
  close(): Promise<void>;
}

/** Opens the store, migrates it, creates the first admin on an empty store, and builds the app. */
export async function startServices(
  config: Config,
  opts: { logger?: object | boolean; clock?: Clock } = {},
): Promise<Running> {
  const store = openStore(config);
  await migrate(store);
  const services = createServices(store, config, undefined, opts.clock);
  const bootstrap = await services.users.bootstrap();
  const app = await buildApp(services, opts);
  return {
    app,
    services,
    bootstrap,
    async close() {
      await app.close();
      await store.close();
    },
  };
}
