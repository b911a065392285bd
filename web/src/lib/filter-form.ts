/**
 * The filter builder's model: the API's `filter_tree` JSON ↔ an editable form tree, and the edits
 * the builder makes on it. Pure (no DOM, no React) so node:test checks the round trip
 * (test/unit/console-filter-form.test.ts).
 *
 * Form values are the strings the inputs hold; turning a form into a tree parses them and reports
 * each input that does not parse, by node id. Durations are typed in milliseconds (as the tables
 * show them) and sent in nanoseconds.
 */
import {
  DEFAULT_OPERATOR,
  type FilterKind,
  type FilterType,
  OPERATORS,
} from '../../../src/query/filter-kinds.ts';
import { isNanosecondColumn } from './cells.ts';

export interface FilterJson {
  column_id?: string;
  name?: string;
  type?: FilterType;
  operator?: string;
  value?: unknown;
  case_sensitive?: boolean;
  user_ids?: string[] | null;
}

export type FilterTreeJson =
  | { filter: FilterJson }
  | { and: FilterTreeJson[] }
  | { or: FilterTreeJson[] }
  | { not: FilterTreeJson };

export interface ConditionNode {
  kind: 'condition';
  id: string;
  type: FilterType;
  /** The column id; empty for `fully_annotated`, which is about annotations, not a column. */
  column: string;
  /** Empty for `fully_annotated`. */
  operator: string;
  /** One string per input: one value, a list's items, a range's two ends, `true`/`false`, user ids. */
  values: string[];
  caseSensitive: boolean;
}
export interface GroupNode {
  kind: 'group';
  id: string;
  op: 'and' | 'or';
  children: FormNode[];
}
export interface NotNode {
  kind: 'not';
  id: string;
  child: FormNode;
}
export type FormNode = ConditionNode | GroupNode | NotNode;

/** What a condition's value inputs look like. */
export type ValueShape = 'one' | 'list' | 'pair' | 'boolean';

export function valueShape(type: FilterType, operator: string): ValueShape {
  if (type === 'fully_annotated') return 'list';
  if (type === 'boolean') return 'boolean';
  if (operator === 'one_of' || operator === 'not_in') return 'list';
  if (operator === 'between') return 'pair';
  return 'one';
}

export function operatorsOf(type: FilterType): readonly string[] {
  return type === 'fully_annotated' ? [] : OPERATORS[type];
}

export const hasCaseOption = (type: FilterType) => type === 'text' || type === 'collection';

export const OPERATOR_LABELS: Record<string, string> = {
  eq: 'is',
  ne: 'is not',
  contains: 'contains',
  one_of: 'is one of',
  not_in: 'is none of',
  gt: '>',
  gte: '≥',
  lt: '<',
  lte: '≤',
  between: 'between',
};

let counter = 0;
export const newId = () => `n${++counter}`;

const FIRST_OPERATOR: Record<FilterKind, string> = {
  id: 'eq',
  text: 'contains',
  date: 'gte',
  number: 'gte',
  boolean: 'eq',
  collection: 'contains',
};

function reshape(values: string[], shape: ValueShape): string[] {
  switch (shape) {
    case 'one':
      return [values[0] ?? ''];
    case 'pair':
      return [values[0] ?? '', values[1] ?? ''];
    case 'boolean':
      return [values[0] === 'false' ? 'false' : 'true'];
    case 'list':
      return values.filter((v) => v !== '');
  }
}

/**
 * The unit a number is typed in where it differs from the stored one: durations are shown in
 * milliseconds, so they are typed in milliseconds too (and sent in whole nanoseconds).
 */
export const typedUnit = (column: string) => (isNanosecondColumn(column) ? 'ms' : null);
const fromStored = (column: string, n: number) => String(isNanosecondColumn(column) ? n / 1e6 : n);
const toStored = (column: string, n: number) => (isNanosecondColumn(column) ? Math.round(n * 1e6) : n);

