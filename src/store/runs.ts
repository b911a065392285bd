import type { Kysely } from 'kysely';
import { type Dialect, compileFilterTree } from '../query/compile.ts';
import type { FilterTree } from '../query/filters.ts';
import type { DB, RunsTable } from './tables.ts';

export type RunRow = RunsTable;
export type RunKind = 'log_stream' | 'experiment';

export interface RunSort {
  name: 'name' | 'created_at' | 'updated_at';
  ascending: boolean;
}

export class RunsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  async insert(run: RunRow): Promise<void> {
    await this.db.insertInto('runs').values(run).execute();
  }

  byId(projectId: string, id: string, kind?: RunKind): Promise<RunRow | undefined> {
    let q = this.db.selectFrom('runs').selectAll().where('project_id', '=', projectId).where('id', '=', id);
    if (kind) q = q.where('kind', '=', kind);
    return q.executeTakeFirst();
  }

  /**
   * Deletes a run with its records (what refers to the run goes with it by foreign key, and its
   * score results and jobs, which have none).
   */
  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('score_results').where('run_id', '=', id).execute();
      await tx.deleteFrom('jobs').where('run_id', '=', id).execute();
      await tx.deleteFrom('records').where('run_id', '=', id).execute();
      await tx.deleteFrom('runs').where('id', '=', id).execute();
    });
  }

  async setRetention(id: string, days: number | null): Promise<void> {
    await this.db.updateTable('runs').set({ retention_days: days }).where('id', '=', id).execute();
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

  /**
   * One page of runs matching the filters (a tree over RUN_COLUMNS), plus one extra row to tell
   * whether another page follows.
   */
  search(
    projectId: string,
    kind: RunKind,
    tree: FilterTree | null,
    sort: RunSort,
    offset: number,
    limit: number,
  ): Promise<RunRow[]> {
    let q = this.db
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('kind', '=', kind);
    if (tree) q = q.where(compileFilterTree(tree, { dialect: this.dialect, table: 'runs' }));
    const dir = sort.ascending ? 'asc' : 'desc';
    return q
      .orderBy(sort.name, dir)
      .orderBy('id', dir)
      .offset(offset)
      .limit(limit + 1)
      .execute();
  }
}
