/**
 * Compiles validated filter trees and sorts into Kysely expressions over the `records` table (or
 * another table whose columns the leaves name, such as `runs`), written once over the SQL of the
 * store's dialect (sql-dialect.ts). Nothing a client sends is spliced into SQL: values, keys and JSON
 * paths are parameters.
 *
 * Every leaf compiles to a two-valued condition (never SQL NULL), so that `not` means what the plain
 * evaluator (evaluate.ts) means: a record that lacks the value never matches a positive operator and
 * always matches `ne` / `not_in`, also under `not`.
 */
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import { type ColumnDef, NEVER_NULL } from './columns.ts';
import type { FilterTree, FullyAnnotatedLeaf, Leaf } from './filters.ts';
import type { SortSpec } from './sorts.ts';
import { type Dialect, type Frag, type OrderItem, type SqlDialect, type Want, fold } from './sql-dialect.ts';
import { postgresSql } from './sql-postgres.ts';
import { sqliteSql } from './sql-sqlite.ts';

export type { Dialect, OrderItem };

const DIALECTS: Record<Dialect, SqlDialect> = { sqlite: sqliteSql, postgres: postgresSql };

/** The SQL of a store's dialect (sql-sqlite.ts, sql-postgres.ts). */
export function sqlFor(dialect: Dialect): SqlDialect {
  return DIALECTS[dialect];
}

/**
 * Text candidates of a store: blocks of rowids (SQLite) or record ids (PostgreSQL), per `contains`
 * leaf and per metadata equality leaf.
 */
export type TextCandidates = ReadonlyMap<Leaf, readonly (number | string)[]>;

export interface CompileOptions {
  dialect: Dialect;
  /** Name or alias of the table in the query (default `records`). */
  table?: string;
  /**
   * For `contains` leaves on text-indexed columns, the records that can match (a superset of the
   * matches, from the text index plus the records it has not indexed yet): the leaf then checks
   * membership first and the exact condition after.
   */
  candidates?: TextCandidates;
}

/** A value read from a column: its SQL, and whether it may be NULL (missing). */
export interface ColumnValue {
  expr: Frag;
  nullable: boolean;
  /** SQLite: the value may be of another JSON type than asked (see `columnValue`). */
  loose?: boolean;
}

/**
 * The value of a column as `want` (text, number, boolean 1/0, or `any`: 1 for a value of any JSON
 * type); SQL NULL when missing or of another type. Filters, sorts and widget metrics read columns
 * through this one reader, so a metric and a filter on one column read the same values. With
 * `loose`, SQLite may answer a metadata value of another type instead of NULL (one JSON lookup
 * instead of two): comparisons with a text parameter stay exact there (SQLite never equates a number
 * and a text), substring tests and sorts must not use it.
 */
export function columnValue(
  column: ColumnDef,
  want: Want,
  dialect: SqlDialect,
  o: { table?: string; loose?: boolean } = {},
): ColumnValue {
  const table = o.table ?? 'records';
  const src = column.source;
  if (src.kind === 'scalar')
    return { expr: sql.ref(`${table}.${src.column}`), nullable: !NEVER_NULL.has(src.column) };
  if (src.kind === 'tags' || src.kind === 'items') throw new Error('lists have no scalar value');
  if (src.kind === 'annotation') {
    // The average of the reviewers' numbers (thumbs: the share of up votes), kept on write.
    const mean = sql`(select ag.mean from annotation_aggregates as ag where ag.record_id = ${sql.ref(`${table}.id`)}
      and ag.template_id = ${dialect.text(src.templateId)} and ag.source = 'reviewer')`;
    return { expr: mean, nullable: true };
  }
  const v = dialect.jsonValue(sql.ref(`${table}.${src.column}`), src.key, want, {
    numbersOnly: src.column === 'metrics',
    loose: o.loose ?? false,
  });
  return { expr: v.expr, nullable: true, loose: v.loose };
}

const TRUE = sql<SqlBool>`(1 = 1)`;
const FALSE = sql<SqlBool>`(1 = 0)`;

/** No stored text holds NUL (ingestion and the services replace or refuse it): such values match nothing. */
const storable = (values: readonly string[]) => values.filter((v) => !v.includes('\u0000'));

