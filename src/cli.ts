import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { serve } from './main.ts';
import { startServices } from './server.ts';
import { rotateSecretKey } from './services/secret-rotation.ts';
import { openStore } from './store/db.ts';
import { migrate } from './store/migrate.ts';

const USAGE = `usage:
  spanbase serve
  spanbase users create --email EMAIL [--password PASSWORD] [--first-name NAME] [--last-name NAME] [--admin]
  spanbase keys create --email EMAIL [--description TEXT]
  spanbase secrets rotate [--new-key HEX]    (stop every server first; see the README)
`;

function fail(message: string): never {
  process.stderr.write(`spanbase: ${message}\n`);
  process.exit(2);
}

/** Runs one management command against the configured store, without serving HTTP. */
async function manage(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      admin: { type: 'boolean', default: false },
      description: { type: 'string', default: 'created from the command line' },
    },
  });
  const [group, verb] = positionals;
  if (!values.email) fail(`--email is required\n${USAGE}`);
  const running = await startServices({ ...loadConfig(), announceBootstrap: false }, { logger: false });
  try {
    const { services } = running;
    if (group === 'users' && verb === 'create') {
      const user = await services.users.create(null, {
        email: values.email,
        password: values.password ?? null,
        first_name: values['first-name'],
        last_name: values['last-name'],
        role: values.admin ? 'admin' : 'user',
      });
      process.stdout.write(`${JSON.stringify(user)}\n`);
    } else if (group === 'keys' && verb === 'create') {
      const user = await services.auth.userByEmail(values.email);
      if (!user) fail(`no user with email ${values.email}`);
      const key = await services.auth.createApiKey(user.id, values.description ?? '', null);
      process.stdout.write(`${key.api_key}\n`);
    } else {
      fail(`unknown command\n${USAGE}`);
    }
  } finally {
    await running.close();
  }
}

/** `secrets rotate`: re-seals stored provider tokens under a new master key (see secret-rotation.ts). */
async function secrets(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'new-key': { type: 'string' } },
  });
  if (positionals.join(' ') !== 'rotate') fail(`unknown command\n${USAGE}`);
  const config = loadConfig();
  const store = openStore(config);
  try {
    await migrate(store);
    const out = await rotateSecretKey(config, store, values['new-key']);
    process.stderr.write(
      `spanbase: re-sealed ${out.resealed} provider token(s)` +
        (out.already ? ` (${out.already} already under the new key)` : '') +
        '\n',
    );
    if (out.keyFile) {
      process.stderr.write(`spanbase: the new key is in ${out.keyFile}; back it up with the database\n`);
    } else {
      if (out.newKeyHex) process.stdout.write(`${out.newKeyHex}\n`);
      process.stderr.write(
        `spanbase: set SPANBASE_SECRET_KEY to the new key${out.newKeyHex ? ' (printed above)' : ''} on every process, then start them\n`,
      );
    }
  } finally {
    await store.close();
  }
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === 'serve' || command === undefined) await serve(loadConfig());
  else if (command === 'users' || command === 'keys') await manage([command, ...rest]);
  else if (command === 'secrets') await secrets(rest);
  else if (command === 'help' || command === '--help') process.stdout.write(USAGE);
  else fail(`unknown command '${command}'\n${USAGE}`);
} catch (err) {
  if (err instanceof ConfigError) fail(`configuration error: ${err.message}`);
  fail(err instanceof Error ? err.message : String(err));
}
