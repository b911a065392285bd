/**
 * Datasets, their versions, rows and project links (migration 021). A version's rows are those with
 * `valid_from <= v < valid_to`, read in `position` order from one index on both stores.
 */
import { type Kysely, sql } from 'kysely';
import { CURRENT, type DatasetValues } from '../domain/datasets.ts';
import type { Dialect } from '../query/compile.ts';
import { type TextOperator, textMatch } from './text-match.ts';
import type {
  DatasetProjectsTable,
  DatasetRowsTable,
  DatasetVersionsTable,
  DatasetsTable,
  DB,
} from './tables.ts';

export type DatasetRow = DatasetsTable;
export type DatasetVersionRow = DatasetVersionsTable;
export type DatasetRowState = DatasetRowsTable;

/** Raised when a dataset name is taken. */
export class DatasetNameTaken extends Error {}

/** Which datasets a list may show: all (admins), or those made by the user or used in its projects. */
export type Visibility = { all: true } | { all: false; userId: string; projectIds: string[] };

export interface DatasetListQuery {
  visibility: Visibility;
  name?: { op: TextOperator; values: string[]; caseSensitive: boolean };
  ids?: { op: TextOperator; values: string[] };
  draft?: { op: 'eq' | 'ne'; value: boolean };
  inProject?: string;
  notInProject?: string;
  sort: { column: 'name' | 'created_at' | 'updated_at' | 'num_rows' | 'project_count'; ascending: boolean };
  offset: number;
  limit: number;
}

/** Rows per INSERT: well under both stores' limits on bound parameters. */
const INSERT_BATCH = 500;

const isUnique = (err: unknown) => /unique|duplicate key/i.test(String((err as Error).message));

