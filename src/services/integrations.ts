import { type Loc, forbidden, notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { type Role, atLeast, isRole, permissionsFor, strongest } from '../domain/roles.ts';
import { SecretBox } from '../domain/secretbox.ts';
import { nowUs, toIso } from '../domain/time.ts';
import { type KindBody, MODEL_KINDS, type ModelKind } from '../schemas/integrations.ts';
import type { IntegrationRow, IntegrationsRepo } from '../store/integrations.ts';
import type { UsersRepo } from '../store/users.ts';
import type { Caller } from './auth.ts';
import { describeGroupCollaborator, describeUserCollaborator } from './collaborators.ts';
import { settingsOf, settingsView } from './integration-kinds.ts';
import type { Keyring } from './keyring.ts';

/** The associated data a token is sealed with: a sealed token only opens on its own integration. */
export const tokenAad = (integrationId: string) => `spanbase:integration:${integrationId}:token`;

/** The key provider tokens are sealed with, derived from the master secret. */
export function integrationsBox(keyring: Keyring): SecretBox {
  return new SecretBox(keyring.derive('integrations'));
}

const LAST_OWNER = 'An integration must keep at least one owner';

type Who = { user_id: string } | { group_id: string };

/**
 * Model-provider integrations: the caller's gateway settings with the token sealed at rest, and who
 * else may see or change them. Roles come from sharing (a user's own and their groups'); admins act
 * as owners of every integration, as they do on projects (the token itself is never shown to anyone).
 * The list answers only the integrations a caller owns or is shared on, admins included.
 */
export class IntegrationsService {
  private readonly box: SecretBox;
  /** Bumped by every change of settings or existence made here, so caches of them drop at once. */
  generation = 0;

  constructor(
    private readonly repo: IntegrationsRepo,
    private readonly users: UsersRepo,
    keyring: Keyring,
  ) {
    this.box = integrationsBox(keyring);
  }

  /**
   * Whether this is the caller's integration of its kind for features to use: the one they selected,
   * or, without a selection of that kind, the one they hold (their own PUT's).
   */
  private isSelected(row: IntegrationRow, caller: Caller, selections: Map<string, string>): boolean {
    const chosen = selections.get(row.name);
    return chosen === undefined ? row.holder_id === caller.id : chosen === row.id;
  }

  private describe(row: IntegrationRow, role: Role | null, caller: Caller, selections: Map<string, string>) {
    return {
      id: row.id,
      name: row.name,
      provider: row.name,
      created_at: toIso(row.created_at),
      updated_at: toIso(row.updated_at),
      created_by: row.created_by,
      permissions: permissionsFor(role),
      is_selected: this.isSelected(row, caller, selections),
      is_disabled: Boolean(row.is_disabled),
    };
  }

  private async roleVia(
    repo: IntegrationsRepo,
    caller: Caller,
    id: string,
    groupIds: string[],
  ): Promise<Role | null> {
    if (caller.role === 'admin') return 'owner';
    const roles = await repo.rolesOn([id], caller.id, groupIds);
    return strongest(roles.map((r) => r.role).filter(isRole));
  }

  /** The caller's role on an integration (through their own sharing or a group's), or null. */
  async roleOn(caller: Caller, id: string): Promise<Role | null> {
    return this.roleVia(this.repo, caller, id, await this.users.groupIdsOf(caller.id));
  }

  /** The integration if the caller holds at least `needed` on it: 404 when they cannot see it, else 403. */
  private async accessVia(
    repo: IntegrationsRepo,
    caller: Caller,
    id: string,
    needed: Role,
    groupIds: string[],
  ): Promise<{ row: IntegrationRow; role: Role }> {
    const row = await repo.byId(id);
    const role = row ? await this.roleVia(repo, caller, id, groupIds) : null;
    if (!row || role === null) throw notFound('Integration');
    if (!atLeast(role, needed)) throw forbidden(`This needs the ${needed} role on the integration`);
    return { row, role };
  }

  private async access(caller: Caller, id: string, needed: Role = 'viewer') {
    return this.accessVia(this.repo, caller, id, needed, await this.users.groupIdsOf(caller.id));
  }

  /** Whether the caller may see the integration (Signals checks its `integration_id` with this). */
  async canSee(caller: Caller, id: string): Promise<boolean> {
    return (await this.repo.byId(id)) !== undefined && (await this.roleOn(caller, id)) !== null;
  }

  /**
   * Creates the caller's integration of a kind, or updates it. "Theirs" is the one they created and
   * may still change (editor or owner); if sharing has taken that right away, it is left to its
   * owners and a new one is created for the caller.
   */
  async put(caller: Caller, kind: ModelKind, input: KindBody) {
    const config = JSON.stringify(settingsOf(kind, input));
    this.generation++;
    for (let attempt = 0; ; attempt++) {
      const now = nowUs();
      const held = await this.repo.byHolder(caller.id, kind);
      if (held) {
        const role = await this.roleOn(caller, held.id);
        if (atLeast(role, 'editor')) {
          await this.repo.updateSettings(held.id, {
            config,
            token_ciphertext: this.box.seal(input.token, tokenAad(held.id)),
            key_id: this.box.keyId,
            updated_at: now,
          });
          return this.describe(
            { ...held, config, updated_at: now },
            role,
            caller,
            await this.selections(caller),
          );
        }
        await this.repo.release(held.id);
      }
      const id = newId();
      const row = {
        id,
        name: kind,
        created_by: caller.id,
        holder_id: caller.id,
        config,
        token_ciphertext: this.box.seal(input.token, tokenAad(id)),
        key_id: this.box.keyId,
        is_disabled: 0,
        created_at: now,
        updated_at: now,
      };
      try {
        await this.repo.transaction(null, (r) =>
          r.insert(row, {
            id: newId(),
            integration_id: id,
            user_id: caller.id,
            group_id: null,
            role: 'owner',
            created_at: now,
            updated_at: now,
          }),
        );
      } catch (err) {
        // A concurrent first PUT by the same user won the (holder, name) slot: update that one.
        if (attempt === 0 && (await this.repo.byHolder(caller.id, kind))) continue;
        throw err;
      }
      const { token_ciphertext: _t, key_id: _k, ...visible } = row;
      return this.describe(visible, 'owner', caller, await this.selections(caller));
    }
  }

  async list(caller: Caller) {
    const groupIds = await this.users.groupIdsOf(caller.id);
    const rows = await this.repo.visibleTo(caller.id, groupIds);
    const roles = await this.repo.rolesOn(
      rows.map((r) => r.id),
      caller.id,
      groupIds,
    );
    const selections = await this.selections(caller);
    return rows.map((row) => {
      const mine = roles.filter((r) => r.integration_id === row.id).map((r) => r.role);
      return this.describe(
        row,
        caller.role === 'admin' ? 'owner' : strongest(mine.filter(isRole)),
        caller,
        selections,
      );
    });
  }

  private async selections(caller: Caller): Promise<Map<string, string>> {
    return new Map((await this.repo.selectionsOf(caller.id)).map((s) => [s.name, s.integration_id]));
  }

  async get(caller: Caller, id: string) {
    const { row, role } = await this.access(caller, id);
    return this.describe(row, role, caller, await this.selections(caller));
  }

  async delete(caller: Caller, id: string) {
    await this.access(caller, id, 'owner');
    this.generation++;
    if (!(await this.repo.delete(id))) throw notFound('Integration');
  }

  /**
   * The id of the caller's integration of a kind (the one they selected if they may still see it,
   * else the one they hold), or null.
   */
  async idOfKind(caller: Caller, kind: string): Promise<string | null> {
    const chosen = (await this.selections(caller)).get(kind);
    if (chosen && (await this.roleOn(caller, chosen)) !== null) return chosen;
    return (await this.repo.byHolder(caller.id, kind))?.id ?? null;
  }

  /**
   * The integration features use for the caller when none is named: one they selected and may still
   * see, else the first they may see; null when they have none.
   */
  async defaultFor(caller: Caller): Promise<string | null> {
    for (const id of (await this.selections(caller)).values())
      if ((await this.roleOn(caller, id)) !== null) return id;
    const rows = await this.repo.visibleTo(caller.id, await this.users.groupIdsOf(caller.id));
    return rows[0]?.id ?? null;
  }

  private async requireKind(caller: Caller, kind: string): Promise<string> {
    const id = await this.idOfKind(caller, kind);
    if (!id) throw notFound(`You have no ${kind} integration; an integration`);
    return id;
  }

  /** GET /v2/integrations/{id or kind}: an id answers the integration, a kind the settings of yours. */
  async getByRef(caller: Caller, ref: string) {
    if (!isKind(ref)) return this.get(caller, ref);
    const { row } = await this.access(caller, await this.requireKind(caller, ref));
    return settingsView(row.id, row.name, configOf(row));
  }

  async deleteByRef(caller: Caller, ref: string) {
    await this.delete(caller, isKind(ref) ? await this.requireKind(caller, ref) : ref);
  }

  /** The integration an id or kind names, if the caller may see it (for status checks and model lists). */
  async resolve(caller: Caller, ref: string): Promise<IntegrationRow> {
    return (await this.access(caller, isKind(ref) ? await this.requireKind(caller, ref) : ref)).row;
  }

  /** Makes this integration the caller's of its kind for features to use by default. */
  async select(caller: Caller, id: string) {
    const { row, role } = await this.access(caller, id);
    await this.repo.select(caller.id, row.name, id, nowUs());
    return this.describe(row, role, caller, await this.selections(caller));
  }

  async listUsers(caller: Caller, id: string) {
    const { role } = await this.access(caller, id);
    return (await this.repo.userCollaborators(id)).map((c) => describeUserCollaborator(c, role));
  }

  async listGroups(caller: Caller, id: string) {
    const { role } = await this.access(caller, id);
    return (await this.repo.groupCollaborators(id)).map((c) => describeGroupCollaborator(c, role));
  }

  /**
   * Runs a sharing change for an owner in one transaction, the integration locked; the change is
   * undone (422) when no one would be left holding the owner role.
   */
  private async changeSharing<T>(
    caller: Caller,
    id: string,
    lastOwnerLoc: (result: T) => Loc,
    change: (repo: IntegrationsRepo, now: number) => Promise<T>,
  ): Promise<T> {
    // Read outside the transaction: on SQLite the transaction holds the only connection.
    const groupIds = await this.users.groupIdsOf(caller.id);
    return this.repo.transaction(id, async (repo) => {
      await this.accessVia(repo, caller, id, 'owner', groupIds);
      const result = await change(repo, nowUs());
      if ((await repo.ownerCount(id)) === 0) {
        const loc = lastOwnerLoc(result);
        throw valueError(loc, LAST_OWNER);
      }
      return result;
    });
  }

  async shareWithUsers(caller: Caller, id: string, entries: { user_id: string; role: Role }[]) {
    await this.access(caller, id, 'owner');
    const ids = [...new Set(entries.map((e) => e.user_id))];
    if ((await this.users.byIds(ids)).length !== ids.length) throw notFound('User');
    const lastIndex = new Map(entries.map((e, i) => [e.user_id, i]));
    await this.changeSharing(
      caller,
      id,
      () => demotionLoc(entries),
      async (repo, now) => {
        for (const [userId, i] of lastIndex) {
          await repo.upsertCollaborator({
            id: newId(),
            integration_id: id,
            user_id: userId,
            group_id: null,
            role: entries[i].role,
            created_at: now,
            updated_at: now,
          });
        }
      },
    );
    const role = await this.roleOn(caller, id);
    const rows = await this.repo.userCollaborators(id);
    const byUser = new Map(rows.map((r) => [r.user_id, r]));
    return ids.map((u) => describeUserCollaborator(byUser.get(u)!, role));
  }

  async shareWithGroups(caller: Caller, id: string, entries: { group_id: string; role: Role }[]) {
    await this.access(caller, id, 'owner');
    const ids = [...new Set(entries.map((e) => e.group_id))];
    for (const g of ids) if (!(await this.users.groupById(g))) throw notFound('Group');
    const lastIndex = new Map(entries.map((e, i) => [e.group_id, i]));
    await this.changeSharing(
      caller,
      id,
      () => demotionLoc(entries),
      async (repo, now) => {
        for (const [groupId, i] of lastIndex) {
          await repo.upsertCollaborator({
            id: newId(),
            integration_id: id,
            user_id: null,
            group_id: groupId,
            role: entries[i].role,
            created_at: now,
            updated_at: now,
          });
        }
      },
    );
    const role = await this.roleOn(caller, id);
    const rows = await this.repo.groupCollaborators(id);
    const byGroup = new Map(rows.map((r) => [r.group_id, r]));
    return ids.map((g) => describeGroupCollaborator(byGroup.get(g)!, role));
  }

  private async setRole(caller: Caller, id: string, who: Who, role: Role) {
    await this.changeSharing(
      caller,
      id,
      () => ['body', 'role'],
      async (repo, now) => {
        if (!(await repo.setRole(id, who, role, now))) throw notFound(collaboratorWhat(who));
      },
    );
  }

  async setUserRole(caller: Caller, id: string, userId: string, role: Role) {
    await this.setRole(caller, id, { user_id: userId }, role);
    const [row] = await this.repo.userCollaborators(id, userId);
    if (!row) throw notFound('User collaborator');
    return describeUserCollaborator(row, await this.roleOn(caller, id));
  }

  async setGroupRole(caller: Caller, id: string, groupId: string, role: Role) {
    await this.setRole(caller, id, { group_id: groupId }, role);
    const [row] = await this.repo.groupCollaborators(id, groupId);
    if (!row) throw notFound('Group collaborator');
    return describeGroupCollaborator(row, await this.roleOn(caller, id));
  }

  async removeUser(caller: Caller, id: string, userId: string) {
    await this.remove(caller, id, { user_id: userId }, ['path', 'user_id']);
  }

  async removeGroup(caller: Caller, id: string, groupId: string) {
    await this.remove(caller, id, { group_id: groupId }, ['path', 'group_id']);
  }

  private async remove(caller: Caller, id: string, who: Who, loc: Loc) {
    await this.changeSharing(
      caller,
      id,
      () => loc,
      async (repo) => {
        if (!(await repo.removeCollaborator(id, who))) throw notFound(collaboratorWhat(who));
      },
    );
  }

  /**
   * An integration's kind, settings and token in clear, for the model-call module only (never reachable
   * over HTTP); undefined when there is no such integration.
   */
  async providerSettings(id: string) {
    const row = await this.repo.byId(id);
    if (!row) return undefined;
    return {
      id: row.id,
      name: row.name,
      config: configOf(row),
      isDisabled: Boolean(row.is_disabled),
      updatedAt: row.updated_at,
      token: await this.tokenFor(id),
    };
  }

  /**
   * The provider token in clear, for code inside the service that calls the provider. Never reachable
   * over HTTP. Throws when the token was sealed under another key (SPANBASE_SECRET_KEY changed
   * without `spanbase secrets rotate`).
   */
  async tokenFor(id: string): Promise<string> {
    const sealed = await this.repo.sealedToken(id);
    if (!sealed) throw notFound('Integration');
    if (sealed.key_id !== this.box.keyId) {
      throw new Error(
        `The token of integration ${id} was sealed under another secret key; see "Rotating the secret key" in the README`,
      );
    }
    return this.box.open(sealed.token_ciphertext, tokenAad(id));
  }
}

const isKind = (ref: string): ref is ModelKind => (MODEL_KINDS as readonly string[]).includes(ref);

/** The settings of an integration as an object (JSON text on SQLite, parsed already on PostgreSQL). */
export function configOf(row: IntegrationRow): Record<string, any> {
  return typeof row.config === 'string' ? JSON.parse(row.config) : (row.config as Record<string, any>);
}

/** Where a share list took the owner role away: its first entry giving a weaker role. */
function demotionLoc(entries: { role: Role }[]): Loc {
  const i = entries.findIndex((e) => e.role !== 'owner');
  return ['body', Math.max(0, i), 'role'];
}

function collaboratorWhat(who: Who): string {
  return 'user_id' in who ? 'User collaborator' : 'Group collaborator';
}
