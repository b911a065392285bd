/**
 * `spanbase backup FILE` and `spanbase restore FILE` for the SQLite store (PostgreSQL: pg_dump, see
 * the README).
 *
 * Backup: `VACUUM INTO` on a connection of its own reads the database in one read transaction, so the
 * copy is the database as of one moment (every write committed before it began, none after) while the
 * server goes on serving reads and writes (a WAL reader blocks no writer). SQLite's step-wise online
 * backup would start over after each write of another connection, which under steady ingestion may
 * never finish. The copy's integrity is checked. The text index is not copied: it is derived, and a
 * restored store rebuilds it on start. The copy is readable by its owner only (0600). The generated
 * secret key (`<data dir>/secret.key`) is copied to `FILE.key` (mode 0600): keep it apart from the
 * database copy.
 *
 * Restore: checks the copy's integrity, refuses while a server runs on the data directory (its pid
 * file names a live process), and refuses to replace an existing database without `force`. The old
 * write-ahead log and text index are removed (they belong to the replaced database).
 */
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type { Config } from '../config.ts';

const DB_FILE = 'spanbase.db';
const KEY_FILE = 'secret.key';
const PID_FILE = 'spanbase.pid';

/** `pragma integrity_check` of a database file: null when it is sound, else what is wrong. */
export function integrityProblem(file: string): string | null {
  let db: SQLite.Database | null = null;
  try {
    db = new SQLite(file, { readonly: true, fileMustExist: true });
    const rows = db.pragma('integrity_check') as { integrity_check: string }[];
    const bad = rows.map((r) => r.integrity_check).filter((r) => r !== 'ok');
    if (bad.length) return bad.slice(0, 5).join('; ');
    db.prepare('select count(*) from records').get();
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    db?.close();
  }
}

function requireSqlite(config: Config, verb: string): void {
  if (config.databaseUrl) {
    throw new Error(`${verb} is for the SQLite store; back up PostgreSQL with pg_dump (see the README)`);
  }
}

export interface BackupResult {
  file: string;
  bytes: number;
  keyFile: string | null;
}

export function backup(config: Config, file: string): BackupResult {
  requireSqlite(config, 'backup');
  const source = path.join(config.dataDir, DB_FILE);
  if (!fs.existsSync(source)) throw new Error(`no database at ${source}`);
  const target = path.resolve(file);
  // The copy holds everything the store holds: made empty, owner-only (0600, as the key file), then
  // filled (VACUUM INTO writes into an empty file and keeps its mode).
  try {
    fs.closeSync(fs.openSync(target, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${target} exists; give a new file name`);
    throw err;
  }
  const db = new SQLite(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare('vacuum into ?').run(target);
  } catch (err) {
    fs.rmSync(target, { force: true });
    throw err;
  } finally {
    db.close();
  }
  const problem = integrityProblem(target);
  if (problem) throw new Error(`the copy failed its integrity check: ${problem}`);
  let keyFile: string | null = null;
  const key = path.join(config.dataDir, KEY_FILE);
  if (!config.secretKey && fs.existsSync(key)) {
    keyFile = `${target}.key`;
    fs.copyFileSync(key, keyFile);
    fs.chmodSync(keyFile, 0o600);
  }
  return { file: target, bytes: fs.statSync(target).size, keyFile };
}

/** The live process a data directory's pid file names, if any. */
export function runningServer(dataDir: string): number | null {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, PID_FILE), 'utf8').trim());
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : null;
  }
}

/** Marks the data directory as served by this process (restore refuses while it runs); undo on exit. */
export function claimDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, PID_FILE);
  fs.writeFileSync(file, `${process.pid}\n`);
  return () => {
    try {
      if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file);
    } catch {
      // Gone already.
    }
  };
}

export function restore(config: Config, file: string, opts: { force: boolean }): { keyRestored: boolean } {
  requireSqlite(config, 'restore');
  const source = path.resolve(file);
  const problem = integrityProblem(source);
  if (problem) throw new Error(`${source} is not a sound Spanbase database: ${problem}`);
  const pid = runningServer(config.dataDir);
  if (pid !== null)
    throw new Error(`a Spanbase server (pid ${pid}) runs on ${config.dataDir}; stop it first`);
  const target = path.join(config.dataDir, DB_FILE);
  if (fs.existsSync(target) && !opts.force) {
    throw new Error(`${target} exists; give --force to replace it`);
  }
  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const temp = `${target}.restoring`;
  fs.copyFileSync(source, temp);
  for (const stale of [
    `${target}-wal`,
    `${target}-shm`,
    path.join(config.dataDir, 'spanbase-text.db'),
    path.join(config.dataDir, 'spanbase-text.db-wal'),
    path.join(config.dataDir, 'spanbase-text.db-shm'),
  ])
    fs.rmSync(stale, { force: true });
  fs.renameSync(temp, target);
  const key = `${source}.key`;
  if (fs.existsSync(key) && !config.secretKey) {
    const dest = path.join(config.dataDir, KEY_FILE);
    fs.copyFileSync(key, dest);
    fs.chmodSync(dest, 0o600);
    return { keyRestored: true };
  }
  return { keyRestored: false };
}
