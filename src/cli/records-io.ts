/**
 * `spanbase export` and `spanbase import`: records of a log stream to and from JSON lines (or CSV for
 * export), against the configured store, acting as a user (the first admin unless `--email`), with a
 * progress bar on stderr when it is a terminal.
 *
 * Export goes through the same service as `POST .../export_records`. Import goes through ingestion
 * (`POST .../traces`), in batches of about IMPORT_BATCH_RECORDS records with IMPORT_IN_FLIGHT batches
 * under way at once (SQLite commits them together): each line is a session with its `traces` (as
 * exported with root type session), a trace with its `spans` (root type trace, or any trace as the
 * ingestion API takes it). A trace's session is created when missing, so traces keep their grouping.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import readline from 'node:readline';
import { SingleBar } from 'cli-progress';
import type { Config } from '../config.ts';
import { startServices } from '../server.ts';
import type { Caller } from '../services/auth.ts';
import type { AddedRecord } from '../services/ingest.ts';
import type { Services } from '../services/index.ts';

export const IMPORT_BATCH_RECORDS = 2000;
export const IMPORT_IN_FLIGHT = 4;

export interface Target {
  project: string;
  logStream: string;
  email?: string;
}

/** A progress bar on stderr when it is a terminal; nothing otherwise. */
export function progress(total: number, unit: string): { tick(n: number): void; stop(): void } {
  if (!process.stderr.isTTY) return { tick() {}, stop() {} };
  const bar = new SingleBar({
    stream: process.stderr,
    format: `{bar} {percentage}% | {value}/{total} ${unit} | {eta_formatted} left`,
    etaBuffer: 50,
  });
  bar.start(total, 0);
  return { tick: (n) => bar.increment(n), stop: () => bar.stop() };
}

export async function withServices<T>(config: Config, run: (s: Services) => Promise<T>): Promise<T> {
  const running = await startServices({ ...config, announceBootstrap: false }, { logger: false });
  try {
    return await run(running.services);
  } finally {
    await running.close();
  }
}

export async function callerFor(s: Services, email: string | undefined): Promise<Caller> {
  const wanted = email ?? s.config.adminEmail;
  const user = await s.auth.userByEmail(wanted);
  if (!user) throw new Error(`no user with email ${wanted}`);
  return {
    id: user.id,
    email: user.email,
    role: user.role as Caller['role'],
    first_name: user.first_name,
    last_name: user.last_name,
  };
}

/**
 * The project and log stream named (names or ids); `create` makes missing ones, and `undo` deletes
 * what it made (with whatever was written into it since).
 */
async function locate(s: Services, caller: Caller, t: Target, create: boolean) {
  const projects = await s.projects.list(caller, {});
  let project = projects.find((p) => p.id === t.project || p.name === t.project);
  let undo = async () => {};
  if (!project) {
    if (!create) throw new Error(`no project ${t.project}`);
    project = await s.projects.create(caller, { name: t.project });
    const id = project.id;
    undo = () => s.projects.delete(caller, id);
  }
  const streams = await s.runs.list(caller, project.id, 'log_stream');
  let stream = streams.find((r) => r.id === t.logStream || r.name === t.logStream);
  if (!stream) {
    if (!create) throw new Error(`no log stream ${t.logStream} in project ${project.name}`);
    stream = await s.runs.create(caller, project.id, 'log_stream', t.logStream);
    const [projectId, runId, undoProject] = [project.id, stream.id, undo];
    undo = async () => {
      await s.runs.delete(caller, projectId, runId);
      await undoProject();
    };
  }
  return { projectId: project.id, logStreamId: stream.id, undo };
}

export interface ExportArgs extends Target {
  rootType: string;
  format: 'jsonl' | 'csv';
  filters?: unknown;
  filterTree?: unknown;
  sort?: unknown;
  columns?: string[];
  redact: boolean;
  output: NodeJS.WritableStream;
}

