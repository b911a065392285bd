import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { likePattern } from './db.ts';
import type { DB, RunsTable } from './tables.ts';

export type RunRow = RunsTable;
export type RunKind = 'log_stream' | 'experiment';

/** A log stream search filter, already validated and with timestamps in epoch microseconds. */
export type RunFilter =
  | {
      name: 'id' | 'created_by';
      operator: 'eq' | 'ne' | 'one_of' | 'not_in' | 'contains';
      value: string | string[];
    }
  | {
      name: 'name';
      operator: 'eq' | 'ne' | 'contains' | 'one_of' | 'not_in';
      value: string | string[];
      case_sensitive: boolean;
    }
  | { name: 'created_at' | 'updated_at'; operator: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'; value: number };

export interface RunSort {
  name: 'name' | 'created_at' | 'updated_at';
  ascending: boolean;
}

const COMPARE = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

export class RunsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  async insert(run: RunRow): Promise<void> {
    await this.db.insertInto('runs').values(run).execute();
  }

  byId(projectId: string, id: string, kind?: RunKind): Promise<RunRow | undefined> {
    let q = this.db.selectFrom('runs').selectAll().where('project_id', '=', projectId).where('id', '=', id);
    if (kind) q = q.where('kind', '=', kind);
    return q.executeTakeFirst();
  }

  byName(projectId: string, kind: RunKind, name: string): Promise<RunRow | undefined> {
    return this.db
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('kind', '=', kind)
      .where('name', '=', name)
      .executeTakeFirst();
  }

  list(projectId: string, kind: RunKind): Promise<RunRow[]> {
    return this.db
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('kind', '=', kind)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  /** One page of runs matching every filter, plus one extra row to tell whether another page follows. */
  search(
    projectId: string,
    kind: RunKind,
    filters: RunFilter[],
    sort: RunSort,
    offset: number,
    limit: number,
  ): Promise<RunRow[]> {
    let q = this.db
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('kind', '=', kind);
    for (const f of filters) q = q.where((eb) => filterExpr(eb, f));
    const dir = sort.ascending ? 'asc' : 'desc';
    return q
      .orderBy(sort.name, dir)
      .orderBy('id', dir)
      .offset(offset)
      .limit(limit + 1)
      .execute();
  }
}

function filterExpr(eb: ExpressionBuilder<DB, 'runs'>, f: RunFilter) {
  if (f.name === 'created_at' || f.name === 'updated_at') return eb(f.name, COMPARE[f.operator], f.value);
  const fold = f.name === 'name' && !f.case_sensitive;
  const col = fold ? eb.fn('lower', [eb.ref(f.name)]) : eb.ref(f.name);
  const norm = (v: string) => (fold ? v.toLowerCase() : v);
  // No stored name or id holds NUL (the services reject it) and PostgreSQL cannot compare text
  // with one: such values match nothing, on both stores.
  const nul = (v: unknown) => String(v).includes('\u0000');
  const list = (Array.isArray(f.value) ? f.value : [f.value])
    .filter((v) => !nul(v))
    .map((v) => norm(String(v)));
  if (!Array.isArray(f.value) && nul(f.value))
    return f.operator === 'ne' ? sql<boolean>`1 = 1` : sql<boolean>`1 = 0`;
  switch (f.operator) {
    case 'eq':
      return eb(col, '=', norm(String(f.value)));
    case 'ne':
      return eb(col, '<>', norm(String(f.value)));
    // An empty list matches nothing (one_of) or everything (not_in). Not `eb.val(false)`: SQLite
    // cannot bind a boolean.
    case 'one_of':
      return list.length ? eb(col, 'in', list) : sql<boolean>`1 = 0`;
    case 'not_in':
      return list.length ? eb(col, 'not in', list) : sql<boolean>`1 = 1`;
    default:
      return sql<boolean>`${col} like ${likePattern(norm(String(f.value)))} escape '\\'`;
  }
}