export function newCondition(column: string, type: FilterType): ConditionNode {
  const operator = type === 'fully_annotated' ? '' : FIRST_OPERATOR[type];
  return {
    kind: 'condition',
    id: newId(),
    type,
    column: type === 'fully_annotated' ? '' : column,
    operator,
    values: reshape([], valueShape(type, operator)),
    // Off, as people expect of a search box (the API's default, when a filter says nothing, is on).
    caseSensitive: false,
  };
}

/** The condition with another kind: the operator and values stay where they still fit. */
export function withType(c: ConditionNode, type: FilterType): ConditionNode {
  const ops = operatorsOf(type);
  const operator =
    type === 'fully_annotated' ? '' : ops.includes(c.operator) ? c.operator : FIRST_OPERATOR[type];
  return { ...c, type, operator, values: reshape(c.values, valueShape(type, operator)) };
}

export function withOperator(c: ConditionNode, operator: string): ConditionNode {
  return { ...c, operator, values: reshape(c.values, valueShape(c.type, operator)) };
}

// ----------------------------------------------------------------------------------------------
// Tree → form

export class UnsupportedFilter extends Error {}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

function conditionFromJson(f: FilterJson, kindOf: (column: string) => FilterKind | undefined): ConditionNode {
  const column = f.column_id ?? f.name ?? '';
  const type: FilterType = f.type ?? kindOf(column) ?? 'text';
  const base = { kind: 'condition' as const, id: newId(), type, caseSensitive: f.case_sensitive ?? true };
  if (type === 'fully_annotated') {
    return { ...base, column: '', operator: '', values: f.user_ids ? [...f.user_ids] : [] };
  }
  const operator = f.operator ?? DEFAULT_OPERATOR[type];
  if (!operator || !operatorsOf(type).includes(operator)) {
    throw new UnsupportedFilter(`a ${type} filter has no operator '${String(f.operator)}'`);
  }
  const v = f.value;
  let values: string[] | null = null;
  switch (valueShape(type, operator)) {
    case 'one':
      if (type === 'number' && typeof v === 'number') values = [fromStored(column, v)];
      else if (type !== 'number' && typeof v === 'string') values = [v];
      break;
    case 'list':
      if (isStringList(v)) values = [...v];
      break;
    case 'pair':
      if (Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'number'))
        values = v.map((x) => fromStored(column, x));
      break;
    case 'boolean':
      if (typeof v === 'boolean') values = [String(v)];
      break;
  }
  if (values === null) {
    throw new UnsupportedFilter(`the builder cannot show this value of a ${type} '${operator}' filter`);
  }
  return { ...base, column, operator, values };
}

/**
 * The form of a filter tree. `kindOf` gives a column's filter kind for filters that leave `type`
 * out. Throws UnsupportedFilter for a tree the builder cannot show (edit it as JSON instead).
 */
export function treeToForm(
  tree: FilterTreeJson,
  kindOf: (column: string) => FilterKind | undefined = () => undefined,
): FormNode {
  if (tree === null || typeof tree !== 'object') throw new UnsupportedFilter('a filter tree is an object');
  if ('filter' in tree) return conditionFromJson(tree.filter, kindOf);
  if ('and' in tree || 'or' in tree) {
    const op = 'and' in tree ? 'and' : 'or';
    const list = (tree as Record<string, FilterTreeJson[]>)[op];
    if (!Array.isArray(list)) throw new UnsupportedFilter(`'${op}' takes a list`);
    return { kind: 'group', id: newId(), op, children: list.map((t) => treeToForm(t, kindOf)) };
  }
  if ('not' in tree) return { kind: 'not', id: newId(), child: treeToForm(tree.not, kindOf) };
  throw new UnsupportedFilter('a filter tree node is one of filter, and, or, not');
}

// ----------------------------------------------------------------------------------------------
// Form → tree

export interface FormProblem {
  id: string;
  message: string;
}