export class DatasetsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  /** A dataset that is ready (not still importing). */
  byId(id: string): Promise<DatasetRow | undefined> {
    return this.db
      .selectFrom('datasets')
      .selectAll()
      .where('id', '=', id)
      .where('state', '=', 'ready')
      .executeTakeFirst();
  }

  async nameTaken(name: string, except: string | null = null): Promise<boolean> {
    let q = this.db.selectFrom('datasets').select('id').where('name', '=', name);
    if (except) q = q.where('id', '<>', except);
    return (await q.executeTakeFirst()) !== undefined;
  }

  /** Inserts a dataset (importing or ready); a taken name throws DatasetNameTaken. */
  async insert(row: DatasetRow): Promise<void> {
    try {
      await this.db.insertInto('datasets').values(row).execute();
    } catch (err) {
      if (isUnique(err)) throw new DatasetNameTaken();
      throw err;
    }
  }

  /** Rows of an import, written in batches outside any long transaction (the import is invisible until finished). */
  async insertRows(rows: DatasetRowState[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_BATCH) {
      await this.db
        .insertInto('dataset_rows')
        .values(rows.slice(i, i + INSERT_BATCH))
        .execute();
    }
  }

  /** Makes an imported dataset ready with its first version and project link, in one transaction. */
  async finishImport(
    id: string,
    set: { name: string; num_rows: number; column_names: string; draft: number; updated_at: number },
    version: DatasetVersionRow,
    projectId: string | null,
  ): Promise<void> {
    try {
      await this.db.transaction().execute(async (tx) => {
        await tx
          .updateTable('datasets')
          .set({ ...set, state: 'ready' })
          .where('id', '=', id)
          .execute();
        await tx.insertInto('dataset_versions').values(version).execute();
        if (projectId)
          await tx
            .insertInto('dataset_projects')
            .values({ dataset_id: id, project_id: projectId, created_at: set.updated_at })
            .execute();
      });
    } catch (err) {
      if (isUnique(err)) throw new DatasetNameTaken();
      throw err;
    }
  }

  async delete(id: string): Promise<boolean> {
    // Rows first in their own statement: one cascading delete of a large dataset works the same.
    await this.db.deleteFrom('dataset_rows').where('dataset_id', '=', id).execute();
    const r = await this.db.deleteFrom('datasets').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Imports left behind by a process that stopped mid-upload (no batch written since `before`). */
  async staleImports(before: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('datasets')
      .select('id')
      .where('state', '=', 'importing')
      .where('updated_at', '<', before)
      .execute();
    return rows.map((r) => r.id);
  }

  async touch(id: string, now: number): Promise<void> {
    await this.db.updateTable('datasets').set({ updated_at: now }).where('id', '=', id).execute();
  }

  async list(q: DatasetListQuery): Promise<(DatasetRow & { project_count: number })[]> {
    let query = this.db
      .selectFrom('datasets as d')
      .selectAll('d')
      .select(
        sql<number>`(select count(*) from dataset_projects dp where dp.dataset_id = d.id)`.as(
          'project_count',
        ),
      )
      .where('d.state', '=', 'ready');
    const v = q.visibility;
    if (!v.all) {
      query = query.where((eb) =>
        eb.or([
          eb('d.created_by', '=', v.userId),
          ...(v.projectIds.length
            ? [
                eb.exists(
                  eb
                    .selectFrom('dataset_projects as dp')
                    .select('dp.dataset_id')
                    .whereRef('dp.dataset_id', '=', 'd.id')
                    .where('dp.project_id', 'in', v.projectIds),
                ),
              ]
            : []),
        ]),
      );
    }
    if (q.name)
      query = query.where(textMatch(this.dialect, 'd.name', q.name.op, q.name.values, q.name.caseSensitive));
    if (q.ids) query = query.where(textMatch(this.dialect, 'd.id', q.ids.op, q.ids.values));
    if (q.draft) query = query.where('d.draft', q.draft.op === 'eq' ? '=' : '<>', q.draft.value ? 1 : 0);
    const linked = (projectId: string) => (eb: any) =>
      eb.exists(
        eb
          .selectFrom('dataset_projects as dp')
          .select('dp.dataset_id')
          .whereRef('dp.dataset_id', '=', 'd.id')
          .where('dp.project_id', '=', projectId),
      );
    if (q.inProject) query = query.where(linked(q.inProject));
    if (q.notInProject) query = query.where((eb) => eb.not(linked(q.notInProject as string)(eb)));
    const dir = q.sort.ascending ? 'asc' : 'desc';
    query =
      q.sort.column === 'project_count'
        ? query.orderBy(sql`project_count`, dir)
        : query.orderBy(`d.${q.sort.column}`, dir);
    const rows = await query.orderBy('d.id', dir).offset(q.offset).limit(q.limit).execute();
    return rows.map((r) => ({ ...r, project_count: Number(r.project_count) }));
  }

  async projectCount(id: string): Promise<number> {
    const r = await this.db
      .selectFrom('dataset_projects')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('dataset_id', '=', id)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  projectLinks(id: string): Promise<DatasetProjectsTable[]> {
    return this.db
      .selectFrom('dataset_projects')
      .selectAll()
      .where('dataset_id', '=', id)
      .orderBy('created_at')
      .orderBy('project_id')
      .execute();
  }

  async link(id: string, projectId: string, now: number): Promise<void> {
    await this.db
      .insertInto('dataset_projects')
      .values({ dataset_id: id, project_id: projectId, created_at: now })
      .onConflict((oc) => oc.columns(['dataset_id', 'project_id']).doNothing())
      .execute();
  }

  async unlink(id: string, projectId: string): Promise<boolean> {
    const r = await this.db
      .deleteFrom('dataset_projects')
      .where('dataset_id', '=', id)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Sets name and/or draft; a taken name throws DatasetNameTaken. */
  async update(id: string, set: { name?: string; draft?: number; updated_at: number }): Promise<void> {
    try {
      await this.db.updateTable('datasets').set(set).where('id', '=', id).execute();
    } catch (err) {
      if (isUnique(err)) throw new DatasetNameTaken();
      throw err;
    }
  }

  /** A page of a version's rows in order. */
  rowsAt(id: string, version: number, offset: number, limit: number): Promise<DatasetRowState[]> {
    return this.db
      .selectFrom('dataset_rows')
      .selectAll()
      .where('dataset_id', '=', id)
      .where('valid_from', '<=', version)
      .where('valid_to', '>', version)
      .orderBy('position')
      .offset(offset)
      .limit(limit)
      .execute();
  }

  /** The current states of the named rows. */
  async currentRows(id: string, rowIds: string[]): Promise<DatasetRowState[]> {
    const out: DatasetRowState[] = [];
    for (let i = 0; i < rowIds.length; i += INSERT_BATCH) {
      out.push(
        ...(await this.db
          .selectFrom('dataset_rows')
          .selectAll()
          .where('dataset_id', '=', id)
          .where('row_id', 'in', rowIds.slice(i, i + INSERT_BATCH))
          .where('valid_to', '=', CURRENT)
          .execute()),
      );
    }
    return out;
  }

  /** The smallest and largest position any state of the dataset's rows ever had. */
  async positionEnds(id: string): Promise<{ min: number; max: number }> {
    const r = await this.db
      .selectFrom('dataset_rows')
      .select((eb) => [eb.fn.min('position').as('min'), eb.fn.max('position').as('max')])
      .where('dataset_id', '=', id)
      .executeTakeFirst();
    return r?.min == null ? { min: 0, max: -1 } : { min: Number(r.min), max: Number(r.max) };
  }

  /**
   * Writes a new version if the dataset is still at `expected`: ends the current states of `ended`,
   * inserts `written`, records the version. False (nothing written) when another edit came first.
   */
  async commitVersion(
    id: string,
    expected: number,
    change: {
      ended: string[];
      written: DatasetRowState[];
      version: DatasetVersionRow;
      dataset: { num_rows: number; column_names: string; updated_at: number };
    },
  ): Promise<boolean> {
    const next = change.version.version_index;
    return this.db.transaction().execute(async (tx) => {
      // The guard first: on PostgreSQL it locks the dataset row, so concurrent edits queue here.
      const bumped = await tx
        .updateTable('datasets')
        .set({ ...change.dataset, current_version: next })
        .where('id', '=', id)
        .where('current_version', '=', expected)
        .where('state', '=', 'ready')
        .executeTakeFirst();
      if (Number(bumped.numUpdatedRows) !== 1) return false;
      for (let i = 0; i < change.ended.length; i += INSERT_BATCH) {
        await tx
          .updateTable('dataset_rows')
          .set({ valid_to: next })
          .where('dataset_id', '=', id)
          .where('row_id', 'in', change.ended.slice(i, i + INSERT_BATCH))
          .where('valid_to', '=', CURRENT)
          .execute();
      }
      for (let i = 0; i < change.written.length; i += INSERT_BATCH) {
        await tx
          .insertInto('dataset_rows')
          .values(change.written.slice(i, i + INSERT_BATCH))
          .execute();
      }
      await tx.insertInto('dataset_versions').values(change.version).execute();
      return true;
    });
  }

  versions(id: string, ascending: boolean, offset: number, limit: number): Promise<DatasetVersionRow[]> {
    return this.db
      .selectFrom('dataset_versions')
      .selectAll()
      .where('dataset_id', '=', id)
      .orderBy('version_index', ascending ? 'asc' : 'desc')
      .offset(offset)
      .limit(limit)
      .execute();
  }

  version(id: string, index: number): Promise<DatasetVersionRow | undefined> {
    return this.db
      .selectFrom('dataset_versions')
      .selectAll()
      .where('dataset_id', '=', id)
      .where('version_index', '=', index)
      .executeTakeFirst();
  }

  async renameVersion(id: string, index: number, name: string | null): Promise<void> {
    await this.db
      .updateTable('dataset_versions')
      .set({ name })
      .where('dataset_id', '=', id)
      .where('version_index', '=', index)
      .execute();
  }
}

/** A stored row state's values. */
export const rowValues = (r: DatasetRowState): DatasetValues => JSON.parse(r.data) as DatasetValues;
