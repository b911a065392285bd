/**
 * Compiles validated filter trees and sorts into Kysely expressions over the `records` table, for
 * SQLite (JSON as TEXT, json_extract with a bound path) and PostgreSQL (JSONB, `->`/`->>` with the key
 * bound as a text parameter). Nothing a client sends is spliced into SQL: values, keys and JSON paths
 * are parameters.
 *
 * Every leaf compiles to a two-valued condition (never SQL NULL), so that `not` means what the plain
 * evaluator (evaluate.ts) means: a record that lacks the value never matches a positive operator and
 * always matches `ne` / `not_in`, also under `not`.
 */
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Dialect } from '../store/db.ts';
import type { ColumnDef, ScalarColumn } from './columns.ts';
import type { FilterTree, Leaf } from './filters.ts';
import type { SortSpec } from './sorts.ts';

type Frag = RawBuilder<unknown>;

export interface CompileOptions {
  dialect: Dialect;
  /** Name or alias of the records table in the query (default `records`). */
  table?: string;
  /**
   * SQLite only: for `contains` leaves on text-indexed columns, the rowids that can match (a superset
   * of the matches, from the trigram index plus the rows it has not indexed yet). The leaf then
   * checks membership first and the exact condition after.
   */
  textCandidates?: ReadonlyMap<Leaf, readonly number[]>;
  /**
   * PostgreSQL only: the same for the text index of migration 008, as record ids (the index's hits
   * plus the records queued for it; store/search.ts pgTextCandidates).
   */
  pgTextCandidates?: ReadonlyMap<Leaf, readonly string[]>;
}

/** Text candidates of either store: rowids (SQLite) or record ids (PostgreSQL). */
export type TextCandidates = ReadonlyMap<Leaf, readonly number[]> | ReadonlyMap<Leaf, readonly string[]>;

/** Compile options with the text candidates the store looked up, under the option of its dialect. */
export function candidateOptions(dialect: Dialect, candidates?: TextCandidates): CompileOptions {
  return dialect === 'postgres'
    ? { dialect, pgTextCandidates: candidates as ReadonlyMap<Leaf, readonly string[]> | undefined }
    : { dialect, textCandidates: candidates as ReadonlyMap<Leaf, readonly number[]> | undefined };
}

/** Scalar columns that are NOT NULL in `records` (a value is never missing). */
const NOT_NULL = new Set<ScalarColumn>([
  'id',
  'type',
  'name',
  'created_at',
  'updated_at',
  'is_complete',
  'num_children',
]);

const TRUE = sql<SqlBool>`(1 = 1)`;
const FALSE = sql<SqlBool>`(1 = 0)`;

class Compiler {
  readonly pg: boolean;
  readonly table: string;
  constructor(readonly opts: CompileOptions) {
    this.pg = opts.dialect === 'postgres';
    this.table = opts.table ?? 'records';
  }

  ref(column: string): Frag {
    return sql.ref(`${this.table}.${column}`);
  }

  /** A text parameter (typed on PostgreSQL so that functions such as lower() resolve). */
  text(v: string): Frag {
    return this.pg ? sql`${v}::text` : sql`${v}`;
  }

  num(v: number): Frag {
    return this.pg ? sql`${v}::numeric` : sql`${v}`;
  }

  fold(e: Frag, caseSensitive: boolean): Frag {
    return caseSensitive ? e : sql`lower(${e})`;
  }

  jsonPath(key: string): string {
    // A quoted label: SQLite decodes JSON string escapes in it, so any key is addressed exactly.
    return `$.${JSON.stringify(key)}`;
  }

