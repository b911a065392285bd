/**
 * The SQLite side of SqlDialect: JSON as TEXT read with json_type / json_extract and a bound path,
 * lists as one JSON parameter read by json_each, text candidates as rowids.
 */
import { sql } from 'kysely';
import { sqlitePercentileFraction } from '../domain/dashboards.ts';
import { BLOCK_ROWS } from '../domain/text-grams.ts';
import type { Frag, OrderItem, SqlDialect, Want } from './sql-dialect.ts';

/** A quoted label: SQLite decodes JSON string escapes in it, so any key is addressed exactly. */
const jsonPath = (key: string) => `$.${JSON.stringify(key)}`;

export const sqliteSql: SqlDialect = {
  name: 'sqlite',
  text: (v) => sql`${v}`,
  num: (v) => sql`${v}`,

  jsonValue(col, key, want: Want, o) {
    const p = jsonPath(key);
    // Metrics hold numbers only (ingestion takes no other value there): one lookup.
    if (o.numbersOnly && want === 'number') return { expr: sql`(${col} ->> ${p})`, loose: false };
    // Loose text: one JSON lookup instead of two; a value of another type may come back.
    if (want === 'text' && o.loose) return { expr: sql`(${col} ->> ${p})`, loose: true };
    switch (want) {
      case 'any':
        return { expr: sql`(case when json_type(${col}, ${p}) <> 'null' then 1 end)`, loose: false };
      case 'text':
        return {
          expr: sql`(case json_type(${col}, ${p}) when 'text' then json_extract(${col}, ${p}) end)`,
          loose: false,
        };
      case 'number':
        return {
          expr: sql`(case when json_type(${col}, ${p}) in ('integer', 'real') then json_extract(${col}, ${p}) end)`,
          loose: false,
        };
      case 'boolean':
        return {
          expr: sql`(case json_type(${col}, ${p}) when 'true' then 1 when 'false' then 0 end)`,
          loose: false,
        };
    }
  },

  inList: (values, fold) =>
    sql`(select ${fold(sql`j.value`)} from json_each(${JSON.stringify(values)}) as j)`,

  contains(value, term, fold, loose) {
    const exact = sql`instr(${fold(value)}, ${fold(sql`${term}`)}) > 0`;
    // A loose value of another type (a number) must not match by its text.
    return loose ? sql`typeof(${value}) = 'text' and ${exact}` : exact;
  },

  // Candidates are blocks of rowids (store/search-text.ts): checked from the rowid an index entry
  // holds, before the record is read.
  inCandidates: (ref, blocks) =>
    sql`${ref('rowid')} / ${sql.lit(BLOCK_ROWS)} in (select value from json_each(${JSON.stringify(blocks)}))`,

  // SQLite compares text by code point (BINARY collation) already.
  byCodePoint: (e) => e,

  // SQLite orders NULL lowest: descending needs nothing, ascending puts the NULL test first.
  missingLast(x, dir): OrderItem[] {
    if (dir === 'desc') return [{ expr: x, direction: 'desc' }];
    return [
      { expr: sql`(${x} is null)`, direction: 'asc' },
      { expr: x, direction: 'asc' },
    ];
  },

  // total() is sum() without integer overflow.
  sum: (x) => sql`total(${x})`,
  percentile: (x, percent) => sql`percentile_disc(${x}, ${sqlitePercentileFraction(percent)})`,

  present: (tags) => sql`(${tags} is not null and json_type(${tags}) = 'array')`,
  anyElement: (tags, cond) =>
    sql`exists (select 1 from json_each(${tags}) as e where e.type = 'text' and ${cond(sql`e.value`)})`,
  lengthIs: (tags, n) => sql`json_array_length(${tags}) = ${sql.lit(n)}`,
  sameElements: (tags, list, fold: (e: Frag) => Frag) =>
    sql`not exists (select 1 from json_each(${tags}) as e join json_each(${JSON.stringify(list)}) as w on e.key = w.key
          where e.type <> 'text' or ${fold(sql`e.value`)} <> ${fold(sql`w.value`)})`,
};