class Compiler {
  readonly d: SqlDialect;
  readonly table: string;
  constructor(readonly opts: CompileOptions) {
    this.d = sqlFor(opts.dialect);
    this.table = opts.table ?? 'records';
  }

  ref = (column: string): Frag => sql.ref(`${this.table}.${column}`);

  fold(e: Frag, caseSensitive: boolean): Frag {
    return caseSensitive ? e : fold(e);
  }

  value(column: ColumnDef, want: Want, loose = false): ColumnValue {
    return columnValue(column, want, this.d, { table: this.table, loose });
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

  inList(values: readonly string[], caseSensitive: boolean): Frag {
    return this.d.inList(values, (e) => this.fold(e, caseSensitive));
  }

  leaf(leaf: Leaf | FullyAnnotatedLeaf): Frag {
    if (leaf.kind === 'fully_annotated') return this.fullyAnnotated(leaf);
    if (leaf.column.source.kind === 'annotation') return this.annotationLeaf(leaf);
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
          return this.positive(v, sql`${v.expr} between ${this.d.num(low)} and ${this.d.num(high)}`);
        }
        return this.compare(v, leaf.operator, this.d.num(leaf.value as number));
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
    const p = (s: string) => this.fold(this.d.text(s), cs);
    const single = leaf.operator === 'eq' || leaf.operator === 'ne' || leaf.operator === 'contains';
    if (single && storable([leaf.value as string]).length === 0) {
      return leaf.operator === 'ne' ? TRUE : FALSE;
    }
    switch (leaf.operator) {
      case 'eq': {
        // Candidates (a metadata equality, query/metadata-index.ts): the blocks that may hold it.
        const candidates = this.opts.candidates?.get(leaf);
        const cond = sql`${x} = ${p(leaf.value as string)}`;
        return candidates
          ? this.positiveIndexable(v, sql`${this.d.inCandidates(this.ref, candidates)} and ${cond}`)
          : this.positive(v, cond);
      }
      case 'ne':
        return this.negative(v, sql`${x} <> ${p(leaf.value as string)}`);
      case 'one_of': {
        const list = storable(leaf.value as string[]);
        return list.length ? this.positive(v, sql`${x} in ${this.inList(list, cs)}`) : FALSE;
      }
      case 'not_in': {
        const list = storable(leaf.value as string[]);
        return list.length ? this.negative(v, sql`${x} not in ${this.inList(list, cs)}`) : TRUE;
      }
      case 'contains':
        return this.contains(leaf, v);
    }
  }

  contains(leaf: Extract<Leaf, { kind: 'text' | 'id' }>, v: ColumnValue): Frag {
    const exact = this.d.contains(
      v.expr,
      leaf.value as string,
      (e) => this.fold(e, leaf.caseSensitive),
      v.loose ?? false,
    );
    const candidates = this.opts.candidates?.get(leaf);
    if (candidates)
      return this.positiveIndexable(v, sql`${this.d.inCandidates(this.ref, candidates)} and ${exact}`);
    return this.positive(v, exact);
  }

  /**
   * A filter on an annotation column: the record's id among those of the template's reviewer
   * annotations that match (the annotations index by template answers it, not a walk of the run); a
   * negative operator (`ne`, `not_in`) matches the records none of whose annotations match its
   * positive twin (`eq`, `one_of`), as a record without annotations matches `ne`.
   */
  annotationLeaf(leaf: Leaf): Frag {
    const src = leaf.column.source as Extract<Leaf['column']['source'], { kind: 'annotation' }>;
    const negative = leaf.operator === 'ne' || leaf.operator === 'not_in';
    const positive = {
      ...leaf,
      operator: leaf.operator === 'ne' ? 'eq' : leaf.operator === 'not_in' ? 'one_of' : leaf.operator,
    } as Leaf;
    const inner = new Compiler({ dialect: this.opts.dialect, table: 'a' }).leaf({
      ...positive,
      column: annotationValueColumn(leaf.column),
    } as Leaf);
    const ids = sql`select a.record_id from annotations as a where a.template_id = ${this.d.text(src.templateId)}
      and a.source = 'reviewer' and ${inner}`;
    return negative ? sql`(${this.ref('id')} not in (${ids}))` : sql`(${this.ref('id')} in (${ids}))`;
  }

