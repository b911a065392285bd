/**
 * Annotation queues: editors and owners manage them (templates, members, records); annotators see
 * the queues they are members of and search them, where fully_annotated works.
 */
import { type ErrorItem, ValidationError, conflict, notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { type Role, atLeast } from '../domain/roles.ts';
import { rejectUnstorable } from '../domain/text.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type { AnnotationQueuesRepo, QueueRow, QueueView } from '../store/annotation-queues.ts';
import { type AnnotationsRepo, NameTaken } from '../store/annotations.ts';
import type { UsersRepo } from '../store/users.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';
import type { SearchBody, SearchService } from './search.ts';

export interface QueueBody {
  name?: string;
  description?: string | null;
  template_ids?: string[];
  user_ids?: string[];
}

/** Records to add: by id, or every record a search of one run finds. */
export interface QueueRecordsBody {
  record_ids?: string[] | null;
  log_stream_id?: string | null;
  experiment_id?: string | null;
  filters?: unknown;
  filter_tree?: unknown;
}

function describeQueue(q: QueueView) {
  return {
    id: q.id,
    project_id: q.project_id,
    name: q.name,
    description: q.description,
    template_ids: q.template_ids,
    user_ids: q.user_ids,
    num_records: q.num_records,
    created_by: q.created_by,
    created_at: toIso(Number(q.created_at)),
    updated_at: toIso(Number(q.updated_at)),
  };
}

export class AnnotationQueuesService {
  constructor(
    private readonly queues: AnnotationQueuesRepo,
    private readonly annotations: AnnotationsRepo,
    private readonly users: UsersRepo,
    private readonly projects: ProjectsService,
    private readonly search: SearchService,
  ) {}

  /** The caller's role on the project, which must be at least `needed` (403 below, 404 unseen). */
  private async role(caller: Caller, projectId: string, needed: Role): Promise<Role> {
    await this.projects.access(caller, projectId, needed);
    return (await this.projects.roleOn(caller, projectId)) ?? 'viewer';
  }

  /**
   * A queue the caller may see: editors and owners see every queue of the project, annotators the
   * queues they are members of (others answer 404, as unseen things do).
   */
  private async visible(caller: Caller, projectId: string, queueId: string): Promise<QueueView> {
    const role = await this.role(caller, projectId, 'annotator');
    const q = await this.queues.byId(projectId, queueId);
    if (!q || (!atLeast(role, 'editor') && !q.user_ids.includes(caller.id)))
      throw notFound('Annotation queue');
    return q;
  }

  private async managed(caller: Caller, projectId: string, queueId: string): Promise<QueueView> {
    await this.projects.access(caller, projectId, 'editor');
    const q = await this.queues.byId(projectId, queueId);
    if (!q) throw notFound('Annotation queue');
    return q;
  }

  async list(caller: Caller, projectId: string) {
    const role = await this.role(caller, projectId, 'annotator');
    const rows = await this.queues.list(projectId, atLeast(role, 'editor') ? null : caller.id);
    return rows.map(describeQueue);
  }

  async get(caller: Caller, projectId: string, queueId: string) {
    return describeQueue(await this.visible(caller, projectId, queueId));
  }

  async create(caller: Caller, projectId: string, body: Required<Pick<QueueBody, 'name'>> & QueueBody) {
    await this.projects.access(caller, projectId, 'editor');
    const lists = await this.checkBody(projectId, body);
    const now = nowUs();
    const row: QueueRow = {
      id: newId(),
      project_id: projectId,
      name: body.name,
      description: body.description ?? null,
      created_by: caller.id,
      created_at: now,
      updated_at: now,
    };
    await this.save(row, { templateIds: lists.templateIds ?? [], userIds: lists.userIds ?? [] }, true);
    return this.get(caller, projectId, row.id);
  }

  async update(caller: Caller, projectId: string, queueId: string, body: QueueBody) {
    const q = await this.managed(caller, projectId, queueId);
    const lists = await this.checkBody(projectId, body);
    const { template_ids, user_ids, num_records, ...row } = q;
    await this.save(
      {
        ...row,
        name: body.name ?? q.name,
        description: body.description === undefined ? q.description : body.description,
        updated_at: nowUs(),
      },
      lists,
      false,
    );
    return this.get(caller, projectId, queueId);
  }

  /** Saves a queue; a name another queue of the project has answers 409. */
  private async save(row: QueueRow, lists: Parameters<AnnotationQueuesRepo['save']>[1], isNew: boolean) {
    try {
      await this.queues.save(row, lists, isNew);
    } catch (err) {
      if (err instanceof NameTaken)
        throw conflict(`An annotation queue named '${row.name}' already exists in this project`);
      throw err;
    }
  }

  async delete(caller: Caller, projectId: string, queueId: string) {
    await this.managed(caller, projectId, queueId);
    await this.queues.delete(queueId);
  }

  /**
   * Checks a queue's text, templates (of this project) and members (users who may annotate in it):
   * 422 at each one that is not.
   */
  private async checkBody(projectId: string, body: QueueBody) {
    if (body.name !== undefined) rejectUnstorable(['body', 'name'], body.name);
    if (body.description) rejectUnstorable(['body', 'description'], body.description);
    const faults: ErrorItem[] = [];
    const twice = (list: string[], field: string) =>
      list.forEach((id, i) => {
        if (list.indexOf(id) !== i)
          faults.push({
            loc: ['body', field, i],
            msg: 'Value error, given twice',
            type: 'value_error',
            input: id,
          });
      });
    if (body.template_ids) {
      const known = new Set((await this.annotations.templates(projectId)).map((t) => t.id));
      body.template_ids.forEach((id, i) => {
        if (!known.has(id))
          faults.push({
            loc: ['body', 'template_ids', i],
            msg: 'Value error, no annotation template with this id in the project',
            type: 'value_error',
            input: id,
          });
      });
      twice(body.template_ids, 'template_ids');
    }
    if (body.user_ids) {
      const users = new Map((await this.users.byIds(body.user_ids)).map((u) => [u.id, u]));
      for (const [i, id] of body.user_ids.entries()) {
        const u = users.get(id);
        const role = u
          ? await this.projects.roleOn({ ...u, role: u.role as Caller['role'] }, projectId)
          : null;
        if (!atLeast(role, 'annotator'))
          faults.push({
            loc: ['body', 'user_ids', i],
            msg: u
              ? 'Value error, this user cannot annotate in the project (needs the annotator role)'
              : 'Value error, no such user',
            type: 'value_error',
            input: id,
          });
      }
      twice(body.user_ids, 'user_ids');
    }
    if (faults.length) throw new ValidationError(faults);
    return { templateIds: body.template_ids, userIds: body.user_ids };
  }

  /** Adds records by id (of this project), or every record a search of a run finds. */
  async addRecords(caller: Caller, projectId: string, queueId: string, body: QueueRecordsBody) {
    const q = await this.managed(caller, projectId, queueId);
    const byIds = body.record_ids !== undefined && body.record_ids !== null;
    const scoped = [body.log_stream_id, body.experiment_id].some((v) => v !== undefined && v !== null);
    if (byIds === scoped)
      throw valueError(
        ['body'],
        'Value error, give record_ids, or log_stream_id or experiment_id (with filters) to add what that search finds',
      );
    const now = nowUs();
    let added: number;
    if (byIds) added = await this.queues.addRecords(q.id, projectId, body.record_ids as string[], now);
    else {
      const { search } = await this.search.prepare(caller, projectId, body as SearchBody, null);
      added = await this.queues.addMatching(q.id, search, now);
    }
    return { added, num_records: (await this.queues.byId(projectId, queueId))?.num_records ?? 0 };
  }

  async removeRecords(caller: Caller, projectId: string, queueId: string, body: { record_ids: string[] }) {
    const q = await this.managed(caller, projectId, queueId);
    const removed = await this.queues.removeRecords(q.id, body.record_ids);
    return { removed, num_records: (await this.queues.byId(projectId, queueId))?.num_records ?? 0 };
  }

  /**
   * How far each member has come (records annotated on every template of the queue) and how many
   * records every member has finished. A caller who is not a member (an editor) is listed last, so
   * that their own work shows too.
   */
  async progress(caller: Caller, projectId: string, queueId: string) {
    const q = await this.visible(caller, projectId, queueId);
    const member = new Set(q.user_ids);
    const userIds = member.has(caller.id) ? q.user_ids : [...q.user_ids, caller.id];
    const [counts, users] = await Promise.all([
      this.queues.progress(q.id, q.template_ids, userIds, q.user_ids),
      this.users.byIds(userIds),
    ]);
    const emails = new Map(users.map((u) => [u.id, u.email]));
    // No templates: nothing is asked of a record, so each one is done (as fully_annotated reads it).
    const done = (n: number | undefined) => (q.template_ids.length ? (n ?? 0) : q.num_records);
    return {
      queue_id: q.id,
      num_records: q.num_records,
      num_templates: q.template_ids.length,
      num_complete: q.template_ids.length && q.user_ids.length ? counts.complete : q.num_records,
      users: userIds
        .filter((id) => emails.has(id))
        .map((id) => ({
          user_id: id,
          email: emails.get(id) as string,
          member: member.has(id),
          num_annotated: done(counts.annotated.get(id)),
        })),
    };
  }

  /** A page of the queue's records (any type), as the other searches answer; fully_annotated works here. */
  async searchRecords(caller: Caller, projectId: string, queueId: string, body: SearchBody): Promise<Buffer> {
    const q = await this.visible(caller, projectId, queueId);
    return this.search.search(caller, projectId, null, body, {
      id: q.id,
      templateIds: q.template_ids,
      memberIds: q.user_ids,
    });
  }
}
