/**
 * What the main thread asks of a reader thread (reader-thread.ts) and what it answers, declared once
 * for both sides: each call's arguments and result.
 */
import type { BinAsk, BinValues } from '../domain/cell-aggregates.ts';
import type { ExportOptions } from '../domain/record-export.ts';
import type { PageFormat } from '../domain/record-json.ts';
import type { RecordSearch } from './search-query.ts';
import type { CellJob, TakenCells, ThreadCells } from './widget-cells.ts';

/** What an export reads on SQLite: the selection's compiled query over a database file. */
export interface SqliteExport {
  file: string;
  /** The selection's root ids in its order (one column). */
  text: string;
  params: unknown[];
  nest: 'session' | 'trace' | null;
  chunk: number;
}

export interface ReaderCalls {
  /** A search page as its response body (UTF-8 JSON), made on the thread and moved, not copied. */
  page: { args: { query: RecordSearch; candidateCap: number; page: PageFormat }; result: Uint8Array };
  /** The cells of some buckets of a widget-data query. */
  cells: { args: CellJob; result: ThreadCells };
  /** A grouped scan of some buckets, kept by the thread under the request's id, and its group counts. */
  scan: { args: CellJob; result: { groups: unknown[]; counts: Float64Array } };
  /**
   * The cells of the shown groups from a kept scan, and the bin counts of the metrics whose
   * whole-range percentiles are wanted. The thread then drops the scan, unless it has such metrics:
   * it then keeps it for `binValues`.
   */
  take: { args: { scan: number; shown: unknown[] }; result: TakenCells };
  /** The values in some bins from a scan kept by `take` (which the thread then drops). */
  binValues: { args: { scan: number; asks: BinAsk[] }; result: BinValues[] };
  /** Drops a kept scan. */
  drop: { args: { scan: number }; result: null };
  /**
   * Opens an export, kept by the thread under the request's id: its read (on connections of its own,
   * opened on the first `exportNext`) and its rendering.
   */
  exportOpen: { args: { read: SqliteExport; opts: ExportOptions }; result: null };
  /**
   * The next chunk of a kept export as UTF-8 text, made on the thread and moved, not copied; null at
   * its end (the thread then drops it, as it does when a chunk fails).
   */
  exportNext: { args: { export: number }; result: Uint8Array | null };
  /** Ends a kept export early, closing its connections. */
  exportClose: { args: { export: number }; result: null };
  /** The rows of a compiled read (a selection's count or next batch: scans of many records). */
  rows: { args: { sql: string; params: unknown[] }; result: Record<string, unknown>[] };
}

export type ReaderCall = keyof ReaderCalls;

export type ReaderRequest = {
  [K in ReaderCall]: { id: number; call: K; args: ReaderCalls[K]['args'] };
}[ReaderCall];

export type ReaderReply =
  | { id: number; result: ReaderCalls[ReaderCall]['result'] }
  | { id: number; error: { message: string; code?: string } };

/** A reader thread's data: the database file it opens. */
export interface ReaderData {
  file: string;
}
