/**
 * One SQL condition for the name-like filters of the list routes (datasets, prompt templates):
 * eq, ne, contains, one_of and not_in, with or without case, the same on both stores.
 *
 * A value no store can hold (a NUL character or a lone surrogate, see domain/text.ts) matches no
 * stored text: it is decided here rather than sent, because PostgreSQL refuses it as a parameter.
 * An empty one_of list matches nothing and an empty not_in list everything (`IN ()` is not SQL).
 */
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { foldCase, textProblem } from '../domain/text.ts';

export type TextOperator = 'eq' | 'ne' | 'contains' | 'one_of' | 'not_in';

const NONE = sql<SqlBool>`1 = 0`;
const ALL = sql<SqlBool>`1 = 1`;

export function textMatch(
  dialect: 'sqlite' | 'postgres',
  column: string,
  operator: TextOperator,
  value: string | readonly string[],
  caseSensitive = true,
): RawBuilder<SqlBool> {
  const fold = (s: string) => (caseSensitive ? s : foldCase(s));
  const list = (typeof value === 'string' ? [value] : value).filter((s) => textProblem(s) === null).map(fold);
  const col = caseSensitive ? sql.ref(column) : sql`spanbase_fold(${sql.ref(column)})`;
  const first = typeof value === 'string' ? value : value[0];
  const storable = first !== undefined && textProblem(first) === null;
  switch (operator) {
    case 'eq':
      return storable ? sql<SqlBool>`${col} = ${fold(first)}` : NONE;
    case 'ne':
      return storable ? sql<SqlBool>`${col} <> ${fold(first)}` : ALL;
    case 'one_of':
      return list.length ? sql<SqlBool>`${col} in (${sql.join(list)})` : NONE;
    case 'not_in':
      return list.length ? sql<SqlBool>`${col} not in (${sql.join(list)})` : ALL;
    case 'contains': {
      if (!storable) return NONE;
      // A substring position, not LIKE: no wildcards to escape, and SQLite's LIKE ignores case.
      const position = dialect === 'sqlite' ? sql`instr` : sql`strpos`;
      return sql<SqlBool>`${position}(${col}, ${fold(first)}) > 0`;
    }
  }
}
