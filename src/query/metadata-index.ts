/**
 * The metadata index (`record_metadata`, migration 014): every short string value of a record's
 * `user_metadata`, keyed by run, record group, key and value, then by the records' native order
 * (created_at, id). Triggers keep it on both stores, in the writing transaction.
 *
 * A search that requires `user_metadata/<key>` to equal a string (case-sensitive, at the top of its
 * tree) and reads in the native order walks that key and value's entries newest first and stops
 * when its page is full: the cost follows the page, not the run's size nor how common the value is.
 * The leaf itself is still checked on each record, so the index only narrows: answers stay exact.
 */
import type { FilterTree, Leaf } from './filters.ts';
import type { SortSpec } from './sorts.ts';

/**
 * Keys and values up to this many characters are indexed (a PostgreSQL B-tree entry must stay under
 * about 2.7 KB: 256 characters are at most 1 KiB each in UTF-8).
 */
export const METADATA_INDEX_MAX_CHARS = 256;

export type RecordGroup = 'session' | 'trace' | 'span';

/** The group of a record type in the index: sessions, traces, or spans of every kind. */
export function recordGroup(type: string): RecordGroup {
  return type === 'session' ? 'session' : type === 'trace' ? 'trace' : 'span';
}

/** `recordGroup` in SQL, over the type column `column` (the triggers of migration 014). */
export function recordGroupSql(column: string): string {
  return `(case ${column} when 'session' then 'session' when 'trace' then 'trace' else 'span' end)`;
}

/** The entries a search walks: one key and value in one group of one run. */
export interface MetadataProbe {
  group: RecordGroup;
  key: string;
  value: string;
}

/**
 * The metadata entries that can drive a search, when there are some: a run, the native order, types
 * of one group, and an indexed equality among the leaves that every match satisfies (the tree
 * itself, or a child of its top-level `and`s).
 */
export function metadataProbe(q: {
  runId: string | null;
  queueId?: string | null;
  types: readonly string[];
  tree: FilterTree | null;
  sort: SortSpec | null;
}): MetadataProbe | null {
  if (q.runId === null || q.queueId || q.sort || !q.tree || !q.types.length) return null;
  const group = recordGroup(q.types[0]);
  if (q.types.some((t) => recordGroup(t) !== group)) return null;
  for (const leaf of requiredLeaves(q.tree)) {
    const probe = indexedEquality(leaf);
    if (probe) return { group, ...probe };
  }
  return null;
}

function requiredLeaves(t: FilterTree): Leaf[] {
  if (t.op === 'and') return t.children.flatMap(requiredLeaves);
  if (t.op === 'leaf' && t.filter.kind !== 'fully_annotated') return [t.filter];
  return [];
}

/** The key and value of a leaf the index answers: a case-sensitive string equality on user metadata. */
function indexedEquality(leaf: Leaf): { key: string; value: string } | null {
  const src = leaf.column.source;
  if (leaf.kind !== 'text' || leaf.operator !== 'eq' || !leaf.caseSensitive) return null;
  if (src.kind !== 'json' || src.column !== 'user_metadata' || typeof leaf.value !== 'string') return null;
  // Lengths in UTF-16 units are at least the stores' character counts: what passes here is indexed.
  const short = (s: string) => s.length <= METADATA_INDEX_MAX_CHARS && !s.includes('\u0000');
  return short(src.key) && short(leaf.value) ? { key: src.key, value: leaf.value } : null;
}