  /**
   * The value of a column as `want` (text, number or boolean 0/1); SQL NULL when missing or of another
   * type. With `loose`, SQLite may answer a metadata value of another type instead of NULL (one JSON
   * lookup instead of two): comparisons with a text parameter stay exact there (SQLite never equates
   * a number and a text), substring tests and sorts must not use it.
   */
  value(
    column: ColumnDef,
    want: 'text' | 'number' | 'boolean',
    loose = false,
  ): { expr: Frag; nullable: boolean; loose?: boolean } {
    const src = column.source;
    if (src.kind === 'scalar') return { expr: this.ref(src.column), nullable: !NOT_NULL.has(src.column) };
    if (src.kind === 'tags') throw new Error('tags have no scalar value');
    const col = this.ref(src.column);
    if (this.pg && src.key.includes('\u0000')) {
      const type = want === 'text' ? sql`text` : want === 'number' ? sql`numeric` : sql`integer`;
      return { expr: sql`(null::${type})`, nullable: true };
    }
    if (this.pg) {
      const k = sql`${src.key}::text`;
      if (want === 'text')
        return {
          expr: sql`(case when jsonb_typeof(${col} -> ${k}) = 'string' then ${col} ->> ${k} end)`,
          nullable: true,
        };
      if (want === 'number')
        return {
          expr: sql`(case when jsonb_typeof(${col} -> ${k}) = 'number' then (${col} ->> ${k})::numeric end)`,
          nullable: true,
        };
      return {
        expr: sql`(case ${col} -> ${k} when 'true'::jsonb then 1 when 'false'::jsonb then 0 end)`,
        nullable: true,
      };
    }
    const p = this.jsonPath(src.key);
    // Metrics hold numbers only (ingestion takes no other value there).
    if (src.column === 'metrics' && want === 'number')
      return { expr: sql`(${col} ->> ${p})`, nullable: true };
    if (want === 'text' && loose) return { expr: sql`(${col} ->> ${p})`, nullable: true, loose: true };
    if (want === 'text')
      return {
        expr: sql`(case json_type(${col}, ${p}) when 'text' then json_extract(${col}, ${p}) end)`,
        nullable: true,
      };
    if (want === 'number')
      return {
        expr: sql`(case when json_type(${col}, ${p}) in ('integer', 'real') then json_extract(${col}, ${p}) end)`,
        nullable: true,
      };
    return {
      expr: sql`(case json_type(${col}, ${p}) when 'true' then 1 when 'false' then 0 end)`,
      nullable: true,
    };
  }

  /**
   * `cond` for a present value; false when missing. `cond` is NULL exactly when the value is missing,
   * so coalesce() makes it two-valued with one evaluation of the value.
   */
  positive(v: { expr: Frag; nullable: boolean }, cond: Frag): Frag {
    return v.nullable ? sql`coalesce(${cond}, false)` : sql`(${cond})`;
  }

  /** `cond` for a present value; true when missing. */
  negative(v: { expr: Frag; nullable: boolean }, cond: Frag): Frag {
    return v.nullable ? sql`coalesce(${cond}, true)` : sql`(${cond})`;
  }

  /**
   * `positive` written as a conjunction, so that a planner may use an index on a part of it (the
   * trigram indexes, the candidate rowids).
   */
  positiveIndexable(v: { expr: Frag; nullable: boolean }, cond: Frag): Frag {
    return v.nullable ? sql`(${v.expr} is not null and ${cond})` : sql`(${cond})`;
  }

  /**
   * A list of strings as one parameter, as a subquery of their (folded) values: the list may be long
   * and a search may hold many, so it is never one parameter per item.
   */
  inList(values: readonly string[], caseSensitive: boolean): Frag {
    if (this.pg)
      return sql`(select ${this.fold(sql`u.v`, caseSensitive)} from unnest(${values}::text[]) as u(v))`;
    return sql`(select ${this.fold(sql`j.value`, caseSensitive)} from json_each(${JSON.stringify(values)}) as j)`;
  }

  /**
   * PostgreSQL stores no text or JSON string holding NUL (it cannot), and cannot take one as a text
   * parameter: such values match nothing. Answers the values that can match.
   */
  storable(values: readonly string[]): string[] {
    return this.pg ? values.filter((v) => !v.includes('\u0000')) : [...values];
  }

  leaf(leaf: Leaf): Frag {
    switch (leaf.kind) {
      case 'id':
      case 'text':
        return this.textLeaf(leaf);
      case 'date': {
        const v = this.value(leaf.column, 'number');
        return this.compare(v, leaf.operator, sql`${leaf.value}`);
      }
      case 'number': {
        const v = this.value(leaf.column, 'number');
        if (leaf.operator === 'between') {
          const [low, high] = leaf.value as [number, number];
          return this.positive(v, sql`${v.expr} between ${this.num(low)} and ${this.num(high)}`);
        }
        return this.compare(v, leaf.operator, this.num(leaf.value as number));
      }
      case 'boolean': {
        const v = this.value(leaf.column, 'boolean');
        const b = sql.lit(leaf.value ? 1 : 0);
        return leaf.operator === 'eq'
          ? this.positive(v, sql`${v.expr} = ${b}`)
          : this.negative(v, sql`${v.expr} <> ${b}`);
      }
      case 'collection':
        return this.collectionLeaf(leaf);
    }
  }

  compare(v: { expr: Frag; nullable: boolean }, op: string, param: Frag): Frag {
    const sym = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' }[op];
    if (!sym) throw new Error(`bad operator ${op}`);
    const cond = sql`${v.expr} ${sql.raw(sym)} ${param}`;
    return op === 'ne' ? this.negative(v, cond) : this.positive(v, cond);
  }

