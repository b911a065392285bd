/**
 * Datasets (the hosted /v2/datasets routes): access, uploads, versioned edits and reads.
 *
 * Access: a dataset is seen through the projects it is used in (a viewer of one reads it, an editor
 * changes it, an owner deletes and shares it) and by whoever created it (its owner); admins see all.
 */
import { conflict, forbidden, HttpError, notFound, valueError } from '../domain/errors.ts';
import type { FileRow } from '../domain/dataset-files.ts';
import {
  CURRENT,
  type CurrentRow,
  type DatasetEdit,
  type DatasetValues,
  addColumns,
  contentEtag,
  ifMatches,
  planEdits,
  rowIdsNamed,
  valuesInOrder,
} from '../domain/datasets.ts';
import { newId } from '../domain/ids.ts';
import { type Role, atLeast, strongest } from '../domain/roles.ts';
import { rejectUnstorable } from '../domain/text.ts';
import { nowUs, toIso } from '../domain/time.ts';
import {
  type DatasetListQuery,
  DatasetNameTaken,
  type DatasetRow,
  type DatasetRowState,
  type DatasetVersionRow,
  type DatasetsRepo,
  rowValues,
} from '../store/datasets.ts';
import type { UsersRepo } from '../store/users.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

/** An import that wrote nothing for this long was left by a stopped process and is removed. */
const STALE_IMPORT_US = 15 * 60 * 1_000_000;

export interface CreateDataset {
  name: string;
  project_id?: string | null;
  draft?: boolean;
  hidden?: boolean;
  append_suffix_if_duplicate?: boolean;
  copy_from_dataset_id?: string | null;
  copy_from_dataset_version_index?: number | null;
}

/** What a dataset list asks for (the caller's visibility is added here). */
export type DatasetQuery = Omit<DatasetListQuery, 'visibility'>;

export interface Page {
  offset: number;
  limit: number;
}

/** A row as other features read it: its id, place in the version and values. */
export interface DatasetRowView {
  row_id: string;
  index: number;
  values: DatasetValues[keyof DatasetValues][];
  values_dict: DatasetValues;
}

type UserInfo = { id: string; email: string; first_name: string | null; last_name: string | null };

const parseList = (text: string): string[] => JSON.parse(text) as string[];

export class DatasetsService {
  constructor(
    private readonly repo: DatasetsRepo,
    private readonly projects: ProjectsService,
    private readonly users: UsersRepo,
  ) {}

  /** The caller's role on a dataset: owner for admins and its creator, else the best over its projects. */
  private async roleOn(caller: Caller, ds: DatasetRow): Promise<Role | null> {
    if (caller.role === 'admin' || ds.created_by === caller.id) return 'owner';
    const links = await this.repo.projectLinks(ds.id);
    return strongest(await Promise.all(links.map((l) => this.projects.roleOn(caller, l.project_id))));
  }

  /** The dataset if the caller may see it with `needed` (404 when they cannot see it, 403 without the role). */
  private async access(caller: Caller, id: string, needed: Role = 'viewer') {
    const ds = await this.repo.byId(id);
    const role = ds ? await this.roleOn(caller, ds) : null;
    if (!ds || role === null) throw notFound('Dataset');
    if (!atLeast(role, needed))
      throw forbidden(`This needs the ${needed} role on a project that uses the dataset`);
    return { ds, role };
  }

  private async userInfos(ids: (string | null)[]): Promise<Map<string, UserInfo>> {
    const wanted = [...new Set(ids.filter((i): i is string => i !== null))];
    const users = await this.users.byIds(wanted);
    return new Map(
      users.map((u) => [
        u.id,
        { id: u.id, email: u.email, first_name: u.first_name, last_name: u.last_name },
      ]),
    );
  }

