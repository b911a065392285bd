/**
 * Annotation templates (editors manage them, viewers read them) and annotations of records:
 * reviewers (the annotator role and up) set their own; an application sets its end users' feedback
 * with its key (the editor role, as ingestion needs), kept apart in the aggregates.
 */
import {
  type AnnotationSource,
  type Template,
  type TemplateConfig,
  type TemplateType,
  authorKey,
  checkValue,
  templateConfig,
} from '../domain/annotations.ts';
import { type ErrorItem, ValidationError, conflict, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { rejectUnstorable } from '../domain/text.ts';
import { nowUs, toIso } from '../domain/time.ts';
import { ANNOTATION_PREFIX, type ColumnDef, annotationColumn } from '../query/columns.ts';
import {
  type AnnotationRow,
  type AnnotationsRepo,
  NameTaken,
  type TemplateRow,
} from '../store/annotations.ts';
import { parseJson } from '../store/db.ts';
import type { RecordsRepo } from '../store/records.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';
import type { AnnotationColumns } from './search.ts';

export interface TemplateBody {
  name: string;
  description?: string | null;
  type: TemplateType;
  min?: number | null;
  max?: number | null;
  options?: string[] | null;
  multiple?: boolean | null;
}

export interface AnnotationBody {
  value: unknown;
  explanation?: string | null;
  source?: AnnotationSource | null;
  external_user_id?: string | null;
}

export interface AnnotationAuthor {
  source?: AnnotationSource | null;
  external_user_id?: string | null;
}

export function template(row: TemplateRow): Template & { name: string } {
  return {
    id: row.id,
    name: row.name,
    type: row.type as TemplateType,
    config: parseJson<TemplateConfig>(row.config) ?? {},
  };
}

function describeTemplate(row: TemplateRow) {
  const t = template(row);
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    description: row.description,
    type: t.type,
    min: t.config.min ?? null,
    max: t.config.max ?? null,
    options: t.config.options ?? null,
    multiple: t.type === 'categorical' ? (t.config.multiple ?? false) : null,
    column_id: `${ANNOTATION_PREFIX}${row.id}`,
    created_by: row.created_by,
    created_at: toIso(Number(row.created_at)),
    updated_at: toIso(Number(row.updated_at)),
  };
}

function describeAnnotation(a: AnnotationRow) {
  return {
    record_id: a.record_id,
    template_id: a.template_id,
    source: a.source,
    user_id: a.user_id,
    external_user_id: a.external_user_id,
    value: JSON.parse(a.value),
    explanation: a.explanation,
    created_at: toIso(Number(a.created_at)),
    updated_at: toIso(Number(a.updated_at)),
  };
}

const nameTaken = (name: string) =>
  conflict(`An annotation template named '${name}' already exists in this project`);

export class AnnotationsService implements AnnotationColumns {
  constructor(
    private readonly repo: AnnotationsRepo,
    private readonly records: RecordsRepo,
    private readonly projects: ProjectsService,
  ) {}

  /** The templates of a project (viewers and up). */
  async listTemplates(caller: Caller, projectId: string) {
    await this.projects.access(caller, projectId);
    return (await this.repo.templates(projectId)).map(describeTemplate);
  }

  async createTemplate(caller: Caller, projectId: string, body: TemplateBody) {
    await this.projects.access(caller, projectId, 'editor');
    rejectUnstorable(['body', 'name'], body.name);
    if (body.description) rejectUnstorable(['body', 'description'], body.description);
    const faults: ErrorItem[] = [];
    const config = templateConfig(body.type, body, faults);
    if (faults.length) throw new ValidationError(faults);
    const now = nowUs();
    const row: TemplateRow = {
      id: newId(),
      project_id: projectId,
      name: body.name,
      description: body.description ?? null,
      type: body.type,
      config: JSON.stringify(config),
      created_by: caller.id,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.repo.insertTemplate(row);
    } catch (err) {
      if (err instanceof NameTaken) throw nameTaken(body.name);
      throw err;
    }
    return describeTemplate(row);
  }

