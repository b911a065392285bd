/** Prompt templates, the projects global ones are shared with, and their versions. */
import type { Expression, Kysely, SqlBool } from 'kysely';
import type { Dialect } from '../query/compile.ts';
import type { DB, PromptTemplateVersionsTable, PromptTemplatesTable } from './tables.ts';
import { type TextOperator, textMatch } from './text-match.ts';

export type PromptTemplateRow = PromptTemplatesTable;
export type PromptVersionRow = PromptTemplateVersionsTable;

/** Raised when a template name is taken in its scope (a project, or the global templates). */
export class TemplateNameTaken extends Error {}
/** Raised when a version number of a template is taken. */
export class VersionTaken extends Error {}

export type NameOperator = TextOperator;

export interface TemplateQuery {
  /** Only templates these may see (null: every template, for admins). */
  visibleTo: { userId: string; projectIds: string[] } | null;
  names: { operator: NameOperator; value: string | string[]; caseSensitive: boolean }[];
  creators: { operator: NameOperator; value: string | string[] }[];
  usedInProject: string[];
  notInProject: string[];
  sort: { name: 'name' | 'created_at' | 'updated_at'; ascending: boolean };
  offset: number;
  limit: number;
}

export class PromptTemplatesRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  byId(id: string): Promise<PromptTemplateRow | undefined> {
    return this.db.selectFrom('prompt_templates').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The template named `name` of the project, or among the global templates (project null). */
  byName(projectId: string | null, name: string): Promise<PromptTemplateRow | undefined> {
    let q = this.db.selectFrom('prompt_templates').selectAll().where('name', '=', name);
    q = projectId === null ? q.where('project_id', 'is', null) : q.where('project_id', '=', projectId);
    return q.executeTakeFirst();
  }

  /** The projects a global template is shared with. */
  async sharedWith(templateId: string): Promise<string[]> {
    return (await this.sharedWithEach([templateId])).get(templateId) ?? [];
  }

