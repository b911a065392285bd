import { type Kysely, sql } from 'kysely';
import type { Dialect } from './db.ts';
import type { DB, IntegrationCollaboratorsTable, IntegrationsTable } from './tables.ts';

/** An integration as the service sees it: everything but the sealed token. */
export type IntegrationRow = Omit<IntegrationsTable, 'token_ciphertext' | 'key_id'>;
export type NewIntegrationRow = IntegrationsTable;
export type CollaboratorRow = IntegrationCollaboratorsTable;

export interface UserCollaboratorRow extends CollaboratorRow {
  user_id: string;
  email: string;
  first_name: string;
  last_name: string;
}

export interface GroupCollaboratorRow extends CollaboratorRow {
  group_id: string;
  group_name: string;
}

export interface SealedToken {
  id: string;
  token_ciphertext: string;
  key_id: string;
}

const PUBLIC_COLUMNS = [
  'integrations.id',
  'integrations.name',
  'integrations.created_by',
  'integrations.holder_id',
  'integrations.config',
  'integrations.is_disabled',
  'integrations.created_at',
  'integrations.updated_at',
] as const;

/**
 * Integrations and their collaborators. Reads never return the sealed token unless asked for it by
 * name (`sealedToken`, `allSealed`), so it cannot reach a response by accident.
 */