export async function exportRecords(config: Config, a: ExportArgs): Promise<number> {
  return withServices(config, async (s) => {
    const caller = await callerFor(s, a.email);
    const { projectId, logStreamId } = await locate(s, caller, a, false);
    const body = {
      log_stream_id: logStreamId,
      root_type: a.rootType,
      export_format: a.format,
      filters: a.filters,
      filter_tree: a.filterTree,
      sort: a.sort,
      column_ids: a.columns ?? null,
      redact: a.redact,
    };
    const target = `${a.rootType}s` as 'sessions' | 'traces' | 'spans';
    const { total_count } = await s.lifecycle.count(caller, projectId, target, body);
    // CSV: the header line counts as one more row.
    const header = a.format === 'csv' ? 1 : 0;
    const bar = progress(total_count + header, target);
    const out = await s.lifecycle.export(caller, projectId, body);
    let lines = 0;
    try {
      for await (const chunk of out.chunks) {
        // One root per line (JSON lines) or row (CSV).
        const n = occurrences(chunk, a.format === 'csv' ? '\r\n' : '\n');
        lines += n;
        bar.tick(n);
        if (!a.output.write(chunk)) await new Promise((r) => a.output.once('drain', r));
      }
    } finally {
      bar.stop();
    }
    const roots = lines - header;
    return roots;
  });
}

/** How many times `sep` occurs in a chunk (text, or UTF-8 bytes from a reader thread). */
function occurrences(chunk: string | Buffer, sep: string): number {
  let n = 0;
  for (let i = chunk.indexOf(sep); i >= 0; i = chunk.indexOf(sep, i + sep.length)) n++;
  return n;
}

type Obj = Record<string, any>;

/** A line as ingestion bodies: the sessions it creates and its traces. */
export function importLine(line: Obj, n: number): { sessions: Obj[]; traces: Obj[]; records: number } {
  const count = (t: Obj): number =>
    1 + (Array.isArray(t.spans) ? t.spans.reduce((a: number, sp: Obj) => a + count(sp), 0) : 0);
  if (line.type === 'session') {
    const traces = (Array.isArray(line.traces) ? line.traces : []).map((t: Obj) => ({
      ...t,
      session_id: line.id,
    }));
    const session = {
      id: line.id,
      name: line.name ?? '',
      external_id: line.external_id ?? null,
      previous_session_id: line.previous_session_id ?? null,
      user_metadata: line.user_metadata ?? {},
      created_at: line.created_at,
    };
    return {
      sessions: [session],
      traces,
      records: 1 + traces.reduce((a: number, t: Obj) => a + count(t), 0),
    };
  }
  if (line.type === undefined || line.type === 'trace') {
    const sessions = typeof line.session_id === 'string' ? [{ id: line.session_id }] : [];
    return { sessions, traces: [line], records: count(line) };
  }
  throw new Error(`line ${n}: a ${line.type} record cannot be imported alone (export traces or sessions)`);
}

/** Fields that hold a record id, in a line and in the records nested in it. */
const ID_FIELDS = ['id', 'session_id', 'trace_id', 'parent_id', 'previous_session_id'];

/**
 * `--new-ids`: every id of the file replaced by one derived from it and a key of this import, so the
 * records keep their links (a span's trace and parent, a trace's session) without a table of them,
 * and the copy never meets the records it was exported from.
 */
