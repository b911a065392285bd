/**
 * SQLite WAL checkpoints off the writer's thread (checkpoint-thread.js). With the default
 * auto-checkpoint, the commit that takes the WAL past 1,000 pages copies them into the database file
 * and syncs it on the main thread while every request waits. This thread, with a connection of its
 * own to each file (the store's, and its text index's once that exists), runs a PASSIVE checkpoint
 * whenever the WAL file has changed since its last one: it never takes the write lock, so the writer
 * keeps appending meanwhile, and once a checkpoint has copied everything the writer's next
 * transaction starts the WAL from the beginning again. While the WAL keeps changing it
 * checks again after 2 ms rather than 100, so that under sustained ingestion a checkpoint starts right
 * after each commit and often finishes before the next.
 *
 * The writer keeps a high auto-checkpoint threshold as a safety net (should this thread stall, die or
 * fall behind, the WAL still stops growing at about 512 MiB). Durability is unchanged: a commit is
 * acknowledged once in the WAL; a checkpoint only copies committed pages.
 *
 * The WAL file keeps its size while writes go on (the writer's journal_size_limit is above the safety
 * net): reusing it costs the kernel less than growing it again. Once no write has come for `idleMs`
 * (10 s), the thread truncates the WAL with a TRUNCATE checkpoint, so an idle database takes no more
 * disk than its data. So it does when the file is over `cutAboveBytes` (64 MiB) and no write of
 * 1 MiB or more has come for `idleMs`: background jobs renew their leases every few seconds, and
 * without this a burst's WAL (540 MB after 100,000 records of bench:ingest --profile metadata)
 * stayed on disk as long as the server ran. Its connections have no busy timeout: when a writer or
 * reader is in the way it gets SQLITE_BUSY at once and tries again on a later tick.
 */
import { startThread } from './threads.ts';

/** Bytes the writer lets the WAL reach before it checkpoints itself (safety net). */
export const WRITER_AUTOCHECKPOINT_BYTES = 512 * 1024 * 1024;
/** The safety net in pages of the database's page size (the pragma counts pages). */
export const writerAutocheckpointPages = (pageSize: number) =>
  Math.ceil(WRITER_AUTOCHECKPOINT_BYTES / pageSize);
/**
 * The size (bytes) past which the writer cuts its WAL file back when it starts it over: twice the
 * safety net, as the WAL overshoots it at times (580 MiB seen) and a file cut back to exactly the
 * safety net then grows again (600,000 records: 17,600–19,000 records/s against 18,500–19,500).
 */
export const WRITER_JOURNAL_SIZE_LIMIT = 2 * WRITER_AUTOCHECKPOINT_BYTES;

export interface Checkpointer {
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  /** How often the WAL is checked while it is not changing (ms). */
  intervalMs?: number;
  /** How soon it is checked again after a check that found it changed (ms). */
  busyIntervalMs?: number;
  /** How long the WAL must stay unchanged before its file is truncated (ms). */
  idleMs?: number;
  /** A WAL file larger than this is truncated once only small writes came for `idleMs` (bytes). */
  cutAboveBytes?: number;
}

/** What the checkpoint thread is given. */
export interface CheckpointerData extends Required<CheckpointerOptions> {
  files: string[];
}

/**
 * Starts the checkpoint thread for database files in WAL mode (the store's and its text index's); a
 * file that does not exist yet is taken up once it does.
 */
export function startCheckpointer(files: string[], opts: CheckpointerOptions = {}): Checkpointer {
  const { intervalMs = 100, busyIntervalMs = 2, idleMs = 10_000, cutAboveBytes = 64 * 1024 * 1024 } = opts;
  const worker = startThread<CheckpointerData>('checkpoint-thread.js', {
    files,
    intervalMs,
    busyIntervalMs,
    idleMs,
    cutAboveBytes,
  });
  worker.unref();
  // A thread that fails leaves the writer's own auto-checkpoint in charge.
  worker.on('error', () => {});
  return {
    async stop() {
      await worker.terminate();
    },
  };
}
