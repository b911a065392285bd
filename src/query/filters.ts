/**
 * Filters and filter trees: validation of the JSON a client sends into a typed tree.
 *
 * Validation is done here in code, not by JSON Schema unions, so that every fault answers one 422 item
 * whose `loc` points at the exact field (for example
 * `["body","filter_tree","and",2,"filter","operator"]`).
 *
 * Limits: a tree nests at most MAX_DEPTH levels of and/or/not; a request carries at most MAX_LEAVES
 * filters in all; a list value holds at most MAX_LIST_VALUES items.
 */
import { type ErrorItem, type Loc, ValidationError } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { parseTimestamp } from '../domain/time.ts';
import { type ColumnContext, type ColumnDef, lookupColumn } from './columns.ts';
import { DEFAULT_OPERATOR, FILTER_TYPES, type FilterKind, OPERATORS } from './filter-kinds.ts';

export const MAX_DEPTH = 16;
export const MAX_LEAVES = 200;
export const MAX_LIST_VALUES = 1000;

export type TextOperator = 'eq' | 'ne' | 'contains' | 'one_of' | 'not_in';
export type CompareOperator = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
export type CollectionOperator = 'eq' | 'contains' | 'one_of' | 'not_in';

export type Leaf =
  | {
      kind: 'text' | 'id';
      column: ColumnDef;
      operator: TextOperator;
      value: string | string[];
      caseSensitive: boolean;
    }
  | { kind: 'date'; column: ColumnDef; operator: CompareOperator; value: number }
  | {
      kind: 'number';
      column: ColumnDef;
      operator: CompareOperator | 'between';
      value: number | [number, number];
    }
  | { kind: 'boolean'; column: ColumnDef; operator: 'eq' | 'ne'; value: boolean }
  | {
      kind: 'collection';
      column: ColumnDef;
      operator: CollectionOperator;
      value: string | string[];
      caseSensitive: boolean;
    };

/**
 * The fully_annotated filter of a queue search: the record has a reviewer's annotation on every
 * template in `templateIds` from each user in `userIds` (true when either list is empty).
 */
export interface FullyAnnotatedLeaf {
  kind: 'fully_annotated';
  templateIds: string[];
  userIds: string[];
}

/** What a search may name besides the static columns: annotation columns, and its queue. */
export interface FilterContext extends ColumnContext {
  /** A queue search: fully_annotated works, over these templates and (by default) members. */
  queue?: { templateIds: string[]; memberIds: string[] };
}

export interface LeafNode {
  op: 'leaf';
  filter: Leaf | FullyAnnotatedLeaf;
  /** Where the column id was given (for errors found later, such as an unknown metric). */
  columnLoc: Loc;
  /** A `metrics/<key>` that is not a standard metric: it must be in the catalogue. */
  needsCatalogue: boolean;
}
export type FilterTree =
  | LeafNode
  | { op: 'and' | 'or'; children: FilterTree[] }
  | { op: 'not'; child: FilterTree };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Collects 422 items; `fail` adds one and signals the caller to stop checking this filter. */
class Faults {
  items: ErrorItem[] = [];
  add(loc: Loc, type: string, msg: string, input?: unknown, ctx?: Record<string, unknown>): null {
    const item: ErrorItem = { loc, msg, type };
    if (input !== undefined) item.input = input;
    if (ctx) item.ctx = ctx;
    this.items.push(item);
    return null;
  }
  throwIfAny(): void {
    if (this.items.length) throw new ValidationError(this.items);
  }
}

function typeError(f: Faults, loc: Loc, expected: 'string' | 'number' | 'boolean' | 'list', input: unknown) {
  const names = { string: 'string_type', number: 'float_type', boolean: 'bool_type', list: 'list_type' };
  const words = {
    string: 'a valid string',
    number: 'a valid number',
    boolean: 'a valid boolean',
    list: 'a valid list',
  };
  return f.add(loc, names[expected], `Input should be ${words[expected]}`, input);
}