  /**
   * Every template from every user: the record's reviewer annotations on those templates by those
   * users, counted through the (record_id, template_id, author) index, are all there are (one per
   * template and author).
   */
  fullyAnnotated(leaf: FullyAnnotatedLeaf): Frag {
    const need = leaf.templateIds.length * leaf.userIds.length;
    if (need === 0) return TRUE;
    const same = (e: Frag) => e;
    return sql`((select count(*) from annotations as fa where fa.record_id = ${this.ref('id')}
      and fa.template_id in ${this.d.inList(leaf.templateIds, same)}
      and fa.author in ${this.d.inList(leaf.userIds, same)}) = ${sql.lit(need)})`;
  }

  collectionLeaf(leaf: Extract<Leaf, { kind: 'collection' }>): Frag {
    const tags = this.ref(leaf.column.source.kind === 'items' ? 'items' : 'tags');
    const cs = leaf.caseSensitive;
    const d = this.d;
    const present = d.present(tags);
    const anyElement = (cond: (e: Frag) => Frag) => d.anyElement(tags, cond);
    switch (leaf.operator) {
      case 'contains': {
        if (!storable([leaf.value as string]).length) return FALSE;
        const p = this.fold(d.text(leaf.value as string), cs);
        return sql`(${present} and ${anyElement((e) => sql`${this.fold(e, cs)} = ${p}`)})`;
      }
      case 'one_of': {
        const list = storable(leaf.value as string[]);
        if (!list.length) return FALSE;
        return sql`(${present} and ${anyElement((e) => sql`${this.fold(e, cs)} in ${this.inList(list, cs)}`)})`;
      }
      case 'not_in': {
        const list = storable(leaf.value as string[]);
        if (!list.length) return TRUE;
        return sql`(not ${present} or not ${anyElement((e) => sql`${this.fold(e, cs)} in ${this.inList(list, cs)}`)})`;
      }
      case 'eq': {
        const list = Array.isArray(leaf.value) ? leaf.value : [leaf.value];
        if (storable(list).length !== list.length) return FALSE;
        if (!list.length) return sql`(${present} and ${d.lengthIs(tags, 0)})`;
        return sql`(${present} and ${d.lengthIs(tags, list.length)} and ${d.sameElements(tags, list, (e) => this.fold(e, cs))})`;
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

/**
 * The column of an annotation's own value that an annotation filter compares (over `annotations`
 * as `a`): the number of thumbs, stars and score, the text, the list of choices or tags.
 */
export function annotationValueColumn(column: ColumnDef): ColumnDef {
  const src = column.source;
  if (src.kind !== 'annotation') throw new Error('not an annotation column');
  const source: ColumnDef['source'] =
    src.type === 'categorical' || src.type === 'tags'
      ? { kind: 'items' }
      : { kind: 'scalar', column: src.type === 'text' ? 'text_value' : 'num_value' };
  return { ...column, source };
}

/** A validated filter tree as a boolean SQL expression over `records` (or `opts.table`). */
export function compileFilterTree(tree: FilterTree, opts: CompileOptions): Expression<SqlBool> {
  return new Compiler(opts).tree(tree) as RawBuilder<SqlBool>;
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
  const items: OrderItem[] = [];
  // `x` in the sort's direction with missing values last, in forms an index can serve where one
  // exists (sessions by duration).
  const missingLast = (x: Frag) => c.d.missingLast(x, dir);
  if (src.kind === 'scalar') {
    const isText = column.dataType === 'text' || column.dataType === 'uuid';
    const ref = c.ref(src.column);
    // `id` keeps the store's own order (and its index); every other text sorts by code point.
    const x = isText && src.column !== 'id' ? c.d.byCodePoint(ref) : ref;
    if (NEVER_NULL.has(src.column)) items.push({ expr: x, direction: dir });
    else items.push(...missingLast(x));
  } else if ((src.kind === 'json' && src.column === 'metrics') || src.kind === 'annotation') {
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
      { expr: c.d.byCodePoint(text), direction: dir },
    );
  }
  items.push({ expr: id, direction: dir });
  return items;
}
