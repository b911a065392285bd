/**
 * A small pool of SQLite reader threads (reader-thread.ts), each with its own WAL connection to the
 * database file (WAL readers neither wait for nor block the writer), started on first use (or by
 * `warm`). A call goes to an idle thread, or a new one while under `max`, else to the least loaded.
 * An idle thread does not keep the process alive; a busy one does.
 */
import type { Worker } from 'node:worker_threads';
import type { ReaderCall, ReaderCalls, ReaderData, ReaderReply, ReaderRequest } from './reader-protocol.ts';
import { startThread } from './threads.ts';

interface Waiting {
  resolve: (result: any) => void;
  reject: (err: Error) => void;
}

/** One thread of the pool, as `pick` hands it out. */
export interface Reader {
  worker: Worker;
  waiting: Map<number, Waiting>;
  /** State the thread keeps between calls for a caller (an export under way), counted as load. */
  held: number;
  /** Why the thread is gone (a call sent to it then fails at once rather than waiting forever). */
  gone: Error | null;
}

/**
 * A reader answers one call at a time and keeps little between calls: a small young generation is
 * enough (V8's default semi-spaces would add tens of MB per thread to the server's resident memory).
 */
const READER_LIMITS = { maxYoungGenerationSizeMb: 8 };

export class ReaderPool {
  private readers: Reader[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly file: string,
    readonly max: number,
  ) {}

  /** Threads running. */
  get running(): number {
    return this.readers.length;
  }

  private spawn(): Reader {
    const worker = startThread<ReaderData>('reader-thread.ts', { file: this.file }, READER_LIMITS);
    const reader: Reader = { worker, waiting: new Map(), held: 0, gone: null };
    worker.on('message', (msg: ReaderReply) => {
      const w = reader.waiting.get(msg.id);
      if (!w) return;
      reader.waiting.delete(msg.id);
      if (reader.waiting.size === 0) worker.unref();
      if ('error' in msg) w.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
      else w.resolve(msg.result);
    });
    const fail = (err: Error) => {
      reader.gone ??= err;
      this.readers = this.readers.filter((r) => r !== reader);
      for (const w of reader.waiting.values()) w.reject(err);
      reader.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`a reader thread exited (${code})`)));
    worker.unref();
    this.readers.push(reader);
    return reader;
  }

  /** Starts a thread if none runs yet. */
  warm(): void {
    if (!this.closed && !this.readers.length) this.spawn();
  }

  /** The least busy thread, started if fewer than `max` run. */
  pick(): Reader {
    if (this.closed) throw new Error('the reader threads are closed');
    const load = (r: Reader) => r.waiting.size + r.held;
    let reader = this.readers.find((r) => load(r) === 0);
    if (!reader && this.readers.length < this.max) reader = this.spawn();
    return reader ?? this.readers.reduce((a, b) => (load(b) < load(a) ? b : a));
  }

  /**
   * Sends a call to `reader`: its id (a kept scan's name for later calls) and the answer. From here
   * the reader counts as busy, so the next pick goes to another one.
   */
  send<K extends ReaderCall>(
    reader: Reader,
    call: K,
    args: ReaderCalls[K]['args'],
  ): { id: number; answer: Promise<ReaderCalls[K]['result']> } {
    const id = this.nextId++;
    const answer = new Promise<ReaderCalls[K]['result']>((resolve, reject) => {
      if (reader.gone) return reject(reader.gone);
      reader.waiting.set(id, { resolve, reject });
      reader.worker.ref();
      reader.worker.postMessage({ id, call, args } as ReaderRequest);
    });
    return { id, answer };
  }

  /** `send` to the least busy thread. */
  async run<K extends ReaderCall>(call: K, args: ReaderCalls[K]['args']): Promise<ReaderCalls[K]['result']> {
    return this.send(this.pick(), call, args).answer;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = this.readers;
    this.readers = [];
    await Promise.all(all.map((r) => r.worker.terminate()));
  }
}
