/**
 * A real Spanbase server as a child process (`node --import tsx src/main.ts`), over real HTTP on
 * loopback: for crash tests (SIGKILL, restart on the same store), log capture (every stdout and
 * stderr line) and the load benchmark. The in-process harness is test/helpers/server.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Reply, StoreKind } from './server.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface ChildOptions {
  /** Port to listen on; a free one when absent. */
  port?: number;
  /** Extra SPANBASE_* settings (log level, body limit, ...). */
  env?: Record<string, string>;
  /** Keep every output line (for secret scans); otherwise only the last few kilobytes. */
  captureOutput?: boolean;
  /** PostgreSQL URL; defaults to SPANBASE_TEST_DATABASE_URL. */
  databaseUrl?: string;
  /**
   * An existing data directory to serve instead of a new one (a store built by another run, with its
   * `initial-admin-key`); its `secret.key`, when there, is the server's key. Kept on close.
   */
  dataDir?: string;
  /**
   * Node's arguments and environment defaults to run the server with (a bench gives `npm start`'s:
   * bench/lib/server.ts npmStartLaunch); the TypeScript sources under tsx when absent.
   */
  launch?: { args: string[]; env: Record<string, string> };
}

export interface ChildServer {
  store: StoreKind;
  url: string;
  port: number;
  dataDir: string;
  /** PostgreSQL schema of this server (null on SQLite). */
  schema: string | null;
  /** The first admin's API key, read from the data directory. */
  adminKey: string;
  /** The environment the server runs with (SPANBASE_SECRET_KEY, SPANBASE_DATABASE_URL, ...). */
  env: Readonly<Record<string, string>>;
  /** Every line the current and previous processes wrote (with captureOutput), in order. */
  lines: string[];
  /** The current process. */
  proc(): ChildProcess;
  /** Same signature as the in-process harness: `auth` is a key, a header object, or null. */
  call(
    method: string,
    url: string,
    body?: unknown,
    auth?: string | Record<string, string> | null,
  ): Promise<Reply>;
  /** Resident set size of the server process now, in bytes (Linux). */
  rss(): number;
  /**
   * Its private part, in bytes (Linux RssAnon): heaps and caches, where a leak shows. The rest of the
   * RSS is mostly database pages mapped by the search threads, which grows with the data.
   */
  anonRss(): number;
  /** Kills the process (SIGKILL by default) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts a new process on the same store (after a kill). */
  restart(): Promise<void>;
  /** Stops the process and removes the data directory and schema. */
  close(): Promise<void>;
}

/** A size field of /proc/PID/status, in bytes (0 when the process is gone). */
function statusBytes(pid: number | undefined, field: string): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function pgQuery(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

let counter = 0;

export async function startChildServer(store: StoreKind, opts: ChildOptions = {}): Promise<ChildServer> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-child-'));
  const keyFile = path.join(dataDir, 'secret.key');
  const secretKey =
    opts.dataDir && fs.existsSync(keyFile)
      ? fs.readFileSync(keyFile, 'utf8').trim()
      : crypto.randomBytes(32).toString('hex');
  const port = opts.port ?? (await freePort());
  const dbUrl = opts.databaseUrl ?? process.env.SPANBASE_TEST_DATABASE_URL;
  let schema: string | null = null;
  if (store === 'postgres') {
    if (!dbUrl) throw new Error('SPANBASE_TEST_DATABASE_URL is not set');
    schema = `c_${process.pid}_${Date.now().toString(36)}_${counter++}`;
    await pgQuery(dbUrl, `CREATE SCHEMA ${schema}`);
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.tmpdir(),
    NODE_ENV: 'production',
    SPANBASE_DATA_DIR: dataDir,
    SPANBASE_PORT: String(port),
    SPANBASE_HOST: '127.0.0.1',
    SPANBASE_LOG_LEVEL: 'warn',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    SPANBASE_SCRYPT_COST: '1024',
    // Fixed across restarts, so tokens and stored secrets stay readable.
    SPANBASE_SECRET_KEY: secretKey,
    ...(store === 'postgres' ? { SPANBASE_DATABASE_URL: dbUrl!, SPANBASE_PG_SCHEMA: schema! } : {}),
    ...(opts.env ?? {}),
  };
  for (const [name, value] of Object.entries(opts.launch?.env ?? {})) env[name] ??= value;
  const args = opts.launch?.args ?? ['--import', 'tsx', path.join(ROOT, 'src', 'main.ts')];
  const lines: string[] = [];
  let tail = '';
  let proc: ChildProcess;
  const url = `http://127.0.0.1:${port}`;

  const launch = async () => {
    proc = spawn(process.execPath, args, {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [proc.stdout!, proc.stderr!]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        tail = (tail + chunk).slice(-20_000);
        if (!opts.captureOutput) return;
        partial += chunk;
        const parts = partial.split('\n');
        partial = parts.pop() ?? '';
        lines.push(...parts);
      });
      stream.on('end', () => {
        if (opts.captureOutput && partial) lines.push(partial);
      });
    }
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}): ${tail}`);
      try {
        const r = await fetch(`${url}/v2/healthcheck`, { signal: AbortSignal.timeout(2000) });
        if (r.ok) break;
      } catch {}
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`server did not start within 60 s: ${tail}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await launch();
  const adminKey = fs.readFileSync(path.join(dataDir, 'initial-admin-key'), 'utf8').trim();

  const exited = (p: ChildProcess) => p.exitCode !== null || p.signalCode !== null;
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const p = proc;
    if (exited(p)) return;
    const done = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill(signal);
    await done;
  };

  const call: ChildServer['call'] = async (method, route, body, auth = adminKey) => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (typeof auth === 'string') headers['service-api-key'] = auth;
    else if (auth) Object.assign(headers, auth);
    const res = await fetch(`${url}${route}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    let parsed: any = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed, text, headers: Object.fromEntries(res.headers) };
  };

  return {
    store,
    url,
    port,
    dataDir,
    schema,
    adminKey,
    env,
    lines,
    proc: () => proc,
    call,
    rss: () => statusBytes(proc.pid, 'VmRSS'),
    anonRss: () => statusBytes(proc.pid, 'RssAnon'),
    kill,
    async restart() {
      await kill('SIGKILL');
      await launch();
    },
    async close() {
      const p = proc;
      const force = setTimeout(() => p.kill('SIGKILL'), 10_000);
      await kill('SIGTERM');
      clearTimeout(force);
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      if (schema && dbUrl) await pgQuery(dbUrl, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}
