import type { Kysely } from 'kysely';
import type { DB, ProjectCollaboratorsTable, ProjectsTable } from './tables.ts';

export type ProjectRow = ProjectsTable;
export type ProjectCollaboratorRow = ProjectCollaboratorsTable;

export class ProjectsRepo {
  /**
   * Bumped after every change of a project or its collaborators: caches of project access
   * (services/projects.ts) made before it are stale.
   */
  generation = 0;

  constructor(private readonly db: Kysely<DB>) {}

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

  async setRetention(id: string, days: number | null): Promise<void> {
    try {
      await this.db.updateTable('projects').set({ retention_days: days }).where('id', '=', id).execute();
    } finally {
      this.generation++;
    }
  }

  /** Deletes a project and everything under it. */
  async delete(id: string): Promise<void> {
    try {
      await this.db.transaction().execute(async (tx) => {
        const runIds = tx.selectFrom('runs').select('id').where('project_id', '=', id);
        await tx.deleteFrom('records').where('run_id', 'in', runIds).execute();
        await tx.deleteFrom('projects').where('id', '=', id).execute();
      });
    } finally {
      this.generation++;
    }
  }
}
