/**
 * Which column-catalogue entries a record carries: every promoted metric that is set, every other
 * metric key, every user_metadata and dataset_metadata key, each with the data type of its value.
 * Ingestion widens the catalogue by these (domain/ingest-plan.ts); deletes narrow it again
 * (store/record-deletes.ts).
 */
import { PROMOTED_METRICS } from './records.ts';

export type CatalogueScalar = string | number | boolean;

/**
 * An entry keeps when its key was first and last seen to the hour (µs), rounded outwards. Each batch
 * of new records would otherwise move last_seen of every key it carries: on PostgreSQL 1.6 row
 * updates a record (bench:ingest --profile metadata), each holding its row locked until the commit.
 * The price: a time window's available columns may list a key seen up to an hour outside it.
 */
const SEEN_GRAIN_US = 3_600_000_000;
/** The first_seen that covers a record created at `at`. */
export const seenFrom = (at: number): number => Math.floor(at / SEEN_GRAIN_US) * SEEN_GRAIN_US;
/** The last_seen that covers a record created at `at`. */
export const seenUntil = (at: number): number => Math.ceil(at / SEEN_GRAIN_US) * SEEN_GRAIN_US;

/** The catalogue's data type of a value. */
export function catalogueDataType(v: CatalogueScalar): 'text' | 'boolean' | 'integer' | 'floating_point' {
  if (typeof v === 'string') return 'text';
  if (typeof v === 'boolean') return 'boolean';
  return Number.isInteger(v) ? 'integer' : 'floating_point';
}

export interface CatalogueSource {
  /** The promoted metric columns (null when not set). */
  row: Readonly<Record<(typeof PROMOTED_METRICS)[number], number | null>>;
  metrics: Readonly<Record<string, number>>;
  user: Readonly<Record<string, CatalogueScalar>>;
  dataset: Readonly<Record<string, CatalogueScalar>>;
}

/** Calls `see(column_id, value)` for every catalogue key of a record. */
export function forEachColumnKey(
  src: CatalogueSource,
  see: (column: string, v: CatalogueScalar) => void,
): void {
  for (const k of PROMOTED_METRICS) {
    const v = src.row[k];
    if (v !== null && v !== undefined) see(`metrics/${k}`, Number(v));
  }
  for (const k in src.metrics) {
    if (!(PROMOTED_METRICS as readonly string[]).includes(k)) see(`metrics/${k}`, src.metrics[k]);
  }
  for (const k in src.user) see(`user_metadata/${k}`, src.user[k]);
  for (const k in src.dataset) see(`dataset_metadata/${k}`, src.dataset[k]);
}