  /** The projects each of the templates is shared with. */
  async sharedWithEach(templateIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(templateIds.map((id) => [id, []]));
    if (templateIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('prompt_template_projects')
      .select(['template_id', 'project_id'])
      .where('template_id', 'in', templateIds)
      .orderBy('created_at')
      .execute();
    for (const r of rows) out.get(r.template_id)?.push(r.project_id);
    return out;
  }

  /** Whether the template belongs to the project or is shared with it. */
  async usedIn(template: PromptTemplateRow, projectId: string): Promise<boolean> {
    if (template.project_id !== null) return template.project_id === projectId;
    return (await this.sharedWith(template.id)).includes(projectId);
  }

  /** One page of the templates a query selects. */
  async query(q: TemplateQuery): Promise<PromptTemplateRow[]> {
    let s = this.db.selectFrom('prompt_templates as t').selectAll('t');
    const usedIn =
      (projectIds: string[]) =>
      (eb: any): Expression<SqlBool> =>
        eb.or([
          // Not NULL first: `NULL IN (...)` is NULL, and NOT of it would drop the global templates.
          eb.and([eb('t.project_id', 'is not', null), eb('t.project_id', 'in', projectIds)]),
          eb(
            't.id',
            'in',
            eb
              .selectFrom('prompt_template_projects')
              .select('template_id')
              .where('project_id', 'in', projectIds),
          ),
        ]);
    if (q.visibleTo) {
      const { userId, projectIds } = q.visibleTo;
      s = s.where((eb) =>
        eb.or([
          eb.and([eb('t.project_id', 'is', null), eb('t.created_by', '=', userId)]),
          ...(projectIds.length ? [usedIn(projectIds)(eb)] : []),
        ]),
      );
    }
    for (const f of q.names)
      s = s.where(textMatch(this.dialect, 't.name', f.operator, f.value, f.caseSensitive));
    for (const f of q.creators) s = s.where(textMatch(this.dialect, 't.created_by', f.operator, f.value));
    for (const p of q.usedInProject) s = s.where(usedIn([p]));
    for (const p of q.notInProject) s = s.where((eb) => eb.not(usedIn([p])(eb)));
    const dir = q.sort.ascending ? 'asc' : 'desc';
    return s.orderBy(`t.${q.sort.name}`, dir).orderBy('t.id', dir).offset(q.offset).limit(q.limit).execute();
  }

  /** Inserts a template with its first version and the project it is shared with, in one transaction. */
  async insert(row: PromptTemplateRow, first: PromptVersionRow, sharedWith: string | null): Promise<void> {
    if (await this.byName(row.project_id, row.name)) throw new TemplateNameTaken();
    try {
      await this.db.transaction().execute(async (tx) => {
        await tx.insertInto('prompt_templates').values(row).execute();
        await tx.insertInto('prompt_template_versions').values(first).execute();
        if (sharedWith)
          await tx
            .insertInto('prompt_template_projects')
            .values({ template_id: row.id, project_id: sharedWith, created_at: row.created_at })
            .execute();
      });
    } catch (err) {
      if (await this.byName(row.project_id, row.name)) throw new TemplateNameTaken();
      throw err;
    }
  }

  async rename(row: PromptTemplateRow, name: string, at: number): Promise<void> {
    const taken = await this.byName(row.project_id, name);
    if (taken && taken.id !== row.id) throw new TemplateNameTaken();
    try {
      await this.db
        .updateTable('prompt_templates')
        .set({ name, updated_at: at })
        .where('id', '=', row.id)
        .execute();
    } catch (err) {
      const now = await this.byName(row.project_id, name);
      if (now && now.id !== row.id) throw new TemplateNameTaken();
      throw err;
    }
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('prompt_templates').where('id', '=', id).execute();
  }

  async select(id: string, version: number, at: number): Promise<void> {
    await this.db
      .updateTable('prompt_templates')
      .set({ selected_version: version, updated_at: at })
      .where('id', '=', id)
      .execute();
  }

  version(templateId: string, version: number): Promise<PromptVersionRow | undefined> {
    return this.db
      .selectFrom('prompt_template_versions')
      .selectAll()
      .where('template_id', '=', templateId)
      .where('version', '=', version)
      .executeTakeFirst();
  }

  /** The versions of a template, by number. */
  versions(
    templateId: string,
    page: {
      ascending: boolean;
      sort: 'version' | 'created_at' | 'updated_at';
      offset: number;
      limit: number;
    },
  ): Promise<PromptVersionRow[]> {
    const dir = page.ascending ? 'asc' : 'desc';
    return this.db
      .selectFrom('prompt_template_versions')
      .selectAll()
      .where('template_id', '=', templateId)
      .orderBy(page.sort, dir)
      .orderBy('version', dir)
      .offset(page.offset)
      .limit(page.limit)
      .execute();
  }

  /** The version numbers of each of the templates, ascending. */
  async versionNumbers(templateIds: string[]): Promise<Map<string, number[]>> {
    const out = new Map<string, number[]>(templateIds.map((id) => [id, []]));
    if (templateIds.length === 0) return out;
    const rows = await this.db
      .selectFrom('prompt_template_versions')
      .select(['template_id', 'version'])
      .where('template_id', 'in', templateIds)
      .orderBy('version')
      .execute();
    for (const r of rows) out.get(r.template_id)?.push(Number(r.version));
    return out;
  }

  /** The selected version of each template. */
  selectedVersions(templates: PromptTemplateRow[]): Promise<PromptVersionRow[]> {
    if (templates.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('prompt_template_versions as v')
      .innerJoin('prompt_templates as t', 't.id', 'v.template_id')
      .selectAll('v')
      .where(
        'v.template_id',
        'in',
        templates.map((t) => t.id),
      )
      .whereRef('v.version', '=', 't.selected_version')
      .execute();
  }

  /**
   * Adds a version, built by `make` from the template as it is under its row lock (so that the
   * version it follows is the last one), and selects it when asked.
   */
  async addVersion(
    templateId: string,
    make: (template: PromptTemplateRow, last: PromptVersionRow) => PromptVersionRow,
    selectIt: boolean,
  ): Promise<PromptVersionRow> {
    return this.db.transaction().execute(async (tx) => {
      let lock = tx.selectFrom('prompt_templates').selectAll().where('id', '=', templateId);
      if (this.dialect === 'postgres') lock = lock.forUpdate();
      const template = await lock.executeTakeFirstOrThrow();
      const last = await tx
        .selectFrom('prompt_template_versions')
        .selectAll()
        .where('template_id', '=', templateId)
        .where('version', '=', template.max_version)
        .executeTakeFirstOrThrow();
      const row = make(template, last);
      const taken = await tx
        .selectFrom('prompt_template_versions')
        .select('id')
        .where('template_id', '=', templateId)
        .where('version', '=', row.version)
        .executeTakeFirst();
      if (taken) throw new VersionTaken();
      await tx.insertInto('prompt_template_versions').values(row).execute();
      await tx
        .updateTable('prompt_templates')
        .set({
          max_version: Math.max(Number(template.max_version), row.version),
          ...(selectIt ? { selected_version: row.version } : {}),
          updated_at: row.created_at,
        })
        .where('id', '=', templateId)
        .execute();
      return row;
    });
  }
}

/** A name comparison of the template query; `position` is the dialect's substring position function. */
