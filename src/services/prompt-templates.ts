/**
 * Prompt templates and their versions (the hosted project and global `/templates` routes), and
 * rendering (`/render_template`). A project template follows its project's access (viewers read,
 * editors change); a global template is its creator's, and is shared with the projects it was
 * created for (`?project_id`), whose collaborators then see it by their role there.
 */
import { ValidationError, conflict, forbidden, notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import {
  type PromptSettings,
  type TemplateContent,
  missingWarning,
  variablesOfInput,
  variablesOfRow,
  versionChanges,
} from '../domain/prompt-templates.ts';
import { type Role, atLeast, strongest } from '../domain/roles.ts';
import { TemplateSyntaxError, renderTemplate, templateVariables } from '../domain/templates.ts';
import { textFaults } from '../domain/text.ts';
import { nowUs, toIso } from '../domain/time.ts';
import {
  type NameOperator,
  type PromptTemplateRow,
  type PromptTemplatesRepo,
  type PromptVersionRow,
  TemplateNameTaken,
  VersionTaken,
} from '../store/prompt-templates.ts';
import type { UserRow, UsersRepo } from '../store/users.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';

export interface VersionBody {
  template: TemplateContent;
  raw?: boolean;
  version?: number | null;
  settings?: PromptSettings;
  output_type?: string | null;
}

export interface CreateBody extends VersionBody {
  name: string | { value: string; append_suffix_if_duplicate?: boolean };
  hidden?: boolean;
}

export type TemplateFilter =
  | { name: 'name'; operator: NameOperator; value: string | string[]; case_sensitive?: boolean }
  | { name: 'creator'; operator?: NameOperator; value: string | string[] }
  | { name: 'used_in_project'; value: string }
  | { name: 'not_in_project'; value: string };

export interface QueryBody {
  filters?: TemplateFilter[] | null;
  sort?: { name: 'name' | 'created_at' | 'updated_at'; ascending?: boolean } | null;
}

export interface VersionQueryBody {
  sort?: { name: 'version' | 'created_at' | 'updated_at'; ascending?: boolean } | null;
}

export interface Page {
  starting_token?: number;
  limit?: number;
}

export interface RenderBody {
  template: string;
  data: { dataset_id: string; dataset_version_index?: number | null } | { input_strings: string[] };
}

/** The rows of a dataset version, as the datasets service reads them for the caller. */
export interface DatasetRowSource {
  rows(
    caller: Caller,
    datasetId: string,
    opts: { version: number | null; offset: number; limit: number },
  ): Promise<{ rows: { values_dict: Record<string, unknown> }[]; total: number }>;
}

/** How many numbered names `{ value, append_suffix_if_duplicate }` tries before it gives up. */
const SUFFIX_ATTEMPTS = 100;
/** The templates one project list answers at most. */
const PROJECT_LIST_LIMIT = 1000;

function describeUser(u: UserRow | undefined) {
  return u ? { id: u.id, email: u.email, first_name: u.first_name, last_name: u.last_name } : null;
}

function describeVersion(v: PromptVersionRow, users: Map<string, UserRow>) {
  return {
    id: v.id,
    template: JSON.parse(v.template) as TemplateContent,
    raw: Boolean(Number(v.raw)),
    version: Number(v.version),
    settings: JSON.parse(v.settings) as PromptSettings,
    output_type: v.output_type,
    content_changed: Boolean(Number(v.content_changed)),
    settings_changed: Boolean(Number(v.settings_changed)),
    model_changed: Boolean(Number(v.model_changed)),
    lines_added: Number(v.lines_added),
    lines_edited: Number(v.lines_edited),
    lines_removed: Number(v.lines_removed),
    created_at: toIso(Number(v.created_at)),
    updated_at: toIso(Number(v.updated_at)),
    created_by_user: describeUser(v.created_by ? users.get(v.created_by) : undefined),
  };
}

export type VersionView = ReturnType<typeof describeVersion>;

export class PromptTemplatesService {
  constructor(
    private readonly repo: PromptTemplatesRepo,
    private readonly projects: ProjectsService,
    private readonly users: UsersRepo,
    private readonly datasets: DatasetRowSource | null,
  ) {}

  // ---- access ------------------------------------------------------------------------------------

  /** The caller's role on a template: its project's, or for a global one its creator's or a sharing project's. */
  private async roleOn(caller: Caller, t: PromptTemplateRow): Promise<Role | null> {
    if (caller.role === 'admin') return 'owner';
    if (t.project_id !== null) return this.projects.roleOn(caller, t.project_id);
    const roles: (Role | null)[] = [t.created_by === caller.id ? 'owner' : null];
    for (const p of await this.repo.sharedWith(t.id)) roles.push(await this.projects.roleOn(caller, p));
    return strongest(roles);
  }

  /** A template the caller may see (else 404) with at least `needed` (else 403). */
  private async template(caller: Caller, id: string, needed: Role): Promise<PromptTemplateRow> {
    const t = await this.repo.byId(id);
    const role = t ? await this.roleOn(caller, t) : null;
    if (!t || role === null) throw notFound('Prompt template');
    if (!atLeast(role, needed)) throw forbidden(`This needs the ${needed} role on the prompt template`);
    return t;
  }

  /** A template of the project, or shared with it, by the caller's role on the project. */
  private async inProject(caller: Caller, projectId: string, id: string, needed: Role) {
    await this.projects.access(caller, projectId, needed);
    const t = await this.repo.byId(id);
    if (!t || !(await this.repo.usedIn(t, projectId))) throw notFound('Prompt template');
    return t;
  }

  private async version(t: PromptTemplateRow, version: number): Promise<PromptVersionRow> {
    const v = await this.repo.version(t.id, version);
    if (!v) throw notFound(`Version ${version} of the prompt template`);
    return v;
  }

  // ---- descriptions --------------------------------------------------------------------------

  private async usersOf(ids: (string | null)[]) {
    const wanted = [...new Set(ids.filter((x): x is string => x !== null))];
    return new Map((await this.users.byIds(wanted)).map((u) => [u.id, u]));
  }

  private async describeVersions(rows: PromptVersionRow[]) {
    const users = await this.usersOf(rows.map((v) => v.created_by));
    return rows.map((v) => describeVersion(v, users));
  }

  private async describe(rows: PromptTemplateRow[], withAllVersions = false) {
    const [selected, numbers] = await Promise.all([
      this.repo.selectedVersions(rows),
      this.repo.versionNumbers(rows.map((t) => t.id)),
    ]);
    const shared = await Promise.all(rows.map((t) => (t.project_id ? [] : this.repo.sharedWith(t.id))));
    const all = withAllVersions
      ? await Promise.all(
          rows.map((t) =>
            this.repo.versions(t.id, { sort: 'version', ascending: true, offset: 0, limit: 10_000 }),
          ),
        )
      : [];
    const users = await this.usersOf([
      ...rows.map((t) => t.created_by),
      ...selected.map((v) => v.created_by),
      ...all.flat().map((v) => v.created_by),
    ]);
    return rows.map((t, i) => {
      const sel = describeVersion(selected.find((v) => v.template_id === t.id)!, users);
      const versions = numbers.get(t.id) ?? [];
      return {
        id: t.id,
        name: t.name,
        project_id: t.project_id,
        shared_with_projects: shared[i],
        template: typeof sel.template === 'string' ? sel.template : JSON.stringify(sel.template),
        selected_version: sel,
        selected_version_id: sel.id,
        ...(withAllVersions ? { all_versions: all[i].map((v) => describeVersion(v, users)) } : {}),
        all_available_versions: versions,
        total_versions: versions.length,
        max_version: Number(t.max_version),
        created_at: toIso(Number(t.created_at)),
        updated_at: toIso(Number(t.updated_at)),
        created_by_user: describeUser(t.created_by ? users.get(t.created_by) : undefined),
      };
    });
  }

  private async describeOne(t: PromptTemplateRow) {
    return (await this.describe([t], true))[0];
  }

  // ---- writes ----------------------------------------------------------------------------------

  /** A template of a project (POST /projects/{p}/templates). */
  async createInProject(caller: Caller, projectId: string, body: CreateBody) {
    await this.projects.access(caller, projectId, 'editor');
    return this.create(caller, projectId, null, body);
  }

  /** A global template, shared with `projectId` when given (POST /templates?project_id). */
  async createGlobal(caller: Caller, projectId: string | null, body: CreateBody) {
    if (projectId) await this.projects.access(caller, projectId, 'editor');
    return this.create(caller, null, projectId, body);
  }

  private async create(
    caller: Caller,
    projectId: string | null,
    sharedWith: string | null,
    body: CreateBody,
  ) {
    const name = typeof body.name === 'string' ? body.name : body.name.value;
    const suffix = typeof body.name === 'object' && body.name.append_suffix_if_duplicate === true;
    checkVersion(body, ['body']);
    checkText(name, ['body', 'name']);
    const now = nowUs();
    const id = newId();
    const first = versionRow(id, body, body.version ?? 0, null, caller, now);
    for (let attempt = 0; ; attempt++) {
      const candidate = attempt === 0 ? name : `${name} (${attempt})`;
      const row: PromptTemplateRow = {
        id,
        project_id: projectId,
        name: candidate,
        selected_version: first.version,
        max_version: first.version,
        created_by: caller.id,
        created_at: now,
        updated_at: now,
      };
      try {
        await this.repo.insert(row, first, sharedWith);
        return this.describeOne(row);
      } catch (err) {
        if (!(err instanceof TemplateNameTaken)) throw err;
        if (!suffix || attempt >= SUFFIX_ATTEMPTS)
          throw conflict(`A prompt template named '${candidate}' already exists`);
      }
    }
  }

  /** A new version after the last one, selected (POST .../templates/{id}/versions). */
  async addVersion(caller: Caller, projectId: string | null, id: string, body: VersionBody) {
    const t = await this.forWrite(caller, projectId, id);
    checkVersion(body, ['body']);
    try {
      const row = await this.repo.addVersion(
        t.id,
        (template, last) =>
          versionRow(t.id, body, body.version ?? Number(template.max_version) + 1, last, caller, nowUs()),
        true,
      );
      return (await this.describeVersions([row]))[0];
    } catch (err) {
      if (err instanceof VersionTaken)
        throw conflict(`Version ${body.version} of the prompt template exists`);
      throw err;
    }
  }

  /** Makes a version the selected one (PUT .../versions/{v}). */
  async select(caller: Caller, projectId: string | null, id: string, version: number) {
    const t = await this.forWrite(caller, projectId, id);
    await this.version(t, version);
    await this.repo.select(t.id, version, nowUs());
    return this.describeOne((await this.repo.byId(t.id))!);
  }

  async rename(caller: Caller, id: string, name: string | null | undefined) {
    const t = await this.template(caller, id, 'editor');
    if (name !== null && name !== undefined && name !== t.name) {
      checkText(name, ['body', 'name']);
      try {
        await this.repo.rename(t, name, nowUs());
      } catch (err) {
        if (err instanceof TemplateNameTaken)
          throw conflict(`A prompt template named '${name}' already exists`);
        throw err;
      }
    }
    return this.describeOne((await this.repo.byId(t.id))!);
  }

  async remove(caller: Caller, projectId: string | null, id: string) {
    const t = await this.forWrite(caller, projectId, id);
    await this.repo.delete(t.id);
  }

  private forWrite(caller: Caller, projectId: string | null, id: string) {
    return projectId ? this.inProject(caller, projectId, id, 'editor') : this.template(caller, id, 'editor');
  }

  private forRead(caller: Caller, projectId: string | null, id: string) {
    return projectId ? this.inProject(caller, projectId, id, 'viewer') : this.template(caller, id, 'viewer');
  }

  // ---- reads -----------------------------------------------------------------------------------

  async get(caller: Caller, projectId: string | null, id: string) {
    return this.describeOne(await this.forRead(caller, projectId, id));
  }

  async getVersion(caller: Caller, projectId: string | null, id: string, version: number) {
    const t = await this.forRead(caller, projectId, id);
    return (await this.describeVersions([await this.version(t, version)]))[0];
  }

  /** The templates of a project and those shared with it, by name (GET /projects/{p}/templates). */
  async listOfProject(caller: Caller, projectId: string) {
    await this.projects.access(caller, projectId, 'viewer');
    const rows = await this.repo.query({
      visibleTo: null,
      names: [],
      creators: [],
      usedInProject: [projectId],
      notInProject: [],
      sort: { name: 'name', ascending: true },
      offset: 0,
      limit: PROJECT_LIST_LIMIT,
    });
    return this.describe(rows);
  }

  /** A version of the project's template named `name`: `version`, or the selected one. */
  async byName(caller: Caller, projectId: string, name: string, version: number | null | undefined) {
    await this.projects.access(caller, projectId, 'viewer');
    const [t] = await this.repo.query({
      visibleTo: null,
      names: [{ operator: 'eq', value: name, caseSensitive: true }],
      creators: [],
      usedInProject: [projectId],
      notInProject: [],
      // The project's own template before a global one of the same name.
      sort: { name: 'created_at', ascending: true },
      offset: 0,
      limit: 1,
    });
    if (!t) throw notFound(`Prompt template '${name}'`);
    const v = await this.version(t, version ?? Number(t.selected_version));
    return (await this.describeVersions([v]))[0];
  }

  /** The templates the caller may see, filtered, sorted and paged (POST /templates/query). */
  async query(caller: Caller, body: QueryBody, page: Page) {
    const { offset, limit } = pageOf(page);
    const filters = body.filters ?? [];
    const visibleTo =
      caller.role === 'admin'
        ? null
        : { userId: caller.id, projectIds: (await this.projects.list(caller, {})).map((p) => p.id) };
    const rows = await this.repo.query({
      visibleTo,
      names: filters.flatMap((f) =>
        f.name === 'name'
          ? [{ operator: f.operator, value: f.value, caseSensitive: f.case_sensitive ?? true }]
          : [],
      ),
      creators: filters.flatMap((f) =>
        f.name === 'creator' ? [{ operator: f.operator ?? 'eq', value: f.value }] : [],
      ),
      usedInProject: filters.flatMap((f) => (f.name === 'used_in_project' ? [f.value] : [])),
      notInProject: filters.flatMap((f) => (f.name === 'not_in_project' ? [f.value] : [])),
      sort: { name: body.sort?.name ?? 'created_at', ascending: body.sort?.ascending ?? false },
      offset,
      limit: limit + 1,
    });
    return {
      ...envelope(offset, limit, rows.length > limit),
      templates: await this.describe(rows.slice(0, limit)),
    };
  }

  /** The versions of a template, with what each changed (POST /templates/{id}/versions/query). */
  async queryVersions(caller: Caller, id: string, body: VersionQueryBody, page: Page) {
    const t = await this.template(caller, id, 'viewer');
    const { offset, limit } = pageOf(page);
    const rows = await this.repo.versions(t.id, {
      sort: body.sort?.name ?? 'version',
      ascending: body.sort?.ascending ?? false,
      offset,
      limit: limit + 1,
    });
    return {
      ...envelope(offset, limit, rows.length > limit),
      versions: await this.describeVersions(rows.slice(0, limit)),
    };
  }

  // ---- rendering -------------------------------------------------------------------------------

  /**
   * Renders the template for each input string, or for each row of a dataset version, one page at a
   * time; a variable without a value renders empty and is named in that result's warning.
   */
  async render(caller: Caller, body: RenderBody, page: Page) {
    const { offset, limit } = pageOf(page);
    try {
      templateVariables(body.template);
    } catch (err) {
      if (err instanceof TemplateSyntaxError) throw valueError(['body', 'template'], err.message);
      throw err;
    }
    let inputs: Record<string, unknown>[];
    let total: number;
    if ('input_strings' in body.data) {
      total = body.data.input_strings.length;
      inputs = body.data.input_strings.slice(offset, offset + limit).map(variablesOfInput);
    } else {
      if (!this.datasets)
        throw valueError(['body', 'data', 'dataset_id'], 'Datasets are not available in this build');
      const got = await this.datasets.rows(caller, body.data.dataset_id, {
        version: body.data.dataset_version_index ?? null,
        offset,
        limit,
      });
      total = got.total;
      inputs = got.rows.map((r) => variablesOfRow(r.values_dict));
    }
    const rendered_templates = inputs.map((vars) => {
      const { text, missing } = renderTemplate(body.template, vars);
      return { result: text, warning: missingWarning(missing) };
    });
    return { ...envelope(offset, limit, offset + limit < total), rendered_templates };
  }
}

function pageOf(page: Page) {
  return { offset: page.starting_token ?? 0, limit: page.limit ?? 100 };
}

function envelope(offset: number, limit: number, more: boolean) {
  return {
    starting_token: offset,
    limit,
    paginated: true,
    next_starting_token: more ? offset + limit : null,
  };
}

/** 422 for unstorable text or a template that does not parse. */
function checkVersion(body: VersionBody, loc: (string | number)[]) {
  const faults = textFaults(body, loc);
  if (faults.length) throw new ValidationError(faults);
  const texts = typeof body.template === 'string' ? [body.template] : body.template.map((m) => m.content);
  texts.forEach((text, i) => {
    try {
      templateVariables(text);
    } catch (err) {
      if (!(err instanceof TemplateSyntaxError)) throw err;
      const at =
        typeof body.template === 'string' ? [...loc, 'template'] : [...loc, 'template', i, 'content'];
      throw valueError(at, `The template does not parse: ${err.message}`);
    }
  });
}

function checkText(text: string, loc: (string | number)[]) {
  const faults = textFaults(text, loc);
  if (faults.length) throw new ValidationError(faults);
}

function versionRow(
  templateId: string,
  body: VersionBody,
  version: number,
  last: PromptVersionRow | null,
  caller: Caller,
  now: number,
): PromptVersionRow {
  const settings = body.settings ?? {};
  const changes = versionChanges(
    last ? { content: JSON.parse(last.template), settings: JSON.parse(last.settings) } : null,
    { content: body.template, settings },
  );
  return {
    id: newId(),
    template_id: templateId,
    version,
    template: JSON.stringify(body.template),
    raw: body.raw ? 1 : 0,
    settings: JSON.stringify(settings),
    output_type: body.output_type ?? null,
    content_changed: changes.content_changed ? 1 : 0,
    settings_changed: changes.settings_changed ? 1 : 0,
    model_changed: changes.model_changed ? 1 : 0,
    lines_added: changes.lines_added,
    lines_edited: changes.lines_edited,
    lines_removed: changes.lines_removed,
    created_by: caller.id,
    created_at: now,
    updated_at: now,
  };
}
