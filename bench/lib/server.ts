/** A real Spanbase server as a child process, for benchmarks and crash tests. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface ServerOptions {
  port: number;
  store: 'sqlite' | 'postgres';
  /** Reuse a data directory (restart after a crash); a new temporary one otherwise. */
  dataDir?: string;
  /** PostgreSQL: the server's schema (created by createPgSchema). */
  pgSchema?: string;
  databaseUrl?: string;
  env?: Record<string, string>;
  /**
   * Run the built server as `npm start` does (dist/main.js, built first if stale; the default), or
   * with false the TypeScript sources under tsx, which loads tsx in every thread: about 23 MB each and
   * its compiling, which a figure of the server as people run it must not count.
   */
  built?: boolean;
}

export interface ChildServer {
  proc: ChildProcess;
  url: string;
  dataDir: string;
  /** The first admin's API key (read from the data directory). */
  key: string;
  /** Peak resident set size of the server process so far (since resetPeak), in bytes (Linux VmHWM). */
  peakRss(): number;
  /** Starts the peak over from the RSS of the moment (Linux /proc/PID/clear_refs). */
  resetPeak(): void;
  /** CPU time the server process has used so far (user + system), in milliseconds (Linux). */
  cpuMs(): number;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The Node.js flags and the environment defaults (`NAME=${NAME:-value}`) `npm start` gives the server
 * (package.json's start script), so a bench runs it alike.
 */
function startCommand(): { flags: string[]; env: Record<string, string> } {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const m = /((?:\w+=\$\{\w+:-\S+\} )*)node((?: --\S+)*) dist\/main\.js/.exec(pkg.scripts.start);
  if (!m) throw new Error(`package.json's start script does not run dist/main.js: ${pkg.scripts.start}`);
  const env: Record<string, string> = {};
  for (const [, name, value] of m[1].matchAll(/(\w+)=\$\{\w+:-(\S+)\}/g)) env[name] = value;
  return { flags: m[2].split(' ').filter(Boolean), env };
}

/**
 * The server as `npm start` runs it, built first if stale: Node's arguments (the start script's
 * flags, then dist/main.js) and the environment defaults it sets.
 */
export function npmStartLaunch(): { args: string[]; env: Record<string, string> } {
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js'), '--if-stale'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error(`the build failed (${build.status})`);
  const start = startCommand();
  return { args: [...start.flags, path.join(ROOT, 'dist', 'main.js')], env: start.env };
}

const TICK_MS = 10; // USER_HZ on Linux is 100

/** A process's name, parent and CPU time from /proc/PID/stat (Linux): its own, and its reaped children's. */
function procStat(
  pid: number,
): { pid: number; name: string; ppid: number; cpuMs: number; childrenMs: number } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      name,
      ppid: Number(f[1]),
      cpuMs: (Number(f[11]) + Number(f[12])) * TICK_MS,
      childrenMs: (Number(f[13]) + Number(f[14])) * TICK_MS,
    };
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system, ms) used so far by the PostgreSQL server on this machine: every live
 * `postgres` process, and through the postmaster's children counters the backends that have exited.
 * Meaningful only when the bench's database runs here; nothing else should use it meanwhile.
 */
export function pgServerCpuMs(): number {
  const procs = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => procStat(Number(d)))
    .filter((p): p is NonNullable<typeof p> => p?.name === 'postgres');
  const pids = new Set(procs.map((p) => p.pid));
  let ms = 0;
  for (const p of procs) {
    ms += p.cpuMs;
    // The postmaster (its parent is no postgres process) has reaped every backend that exited.
    if (!pids.has(p.ppid)) ms += p.childrenMs;
  }
  return ms;
}

export async function createPgSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`create schema ${schema}`);
  await c.end();
}

export async function dropPgSchema(url: string, schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`drop schema if exists ${schema} cascade`);
  await c.end();
}

