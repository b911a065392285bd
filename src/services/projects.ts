import { rejectUnstorable } from '../domain/text.ts';
import { conflict, forbidden, notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { type Role, atLeast, isRole, strongest } from '../domain/roles.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type { Collaborator, ProjectRow, ProjectsRepo } from '../store/projects.ts';
import type { UsersRepo } from '../store/users.ts';
import { ACCESS_CACHE_MS } from './access-cache.ts';
import type { Caller } from './auth.ts';
import { describeGroupCollaborator, describeUserCollaborator } from './collaborators.ts';

export function describeProject(p: ProjectRow) {
  return {
    id: p.id,
    name: p.name,
    type: p.type,
    created_by: p.created_by,
    created_at: toIso(p.created_at),
    updated_at: toIso(p.updated_at),
    retention_days: p.retention_days ?? null,
  };
}

interface AccessEntry {
  project: ProjectRow;
  role: Role;
  projectsGen: number;
  usersGen: number;
  until: number;
}

/** Projects and the one access rule every project-scoped route goes through. */
export class ProjectsService {
  /** Granted access by caller and project, reused for ACCESS_CACHE_MS (denials are never kept). */
  private readonly granted = new Map<string, AccessEntry>();

  constructor(
    private readonly projects: ProjectsRepo,
    private readonly users: UsersRepo,
  ) {}

  /** Changes with every change of a project or its collaborators made through this process. */
  get generation(): number {
    return this.projects.generation;
  }

  /** The caller's role on a project (admins act as owners); null when they may not see it. */
  async roleOn(caller: Caller, projectId: string): Promise<Role | null> {
    if (caller.role === 'admin') return 'owner';
    const groups = await this.users.groupIdsOf(caller.id);
    const roles = await this.projects.rolesOf(projectId, caller.id, groups);
    return strongest(roles.filter(isRole));
  }

  /**
   * The project if the caller may see it with at least `needed`; a project they cannot see is 404,
   * one they see without the role is 403.
   */
  async access(caller: Caller, projectId: string, needed: Role = 'viewer'): Promise<ProjectRow> {
    const key = `${caller.id} ${caller.role} ${projectId}`;
    let hit = this.granted.get(key);
    if (
      !hit ||
      hit.until <= Date.now() ||
      hit.projectsGen !== this.projects.generation ||
      hit.usersGen !== this.users.generation
    ) {
      // The generations before the reads: a change committed while they run makes the entry stale.
      const projectsGen = this.projects.generation;
      const usersGen = this.users.generation;
      const project = await this.projects.byId(projectId);
      const role = project ? await this.roleOn(caller, projectId) : null;
      if (!project || role === null) {
        this.granted.delete(key);
        throw notFound('Project');
      }
      if (this.granted.size >= 10_000) this.granted.clear();
      hit = { project, role, projectsGen, usersGen, until: Date.now() + ACCESS_CACHE_MS };
      this.granted.set(key, hit);
    }
    if (!atLeast(hit.role, needed)) throw forbidden(`This needs the ${needed} role on the project`);
    return hit.project;
  }

  async create(caller: Caller, input: { name: string; type?: string }) {
    rejectUnstorable(['body', 'name'], input.name);
    if (await this.projects.byName(input.name))
      throw conflict(`A project named '${input.name}' already exists`);
    const now = nowUs();
    const project: ProjectRow = {
      id: newId(),
      name: input.name,
      type: input.type ?? 'gen_ai',
      created_by: caller.id,
      created_at: now,
      updated_at: now,
      retention_days: null,
    };
    try {
      await this.projects.insert(project, {
        id: newId(),
        project_id: project.id,
        user_id: caller.id,
        group_id: null,
        role: 'owner',
        created_at: now,
      });
    } catch (err) {
      if (await this.projects.byName(input.name))
        throw conflict(`A project named '${input.name}' already exists`);
      throw err;
    }
    return describeProject(project);
  }

  async list(caller: Caller, opts: { name?: string; type?: string }) {
    // No stored name or type holds NUL (see rejectUnstorable), and PostgreSQL cannot compare with one.
    if (opts.name?.includes('\u0000') || opts.type?.includes('\u0000')) return [];
    const groupIds = caller.role === 'admin' ? [] : await this.users.groupIdsOf(caller.id);
    const rows = await this.projects.list({
      userId: caller.id,
      groupIds,
      all: caller.role === 'admin',
      ...opts,
    });
    return rows.map(describeProject);
  }

  async get(caller: Caller, id: string) {
    return describeProject(await this.access(caller, id));
  }

  /** The caller's role on a project they may see (404 otherwise); an admin's is owner. */
  async callerRole(caller: Caller, id: string): Promise<{ project_id: string; role: Role }> {
    await this.access(caller, id);
    const role = await this.roleOn(caller, id);
    // Unshared between the two reads: as if it had been before.
    if (role === null) throw notFound('Project');
    return { project_id: id, role };
  }

  /** PATCH: `retention_days` (editors: a shorter period deletes records); `undefined` leaves it. */
  async update(caller: Caller, id: string, patch: { retention_days?: number | null }) {
    await this.access(caller, id, 'editor');
    if (patch.retention_days !== undefined) await this.projects.setRetention(id, patch.retention_days);
    return this.get(caller, id);
  }

  async delete(caller: Caller, id: string) {
    await this.access(caller, id, 'owner');
    await this.projects.delete(id);
  }

  /** Shares a project with a user or group (owners only). */
  async share(
    caller: Caller,
    projectId: string,
    target: { user_id?: string; group_id?: string },
    role: Role,
  ) {
    await this.access(caller, projectId, 'owner');
    if (target.user_id && !(await this.users.byId(target.user_id))) throw notFound('User');
    if (target.group_id && !(await this.users.groupById(target.group_id))) throw notFound('Group');
    await this.projects.addCollaborator({
      id: newId(),
      project_id: projectId,
      user_id: target.user_id ?? null,
      group_id: target.group_id ?? null,
      role,
      created_at: nowUs(),
    });
    return {
      project_id: projectId,
      user_id: target.user_id ?? null,
      group_id: target.group_id ?? null,
      role,
    };
  }

  async listUsers(caller: Caller, projectId: string) {
    await this.access(caller, projectId);
    const role = await this.roleOn(caller, projectId);
    return (await this.projects.userCollaborators(projectId)).map((c) => describeUserCollaborator(c, role));
  }

  async listGroups(caller: Caller, projectId: string) {
    await this.access(caller, projectId);
    const role = await this.roleOn(caller, projectId);
    return (await this.projects.groupCollaborators(projectId)).map((c) => describeGroupCollaborator(c, role));
  }

  /** PATCH a collaborator's role (owners); the last owner cannot be demoted (422 at body.role). */
  async setUserRole(caller: Caller, projectId: string, userId: string, role: Role) {
    await this.change(caller, projectId, { user_id: userId }, role, ['body', 'role']);
    const [row] = await this.projects.userCollaborators(projectId, userId);
    if (!row) throw notFound('User collaborator');
    return describeUserCollaborator(row, await this.roleOn(caller, projectId));
  }

  async setGroupRole(caller: Caller, projectId: string, groupId: string, role: Role) {
    await this.change(caller, projectId, { group_id: groupId }, role, ['body', 'role']);
    const [row] = await this.projects.groupCollaborators(projectId, groupId);
    if (!row) throw notFound('Group collaborator');
    return describeGroupCollaborator(row, await this.roleOn(caller, projectId));
  }

  async removeUser(caller: Caller, projectId: string, userId: string) {
    await this.change(caller, projectId, { user_id: userId }, null, ['path', 'user_id']);
  }

  async removeGroup(caller: Caller, projectId: string, groupId: string) {
    await this.change(caller, projectId, { group_id: groupId }, null, ['path', 'group_id']);
  }

  private async change(
    caller: Caller,
    projectId: string,
    who: Collaborator,
    role: Role | null,
    lastOwnerLoc: (string | number)[],
  ) {
    await this.access(caller, projectId, 'owner');
    const outcome = await this.projects.changeCollaborator(projectId, who, role);
    if (outcome === 'not_a_collaborator')
      throw notFound('user_id' in who ? 'User collaborator' : 'Group collaborator');
    if (outcome === 'last_owner') throw valueError(lastOwnerLoc, 'A project must keep at least one owner');
  }
}