  private describe(ds: DatasetRow, role: Role, projectCount: number, users: Map<string, UserInfo>) {
    return {
      id: ds.id,
      name: ds.name,
      created_at: toIso(ds.created_at),
      updated_at: toIso(ds.updated_at),
      project_count: projectCount,
      num_rows: ds.num_rows,
      column_names: parseList(ds.column_names),
      created_by_user: (ds.created_by && users.get(ds.created_by)) || null,
      current_version_index: ds.current_version,
      draft: ds.draft === 1,
      permissions: [
        { action: 'update', allowed: atLeast(role, 'editor') },
        { action: 'rename', allowed: atLeast(role, 'editor') },
        { action: 'export', allowed: true },
        { action: 'delete', allowed: atLeast(role, 'owner') },
        { action: 'share', allowed: atLeast(role, 'owner') },
      ],
    };
  }

  private async describeOne(caller: Caller, ds: DatasetRow, role?: Role) {
    const r = role ?? (await this.roleOn(caller, ds)) ?? 'viewer';
    return this.describe(ds, r, await this.repo.projectCount(ds.id), await this.userInfos([ds.created_by]));
  }

  private async freeName(name: string, appendSuffix: boolean): Promise<string> {
    if (!(await this.repo.nameTaken(name))) return name;
    if (!appendSuffix) throw conflict(`A dataset named '${name}' already exists`);
    for (let n = 1; ; n++) {
      const candidate = `${name} (${n})`;
      if (!(await this.repo.nameTaken(candidate))) return candidate;
    }
  }

  private checkName(name: string, loc: (string | number)[]): void {
    rejectUnstorable(loc, name);
    if (name.trim() === '') throw valueError(loc, 'A dataset needs a name', name);
  }

  /**
   * Creates a dataset from rows (a file's, in batches, or another dataset version's when
   * `copy_from_dataset_id` is set) as version 1. The rows are written while the dataset is still
   * invisible ('importing'); any fault deletes it, so nothing half-imported remains.
   */
  async create(caller: Caller, input: CreateDataset, rows?: AsyncIterable<FileRow[]>) {
    this.checkName(input.name, ['body', 'name']);
    if (input.project_id) await this.projects.access(caller, input.project_id, 'editor');
    let source: AsyncIterable<FileRow[]> | undefined = rows;
    if (input.copy_from_dataset_id) {
      if (rows) throw valueError(['body', 'file'], 'Send either a file or copy_from_dataset_id, not both');
      const { ds } = await this.access(caller, input.copy_from_dataset_id);
      const version = this.versionOf(ds, input.copy_from_dataset_version_index ?? undefined);
      source = this.fileRowsOf(ds.id, version);
    }
    for (const stale of await this.repo.staleImports(nowUs() - STALE_IMPORT_US))
      await this.repo.delete(stale);
    const now = nowUs();
    const id = newId();
    const name = await this.freeName(input.name, input.append_suffix_if_duplicate ?? false);
    const dataset: DatasetRow = {
      id,
      name,
      state: 'importing',
      draft: input.draft ? 1 : 0,
      hidden: input.hidden ? 1 : 0,
      current_version: 1,
      num_rows: 0,
      column_names: '[]',
      created_by: caller.id,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.repo.insert(dataset);
    } catch (err) {
      if (err instanceof DatasetNameTaken) throw conflict(`A dataset named '${name}' already exists`);
      throw err;
    }
    try {
      const columns: string[] = [];
      const seen = new Set<string>();
      let count = 0;
      for await (const batch of source ?? []) {
        const states: DatasetRowState[] = batch.map((r) => {
          addColumns(columns, seen, r.values);
          return {
            dataset_id: id,
            row_id: newId(),
            position: count++,
            valid_from: 1,
            valid_to: CURRENT,
            data: JSON.stringify(r.values),
            created_in_version: 1,
            created_by: caller.id,
            created_at: now,
            updated_by: caller.id,
            updated_at: now,
          };
        });
        await this.repo.insertRows(states);
        await this.repo.touch(id, nowUs());
      }
      const done = nowUs();
      await this.repo.finishImport(
        id,
        {
          name,
          num_rows: count,
          column_names: JSON.stringify(columns),
          draft: dataset.draft,
          updated_at: done,
        },
        {
          dataset_id: id,
          version_index: 1,
          name: null,
          num_rows: count,
          column_names: JSON.stringify(columns),
          rows_added: count,
          rows_removed: 0,
          rows_edited: 0,
          columns_added: columns.length,
          created_by: caller.id,
          created_at: done,
        },
        input.project_id ?? null,
      );
    } catch (err) {
      await this.repo.delete(id);
      throw err;
    }
    return this.get(caller, id);
  }

