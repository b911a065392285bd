/**
 * The `spanbase` command: `serve`, and management commands that work on the configured store
 * directly (no server needed). Input goes through the API's own body schemas (http/validation.ts
 * checkBody) and services, so the command line refuses exactly what the API refuses.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { HttpError, ValidationError } from './domain/errors.ts';
import { counted } from './domain/plural.ts';
import type { Services } from './services/index.ts';

// The server, the store and the validator load only for the command that needs them: usage and
// --help answer at once.
const checkBody = async <T>(schema: 'CreateUser' | 'CreateApiKey', value: unknown): Promise<T> => {
  const [{ checkBody }, schemas] = await Promise.all([
    import('./http/validation.ts'),
    import('./schemas/users.ts'),
  ]);
  return checkBody<T>(schemas[schema], value);
};

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

interface Command {
  /** The words that name it, e.g. `users create`. */
  name: string;
  summary: string;
  /** Its options after the name, as the usage line shows them. */
  synopsis: string;
  /** What it does, beyond the summary. */
  details: string;
  example: string;
  options: Options;
  /** The one positional argument it takes (e.g. `FILE`), given to `run` as `values.argument`. */
  argument?: string;
  run(values: Values): Promise<void>;
}

/** A fault in how the command was called: its message, then the command's usage; exit status 2. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly command: Command | null,
  ) {
    super(message);
  }
}

const COMMANDS: Command[] = [
  {
    name: 'serve',
    summary: 'serve the HTTP API (what `npm start` runs)',
    synopsis: '',
    details:
      'Serves until SIGINT or SIGTERM. Settings come from SPANBASE_* environment variables (port,\n' +
      'host, data directory, PostgreSQL URL, ...; see the README). On its first start against an empty\n' +
      'store it creates an admin and prints its API key once.',
    example: 'SPANBASE_PORT=8088 spanbase serve',
    options: {},
    run: async () => (await import('./main.ts')).serve(loadConfig()),
  },
  {
    name: 'users create',
    summary: 'create a user',
    synopsis: '--email EMAIL [--password PASSWORD] [--first-name NAME] [--last-name NAME] [--admin]',
    details:
      'Creates a user and prints it as JSON. The rules of POST /v2/users apply: a valid email not\n' +
      'taken yet, a password of 8 to 1024 characters. Without --password the user can only use API\n' +
      'keys (see `spanbase keys create`). --admin gives the admin role.',
    example: "spanbase users create --email ann@example.com --password 'correct horse battery' --admin",
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      admin: { type: 'boolean' },
    },
    async run(v) {
      const input = await checkBody<{ email: string; password?: string | null }>('CreateUser', {
        email: v.email,
        ...(v.password === undefined ? {} : { password: v.password }),
        ...(v['first-name'] === undefined ? {} : { first_name: v['first-name'] }),
        ...(v['last-name'] === undefined ? {} : { last_name: v['last-name'] }),
        role: v.admin ? 'admin' : 'user',
      });
      await withServices(async ({ users }) => {
        print(await users.create(null, input));
      });
    },
  },
  {
    name: 'users list',
    summary: 'list the users',
    synopsis: '',
    details: 'Prints every user as one JSON object per line (id, email, names, role, created_at).',
    example: 'spanbase users list',
    options: {},
    async run() {
      await withServices(async ({ users }) => {
        for (const u of await users.list(null)) print(u);
      });
    },
  },
  {
    name: 'keys create',
    summary: 'create an API key for a user (printed once)',
    synopsis: '--email EMAIL [--description TEXT]',
    details:
      'Creates an API key for the user with that email and prints the key, which is shown only\n' +
      'this once (Spanbase keeps a hash). Send it in the Service-API-Key header.',
    example: 'export SPANBASE_KEY=$(spanbase keys create --email ann@example.com --description ci)',
    options: { email: { type: 'string' }, description: { type: 'string' } },
    async run(v) {
      const { description } = await checkBody<{ description?: string }>('CreateApiKey', {
        description: v.description ?? 'created from the command line',
      });
      const email = required(v, 'email', this);
      await withServices(async ({ auth }) => {
        const user = await auth.userByEmail(email);
        if (!user) throw new HttpError(404, `no user with email ${email} (see \`spanbase users list\`)`);
        const key = await auth.createApiKey(user.id, description ?? '', null);
        process.stdout.write(`${key.api_key}\n`);
      });
    },
  },
  {
    name: 'secrets rotate',
    summary: 're-seal stored provider tokens under a new secret key',
    synopsis: '[--new-key KEY]',
    details:
      'Stop every Spanbase process first (a running one keeps sealing with the old key). Generates a\n' +
      'new secret key, or takes --new-key (64 hex characters or base64), and re-seals every stored\n' +
      'provider token under it in one transaction. With the key in <data dir>/secret.key, the file is\n' +
      'replaced; with SPANBASE_SECRET_KEY, a generated key is printed: set it on every process.',
    example: 'spanbase secrets rotate',
    options: { 'new-key': { type: 'string' } },
    async run(v) {
      const { openStore } = await import('./store/db.ts');
      const { migrate } = await import('./store/migrate.ts');
      const { rotateSecretKey } = await import('./services/secret-rotation.ts');
      const config = loadConfig();
      const store = openStore(config);
      try {
        await migrate(store);
        const out = await rotateSecretKey(config, store, v['new-key'] as string | undefined);
        note(
          `re-sealed ${counted(out.resealed, 'provider token')}` +
            (out.already ? ` (${out.already} already under the new key)` : ''),
        );
        if (out.keyFile) {
          note(`the new key is in ${out.keyFile}; back it up with the database`);
        } else {
          if (out.newKeyHex) process.stdout.write(`${out.newKeyHex}\n`);
          note(
            `set SPANBASE_SECRET_KEY to the new key${out.newKeyHex ? ' (printed above)' : ''} on every process, then start them`,
          );
        }
      } finally {
        await store.close();
      }
    },
  },
  {
    name: 'export',
    summary: 'write the records of a log stream as JSON lines or CSV',
    synopsis:
      '--project P --log-stream L [--root-type session|trace|span] [--format jsonl|csv] [--filters JSON]\n' +
      '         [--filter-tree JSON] [--sort JSON] [--columns a,b] [--no-redact] [--output FILE] [--email EMAIL]',
    details:
      'What POST /v2/projects/{id}/export_records answers, written to standard output or --output:\n' +
      'JSON lines of sessions (each with its traces and their spans), traces (each with its span tree)\n' +
      'or spans, or CSV rows. --project and --log-stream take a name or an id; filters and sort are\n' +
      'those of a search. It acts as the first admin unless --email names another user. A progress\n' +
      'bar shows on standard error when it is a terminal.',
    example: 'spanbase export --project my-app --log-stream prod --root-type session --output prod.jsonl',
    options: {
      project: { type: 'string' },
      'log-stream': { type: 'string' },
      'root-type': { type: 'string' },
      format: { type: 'string' },
      filters: { type: 'string' },
      'filter-tree': { type: 'string' },
      sort: { type: 'string' },
      columns: { type: 'string' },
      'no-redact': { type: 'boolean' },
      output: { type: 'string' },
      email: { type: 'string' },
    },
    async run(v) {
      const { exportRecords } = await import('./cli/records-io.ts');
      const format = v.format ?? 'jsonl';
      if (format !== 'jsonl' && format !== 'csv') throw new UsageError('--format is jsonl or csv', this);
      const rootType = (v['root-type'] as string | undefined) ?? 'trace';
      const json = (flag: string) => {
        const text = v[flag];
        if (typeof text !== 'string') return undefined;
        try {
          return JSON.parse(text);
        } catch {
          throw new UsageError(`--${flag} must be JSON`, this);
        }
      };
      const { createWriteStream } = await import('node:fs');
      const file = v.output as string | undefined;
      const output = file ? createWriteStream(file) : process.stdout;
      const roots = await exportRecords(loadConfig(), {
        project: required(v, 'project', this),
        logStream: required(v, 'log-stream', this),
        email: v.email as string | undefined,
        rootType,
        format,
        filters: json('filters'),
        filterTree: json('filter-tree'),
        sort: json('sort'),
        columns: (v.columns as string | undefined)?.split(',').filter(Boolean),
        redact: !v['no-redact'],
        output,
      });
      if (file) await new Promise<void>((r) => output.end(() => r()));
      note(`exported ${counted(roots, rootType)}`);
    },
  },
  {
    name: 'import',
    summary: 'load JSON lines of sessions or traces into a log stream',
    synopsis: 'FILE --project P --log-stream L [--new-ids] [--email EMAIL]',
    details:
      'Loads an export of sessions or traces (or any JSON lines of traces as POST .../traces takes\n' +
      'them) through ingestion, in batches of about 2,000 records, 4 under way at once. The project\n' +
      'and log stream (names or ids) are created when missing, and deleted again if the import fails.\n' +
      'Records keep their ids, so loading a file again updates what it loaded before; --new-ids gives\n' +
      'every record a new id (links kept), to load a copy beside the records it was exported from\n' +
      '(another project or log stream of the same store). FILE - reads standard input. A progress\n' +
      'bar shows on standard error when it is a terminal.',
    example: 'spanbase import prod.jsonl --project my-app --log-stream prod',
    argument: 'FILE',
    options: {
      project: { type: 'string' },
      'log-stream': { type: 'string' },
      'new-ids': { type: 'boolean' },
      email: { type: 'string' },
    },
    async run(v) {
      const { importRecords } = await import('./cli/records-io.ts');
      const out = await importRecords(loadConfig(), required(v, 'argument', this), {
        project: required(v, 'project', this),
        logStream: required(v, 'log-stream', this),
        newIds: v['new-ids'] === true,
        email: v.email as string | undefined,
      });
      const stored = out.records - out.added;
      note(
        `added ${counted(out.added, 'record')} from ${counted(out.lines, 'line')}` +
          (stored > 0 ? ` (${counted(stored, 'record')} already stored, updated)` : ''),
      );
    },
  },
  {
    name: 'datasets import',
    summary: 'create a dataset from a JSONL or CSV file',
    synopsis: 'FILE --name NAME [--project P] [--format jsonl|csv] [--email EMAIL]',
    details:
      'Streams FILE into a new dataset (version 1), as POST /v2/datasets does: JSON lines of objects,\n' +
      'or CSV with a header line (the format follows the file name unless --format says). A line that\n' +
      'is not UTF-8, not a JSON object or not a valid CSV record stops the import naming the line, and\n' +
      'no dataset is left. --project (a name or id) makes the project use it. A progress bar shows on\n' +
      'standard error when it is a terminal.',
    example: 'spanbase datasets import questions.csv --name questions --project my-app',
    argument: 'FILE',
    options: {
      name: { type: 'string' },
      project: { type: 'string' },
      format: { type: 'string' },
      email: { type: 'string' },
    },
    async run(v) {
      const { importDataset } = await import('./cli/datasets-io.ts');
      const format = v.format as string | undefined;
      if (format !== undefined && format !== 'jsonl' && format !== 'csv')
        throw new UsageError('--format is jsonl or csv', this);
      const ds = await importDataset(loadConfig(), required(v, 'argument', this), {
        name: required(v, 'name', this),
        project: v.project as string | undefined,
        format,
        email: v.email as string | undefined,
      });
      print(ds);
      note(`imported ${ds.num_rows} rows into dataset ${ds.name} (${ds.id})`);
    },
  },
  {
    name: 'datasets export',
    summary: 'write a dataset version as JSON lines or CSV',
    synopsis: 'DATASET [--version N] [--format jsonl|csv] [--output FILE] [--email EMAIL]',
    details:
      'Writes the rows of a dataset (a name or an id), the current version unless --version names\n' +
      'another, to standard output or --output: one JSON object of column values a line, or CSV with\n' +
      'a header line (object values as JSON text). A progress bar shows on standard error when it is\n' +
      'a terminal.',
    example: 'spanbase datasets export questions --version 1 --format csv --output questions-v1.csv',
    argument: 'DATASET',
    options: {
      version: { type: 'string' },
      format: { type: 'string' },
      output: { type: 'string' },
      email: { type: 'string' },
    },
    async run(v) {
      const { exportDataset } = await import('./cli/datasets-io.ts');
      const format = (v.format as string | undefined) ?? 'jsonl';
      if (format !== 'jsonl' && format !== 'csv') throw new UsageError('--format is jsonl or csv', this);
      const version = v.version === undefined ? undefined : Number(v.version);
      if (version !== undefined && !(Number.isInteger(version) && version >= 1))
        throw new UsageError('--version is a version number (1, 2, ...)', this);
      const { createWriteStream } = await import('node:fs');
      const file = v.output as string | undefined;
      const output = file ? createWriteStream(file) : process.stdout;
      const rows = await exportDataset(loadConfig(), {
        dataset: required(v, 'argument', this),
        version,
        format,
        email: v.email as string | undefined,
        output,
      });
      if (file) await new Promise<void>((r) => output.end(() => r()));
      note(`exported ${rows} rows`);
    },
  },
  {
    name: 'backup',
    summary: 'copy the SQLite store while it serves (and its secret key)',
    synopsis: 'FILE',
    details:
      'Writes a consistent copy of the SQLite database to FILE while the server keeps serving reads\n' +
      'and writes, checks its integrity, and copies the generated secret key to FILE.key (mode 0600;\n' +
      'keep it apart from the copy). PostgreSQL: use pg_dump (see the README).',
    example: 'spanbase backup /backups/spanbase-$(date +%F).db',
    argument: 'FILE',
    options: {},
    async run(v) {
      const { backup } = await import('./cli/backup.ts');
      const out = backup(loadConfig(), required(v, 'argument', this));
      note(`wrote ${out.file} (${out.bytes} bytes, integrity checked)`);
      if (out.keyFile) note(`the secret key is in ${out.keyFile}: keep it apart from the database copy`);
    },
  },
  {
    name: 'restore',
    summary: 'put a backup of the SQLite store back (server stopped)',
    synopsis: 'FILE [--force]',
    details:
      'Checks the copy, refuses while a server runs on the data directory and, without --force, to\n' +
      'replace an existing database; puts FILE (and FILE.key, when there) in place. The text index\n' +
      'is rebuilt when the server starts.',
    example: 'spanbase restore /backups/spanbase-2025-01-31.db --force',
    argument: 'FILE',
    options: { force: { type: 'boolean' } },
    async run(v) {
      const { restore } = await import('./cli/backup.ts');
      const out = restore(loadConfig(), required(v, 'argument', this), { force: v.force === true });
      note(
        `restored the database${out.keyRestored ? ' and its secret key' : ''}; the text index is rebuilt on start`,
      );
    },
  },
];

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const note = (text: string) => process.stderr.write(`spanbase: ${text}\n`);

function required(values: Values, option: string, command: Command): string {
  const v = values[option];
  if (typeof v !== 'string') {
    throw new UsageError(
      option === 'argument' ? `${command.argument} is required` : `--${option} is required`,
      command,
    );
  }
  return v;
}

/** Runs `fn` over the services of the configured store, without serving HTTP. */
async function withServices(fn: (s: Services) => Promise<void>) {
  const { startServices } = await import('./server.ts');
  const running = await startServices({ ...loadConfig(), announceBootstrap: false }, { logger: false });
  try {
    await fn(running.services);
  } finally {
    await running.close();
  }
}

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return (
    'Spanbase: self-hosted observability logging for LLM applications.\n\n' +
    'usage: spanbase <command> [options]\n\ncommands:\n' +
    COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}\n`).join('') +
    "\nRun 'spanbase <command> --help' for what a command does, its options and an example.\n" +
    'Settings come from SPANBASE_* environment variables (see the README).\n'
  );
}

function commandUsage(c: Command): string {
  return `usage: spanbase ${c.name}${c.synopsis ? ` ${c.synopsis}` : ''}\n`;
}

function commandHelp(c: Command): string {
  return `${commandUsage(c)}\n${c.details}\n\nexample:\n  ${c.example}\n`;
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

function closest(word: string, candidates: string[]): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const c of candidates) {
    const d = distance(word, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

/** node:util parseArgs' errors, in the command's own words. */
function parseFault(err: NodeJS.ErrnoException, c: Command): UsageError {
  const quoted = /'([^']*)'/.exec(err.message)?.[1] ?? '';
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const flag = quoted.replace(/^-+/, '').split('=')[0];
      const guess = closest(flag, Object.keys(c.options));
      return new UsageError(`unknown option ${quoted}${guess ? ` (did you mean --${guess}?)` : ''}`, c);
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new UsageError(`${quoted.split(' ')[0]} needs a value`, c);
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new UsageError(`unexpected argument '${quoted}'`, c);
    default:
      return new UsageError(err.message, c);
  }
}

/** The command the words name, and the arguments after them. */
function findCommand(args: string[]): { command: Command; rest: string[] } | null {
  for (const c of COMMANDS) {
    const words = c.name.split(' ');
    if (words.every((w, i) => args[i] === w)) return { command: c, rest: args.slice(words.length) };
  }
  return null;
}

async function main(args: string[]): Promise<void> {
  const [first] = args;
  if (first === undefined || first === 'help' || first === '-h' || first === '--help') {
    const found = findCommand(args.slice(1));
    process.stdout.write(found ? commandHelp(found.command) : usage());
    return;
  }
  const found = findCommand(args);
  if (!found) {
    const group = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
    if (group.length) {
      const verb = args[1];
      const names = group.map((c) => c.name).join(', ');
      if (verb === '-h' || verb === '--help') {
        process.stdout.write(group.map(commandUsage).join(''));
        return;
      }
      if (verb === undefined) {
        process.stderr.write(group.map(commandUsage).join(''));
        process.exitCode = 2;
        return;
      }
      throw new UsageError(`unknown command '${first} ${verb}' (${names})`, null);
    }
    const guess = closest(first, [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]))]);
    throw new UsageError(`unknown command '${first}'${guess ? ` (did you mean '${guess}'?)` : ''}`, null);
  }
  const { command, rest } = found;
  let values: Values;
  try {
    const parsed = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: command.argument !== undefined,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
    });
    if (parsed.positionals.length > 1)
      throw new UsageError(`unexpected argument '${parsed.positionals[1]}'`, command);
    values = { ...(parsed.values as Values), argument: parsed.positionals[0] };
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw parseFault(err as NodeJS.ErrnoException, command);
  }
  if (values.help) {
    process.stdout.write(commandHelp(command));
    return;
  }
  try {
    await command.run(values);
  } catch (err) {
    // A body field is an option of the same name (first_name: --first-name).
    if (err instanceof ValidationError) {
      const lines = err.items.map((i) => {
        const field = i.loc.slice(1).join('.');
        return `${field ? `--${field.replaceAll('_', '-')}: ` : ''}${i.msg}`;
      });
      throw new UsageError(lines.join('\n'), command);
    }
    throw err;
  }
}

try {
  await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    const prefix = `spanbase${err.command ? ` ${err.command.name}` : ''}: `;
    for (const line of err.message.split('\n')) process.stderr.write(`${prefix}${line}\n`);
    process.stderr.write(err.command ? commandUsage(err.command) : usage());
    process.exitCode = 2;
  } else {
    const message =
      err instanceof ConfigError
        ? `configuration error: ${err.message}`
        : err instanceof Error
          ? err.message
          : String(err);
    process.stderr.write(`spanbase: ${message}\n`);
    process.exitCode = 1;
  }
}