export function idRenamer(): (line: Obj) => Obj {
  const key = crypto.randomBytes(16);
  const rename = (id: string) => {
    const h = crypto.createHmac('sha256', key).update(id).digest('hex');
    // A version 4, variant 1 UUID, as newId() makes.
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((Number.parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  const walk = (r: Obj): Obj => {
    const out: Obj = { ...r };
    for (const f of ID_FIELDS) if (typeof out[f] === 'string') out[f] = rename(out[f]);
    for (const nested of ['traces', 'spans'])
      if (Array.isArray(out[nested])) out[nested] = out[nested].map((c: Obj) => walk(c));
    return out;
  };
  return walk;
}

export interface ImportTarget extends Target {
  newIds?: boolean;
}

/**
 * Loads a file of JSON lines. On failure nothing of it stays: the project or log stream the import
 * made is deleted again, and in a log stream that was there, the records its batches inserted are
 * (those they only updated, stored already, keep the file's values).
 */
/** `added`: records the import created; `records`: records it sent (the rest were stored already). */
export async function importRecords(
  config: Config,
  file: string,
  t: ImportTarget,
): Promise<{ added: number; records: number; lines: number }> {
  return withServices(config, async (s) => {
    const caller = await callerFor(s, t.email);
    // A file that cannot be read is found out before anything is created.
    const size = file === '-' ? 0 : fs.statSync(file).size;
    const { projectId, logStreamId, undo } = await locate(s, caller, t, true);
    const renamed = t.newIds ? idRenamer() : (line: Obj) => line;
    const input = file === '-' ? process.stdin : fs.createReadStream(file);
    const bar = progress(size, 'bytes');
    const inFlight = new Set<Promise<void>>();
    let failure: unknown = null;
    const inserted: AddedRecord[] = [];
    let added = 0;
    let records = 0;
    let lines = 0;
    let batch = { sessions: new Map<string, Obj>(), traces: [] as Obj[], records: 0, bytes: 0 };
    const send = (b: typeof batch) => {
      const p = s.ingest
        .traces(
          caller,
          projectId,
          { log_stream_id: logStreamId, sessions: [...b.sessions.values()], traces: b.traces },
          {},
          { onAdded: (rows) => inserted.push(...rows) },
        )
        .then(
          (answer) => {
            added += answer.records_added;
            records += answer.records_count;
            bar.tick(b.bytes);
          },
          (err) => {
            failure ??= err;
          },
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    };
    try {
      for await (const text of readline.createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
        lines++;
        if (failure) break;
        if (!text.trim()) continue;
        let parsed: Obj;
        try {
          parsed = JSON.parse(text);
        } catch {
          failure = new Error(`line ${lines}: not JSON`);
          break;
        }
        let part: ReturnType<typeof importLine>;
        try {
          part = importLine(renamed(parsed), lines);
        } catch (err) {
          failure = err;
          break;
        }
        for (const x of part.sessions) {
          // A session line's full entry wins over the bare one a trace line brings.
          if (!batch.sessions.has(x.id) || Object.keys(x).length > 1) batch.sessions.set(x.id, x);
        }
        batch.traces.push(...part.traces);
        batch.records += part.records;
        batch.bytes += Buffer.byteLength(text) + 1;
        if (batch.records >= IMPORT_BATCH_RECORDS) {
          send(batch);
          batch = { sessions: new Map(), traces: [], records: 0, bytes: 0 };
          while (inFlight.size >= IMPORT_IN_FLIGHT) await Promise.race(inFlight);
        }
      }
      if (!failure && (batch.traces.length || batch.sessions.size)) send(batch);
      await Promise.all(inFlight);
    } catch (err) {
      failure ??= err;
    } finally {
      bar.stop();
    }
    if (failure) {
      await Promise.all(inFlight);
      await s.lifecycle.deleteAdded(caller, projectId, logStreamId, inserted);
      await undo();
      throw new Error(importFailure(failure, t));
    }
    return { added, records, lines };
  });
}

/** Why an import stopped, with what to do about an id that is another record's. */
function importFailure(failure: unknown, t: ImportTarget): string {
  const items = (failure as { items?: { msg: string; input?: unknown }[] }).items;
  const text = failure instanceof Error ? failure.message : String(failure);
  let message = `import stopped: ${text}${items ? ` ${JSON.stringify(items).slice(0, 500)}` : ''}`;
  if (!t.newIds && items?.some((i) => i.msg === 'This id is already used by another record'))
    message +=
      '\nThe file holds ids of records stored in another project or log stream (an export loaded ' +
      'elsewhere): give --new-ids to import a copy under new ids.';
  return message;
}