  /** A version's rows in order as import batches (for copies). */
  private async *fileRowsOf(id: string, version: number): AsyncGenerator<FileRow[]> {
    for (let offset = 0; ; offset += 1000) {
      const states = await this.repo.rowsAt(id, version, offset, 1000);
      if (states.length === 0) return;
      yield states.map((s, i) => ({ line: offset + i + 1, values: rowValues(s) }));
    }
  }

  async get(caller: Caller, id: string) {
    const { ds, role } = await this.access(caller, id);
    return this.describeOne(caller, ds, role);
  }

  /** Datasets the caller may see, filtered and sorted (POST /datasets/query; GET /datasets lists all). */
  async list(caller: Caller, q: DatasetQuery) {
    const visibility: DatasetListQuery['visibility'] =
      caller.role === 'admin'
        ? { all: true }
        : {
            all: false,
            userId: caller.id,
            projectIds: (await this.projects.list(caller, {})).map((p) => p.id),
          };
    const rows = await this.repo.list({ ...q, visibility, limit: q.limit + 1 });
    const more = rows.length > q.limit;
    const page = more ? rows.slice(0, q.limit) : rows;
    const users = await this.userInfos(page.map((r) => r.created_by));
    const datasets = [];
    for (const r of page) {
      const role = (await this.roleOn(caller, r)) ?? 'viewer';
      datasets.push(this.describe(r, role, r.project_count, users));
    }
    return {
      datasets,
      starting_token: q.offset,
      limit: q.limit,
      paginated: more,
      next_starting_token: more ? q.offset + q.limit : null,
    };
  }

  /** PATCH: a new name (409 when taken, unless a suffix may be added) and/or draft false. */
  async update(
    caller: Caller,
    id: string,
    patch: { name?: string; appendSuffix?: boolean; draft?: boolean },
  ) {
    const { ds, role } = await this.access(caller, id, 'editor');
    const set: { name?: string; draft?: number; updated_at: number } = { updated_at: nowUs() };
    if (patch.name !== undefined && patch.name !== ds.name) {
      this.checkName(patch.name, ['body', 'name']);
      set.name = await this.freeName(patch.name, patch.appendSuffix ?? false);
    }
    if (patch.draft !== undefined) set.draft = patch.draft ? 1 : 0;
    try {
      await this.repo.update(id, set);
    } catch (err) {
      if (err instanceof DatasetNameTaken) throw conflict(`A dataset named '${set.name}' already exists`);
      throw err;
    }
    const after = await this.repo.byId(id);
    if (!after) throw notFound('Dataset');
    return this.describeOne(caller, after, role);
  }

  async delete(caller: Caller, id: string) {
    await this.access(caller, id, 'owner');
    await this.repo.delete(id);
  }

  /** The version to read: the current one when not given; 404 for one the dataset does not have. */
  private versionOf(ds: DatasetRow, version?: number): number {
    if (version === undefined) return ds.current_version;
    if (!Number.isInteger(version) || version < 1 || version > ds.current_version)
      throw notFound(`Version ${version} of the dataset`);
    return version;
  }

  private async page(caller: Caller, id: string, opts: Page & { version?: number }) {
    const { ds } = await this.access(caller, id);
    const version = this.versionOf(ds, opts.version);
    const [states, v] = await Promise.all([
      this.repo.rowsAt(id, version, opts.offset, opts.limit + 1),
      this.repo.version(id, version),
    ]);
    const more = states.length > opts.limit;
    return {
      ds,
      version,
      columns: v ? parseList(v.column_names) : [],
      states: more ? states.slice(0, opts.limit) : states,
      next: more ? opts.offset + opts.limit : null,
    };
  }

