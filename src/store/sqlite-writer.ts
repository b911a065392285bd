/**
 * The SQLite ingest writer: a thread of its own (writer-thread.js) with its own connection runs the
 * statements of ingest transactions, so that the main thread, where every HTTP request is parsed and
 * answered, does not stop for the B-tree work and the commit (more than half of its time under
 * sustained ingestion: searches and a plain GET waited behind each group commit).
 *
 * Calls are answered in the order they are sent. A caller need not wait for a `run` before sending
 * the next call: should it fail, the thread rolls the transaction back and fails every later call of
 * it, the commit included.
 */
import type { Worker } from 'node:worker_threads';
import { startThread } from './threads.ts';

/** What the writer thread is given. */
export interface WriterData {
  file: string;
  /** Pragmas its connection sets first. */
  pragmas: string[];
}

/** SQL and the arguments of one statement. */
export type Step = [sql: string, args: unknown[]];

type WriterCall =
  | { op: 'begin' | 'commit' | 'rollback' }
  | { op: 'all'; sql: string; args: unknown[][] }
  | { op: 'run'; steps: Step[] };

type WriterReply =
  | { id: number; result: unknown }
  | { id: number; error: { message: string; code?: string } };

/**
 * A group's rows arrive, are written and are dropped: a small young generation is enough (V8's
 * default would add tens of MB to the server's resident memory).
 */
const WRITER_LIMITS = { maxYoungGenerationSizeMb: 8 };

export class SqliteWriter {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();

  constructor(
    private readonly file: string,
    private readonly pragmas: string[],
  ) {}

  private start(): Worker {
    const worker = startThread<WriterData>(
      'writer-thread.js',
      { file: this.file, pragmas: this.pragmas },
      WRITER_LIMITS,
    );
    worker.on('message', (msg: WriterReply) => {
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (this.waiting.size === 0) worker.unref();
      if ('error' in msg) w.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
      else w.resolve(msg.result);
    });
    // A thread that dies takes its open transaction with it (SQLite rolls it back); the next call
    // starts another.
    const gone = (err: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', gone);
    worker.on('exit', (code) => gone(new Error(`the SQLite writer thread exited (${code})`)));
    return worker;
  }

  /** Never throws: a thread that cannot start fails the call. */
  private call<T>(msg: WriterCall): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = this.nextId++;
      try {
        this.worker ??= this.start();
        this.waiting.set(id, { resolve, reject });
        this.worker.ref();
        this.worker.postMessage({ id, ...msg });
      } catch (err) {
        // (A value that cannot be cloned, say.) Not waited for: the thread may let the process exit.
        this.waiting.delete(id);
        if (this.waiting.size === 0) this.worker?.unref();
        reject(err);
      }
    });
  }

  /** Not waited for: should it fail, so do the transaction's later calls and its commit. */
  begin(): void {
    this.call({ op: 'begin' }).catch(() => {});
  }

  /** `run` without waiting: should it fail, so do the transaction's later calls and its commit. */
  send(steps: Step[]): void {
    this.run(steps).catch(() => {});
  }

  /** The rows of `sql` for each list of arguments, in order. */
  all<T>(sql: string, args: unknown[][]): Promise<T[]> {
    return this.call({ op: 'all', sql, args });
  }

  run(steps: Step[]): Promise<void> {
    return this.call({ op: 'run', steps });
  }

  commit(): Promise<void> {
    return this.call({ op: 'commit' });
  }

  rollback(): Promise<void> {
    return this.call({ op: 'rollback' });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