  /** Renames a template or changes its description (its type and settings stay: annotations hold them). */
  async updateTemplate(
    caller: Caller,
    projectId: string,
    templateId: string,
    body: { name?: string | null; description?: string | null },
  ) {
    await this.projects.access(caller, projectId, 'editor');
    const row = await this.templateRow(projectId, templateId);
    const patch: { name?: string; description?: string | null; updated_at: number } = { updated_at: nowUs() };
    if (body.name !== undefined && body.name !== null) {
      rejectUnstorable(['body', 'name'], body.name);
      patch.name = body.name;
    }
    if (body.description !== undefined) {
      if (body.description) rejectUnstorable(['body', 'description'], body.description);
      patch.description = body.description;
    }
    try {
      await this.repo.updateTemplate(row, patch);
    } catch (err) {
      if (err instanceof NameTaken) throw nameTaken(patch.name as string);
      throw err;
    }
    return describeTemplate({ ...row, ...patch });
  }

  /** Deletes a template with its annotations (and takes it out of its queues). */
  async deleteTemplate(caller: Caller, projectId: string, templateId: string) {
    await this.projects.access(caller, projectId, 'editor');
    await this.templateRow(projectId, templateId);
    await this.repo.deleteTemplate(templateId);
  }

  private async templateRow(projectId: string, templateId: string): Promise<TemplateRow> {
    const row = await this.repo.template(projectId, templateId);
    if (!row) throw notFound('Annotation template');
    return row;
  }

  /**
   * The author of a write or delete, after the access check its source needs: a reviewer is the
   * caller (annotator and up); end-user feedback names its end user and needs the editor role.
   */
  private async author(caller: Caller, projectId: string, a: AnnotationAuthor, where: 'body' | 'query') {
    const source = a.source ?? 'reviewer';
    await this.projects.access(caller, projectId, source === 'end_user' ? 'editor' : 'annotator');
    const external = a.external_user_id ?? null;
    if (source === 'end_user' && external === null)
      throw new ValidationError({
        loc: [where, 'external_user_id'],
        msg: 'Field required (end-user feedback names its end user)',
        type: 'missing',
      });
    if (source === 'reviewer' && external !== null)
      throw new ValidationError({
        loc: [where, 'external_user_id'],
        msg: "Value error, external_user_id goes with source 'end_user' only",
        type: 'value_error',
        input: external,
      });
    if (external !== null) rejectUnstorable([where, 'external_user_id'], external);
    return { source, external, author: authorKey(source, caller.id, external) };
  }

  /** The record and template of an annotation route, both in the project. */
  private async target(projectId: string, recordId: string, templateId: string) {
    const [record, row] = await Promise.all([
      this.records.byId(projectId, recordId),
      this.repo.template(projectId, templateId),
    ]);
    if (!record) throw notFound('Record');
    if (!row) throw notFound('Annotation template');
    return template(row);
  }

  /** Sets the author's annotation of a record on a template, replacing theirs. */
  async set(caller: Caller, projectId: string, recordId: string, templateId: string, body: AnnotationBody) {
    const who = await this.author(caller, projectId, body, 'body');
    const t = await this.target(projectId, recordId, templateId);
    const faults: ErrorItem[] = [];
    const stored = checkValue(t, body.value, ['body', 'value'], faults);
    if (body.explanation) rejectUnstorable(['body', 'explanation'], body.explanation);
    if (!stored) throw new ValidationError(faults);
    // The record may be deleted meanwhile: the store checks it again inside the write.
    const row = await this.repo.set({
      id: newId(),
      projectId,
      recordId,
      templateId,
      templateType: t.type,
      source: who.source,
      author: who.author,
      userId: caller.id,
      externalUserId: who.external,
      stored,
      explanation: body.explanation ?? null,
      now: nowUs(),
    });
    if (!row) throw notFound('Record');
    return describeAnnotation(row);
  }

  /** Removes the author's annotation of a record on a template (404 when there is none). */
  async delete(caller: Caller, projectId: string, recordId: string, templateId: string, q: AnnotationAuthor) {
    const who = await this.author(caller, projectId, q, 'query');
    const t = await this.target(projectId, recordId, templateId);
    if (!(await this.repo.delete(projectId, recordId, t, who.source, who.author, nowUs())))
      throw notFound('Annotation');
  }

  /** Whether the template has any reviewer annotation. */
  annotated(templateId: string): Promise<boolean> {
    return this.repo.annotated(templateId);
  }

  /** The annotation columns of a project by id (`annotation/<template id>`). */
  async columns(projectId: string): Promise<Map<string, ColumnDef>> {
    const rows = await this.repo.templates(projectId);
    return new Map(
      rows.map((r) => {
        const c = annotationColumn(template(r));
        return [c.id, c];
      }),
    );
  }
}
