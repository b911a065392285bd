import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';
import { conflict, forbidden, notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type { GroupRow, UserRow, UsersRepo } from '../store/users.ts';
import type { AuthService, Caller } from './auth.ts';
import { rejectUnstorable } from '../domain/text.ts';

export function describeUser(u: UserRow) {
  return {
    id: u.id,
    email: u.email,
    first_name: u.first_name,
    last_name: u.last_name,
    role: u.role,
    created_at: toIso(u.created_at),
  };
}

export function describeGroup(g: GroupRow) {
  return { id: g.id, name: g.name, description: g.description, created_at: toIso(g.created_at) };
}

function requireAdmin(caller: Caller): void {
  if (caller.role !== 'admin') throw forbidden('Only an admin may do this');
}

/** Users, groups and the first-run admin. */
export class UsersService {
  constructor(
    private readonly users: UsersRepo,
    private readonly auth: AuthService,
    private readonly config: Config,
  ) {}

  /**
   * On an empty store, creates the first admin and an API key for it, written once to
   * `<dataDir>/initial-admin-key` (mode 0600). Returns the key, or null when users already exist.
   */
  async bootstrap(): Promise<{ email: string; apiKey: string; file: string } | null> {
    if ((await this.users.count()) > 0) return null;
    const now = nowUs();
    const user: UserRow = {
      id: newId(),
      email: this.config.adminEmail.toLowerCase(),
      password_hash: this.config.adminPassword
        ? await this.auth.hashPassword(this.config.adminPassword)
        : null,
      first_name: 'Admin',
      last_name: '',
      role: 'admin',
      created_at: now,
      updated_at: now,
    };
    try {
      await this.users.insert(user);
    } catch {
      return null; // another process bootstrapped the same store first
    }
    const key = await this.auth.createApiKey(user.id, 'initial admin key', null);
    const file = path.join(this.config.dataDir, 'initial-admin-key');
    fs.mkdirSync(this.config.dataDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, `${key.api_key}\n`, { mode: 0o600 });
    return { email: user.email, apiKey: key.api_key, file };
  }

  async create(
    caller: Caller | null,
    input: {
      email: string;
      password?: string | null;
      first_name?: string;
      last_name?: string;
      role?: 'admin' | 'user';
    },
  ) {
    if (caller) requireAdmin(caller);
    for (const field of ['email', 'first_name', 'last_name'] as const)
      rejectUnstorable(['body', field], input[field]);
    const taken = () => conflict('A user with this email already exists');
    if (await this.users.byEmail(input.email)) throw taken();
    const now = nowUs();
    const user: UserRow = {
      id: newId(),
      email: input.email.toLowerCase(),
      password_hash: input.password ? await this.auth.hashPassword(input.password) : null,
      first_name: input.first_name ?? '',
      last_name: input.last_name ?? '',
      role: input.role ?? 'user',
      created_at: now,
      updated_at: now,
    };
    try {
      await this.users.insert(user);
    } catch (err) {
      // Two requests for one email at once: the loser answers 409, as it would a moment later.
      if (await this.users.byEmail(input.email)) throw taken();
      throw err;
    }
    return describeUser(user);
  }

  /** `caller` null: the command line (an operator of the store). */
  async list(caller: Caller | null) {
    if (caller) requireAdmin(caller);
    return (await this.users.list()).map(describeUser);
  }

  async get(caller: Caller, id: string) {
    if (caller.role !== 'admin' && caller.id !== id) throw notFound('User');
    const u = await this.users.byId(id);
    if (!u) throw notFound('User');
    return describeUser(u);
  }

  /** PATCH a user's system role (admins); the last admin cannot be demoted (422 at body.role). */
  async setRole(caller: Caller, id: string, role: 'admin' | 'user') {
    requireAdmin(caller);
    const done = await this.users.setRole(id, role, nowUs());
    if (done === false) throw notFound('User');
    if (done === 'last_admin') throw valueError(['body', 'role'], 'Spanbase must keep at least one admin');
    return this.get(caller, id);
  }

  async createGroup(caller: Caller, input: { name: string; description?: string | null }) {
    requireAdmin(caller);
    rejectUnstorable(['body', 'name'], input.name);
    rejectUnstorable(['body', 'description'], input.description);
    const taken = () => conflict('A group with this name already exists');
    if (await this.users.groupByName(input.name)) throw taken();
    const g: GroupRow = {
      id: newId(),
      name: input.name,
      description: input.description ?? null,
      created_by: caller.id,
      created_at: nowUs(),
    };
    try {
      await this.users.insertGroup(g);
    } catch (err) {
      if (await this.users.groupByName(input.name)) throw taken();
      throw err;
    }
    return describeGroup(g);
  }

  async listGroups(_caller: Caller) {
    return (await this.users.listGroups()).map(describeGroup);
  }

  async addMembers(caller: Caller, groupId: string, userIds: string[]) {
    requireAdmin(caller);
    if (!(await this.users.groupById(groupId))) throw notFound('Group');
    const found = await this.users.byIds(userIds);
    if (found.length !== new Set(userIds).size) throw notFound('User');
    await this.users.addMembers(groupId, [...new Set(userIds)], nowUs());
    return (await this.users.members(groupId)).map(describeUser);
  }

  async members(_caller: Caller, groupId: string) {
    if (!(await this.users.groupById(groupId))) throw notFound('Group');
    return (await this.users.members(groupId)).map(describeUser);
  }

  async removeMember(caller: Caller, groupId: string, userId: string) {
    requireAdmin(caller);
    if (!(await this.users.removeMember(groupId, userId))) throw notFound('Group member');
  }
}