  textLeaf(leaf: Extract<Leaf, { kind: 'text' | 'id' }>): Frag {
    const cs = leaf.caseSensitive;
    const v = this.value(leaf.column, 'text', true);
    const x = this.fold(v.expr, cs);
    const p = (s: string) => this.fold(this.text(s), cs);
    const single = leaf.operator === 'eq' || leaf.operator === 'ne' || leaf.operator === 'contains';
    if (single && this.storable([leaf.value as string]).length === 0) {
      return leaf.operator === 'ne' ? TRUE : FALSE;
    }
    switch (leaf.operator) {
      case 'eq':
        return this.positive(v, sql`${x} = ${p(leaf.value as string)}`);
      case 'ne':
        return this.negative(v, sql`${x} <> ${p(leaf.value as string)}`);
      case 'one_of': {
        const list = this.storable(leaf.value as string[]);
        return list.length ? this.positive(v, sql`${x} in ${this.inList(list, cs)}`) : FALSE;
      }
      case 'not_in': {
        const list = this.storable(leaf.value as string[]);
        return list.length ? this.negative(v, sql`${x} not in ${this.inList(list, cs)}`) : TRUE;
      }
      case 'contains':
        return this.contains(leaf, v);
    }
  }

  contains(
    leaf: Extract<Leaf, { kind: 'text' | 'id' }>,
    v: { expr: Frag; nullable: boolean; loose?: boolean },
  ): Frag {
    const term = leaf.value as string;
    const cs = leaf.caseSensitive;
    if (this.pg) {
      const pattern = likeContains(term);
      const exact = cs
        ? sql`${v.expr} like ${this.text(pattern)}`
        : sql`lower(${v.expr}) like lower(${this.text(pattern)})`;
      const ids = this.opts.pgTextCandidates?.get(leaf);
      if (ids) return this.positiveIndexable(v, sql`${this.ref('id')} = any(${ids}::text[]) and ${exact}`);
      return this.positive(v, exact);
    }
    let exact = sql`instr(${this.fold(v.expr, cs)}, ${this.fold(this.text(term), cs)}) > 0`;
    if (v.loose) exact = sql`typeof(${v.expr}) = 'text' and ${exact}`;
    const rowids = this.opts.textCandidates?.get(leaf);
    if (rowids) {
      return this.positiveIndexable(
        v,
        sql`${this.ref('rowid')} in (select value from json_each(${JSON.stringify(rowids)})) and ${exact}`,
      );
    }
    return this.positive(v, exact);
  }