  /**
   * A page of a version's rows (the current version by default) with their values as a list in
   * column order and as a dict: what experiments and template rendering read.
   */
  async rows(caller: Caller, id: string, opts: Page & { version?: number }) {
    const p = await this.page(caller, id, opts);
    return {
      dataset_id: id,
      version_index: p.version,
      column_names: p.columns,
      rows: p.states.map((s, i) => rowView(p.columns, s, opts.offset + i)),
      next_offset: p.next,
    };
  }

  /** GET content (DatasetContent) and, for the current version, its ETag. */
  async content(caller: Caller, id: string, opts: Page & { version?: number }) {
    const p = await this.page(caller, id, opts);
    const users = await this.userInfos(p.states.flatMap((s) => [s.created_by, s.updated_by]));
    const user = (u: string | null) => (u && users.get(u)) || null;
    return {
      etag: opts.version === undefined ? contentEtag(id, p.version) : null,
      body: {
        starting_token: opts.offset,
        limit: opts.limit,
        paginated: p.next !== null,
        next_starting_token: p.next,
        column_names: p.columns,
        rows: p.states.map((s, i) => ({
          ...rowView(p.columns, s, opts.offset + i),
          metadata: {
            created_in_version: s.created_in_version,
            created_at: toIso(s.created_at),
            created_by_user: user(s.created_by),
            updated_in_version: s.valid_from,
            updated_at: toIso(s.updated_at),
            updated_by_user: user(s.updated_by),
          },
        })),
      },
    };
  }

  /**
   * Applies a batch of edits as one new version. `ifMatch` (the ETag of a content read) must name
   * the current version, else 412; without it the edits apply to whatever is current.
   */
  async edit(caller: Caller, id: string, ifMatch: string | undefined, edits: DatasetEdit[]) {
    for (let attempt = 0; ; attempt++) {
      const { ds } = await this.access(caller, id, 'editor');
      const stale = () =>
        new HttpError(
          412,
          'The dataset changed since it was read (its ETag differs); read it again and retry',
        );
      if (ifMatch !== undefined && !ifMatches(ifMatch, id, ds.current_version)) throw stale();
      const next = ds.current_version + 1;
      const now = nowUs();
      const current = await this.repo.currentRows(id, rowIdsNamed(edits));
      const existing = new Map<string, CurrentRow>(
        current.map((s) => [
          s.row_id,
          {
            row_id: s.row_id,
            position: s.position,
            values: rowValues(s),
            created_in_version: s.created_in_version,
            created_by: s.created_by,
            created_at: s.created_at,
          },
        ]),
      );
      const plan = planEdits(edits, existing, await this.repo.positionEnds(id), next, {
        userId: caller.id,
        now,
      });
      const columns = parseList(ds.column_names);
      const seen = new Set(columns);
      let columnsAdded = 0;
      for (const w of plan.written) columnsAdded += addColumns(columns, seen, w.values);
      const numRows = ds.num_rows + plan.rowsAdded - plan.rowsRemoved;
      const version: DatasetVersionRow = {
        dataset_id: id,
        version_index: next,
        name: null,
        num_rows: numRows,
        column_names: JSON.stringify(columns),
        rows_added: plan.rowsAdded,
        rows_removed: plan.rowsRemoved,
        rows_edited: plan.rowsEdited,
        columns_added: columnsAdded,
        created_by: caller.id,
        created_at: now,
      };
      const committed = await this.repo.commitVersion(id, ds.current_version, {
        ended: plan.ended,
        written: plan.written.map((w) => ({
          dataset_id: id,
          row_id: w.row_id,
          position: w.position,
          valid_from: next,
          valid_to: CURRENT,
          data: JSON.stringify(w.values),
          created_in_version: w.created_in_version,
          created_by: w.created_by,
          created_at: w.created_at,
          updated_by: caller.id,
          updated_at: now,
        })),
        version,
        dataset: { num_rows: numRows, column_names: version.column_names, updated_at: now },
      });
      if (committed) {
        const users = await this.userInfos([caller.id]);
        return { etag: contentEtag(id, next), version: describeVersion(version, users) };
      }
      // Another edit committed first: with an ETag that is a conflict; without one, plan again.
      if (ifMatch !== undefined || attempt >= 4) throw stale();
    }
  }

