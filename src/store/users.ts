import type { Kysely } from 'kysely';
import type { ApiKeysTable, DB, GroupsTable, UsersTable } from './tables.ts';

export type UserRow = UsersTable;
export type ApiKeyRow = ApiKeysTable;
export type GroupRow = GroupsTable;

/** Users, their API keys, groups and group membership. */
export class UsersRepo {
  /**
   * Bumped after every change here that can take access away (key revoked, group membership
   * changed): caches of credentials and project access (services/auth.ts, projects.ts) made before
   * it are stale.
   */
  generation = 0;

  constructor(private readonly db: Kysely<DB>) {}

  count(): Promise<number> {
    return this.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  }

  async insert(user: UserRow): Promise<void> {
    await this.db.insertInto('users').values(user).execute();
  }

  byId(id: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  byEmail(email: string): Promise<UserRow | undefined> {
    // No stored email holds NUL, and PostgreSQL cannot compare text with one (a login would 500).
    if (email.includes('\u0000')) return Promise.resolve(undefined);
    return this.db
      .selectFrom('users')
      .selectAll()
      .where('email', '=', email.toLowerCase())
      .executeTakeFirst();
  }

  byIds(ids: string[]): Promise<UserRow[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.db.selectFrom('users').selectAll().where('id', 'in', ids).execute();
  }

  list(): Promise<UserRow[]> {
    return this.db.selectFrom('users').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  /**
   * Sets a user's system role; false when there is no such user. A demotion that would leave no
   * admin changes nothing and answers 'last_admin' (one statement, so the check and the change see
   * the same rows).
   */
  async setRole(id: string, role: string, at: number): Promise<boolean | 'last_admin'> {
    try {
      let q = this.db.updateTable('users').set({ role, updated_at: at }).where('id', '=', id);
      if (role !== 'admin')
        q = q.where((w) =>
          w.exists(
            w
              .selectFrom('users as other')
              .select('other.id')
              .where('other.role', '=', 'admin')
              .where('other.id', '<>', id),
          ),
        );
      const r = await q.executeTakeFirst();
      if (Number(r.numUpdatedRows) > 0) return true;
      return (await this.byId(id)) ? 'last_admin' : false;
    } finally {
      this.generation++;
    }
  }

  async insertKey(key: ApiKeyRow): Promise<void> {
    await this.db.insertInto('api_keys').values(key).execute();
  }

  keyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst();
  }

  keysOf(userId: string): Promise<ApiKeyRow[]> {
    return this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .execute();
  }

  async revokeKey(userId: string, keyId: string, at: number): Promise<boolean> {
    try {
      const r = await this.db
        .updateTable('api_keys')
        .set({ revoked_at: at })
        .where('id', '=', keyId)
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    } finally {
      this.generation++;
    }
  }

  async touchKey(keyId: string, at: number): Promise<void> {
    await this.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
  }

  async insertGroup(group: GroupRow): Promise<void> {
    await this.db.insertInto('groups').values(group).execute();
  }

  groupById(id: string): Promise<GroupRow | undefined> {
    return this.db.selectFrom('groups').selectAll().where('id', '=', id).executeTakeFirst();
  }

  groupByName(name: string): Promise<GroupRow | undefined> {
    if (name.includes('\u0000')) return Promise.resolve(undefined);
    return this.db.selectFrom('groups').selectAll().where('name', '=', name).executeTakeFirst();
  }

  listGroups(): Promise<GroupRow[]> {
    return this.db.selectFrom('groups').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  async addMembers(groupId: string, userIds: string[], at: number): Promise<void> {
    if (userIds.length === 0) return;
    try {
      await this.db
        .insertInto('group_members')
        .values(userIds.map((user_id) => ({ group_id: groupId, user_id, created_at: at })))
        .onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing())
        .execute();
    } finally {
      this.generation++;
    }
  }

  async removeMember(groupId: string, userId: string): Promise<boolean> {
    try {
      const r = await this.db
        .deleteFrom('group_members')
        .where('group_id', '=', groupId)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    } finally {
      this.generation++;
    }
  }

  members(groupId: string): Promise<UserRow[]> {
    return this.db
      .selectFrom('group_members')
      .innerJoin('users', 'users.id', 'group_members.user_id')
      .selectAll('users')
      .where('group_members.group_id', '=', groupId)
      .orderBy('users.email')
      .execute();
  }

  /** Ids of the groups a user belongs to (for role checks through group sharing). */
  groupIdsOf(userId: string): Promise<string[]> {
    return this.db
      .selectFrom('group_members')
      .select('group_id')
      .where('user_id', '=', userId)
      .execute()
      .then((rows) => rows.map((r) => r.group_id));
  }
}
