/**
 * The PostgreSQL side of SqlDialect: JSONB read with `->` / `->>` and the key bound as a text
 * parameter, lists as one text[] parameter, text candidates as record ids.
 */
import { sql } from 'kysely';
import { type Frag, type OrderItem, type SqlDialect, type Want, likeContains } from './sql-dialect.ts';

const text = (v: string): Frag => sql`${v}::text`;

/** The array, or an empty one when the column holds something else. */
const array = (tags: Frag) =>
  sql`(case when jsonb_typeof(${tags}) = 'array' then ${tags} else '[]'::jsonb end)`;

export const postgresSql: SqlDialect = {
  name: 'postgres',
  text,
  num: (v) => sql`${v}::numeric`,

  jsonValue(col, key, want: Want) {
    // PostgreSQL cannot take a text parameter holding NUL, and no stored key holds one.
    if (key.includes('\u0000')) {
      const type = { text: sql`text`, number: sql`numeric`, boolean: sql`integer`, any: sql`integer` }[want];
      return { expr: sql`(null::${type})`, loose: false };
    }
    const k = text(key);
    switch (want) {
      case 'any':
        return { expr: sql`(case when jsonb_typeof(${col} -> ${k}) <> 'null' then 1 end)`, loose: false };
      case 'text':
        return {
          expr: sql`(case when jsonb_typeof(${col} -> ${k}) = 'string' then ${col} ->> ${k} end)`,
          loose: false,
        };
      case 'number':
        return {
          expr: sql`(case when jsonb_typeof(${col} -> ${k}) = 'number' then (${col} ->> ${k})::numeric end)`,
          loose: false,
        };
      case 'boolean':
        return {
          expr: sql`(case ${col} -> ${k} when 'true'::jsonb then 1 when 'false'::jsonb then 0 end)`,
          loose: false,
        };
    }
  },

  inList: (values, fold) => sql`(select ${fold(sql`u.v`)} from unnest(${values}::text[]) as u(v))`,

  // LIKE, which the trigram indexes of the text index serve.
  contains: (value, term, fold) => sql`${fold(value)} like ${fold(text(likeContains(term)))}`,

  inCandidates: (ref, ids) => sql`${ref('id')} = any(${ids}::text[])`,

  byCodePoint: (e) => sql`${e} collate "C"`,

  missingLast: (x, dir): OrderItem[] => [{ expr: x, direction: dir, nullsLast: true }],

  // sum() is exact.
  sum: (x) => sql`sum(${x})`,
  percentile: (x, percent) =>
    sql`(array_agg(${x} order by ${x}) filter (where ${x} is not null))[((${sql.lit(percent)} * (count(${x}) - 1)) / 100 + 1)::int]`,

  present: (tags) => sql`(${tags} is not null and jsonb_typeof(${tags}) = 'array')`,
  anyElement: (tags, cond) =>
    sql`exists (select 1 from jsonb_array_elements(${array(tags)}) as e(v) where jsonb_typeof(e.v) = 'string' and ${cond(
      sql`(e.v #>> '{}')`,
    )})`,
  lengthIs: (tags, n) => sql`jsonb_array_length(${array(tags)}) = ${sql.lit(n)}`,
  sameElements: (tags, list, fold: (e: Frag) => Frag) =>
    sql`not exists (select 1 from jsonb_array_elements(${array(tags)}) with ordinality as e(v, i)
          join unnest(${list}::text[]) with ordinality as w(s, j) on e.i = w.j
          where jsonb_typeof(e.v) <> 'string' or ${fold(sql`(e.v #>> '{}')`)} <> ${fold(sql`w.s`)})`,
};