export class IntegrationsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  /**
   * Runs `fn` in one transaction with a repository bound to it. With `lockId`, the integration row is
   * locked first (PostgreSQL; SQLite transactions are already serial), so that concurrent sharing
   * changes cannot together remove the last owner.
   */
  async transaction<T>(lockId: string | null, fn: (repo: IntegrationsRepo) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (tx) => {
      if (lockId && this.dialect === 'postgres') {
        await tx.selectFrom('integrations').select('id').where('id', '=', lockId).forUpdate().execute();
      }
      return fn(new IntegrationsRepo(tx, this.dialect));
    });
  }

  async insert(row: NewIntegrationRow, owner: CollaboratorRow): Promise<void> {
    await this.db.insertInto('integrations').values(row).execute();
    await this.db.insertInto('integration_collaborators').values(owner).execute();
  }

  byId(id: string): Promise<IntegrationRow | undefined> {
    return this.db.selectFrom('integrations').select(PUBLIC_COLUMNS).where('id', '=', id).executeTakeFirst();
  }

  byHolder(userId: string, name: string): Promise<IntegrationRow | undefined> {
    return this.db
      .selectFrom('integrations')
      .select(PUBLIC_COLUMNS)
      .where('holder_id', '=', userId)
      .where('name', '=', name)
      .executeTakeFirst();
  }

  async updateSettings(
    id: string,
    set: { config: string; token_ciphertext: string; key_id: string; updated_at: number },
  ): Promise<void> {
    await this.db.updateTable('integrations').set(set).where('id', '=', id).execute();
  }

  /** The holder gave up (lost) the right to change it: their next PUT creates a new one. */
  async release(id: string): Promise<void> {
    await this.db.updateTable('integrations').set({ holder_id: null }).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('integrations').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Integrations shared with the user directly or through one of their groups, newest first. */
  visibleTo(userId: string, groupIds: string[]): Promise<IntegrationRow[]> {
    return this.db
      .selectFrom('integrations')
      .select(PUBLIC_COLUMNS)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('integration_collaborators as ic')
            .select('ic.id')
            .whereRef('ic.integration_id', '=', 'integrations.id')
            .where((w) =>
              w.or([
                w('ic.user_id', '=', userId),
                ...(groupIds.length ? [w('ic.group_id', 'in', groupIds)] : []),
              ]),
            ),
        ),
      )
      .orderBy('integrations.created_at', 'desc')
      .orderBy('integrations.id', 'desc')
      .execute();
  }

  /** Roles of the user on each of the integrations, directly or through groups. */
  async rolesOn(
    integrationIds: string[],
    userId: string,
    groupIds: string[],
  ): Promise<{ integration_id: string; role: string }[]> {
    if (integrationIds.length === 0) return [];
    return this.db
      .selectFrom('integration_collaborators')
      .select(['integration_id', 'role'])
      .where('integration_id', 'in', integrationIds)
      .where((w) =>
        w.or([w('user_id', '=', userId), ...(groupIds.length ? [w('group_id', 'in', groupIds)] : [])]),
      )
      .execute();
  }

  userCollaborators(integrationId: string, userId?: string): Promise<UserCollaboratorRow[]> {
    let q = this.db
      .selectFrom('integration_collaborators as ic')
      .innerJoin('users as u', 'u.id', 'ic.user_id')
      .selectAll('ic')
      .select(['u.email', 'u.first_name', 'u.last_name'])
      .where('ic.integration_id', '=', integrationId);
    if (userId !== undefined) q = q.where('ic.user_id', '=', userId);
    return q.orderBy('ic.created_at').orderBy('ic.id').execute() as Promise<UserCollaboratorRow[]>;
  }

  groupCollaborators(integrationId: string, groupId?: string): Promise<GroupCollaboratorRow[]> {
    let q = this.db
      .selectFrom('integration_collaborators as ic')
      .innerJoin('groups as g', 'g.id', 'ic.group_id')
      .selectAll('ic')
      .select('g.name as group_name')
      .where('ic.integration_id', '=', integrationId);
    if (groupId !== undefined) q = q.where('ic.group_id', '=', groupId);
    return q.orderBy('ic.created_at').orderBy('ic.id').execute() as Promise<GroupCollaboratorRow[]>;
  }

  /** Adds the collaborator, or sets the role of the one already there. */
  async upsertCollaborator(row: CollaboratorRow): Promise<void> {
    const target = row.user_id !== null ? 'user_id' : 'group_id';
    await this.db
      .insertInto('integration_collaborators')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['integration_id', target]).doUpdateSet({ role: row.role, updated_at: row.updated_at }),
      )
      .execute();
  }

  async setRole(
    integrationId: string,
    who: { user_id: string } | { group_id: string },
    role: string,
    at: number,
  ): Promise<boolean> {
    let q = this.db
      .updateTable('integration_collaborators')
      .set({ role, updated_at: at })
      .where('integration_id', '=', integrationId);
    q = 'user_id' in who ? q.where('user_id', '=', who.user_id) : q.where('group_id', '=', who.group_id);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async removeCollaborator(
    integrationId: string,
    who: { user_id: string } | { group_id: string },
  ): Promise<boolean> {
    let q = this.db.deleteFrom('integration_collaborators').where('integration_id', '=', integrationId);
    q = 'user_id' in who ? q.where('user_id', '=', who.user_id) : q.where('group_id', '=', who.group_id);
    const r = await q.executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /**
   * How many distinct users hold the owner role: directly, or as members of a group shared as owner.
   * A group without members owns nothing.
   */
  async ownerCount(integrationId: string): Promise<number> {
    const row = await sql<{ n: number | string }>`
      select count(distinct owner_id) as n from (
        select ic.user_id as owner_id from integration_collaborators ic
          where ic.integration_id = ${integrationId} and ic.role = 'owner' and ic.user_id is not null
        union
        select gm.user_id as owner_id from integration_collaborators ic
          join group_members gm on gm.group_id = ic.group_id
          where ic.integration_id = ${integrationId} and ic.role = 'owner'
      ) owners`.execute(this.db);
    return Number(row.rows[0]?.n ?? 0);
  }

  selectionsOf(userId: string): Promise<{ name: string; integration_id: string }[]> {
    return this.db
      .selectFrom('integration_selections')
      .select(['name', 'integration_id'])
      .where('user_id', '=', userId)
      .execute();
  }

  async select(userId: string, name: string, integrationId: string, at: number): Promise<void> {
    await this.db
      .insertInto('integration_selections')
      .values({ user_id: userId, name, integration_id: integrationId, updated_at: at })
      .onConflict((oc) =>
        oc.columns(['user_id', 'name']).doUpdateSet({ integration_id: integrationId, updated_at: at }),
      )
      .execute();
  }

  sealedToken(id: string): Promise<SealedToken | undefined> {
    return this.db
      .selectFrom('integrations')
      .select(['id', 'token_ciphertext', 'key_id'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  allSealed(): Promise<SealedToken[]> {
    return this.db
      .selectFrom('integrations')
      .select(['id', 'token_ciphertext', 'key_id'])
      .orderBy('id')
      .execute();
  }

  async reseal(id: string, tokenCiphertext: string, keyId: string): Promise<void> {
    await this.db
      .updateTable('integrations')
      .set({ token_ciphertext: tokenCiphertext, key_id: keyId })
      .where('id', '=', id)
      .execute();
  }
}
