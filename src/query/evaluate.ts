/**
 * A plain TypeScript evaluator of filter trees and sorts over record rows: the reference semantics
 * that compile.ts must match on both stores (the property tests compare them). It is deliberately
 * simple and direct; it is not used to answer requests.
 */
import { foldCase } from '../domain/text.ts';
import type { ColumnDef } from './columns.ts';
import { annotationValueColumn } from './compile.ts';
import type { FilterTree, FullyAnnotatedLeaf, Leaf } from './filters.ts';
import type { SortSpec } from './sorts.ts';

/** A `records` row with its JSON columns parsed (objects or null) and integers as numbers. */
export type EvalRecord = Record<string, unknown> & {
  id: string;
  created_at: number;
  metrics?: unknown;
  user_metadata?: unknown;
  dataset_metadata?: unknown;
  tags?: unknown;
  /** The record's annotations (what annotation columns and fully_annotated read). */
  annotations?: EvalAnnotation[];
};

/** One annotation of a record as the evaluator reads it (the `annotations` row). */
export interface EvalAnnotation {
  template_id: string;
  source: string;
  author: string;
  num_value: number | null;
  text_value: string | null;
  items: string[] | null;
}

type Want = 'text' | 'number' | 'boolean';

/** The column's value as `want`; null when the record lacks it or holds another type. */
export function columnValue(rec: EvalRecord, column: ColumnDef, want: Want): string | number | null {
  const src = column.source;
  if (src.kind === 'scalar') {
    const v = rec[src.column];
    if (v === null || v === undefined) return null;
    if (typeof v === 'boolean') return v ? 1 : 0;
    return v as string | number;
  }
  if (src.kind === 'tags' || src.kind === 'items') return null;
  if (src.kind === 'annotation') {
    if (want === 'text') return null;
    const nums = reviewerAnnotations(rec, src.templateId).map((a) => a.num_value);
    return nums.length && nums.every((n) => n !== null) ? mean(nums as number[]) : null;
  }
  const obj = rec[src.column];
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return null;
  if (!Object.hasOwn(obj, src.key)) return null;
  const v = (obj as Record<string, unknown>)[src.key];
  if (want === 'text') return typeof v === 'string' ? v : null;
  if (want === 'number') return typeof v === 'number' ? v : null;
  return typeof v === 'boolean' ? (v ? 1 : 0) : null;
}

const fold = (s: string, caseSensitive: boolean) => (caseSensitive ? s : foldCase(s));

function compare(x: number | string, op: string, v: number | string): boolean {
  switch (op) {
    case 'eq':
      return x === v;
    case 'ne':
      return x !== v;
    case 'gt':
      return x > v;
    case 'gte':
      return x >= v;
    case 'lt':
      return x < v;
    case 'lte':
      return x <= v;
  }
  throw new Error(`bad operator ${op}`);
}

/** The reviewers' annotations of a record on a template. */
function reviewerAnnotations(rec: EvalRecord, templateId: string): EvalAnnotation[] {
  return (rec.annotations ?? []).filter((a) => a.template_id === templateId && a.source === 'reviewer');
}

/** The mean as the store keeps it: the sum in order, divided once. */
function mean(nums: number[]): number {
  let sum = 0;
  for (const n of nums) sum += n;
  return sum / nums.length;
}

function tagsOf(rec: EvalRecord, column: ColumnDef): string[] | null {
  const t = column.source.kind === 'items' ? rec.items : rec.tags;
  return Array.isArray(t)
    ? (t as unknown[]).map((e) => (typeof e === 'string' ? e : (null as unknown as string)))
    : null;
}

/** fully_annotated: a reviewer's annotation on every template from every user. */
function fullyAnnotated(leaf: FullyAnnotatedLeaf, rec: EvalRecord): boolean {
  const has = (t: string, u: string) =>
    (rec.annotations ?? []).some((a) => a.template_id === t && a.author === u && a.source === 'reviewer');
  return leaf.templateIds.every((t) => leaf.userIds.every((u) => has(t, u)));
}

/**
 * A filter on an annotation column: some reviewer annotation of the template matches; a negative
 * operator matches when none matches its positive twin.
 */
function annotationLeaf(leaf: Leaf, rec: EvalRecord): boolean {
  const src = leaf.column.source as Extract<ColumnDef['source'], { kind: 'annotation' }>;
  const negative = leaf.operator === 'ne' || leaf.operator === 'not_in';
  const operator = leaf.operator === 'ne' ? 'eq' : leaf.operator === 'not_in' ? 'one_of' : leaf.operator;
  const inner = { ...leaf, operator, column: annotationValueColumn(leaf.column) } as Leaf;
  const any = reviewerAnnotations(rec, src.templateId).some((a) =>
    evaluateLeaf(inner, {
      id: '',
      created_at: 0,
      num_value: a.num_value,
      text_value: a.text_value,
      items: a.items,
    }),
  );
  return negative ? !any : any;
}