export async function startChildServer(opts: ServerOptions): Promise<ChildServer> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'spanbase-child-'));
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SPANBASE_DATA_DIR: dataDir,
    SPANBASE_PORT: String(opts.port),
    SPANBASE_HOST: '127.0.0.1',
    SPANBASE_LOG_LEVEL: 'warn',
    SPANBASE_QUIET_BOOTSTRAP: '1',
    SPANBASE_SCRYPT_COST: '1024',
    ...(opts.store === 'postgres'
      ? { SPANBASE_DATABASE_URL: opts.databaseUrl as string, SPANBASE_PG_SCHEMA: opts.pgSchema as string }
      : {}),
    ...opts.env,
  };
  if (opts.store === 'sqlite') delete env.SPANBASE_DATABASE_URL;
  const extra = process.env.SPANBASE_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const start = (opts.built ?? true) ? npmStartLaunch() : null;
  if (start) for (const [name, value] of Object.entries(start.env)) env[name] ??= value;
  const entry = start ? start.args : ['--import', 'tsx', path.join(ROOT, 'src', 'main.ts')];
  const proc = spawn(process.execPath, [...extra, ...entry], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', process.env.BENCH_SERVER_STDERR ? 'inherit' : 'pipe'],
  });
  let stderr = '';
  proc.stderr?.on('data', (d) => {
    stderr += d;
    if (stderr.length > 20_000) stderr = stderr.slice(-10_000);
  });
  const url = `http://127.0.0.1:${opts.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}): ${stderr}`);
    try {
      const r = await fetch(`${url}/v2/healthcheck`);
      if (r.ok) break;
    } catch {}
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`server did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const key = fs.readFileSync(path.join(dataDir, 'initial-admin-key'), 'utf8').trim();
  let peak = 0;
  const peakRss = () => {
    try {
      const status = fs.readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      const m = /VmHWM:\s+(\d+) kB/.exec(status);
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {}
    return peak;
  };
  const resetPeak = () => {
    fs.writeFileSync(`/proc/${proc.pid}/clear_refs`, '5');
    peak = 0;
  };
  const cpuMs = () => procStat(proc.pid as number)?.cpuMs ?? 0;
  return {
    proc,
    url,
    dataDir,
    key,
    peakRss,
    resetPeak,
    cpuMs,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const done = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill(signal);
      await done;
    },
  };
}

/** JSON over HTTP with the admin key. */
export async function call(
  server: { url: string; key: string },
  method: string,
  route: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const r = await fetch(`${server.url}${route}`, {
    method,
    headers: {
      'service-api-key': server.key,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: r.status, body: parsed };
}

/**
 * A lean client for timed posts: node:http over kept-alive connections, the body sent as the bytes
 * given, the answer read as text. fetch costs the client about twice the CPU per 2 MB body, CPU this
 * 2-core machine would take from the server being measured.
 */
export function poster(server: { url: string; key: string }, connections: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  return (route: string, body: Buffer): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        `${server.url}${route}`,
        {
          method: 'POST',
          agent,
          headers: {
            'service-api-key': server.key,
            'content-type': 'application/json',
            'content-length': body.length,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

/** A backlog gauge of GET /metrics; NaN (it could not be read) counts as none rather than waited on for ever. */
async function backlogGauge(server: { url: string }, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const backlog = Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return Number.isNaN(backlog) ? 0 : Math.max(0, backlog);
}

/** Records the text index has not taken yet (spanbase_text_index_backlog). */
export const textBacklog = (server: { url: string }) => backlogGauge(server, 'spanbase_text_index_backlog');

/** Days whose dashboard rollup rows the fold job has not built yet (spanbase_rollup_days_unbuilt). */
export const unbuiltRollupDays = (server: { url: string }) =>
  backlogGauge(server, 'spanbase_rollup_days_unbuilt');

/** Every file under a directory with its size (a SQLite store: the database, its text index, their WALs). */
export function dirFiles(dir: string, out: Record<string, number> = {}, prefix = ''): Record<string, number> {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) dirFiles(p, out, `${prefix}${e.name}/`);
    else out[prefix + e.name] = fs.statSync(p).size;
  }
  return out;
}

/**
 * A SQLite store's files at rest: once the server has truncated its WALs after 10 s without writes
 * (waited for up to `maxMs`).
 */
export async function restingFiles(dir: string, maxMs = 30_000): Promise<Record<string, number>> {
  const until = performance.now() + maxMs;
  let files = dirFiles(dir);
  while (performance.now() < until && Object.entries(files).some(([f, b]) => f.endsWith('-wal') && b > 0)) {
    await new Promise((r) => setTimeout(r, 1000));
    files = dirFiles(dir);
  }
  return files;
}

/**
 * Bytes on disk of each relation of a schema: each table (heap, TOAST, free space and visibility
 * maps) and each of its indexes, by name.
 */
export async function pgRelationBytes(url: string, schema: string): Promise<Record<string, number>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query(
      `select c.relname as name, pg_table_size(c.oid)::bigint as bytes
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = $1 and c.relkind in ('r', 'm')
       union all
       select i.relname, pg_relation_size(i.oid)::bigint
       from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
       join pg_namespace n on n.oid = t.relnamespace
       where n.nspname = $1 and t.relkind in ('r', 'm')`,
      [schema],
    );
    return Object.fromEntries(rows.map((r) => [r.name as string, Number(r.bytes)]));
  } finally {
    await c.end();
  }
}

/**
 * `pgRelationBytes` once the server's work after a burst has settled: read every second until two
 * readings agree (the text queue is vacuumed once drained) and the dashboard rollups' deltas are
 * folded (their job runs every 5 s, and vacuums them after), for up to `maxMs`.
 */
export async function restingPgRelations(url: string, schema: string, maxMs = 30_000) {
  const until = performance.now() + maxMs;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const deltas = `select exists (select 1 from ${c.escapeIdentifier(schema)}.rollup_deltas) as pending`;
  try {
    let sizes = await pgRelationBytes(url, schema);
    while (performance.now() < until) {
      await new Promise((r) => setTimeout(r, 1000));
      const next = await pgRelationBytes(url, schema);
      const settled = JSON.stringify(next) === JSON.stringify(sizes);
      sizes = next;
      if (settled && !(await c.query(deltas)).rows[0].pending) break;
    }
    return sizes;
  } finally {
    await c.end();
  }
}

/** Bytes of a PostgreSQL schema's tables with their indexes and TOAST. */
export async function pgSchemaBytes(url: string, schema: string): Promise<number> {
  return Object.values(await pgRelationBytes(url, schema)).reduce((a, b) => a + b, 0);
}