  collectionLeaf(leaf: Extract<Leaf, { kind: 'collection' }>): Frag {
    const tags = this.ref('tags');
    const cs = leaf.caseSensitive;
    let present: Frag;
    /** EXISTS a string element satisfying cond(element text). */
    let anyElement: (cond: (e: Frag) => Frag) => Frag;
    /** The array equals the list element by element (same length checked apart). */
    let sameElements: (list: string[]) => Frag;
    let lengthIs: (n: number) => Frag;
    if (this.pg) {
      const arr = sql`(case when jsonb_typeof(${tags}) = 'array' then ${tags} else '[]'::jsonb end)`;
      present = sql`(${tags} is not null and jsonb_typeof(${tags}) = 'array')`;
      anyElement = (cond) =>
        sql`exists (select 1 from jsonb_array_elements(${arr}) as e(v) where jsonb_typeof(e.v) = 'string' and ${cond(
          sql`(e.v #>> '{}')`,
        )})`;
      lengthIs = (n) => sql`jsonb_array_length(${arr}) = ${sql.lit(n)}`;
      sameElements = (list) =>
        sql`not exists (select 1 from jsonb_array_elements(${arr}) with ordinality as e(v, i)
          join unnest(${list}::text[]) with ordinality as w(s, j) on e.i = w.j
          where jsonb_typeof(e.v) <> 'string' or ${this.fold(sql`(e.v #>> '{}')`, cs)} <> ${this.fold(sql`w.s`, cs)})`;
    } else {
      present = sql`(${tags} is not null and json_type(${tags}) = 'array')`;
      anyElement = (cond) =>
        sql`exists (select 1 from json_each(${tags}) as e where e.type = 'text' and ${cond(sql`e.value`)})`;
      lengthIs = (n) => sql`json_array_length(${tags}) = ${sql.lit(n)}`;
      sameElements = (list) =>
        sql`not exists (select 1 from json_each(${tags}) as e join json_each(${JSON.stringify(list)}) as w on e.key = w.key
          where e.type <> 'text' or ${this.fold(sql`e.value`, cs)} <> ${this.fold(sql`w.value`, cs)})`;
    }
    switch (leaf.operator) {
      case 'contains': {
        if (!this.storable([leaf.value as string]).length) return FALSE;
        const p = this.fold(this.text(leaf.value as string), cs);
        return sql`(${present} and ${anyElement((e) => sql`${this.fold(e, cs)} = ${p}`)})`;
      }
      case 'one_of': {
        const list = this.storable(leaf.value as string[]);
        if (!list.length) return FALSE;
        return sql`(${present} and ${anyElement((e) => sql`${this.fold(e, cs)} in ${this.inList(list, cs)}`)})`;
      }
      case 'not_in': {
        const list = this.storable(leaf.value as string[]);
        if (!list.length) return TRUE;
        return sql`(not ${present} or not ${anyElement((e) => sql`${this.fold(e, cs)} in ${this.inList(list, cs)}`)})`;
      }
      case 'eq': {
        const list = Array.isArray(leaf.value) ? leaf.value : [leaf.value];
        if (this.storable(list).length !== list.length) return FALSE;
        if (!list.length) return sql`(${present} and ${lengthIs(0)})`;
        return sql`(${present} and ${lengthIs(list.length)} and ${sameElements(list)})`;
      }
    }
  }

  tree(t: FilterTree): Frag {
    switch (t.op) {
      case 'leaf':
        return this.leaf(t.filter);
      case 'not':
        return sql`(not ${this.tree(t.child)})`;
      case 'and':
        return t.children.length
          ? sql`(${sql.join(
              t.children.map((c) => this.tree(c)),
              sql` and `,
            )})`
          : TRUE;
      case 'or':
        return t.children.length
          ? sql`(${sql.join(
              t.children.map((c) => this.tree(c)),
              sql` or `,
            )})`
          : FALSE;
    }
  }
}

/** `%term%` for LIKE with the term taken literally (backslash escapes, as both stores use). */
export function likeContains(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A validated filter tree as a boolean SQL expression over `records` (or `opts.table`). */
export function compileFilterTree(tree: FilterTree, opts: CompileOptions): Expression<SqlBool> {
  return new Compiler(opts).tree(tree) as RawBuilder<SqlBool>;
}

export interface OrderItem {
  expr: Expression<unknown>;
  direction: 'asc' | 'desc';
  /** PostgreSQL: NULLS LAST (SQLite needs no modifier: see compileSort). */
  nullsLast?: boolean;
}

/**
 * ORDER BY items for a sort: the column in the requested direction, a record without the value last
 * in either direction, and ties broken by `id` in the same direction. No sort: created_at, then id,
 * both descending. Text sorts by code point on both stores.
 */
export function compileSort(sort: SortSpec | null, opts: CompileOptions): OrderItem[] {
  const c = new Compiler(opts);
  const id = c.ref('id');
  if (!sort) {
    return [
      { expr: c.ref('created_at'), direction: 'desc' },
      { expr: id, direction: 'desc' },
    ];
  }
  const dir = sort.ascending ? 'asc' : 'desc';
  const column = sort.column;
  const src = column.source;
  const collate = (e: Frag): Frag => (c.pg ? sql`${e} collate "C"` : e);
  const items: OrderItem[] = [];
  // `x` in the sort's direction with missing values last, in forms an index can serve where one
  // exists (sessions by duration): SQLite orders NULL lowest, so descending needs nothing;
  // PostgreSQL takes NULLS LAST.
  const missingLast = (x: Frag): OrderItem[] => {
    if (c.pg) return [{ expr: x, direction: dir, nullsLast: true }];
    if (dir === 'desc') return [{ expr: x, direction: 'desc' }];
    return [
      { expr: sql`(${x} is null)`, direction: 'asc' },
      { expr: x, direction: 'asc' },
    ];
  };
  if (src.kind === 'scalar') {
    const isText = column.dataType === 'text' || column.dataType === 'uuid';
    const ref = c.ref(src.column);
    // `id` keeps the store's own order (and its index); every other text sorts by code point.
    const x = isText && src.column !== 'id' ? collate(ref) : ref;
    if (NOT_NULL.has(src.column)) items.push({ expr: x, direction: dir });
    else items.push(...missingLast(x));
  } else if (src.kind === 'json' && src.column === 'metrics') {
    items.push(...missingLast(c.value(column, 'number').expr));
  } else if (src.kind === 'json') {
    // Metadata values: numbers, then booleans, then strings (reversed when descending); any other
    // JSON value counts as missing.
    const num = c.value(column, 'number').expr;
    const bool = c.value(column, 'boolean').expr;
    const text = c.value(column, 'text').expr;
    const rank = sql`(case when ${num} is not null then 0 when ${bool} is not null then 1 when ${text} is not null then 2 end)`;
    items.push(
      { expr: sql`(${rank} is null)`, direction: 'asc' },
      { expr: rank, direction: dir },
      { expr: sql`coalesce(${num}, ${bool})`, direction: dir },
      { expr: collate(text), direction: dir },
    );
  }
  items.push({ expr: id, direction: dir });
  return items;
}