export function evaluateLeaf(leaf: Leaf | FullyAnnotatedLeaf, rec: EvalRecord): boolean {
  if (leaf.kind === 'fully_annotated') return fullyAnnotated(leaf, rec);
  if (leaf.column.source.kind === 'annotation') return annotationLeaf(leaf, rec);
  switch (leaf.kind) {
    case 'id':
    case 'text': {
      const raw = columnValue(rec, leaf.column, 'text');
      const negative = leaf.operator === 'ne' || leaf.operator === 'not_in';
      if (raw === null) return negative;
      const x = fold(String(raw), leaf.caseSensitive);
      const f = (s: string) => fold(s, leaf.caseSensitive);
      switch (leaf.operator) {
        case 'eq':
          return x === f(leaf.value as string);
        case 'ne':
          return x !== f(leaf.value as string);
        case 'contains':
          return x.includes(f(leaf.value as string));
        case 'one_of':
          return (leaf.value as string[]).some((v) => f(v) === x);
        case 'not_in':
          return !(leaf.value as string[]).some((v) => f(v) === x);
      }
      break;
    }
    case 'date':
    case 'number': {
      const x = columnValue(rec, leaf.column, 'number');
      if (x === null) return leaf.operator === 'ne';
      if (leaf.operator === 'between') {
        const [low, high] = leaf.value as [number, number];
        return (x as number) >= low && (x as number) <= high;
      }
      return compare(x as number, leaf.operator, leaf.value as number);
    }
    case 'boolean': {
      const x = columnValue(rec, leaf.column, 'boolean');
      if (x === null) return leaf.operator === 'ne';
      const b = leaf.value ? 1 : 0;
      return leaf.operator === 'eq' ? x === b : x !== b;
    }
    case 'collection': {
      const tags = tagsOf(rec, leaf.column);
      if (tags === null) return leaf.operator === 'not_in';
      const f = (s: string) => fold(s, leaf.caseSensitive);
      const elems = tags.map((t) => (t === null ? null : f(t)));
      switch (leaf.operator) {
        case 'contains':
          return elems.includes(f(leaf.value as string));
        case 'one_of':
          return (leaf.value as string[]).some((v) => elems.includes(f(v)));
        case 'not_in':
          return !(leaf.value as string[]).some((v) => elems.includes(f(v)));
        case 'eq': {
          const list = Array.isArray(leaf.value) ? leaf.value : [leaf.value];
          return list.length === elems.length && list.every((v, i) => elems[i] === f(v));
        }
      }
    }
  }
  throw new Error('unreachable');
}

export function evaluate(tree: FilterTree | null, rec: EvalRecord): boolean {
  if (!tree) return true;
  switch (tree.op) {
    case 'leaf':
      return evaluateLeaf(tree.filter, rec);
    case 'not':
      return !evaluate(tree.child, rec);
    case 'and':
      return tree.children.every((c) => evaluate(c, rec));
    case 'or':
      return tree.children.some((c) => evaluate(c, rec));
  }
}

/** Code point order (what SQLite's BINARY and PostgreSQL's "C" collation give for UTF-8 text). */
export function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

type Key = { missing: boolean; parts: (number | string | null)[] };

function sortKey(rec: EvalRecord, column: ColumnDef): Key {
  const src = column.source;
  if (src.kind === 'json' && src.column !== 'metrics') {
    const num = columnValue(rec, column, 'number');
    if (num !== null) return { missing: false, parts: [0, num] };
    const bool = columnValue(rec, column, 'boolean');
    if (bool !== null) return { missing: false, parts: [1, bool] };
    const text = columnValue(rec, column, 'text');
    if (text !== null) return { missing: false, parts: [2, text] };
    return { missing: true, parts: [] };
  }
  const v = columnValue(rec, column, 'number');
  return v === null ? { missing: true, parts: [] } : { missing: false, parts: [v] };
}

function comparePart(a: number | string | null, b: number | string | null): number {
  if (typeof a === 'string' && typeof b === 'string') return compareText(a, b);
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

/** Records in the order a search answers them (see compileSort). */
export function sortRecords<T extends EvalRecord>(records: T[], sort: SortSpec | null): T[] {
  const out = [...records];
  if (!sort) {
    return out.sort((a, b) => b.created_at - a.created_at || compareText(b.id, a.id));
  }
  const sign = sort.ascending ? 1 : -1;
  return out.sort((a, b) => {
    const ka = sortKey(a, sort.column);
    const kb = sortKey(b, sort.column);
    if (ka.missing !== kb.missing) return ka.missing ? 1 : -1;
    for (let i = 0; i < Math.max(ka.parts.length, kb.parts.length); i++) {
      const c = comparePart(ka.parts[i] ?? null, kb.parts[i] ?? null);
      if (c !== 0) return sign * c;
    }
    return sign * compareText(a.id, b.id);
  });
}