function conditionToJson(c: ConditionNode, problems: FormProblem[]): FilterJson {
  if (c.type === 'fully_annotated') {
    return c.values.length ? { type: c.type, user_ids: [...c.values] } : { type: c.type };
  }
  const problem = (message: string) => problems.push({ id: c.id, message });
  if (!c.column) problem('Choose a column');
  const number = (text: string) => {
    const n = text.trim() === '' ? Number.NaN : Number(text);
    if (!Number.isFinite(n)) problem(`'${text}' is not a number`);
    return toStored(c.column, n);
  };
  let value: unknown;
  switch (valueShape(c.type, c.operator)) {
    case 'one':
      if (c.type === 'number') value = number(c.values[0]);
      else {
        value = c.values[0];
        if (c.type === 'date' && Number.isNaN(Date.parse(c.values[0]))) problem('Enter a date and time');
      }
      break;
    case 'list':
      value = [...c.values];
      if (c.values.length === 0) problem('Add at least one value');
      break;
    case 'pair': {
      const [low, high] = c.values.map(number);
      if (low > high) problem('The range must go from low to high');
      value = [low, high];
      break;
    }
    case 'boolean':
      value = c.values[0] === 'true';
      break;
  }
  const json: FilterJson = { column_id: c.column, type: c.type, operator: c.operator, value };
  if (hasCaseOption(c.type)) json.case_sensitive = c.caseSensitive;
  return json;
}

/** The API's filter_tree for a form, and every input that does not parse (then the tree is not sent). */
export function formToTree(node: FormNode): { tree: FilterTreeJson; problems: FormProblem[] } {
  const problems: FormProblem[] = [];
  const walk = (n: FormNode): FilterTreeJson => {
    switch (n.kind) {
      case 'condition':
        return { filter: conditionToJson(n, problems) };
      case 'group':
        return n.op === 'and' ? { and: n.children.map(walk) } : { or: n.children.map(walk) };
      case 'not':
        return { not: walk(n.child) };
    }
  };
  return { tree: walk(node), problems };
}

// ----------------------------------------------------------------------------------------------
// Edits. Each returns a new tree; `null` is the empty filter.

export function mapNode(root: FormNode, id: string, fn: (n: FormNode) => FormNode | null): FormNode | null {
  if (root.id === id) return fn(root);
  switch (root.kind) {
    case 'condition':
      return root;
    case 'group':
      return {
        ...root,
        children: root.children.flatMap((c) => {
          const next = mapNode(c, id, fn);
          return next ? [next] : [];
        }),
      };
    case 'not': {
      const child = mapNode(root.child, id, fn);
      // Removing what a NOT wraps removes the NOT.
      return child ? { ...root, child } : null;
    }
  }
}

export const removeNode = (root: FormNode, id: string) => mapNode(root, id, () => null);

/** Wraps a node in NOT, or unwraps it when it is a NOT. */
export function toggleNot(root: FormNode, id: string): FormNode {
  return mapNode(root, id, (n) => (n.kind === 'not' ? n.child : { kind: 'not', id: newId(), child: n }))!;
}

/**
 * Adds a node to a group (by id), or at the top: into the root group, or beside the root in a new
 * AND group when the root is a single condition or a NOT.
 */
export function addNode(root: FormNode | null, groupId: string | null, node: FormNode): FormNode {
  if (root === null) return node;
  if (groupId === null) {
    if (root.kind === 'group') return { ...root, children: [...root.children, node] };
    return { kind: 'group', id: newId(), op: 'and', children: [root, node] };
  }
  return mapNode(root, groupId, (g) => (g.kind === 'group' ? { ...g, children: [...g.children, node] } : g))!;
}

export function countConditions(node: FormNode | null): number {
  if (node === null) return 0;
  switch (node.kind) {
    case 'condition':
      return 1;
    case 'group':
      return node.children.reduce((n, c) => n + countConditions(c), 0);
    case 'not':
      return countConditions(node.child);
  }
}
