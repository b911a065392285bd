/**
 * Metadata equality through the text index: each block of the text index (domain/text-grams.ts)
 * also holds a token per distinct string value of its records' top-level `user_metadata` keys. A
 * filter that requires `user_metadata/<key>` to equal a string (case-sensitive) reads the blocks
 * holding that key and value's token, like a `contains` reads those holding its trigrams (the
 * stores' text candidates), and checks their records exactly: answers stay exact, a rare value (a
 * request id) reads its few blocks instead of walking the run.
 *
 * Before (migration 014, dropped by 033) a table held one entry per value and record, kept by
 * triggers in the writing transaction; with ids new for every request those entries were written
 * at random places of a B-tree larger than the records, and cost most of ingestion's time.
 */
import { columnLeaves } from './filters.ts';
import type { FilterTree, Leaf } from './filters.ts';

/** Migration 014's limit on indexed keys and values (kept for that migration). */
export const METADATA_INDEX_MAX_CHARS = 256;

export type RecordGroup = 'session' | 'trace' | 'span';

/** The group of a record type: sessions, traces, or spans of every kind. */
export function recordGroup(type: string): RecordGroup {
  return type === 'session' ? 'session' : type === 'trace' ? 'trace' : 'span';
}

/** `recordGroup` in SQL, over the type column `column` (the triggers of migration 014). */
export function recordGroupSql(column: string): string {
  return `(case ${column} when 'session' then 'session' when 'trace' then 'trace' else 'span' end)`;
}

/** The key and value of a leaf the blocks' metadata tokens answer: a case-sensitive string equality on user metadata. */
export function metadataEquality(leaf: Leaf): { key: string; value: string } | null {
  const src = leaf.column.source;
  if (leaf.kind !== 'text' || leaf.operator !== 'eq' || !leaf.caseSensitive) return null;
  if (src.kind !== 'json' || src.column !== 'user_metadata' || typeof leaf.value !== 'string') return null;
  return { key: src.key, value: leaf.value };
}

/** The leaves of a tree the metadata tokens answer (anywhere in it: candidates only narrow a leaf). */
export function metadataEqualityLeaves(tree: FilterTree | null): Leaf[] {
  if (!tree) return [];
  return columnLeaves(tree)
    .map((l) => l.filter)
    .filter((f) => metadataEquality(f) !== null);
}
