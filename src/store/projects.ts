import { type Kysely, sql } from 'kysely';
import type { Dialect } from './db.ts';
import { retryTransient } from './retry.ts';
import type { DB, ProjectCollaboratorsTable, ProjectsTable } from './tables.ts';

export type ProjectRow = ProjectsTable;
export type ProjectCollaboratorRow = ProjectCollaboratorsTable;

export interface ProjectUserCollaboratorRow extends ProjectCollaboratorRow {
  user_id: string;
  email: string;
  first_name: string;
  last_name: string;
}

export interface ProjectGroupCollaboratorRow extends ProjectCollaboratorRow {
  group_id: string;
  group_name: string;
}

export type Collaborator = { user_id: string } | { group_id: string };

/** Thrown inside a collaborator change to undo it: no owner would be left. */
class NoOwnerLeft extends Error {}

export class ProjectsRepo {
  /**
   * Bumped after every change of a project or its collaborators: caches of project access
   * (services/projects.ts) made before it are stale.
   */
  generation = 0;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  async insert(project: ProjectRow, owner: ProjectCollaboratorRow): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.insertInto('projects').values(project).execute();
      await tx.insertInto('project_collaborators').values(owner).execute();
    });
  }

  byId(id: string): Promise<ProjectRow | undefined> {
    return this.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
  }

  byName(name: string): Promise<ProjectRow | undefined> {
    return this.db.selectFrom('projects').selectAll().where('name', '=', name).executeTakeFirst();
  }

  /** Projects visible to a user: all for admins, else those shared with the user or their groups. */
  list(opts: {
    userId: string;
    groupIds: string[];
    all: boolean;
    name?: string;
    type?: string;
  }): Promise<ProjectRow[]> {
    let q = this.db.selectFrom('projects').selectAll();
    if (!opts.all) {
      q = q.where((eb) =>
        eb.exists(
          eb
            .selectFrom('project_collaborators as pc')
            .select('pc.id')
            .whereRef('pc.project_id', '=', 'projects.id')
            .where((w) =>
              w.or([
                w('pc.user_id', '=', opts.userId),
                ...(opts.groupIds.length ? [w('pc.group_id', 'in', opts.groupIds)] : []),
              ]),
            ),
        ),
      );
    }
    if (opts.name !== undefined) q = q.where('name', '=', opts.name);
    if (opts.type !== undefined) q = q.where('type', '=', opts.type);
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  }

  /** Roles a user holds on a project, directly or through groups. */
  rolesOf(projectId: string, userId: string, groupIds: string[]): Promise<string[]> {
    return this.db
      .selectFrom('project_collaborators')
      .select('role')
      .where('project_id', '=', projectId)
      .where((w) =>
        w.or([w('user_id', '=', userId), ...(groupIds.length ? [w('group_id', 'in', groupIds)] : [])]),
      )
      .execute()
      .then((rows) => rows.map((r) => r.role));
  }

  async addCollaborator(row: ProjectCollaboratorRow): Promise<void> {
    try {
      await this.db.transaction().execute(async (tx) => {
        let del = tx.deleteFrom('project_collaborators').where('project_id', '=', row.project_id);
        del = row.user_id ? del.where('user_id', '=', row.user_id) : del.where('group_id', '=', row.group_id);
        await del.execute();
        await tx.insertInto('project_collaborators').values(row).execute();
      });
    } finally {
      this.generation++;
    }
  }

  userCollaborators(projectId: string, userId?: string): Promise<ProjectUserCollaboratorRow[]> {
    let q = this.db
      .selectFrom('project_collaborators as pc')
      .innerJoin('users as u', 'u.id', 'pc.user_id')
      .selectAll('pc')
      .select(['u.email', 'u.first_name', 'u.last_name'])
      .where('pc.project_id', '=', projectId);
    if (userId !== undefined) q = q.where('pc.user_id', '=', userId);
    return q.orderBy('pc.created_at').orderBy('pc.id').execute() as Promise<ProjectUserCollaboratorRow[]>;
  }

  groupCollaborators(projectId: string, groupId?: string): Promise<ProjectGroupCollaboratorRow[]> {
    let q = this.db
      .selectFrom('project_collaborators as pc')
      .innerJoin('groups as g', 'g.id', 'pc.group_id')
      .selectAll('pc')
      .select('g.name as group_name')
      .where('pc.project_id', '=', projectId);
    if (groupId !== undefined) q = q.where('pc.group_id', '=', groupId);
    return q.orderBy('pc.created_at').orderBy('pc.id').execute() as Promise<ProjectGroupCollaboratorRow[]>;
  }

  /**
   * Gives a collaborator another role, or removes them (`role` null), in one transaction that is
   * undone when no user would be left holding the owner role (directly or through a group with
   * members). The project row is locked first on PostgreSQL (SQLite transactions are already
   * serial), so that two concurrent changes cannot together remove the last owner.
   */
  async changeCollaborator(
    projectId: string,
    who: Collaborator,
    role: string | null,
  ): Promise<'done' | 'not_a_collaborator' | 'last_owner'> {
    try {
      return await this.db.transaction().execute(async (tx) => {
        if (this.dialect === 'postgres')
          await tx.selectFrom('projects').select('id').where('id', '=', projectId).forUpdate().execute();
        const [column, id] = 'user_id' in who ? ['user_id', who.user_id] : ['group_id', who.group_id];
        const n =
          role === null
            ? (
                await tx
                  .deleteFrom('project_collaborators')
                  .where('project_id', '=', projectId)
                  .where(column as 'user_id', '=', id)
                  .executeTakeFirst()
              ).numDeletedRows
            : (
                await tx
                  .updateTable('project_collaborators')
                  .set({ role })
                  .where('project_id', '=', projectId)
                  .where(column as 'user_id', '=', id)
                  .executeTakeFirst()
              ).numUpdatedRows;
        if (Number(n) === 0) return 'not_a_collaborator';
        const owners = await sql<{ n: number | string }>`
          select count(distinct owner_id) as n from (
            select pc.user_id as owner_id from project_collaborators pc
              where pc.project_id = ${projectId} and pc.role = 'owner' and pc.user_id is not null
            union
            select gm.user_id as owner_id from project_collaborators pc
              join group_members gm on gm.group_id = pc.group_id
              where pc.project_id = ${projectId} and pc.role = 'owner'
          ) owners`.execute(tx);
        if (Number(owners.rows[0]?.n ?? 0) === 0) throw new NoOwnerLeft();
        return 'done';
      });
    } catch (err) {
      if (err instanceof NoOwnerLeft) return 'last_owner';
      throw err;
    } finally {
      this.generation++;
    }
  }

  async setRetention(id: string, days: number | null): Promise<void> {
    try {
      await this.db.updateTable('projects').set({ retention_days: days }).where('id', '=', id).execute();
    } finally {
      this.generation++;
    }
  }

  /**
   * Deletes a project and everything under it. Two deletes of one project at once can deadlock on
   * PostgreSQL (each holds rows the other waits for); the loser runs again and finds less to delete.
   */
  async delete(id: string): Promise<void> {
    try {
      await retryTransient(() =>
        this.db.transaction().execute(async (tx) => {
          const runIds = tx.selectFrom('runs').select('id').where('project_id', '=', id);
          // Score results and jobs have no foreign key: by run (their indexes lead with it).
          await tx.deleteFrom('score_results').where('run_id', 'in', runIds).execute();
          await tx.deleteFrom('jobs').where('run_id', 'in', runIds).execute();
          await tx.deleteFrom('records').where('run_id', 'in', runIds).execute();
          await tx.deleteFrom('projects').where('id', '=', id).execute();
        }),
      );
    } finally {
      this.generation++;
    }
  }
}