  async versions(caller: Caller, id: string, opts: Page & { ascending: boolean }) {
    await this.access(caller, id);
    const rows = await this.repo.versions(id, opts.ascending, opts.offset, opts.limit + 1);
    const more = rows.length > opts.limit;
    const page = more ? rows.slice(0, opts.limit) : rows;
    const users = await this.userInfos(page.map((v) => v.created_by));
    return {
      starting_token: opts.offset,
      limit: opts.limit,
      paginated: more,
      next_starting_token: more ? opts.offset + opts.limit : null,
      versions: page.map((v) => describeVersion(v, users)),
    };
  }

  async renameVersion(caller: Caller, id: string, index: number, name: string | null) {
    const { ds } = await this.access(caller, id, 'editor');
    this.versionOf(ds, index);
    if (name !== null) rejectUnstorable(['body', 'name'], name);
    await this.repo.renameVersion(id, index, name);
    const v = await this.repo.version(id, index);
    if (!v) throw notFound(`Version ${index} of the dataset`);
    return describeVersion(v, await this.userInfos([v.created_by]));
  }

  /** The projects using the dataset that the caller may see. */
  async projectsOf(caller: Caller, id: string, opts: Page) {
    await this.access(caller, id);
    const visible = [];
    for (const link of await this.repo.projectLinks(id)) {
      const role = await this.projects.roleOn(caller, link.project_id);
      if (role !== null) visible.push(await this.projects.get(caller, link.project_id));
    }
    const page = visible.slice(opts.offset, opts.offset + opts.limit);
    const users = await this.userInfos(page.map((p) => p.created_by));
    const more = visible.length > opts.offset + opts.limit;
    return {
      starting_token: opts.offset,
      limit: opts.limit,
      paginated: more,
      next_starting_token: more ? opts.offset + opts.limit : null,
      projects: page.map((p) => ({
        id: p.id,
        name: p.name,
        created_at: p.created_at,
        updated_at: p.updated_at,
        created_by_user: (p.created_by && users.get(p.created_by)) || null,
      })),
    };
  }

  /** Shares the dataset with a project (its owner, who must edit the project); experiments call it too. */
  async linkProject(caller: Caller, id: string, projectId: string) {
    await this.access(caller, id, 'owner');
    await this.projects.access(caller, projectId, 'editor');
    await this.repo.link(id, projectId, nowUs());
    return this.projectsOf(caller, id, { offset: 0, limit: 1000 });
  }

  async unlinkProject(caller: Caller, id: string, projectId: string) {
    await this.access(caller, id, 'owner');
    if (!(await this.repo.unlink(id, projectId))) throw notFound('Project of the dataset');
  }
}

function rowView(columns: string[], s: DatasetRowState, index: number): DatasetRowView {
  const values = rowValues(s);
  return { row_id: s.row_id, index, values: valuesInOrder(columns, values), values_dict: values };
}

function describeVersion(v: DatasetVersionRow, users: Map<string, UserInfo>) {
  return {
    version_index: v.version_index,
    name: v.name,
    created_at: toIso(v.created_at),
    created_by_user: (v.created_by && users.get(v.created_by)) || null,
    num_rows: v.num_rows,
    column_names: parseList(v.column_names),
    rows_added: v.rows_added,
    rows_removed: v.rows_removed,
    rows_edited: v.rows_edited,
    columns_added: v.columns_added,
    columns_removed: 0,
    columns_renamed: 0,
  };
}
