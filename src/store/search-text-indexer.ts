/**
 * Keeps the SQLite text index (search-text.ts) current from its queue, shortly after each write, on
 * a thread of its own (indexer-thread.ts) with its own connection: indexing competes with ingestion
 * for neither the main thread nor the records' write lock. `start` first checks the index belongs to
 * this database (rebuilding it otherwise). (PostgreSQL: PgTextIndexer, search-text-pg.ts.)
 */
import type { Worker } from 'node:worker_threads';
import type { Store } from './db.ts';
import type { TextIndexer } from './search-query.ts';
import {
  attachTextIndex,
  checkTextIndex,
  indexPending,
  rebuildTextIndex,
  textBacklog,
  trimQueue,
} from './search-text.ts';
import { startThread } from './threads.ts';

/** What the main thread asks of the indexer thread, and its answer (once the queue is empty). */
export interface IndexerRequest {
  id: number;
  kind: 'drain';
}
export interface IndexerReply {
  id: number;
}
export interface IndexerData {
  file: string;
}

/**
 * The indexer handles a few hundred short rows at a time: a small young generation is enough for it,
 * and V8's default (16 MiB semi-spaces) would add about 24 MiB to the server's resident memory while
 * ingestion runs.
 */
const INDEXER_LIMITS = { maxYoungGenerationSizeMb: 4 };

export class SqliteTextIndexer implements TextIndexer {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private trimTimer: NodeJS.Timeout | null = null;

  constructor(private readonly store: Store) {}

  get enabled(): boolean {
    return attachTextIndex(this.store.sqlite!);
  }

  start(): void {
    if (!this.enabled || this.worker) return;
    const h = this.store.sqlite!;
    checkTextIndex(h);
    const worker = startThread<IndexerData>('indexer-thread.ts', { file: h.name }, INDEXER_LIMITS);
    worker.on('message', (msg: IndexerReply) => {
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      w.resolve();
    });
    const gone = () => {
      if (this.worker === worker) this.worker = null;
      for (const w of this.waiting.values()) w.reject(new Error('text indexer stopped'));
      this.waiting.clear();
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    worker.unref();
    this.worker = worker;
    // Entries the index has taken are removed now and then, here on the main connection (the
    // indexer thread never writes the records' database).
    this.trimTimer = setInterval(() => void this.trim().catch(() => {}), 5000);
    this.trimTimer.unref();
  }

  private async trim(): Promise<void> {
    const h = this.store.sqlite!;
    await this.store.db.connection().execute(async () => {
      if (!h.inTransaction) trimQueue(h);
    });
  }

  async stop(): Promise<void> {
    if (this.trimTimer) clearInterval(this.trimTimer);
    this.trimTimer = null;
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  async pending(): Promise<number> {
    if (!this.enabled) return 0;
    return this.store.db.connection().execute(async () => {
      return textBacklog(this.store.sqlite!);
    });
  }

  /** Indexes until the queue is empty: on the indexer thread when it runs. */
  async drain(): Promise<void> {
    if (!this.enabled) return;
    const worker = this.worker;
    if (worker) {
      const id = this.nextId++;
      worker.ref();
      try {
        await new Promise<void>((resolve, reject) => {
          this.waiting.set(id, { resolve, reject });
          worker.postMessage({ id, kind: 'drain' } satisfies IndexerRequest);
        });
      } finally {
        worker.unref();
      }
      await this.trim();
      return;
    }
    const h = this.store.sqlite!;
    // Here, between other uses of the main connection, never inside one of their transactions.
    while (
      await this.store.db.connection().execute(async () => (h.inTransaction ? 0 : indexPending(h, 50)))
    ) {}
    await this.trim();
  }

  async rebuild(): Promise<void> {
    if (!this.enabled) return;
    await this.store.db.connection().execute(async () => rebuildTextIndex(this.store.sqlite!));
  }
}