function stringList(f: Faults, loc: Loc, value: unknown): string[] | null {
  if (!Array.isArray(value)) return typeError(f, loc, 'list', value);
  if (value.length > MAX_LIST_VALUES)
    return f.add(loc, 'too_long', `List should have at most ${MAX_LIST_VALUES} items`, undefined, {
      max_length: MAX_LIST_VALUES,
    });
  let ok = true;
  value.forEach((v, i) => {
    if (typeof v !== 'string') {
      typeError(f, [...loc, i], 'string', v);
      ok = false;
    }
  });
  return ok ? (value as string[]) : null;
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A fully_annotated filter in a queue search: its users (default: the queue's members). */
function fullyAnnotated(
  json: Record<string, unknown>,
  loc: Loc,
  f: Faults,
  queue: NonNullable<FilterContext['queue']>,
): LeafNode | null {
  const leaf = (userIds: string[]): LeafNode => ({
    op: 'leaf',
    filter: { kind: 'fully_annotated', templateIds: [...queue.templateIds], userIds: [...new Set(userIds)] },
    columnLoc: [...loc, 'type'],
    needsCatalogue: false,
  });
  const given = json.user_ids;
  if (given === undefined || given === null) return leaf(queue.memberIds);
  const uloc = [...loc, 'user_ids'];
  const list = stringList(f, uloc, given);
  if (!list) return null;
  if (list.length === 0)
    return f.add(uloc, 'too_short', 'List should have at least 1 item after validation, not 0', given, {
      min_length: 1,
    });
  const bad = list.findIndex((u) => !isUuid(u));
  if (bad >= 0) return f.add([...uloc, bad], 'uuid_parsing', 'Input should be a valid UUID', list[bad]);
  return leaf(list.map((u) => u.toLowerCase()));
}

/** One filter object (a `filters` item or a tree's `filter`) → a typed leaf, or null with faults added. */
function validateLeaf(json: unknown, loc: Loc, f: Faults, ctx: FilterContext): LeafNode | null {
  if (!isObject(json)) return f.add(loc, 'dict_type', 'Input should be a valid dictionary or object', json);
  const given = json.type;
  if (
    given !== undefined &&
    (typeof given !== 'string' || !(FILTER_TYPES as readonly string[]).includes(given))
  ) {
    return f.add(
      [...loc, 'type'],
      'union_tag_invalid',
      `Input tag '${String(given)}' found using 'type' does not match any of the expected tags: ${FILTER_TYPES.map((k) => `'${k}'`).join(', ')}`,
      given,
      { discriminator: "'type'", tag: String(given), expected_tags: FILTER_TYPES.join(', ') },
    );
  }
  if (given === 'fully_annotated') {
    if (ctx.queue) return fullyAnnotated(json, loc, f, ctx.queue);
    return f.add(
      loc,
      'value_error',
      'Value error, the fully_annotated filter only works in an annotation queue search',
      json,
    );
  }
  // The column: `column_id`, or `name` as api.md shows it.
  const field = json.column_id !== undefined ? 'column_id' : json.name !== undefined ? 'name' : null;
  if (field === null) return f.add([...loc, 'column_id'], 'missing', 'Field required');
  const columnLoc = [...loc, field];
  const columnId = json[field];
  if (typeof columnId !== 'string') return typeError(f, columnLoc, 'string', columnId);
  const found = lookupColumn(columnId, ctx);
  if (!found.ok)
    return f.add(columnLoc, 'value_error', `Value error, unknown column '${columnId}'`, columnId);
  const column = found.column;
  const kind = (given ?? column.filterKind) as FilterKind;
  if (!column.acceptedKinds.includes(kind)) {
    return f.add(
      [...loc, 'type'],
      'value_error',
      `Value error, a ${kind} filter does not apply to column '${columnId}' (it takes ${column.acceptedKinds.join(' or ')} filters)`,
      given,
    );
  }
  let operator = json.operator;
  if (operator === undefined || operator === null) {
    operator = DEFAULT_OPERATOR[kind];
    if (operator === undefined) return f.add([...loc, 'operator'], 'missing', 'Field required');
  }
  const allowed: readonly string[] = OPERATORS[kind];
  if (typeof operator !== 'string' || !allowed.includes(operator)) {
    return f.add(
      [...loc, 'operator'],
      'enum',
      `Input should be ${allowed.map((o) => `'${o}'`).join(', ')}`,
      operator,
      { expected: allowed },
    );
  }
  let caseSensitive = true;
  if (
    (kind === 'text' || kind === 'collection') &&
    json.case_sensitive !== undefined &&
    json.case_sensitive !== null
  ) {
    if (typeof json.case_sensitive !== 'boolean')
      return typeError(f, [...loc, 'case_sensitive'], 'boolean', json.case_sensitive);
    caseSensitive = json.case_sensitive;
  }
  const vloc = [...loc, 'value'];
  if (!('value' in json) || json.value === undefined) return f.add(vloc, 'missing', 'Field required');
  const value = json.value;
  const leaf = (filter: Leaf): LeafNode => ({
    op: 'leaf',
    filter,
    columnLoc,
    needsCatalogue: found.needsCatalogue,
  });

  switch (kind) {
    case 'id':
    case 'text': {
      const op = operator as TextOperator;
      if (op === 'one_of' || op === 'not_in') {
        const list = stringList(f, vloc, value);
        return (
          list &&
          leaf({ kind, column, operator: op, value: list, caseSensitive: kind === 'id' || caseSensitive })
        );
      }
      if (typeof value !== 'string') return typeError(f, vloc, 'string', value);
      return leaf({ kind, column, operator: op, value, caseSensitive: kind === 'id' || caseSensitive });
    }
    case 'date': {
      if (typeof value !== 'string') return typeError(f, vloc, 'string', value);
      const us = parseTimestamp(value);
      if (us === null) return f.add(vloc, 'datetime_parsing', 'Input should be a valid datetime', value);
      return leaf({ kind, column, operator: operator as CompareOperator, value: us });
    }
    case 'number': {
      if (operator === 'between') {
        if (!Array.isArray(value)) return typeError(f, vloc, 'list', value);
        if (value.length !== 2)
          return f.add(
            vloc,
            'value_error',
            'Value error, between takes exactly two numbers [low, high]',
            value,
          );
        const bad = value.findIndex((v) => !isNumber(v));
        if (bad >= 0) return typeError(f, [...vloc, bad], 'number', value[bad]);
        const [low, high] = value as [number, number];
        if (low > high) return f.add(vloc, 'value_error', 'Value error, between needs low <= high', value);
        return leaf({ kind, column, operator: 'between', value: [low, high] });
      }
      if (!isNumber(value)) return typeError(f, vloc, 'number', value);
      return leaf({ kind, column, operator: operator as CompareOperator, value });
    }
    case 'boolean': {
      if (typeof value !== 'boolean') return typeError(f, vloc, 'boolean', value);
      return leaf({ kind, column, operator: operator as 'eq' | 'ne', value });
    }
    case 'collection': {
      const op = operator as CollectionOperator;
      if (op === 'one_of' || op === 'not_in') {
        const list = stringList(f, vloc, value);
        return list && leaf({ kind, column, operator: op, value: list, caseSensitive });
      }
      if (op === 'eq' && Array.isArray(value)) {
        const list = stringList(f, vloc, value);
        return list && leaf({ kind, column, operator: op, value: list, caseSensitive });
      }
      if (typeof value !== 'string') return typeError(f, vloc, 'string', value);
      return leaf({ kind, column, operator: op, value, caseSensitive });
    }
  }
  return null;
}

const NODE_KEYS = ['filter', 'and', 'or', 'not'] as const;

function validateNode(
  json: unknown,
  loc: Loc,
  depth: number,
  f: Faults,
  count: { leaves: number },
  ctx: FilterContext,
): FilterTree | null {
  if (!isObject(json)) return f.add(loc, 'dict_type', 'Input should be a valid dictionary or object', json);
  const present = NODE_KEYS.filter((k) => json[k] !== undefined);
  if (present.length !== 1) {
    return f.add(
      loc,
      'value_error',
      present.length === 0
        ? "Value error, a filter expression needs exactly one of 'filter', 'and', 'or', 'not'"
        : `Value error, a filter expression has exactly one of 'filter', 'and', 'or', 'not' (got ${present.join(', ')})`,
      json,
    );
  }
  const key = present[0];
  if (key === 'filter') {
    count.leaves++;
    if (count.leaves > MAX_LEAVES) {
      if (count.leaves === MAX_LEAVES + 1)
        f.add(loc, 'value_error', `Value error, a search takes at most ${MAX_LEAVES} filters`);
      return null;
    }
    return validateLeaf(json.filter, [...loc, 'filter'], f, ctx);
  }
  if (depth >= MAX_DEPTH) {
    return f.add(
      loc,
      'value_error',
      `Value error, filter trees nest at most ${MAX_DEPTH} levels of and/or/not`,
    );
  }
  if (key === 'not') return wrapNot(validateNode(json.not, [...loc, 'not'], depth + 1, f, count, ctx));
  const list = json[key];
  if (!Array.isArray(list)) return typeError(f, [...loc, key], 'list', list);
  const children = list.map((child, i) => validateNode(child, [...loc, key, i], depth + 1, f, count, ctx));
  if (children.some((c) => c === null)) return null;
  return { op: key, children: children as FilterTree[] };
}

function wrapNot(child: FilterTree | null): FilterTree | null {
  return child && { op: 'not', child };
}

/**
 * Validates a filter expression (`{filter}`, `{and: [...]}`, `{or: [...]}`, `{not: ...}`) and answers the
 * typed tree, or throws a ValidationError with one item per fault, each `loc` starting with `locPrefix`
 * (for example `['body', 'filter_tree']`). Unknown `metrics/<key>` columns are not checked here (that
 * needs the catalogue): see `unknownMetricFaults`. `ctx`: the annotation columns of the project, and
 * the queue of a queue search (elsewhere fully_annotated answers 422).
 */
export function validateFilterTree(json: unknown, locPrefix: Loc, ctx: FilterContext = {}): FilterTree {
  const f = new Faults();
  const tree = validateNode(json, locPrefix, 0, f, { leaves: 0 }, ctx);
  f.throwIfAny();
  return tree as FilterTree;
}

/** Validates a `filters` list (combined with AND) into a tree; `locPrefix` is where the list is. */
export function validateFilterList(json: unknown, locPrefix: Loc, ctx: FilterContext = {}): FilterTree {
  const f = new Faults();
  if (!Array.isArray(json)) {
    typeError(f, locPrefix, 'list', json);
    f.throwIfAny();
  }
  const list = json as unknown[];
  if (list.length > MAX_LEAVES) {
    f.add(locPrefix, 'too_long', `List should have at most ${MAX_LEAVES} items`, undefined, {
      max_length: MAX_LEAVES,
    });
    f.throwIfAny();
  }
  const children = list.map((item, i) => validateLeaf(item, [...locPrefix, i], f, ctx));
  f.throwIfAny();
  return { op: 'and', children: children as FilterTree[] };
}

/** Every leaf of a tree, left to right. */
export function leavesOf(tree: FilterTree): LeafNode[] {
  if (tree.op === 'leaf') return [tree];
  if (tree.op === 'not') return leavesOf(tree.child);
  return tree.children.flatMap(leavesOf);
}

/** The leaves of a tree that filter a column (all but fully_annotated). */
export function columnLeaves(tree: FilterTree): (LeafNode & { filter: Leaf })[] {
  return leavesOf(tree).filter((l): l is LeafNode & { filter: Leaf } => l.filter.kind !== 'fully_annotated');
}

/** 422 items for `metrics/<key>` columns whose key is neither standard nor in `knownMetricKeys`. */
export function unknownMetricFaults(tree: FilterTree, knownMetricKeys: ReadonlySet<string>): ErrorItem[] {
  return columnLeaves(tree)
    .filter((l) => l.needsCatalogue && !knownMetricKeys.has(l.filter.column.id))
    .map((l) => ({
      loc: l.columnLoc,
      msg: `Value error, unknown column '${l.filter.column.id}'`,
      type: 'value_error',
      input: l.filter.column.id,
    }));
}

/** AND of trees, dropping empty parts; null when there is nothing to filter on. */
export function andTrees(...trees: (FilterTree | null | undefined)[]): FilterTree | null {
  const parts = trees.filter((t): t is FilterTree => !!t && !(t.op === 'and' && t.children.length === 0));
  if (parts.length === 0) return null;
  if (parts.length === 1) return parts[0];
  return { op: 'and', children: parts };
}
