import { textProblem } from '../domain/text.ts';
import { type Loc, ValidationError, forbidden, notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { type Role, atLeast, isRole, permissionsFor, strongest } from '../domain/roles.ts';
import { SecretBox } from '../domain/secretbox.ts';
import { nowUs, toIso } from '../domain/time.ts';
import type { GatewayIntegrationInput } from '../schemas/integrations.ts';
import type { IntegrationRow, IntegrationsRepo } from '../store/integrations.ts';
import type { UsersRepo } from '../store/users.ts';
import type { Caller } from './auth.ts';
import { describeGroupCollaborator, describeUserCollaborator } from './collaborators.ts';
import type { Keyring } from './keyring.ts';

export const GATEWAY = 'example_gateway';

/** The associated data a token is sealed with: a sealed token only opens on its own integration. */
export const tokenAad = (integrationId: string) => `spanbase:integration:${integrationId}:token`;

/** The key provider tokens are sealed with, derived from the master secret. */
export function integrationsBox(keyring: Keyring): SecretBox {
  return new SecretBox(keyring.derive('integrations'));
}

function checkText(loc: Loc, value: string, secret = false): void {
  const problem = textProblem(value);
  if (problem)
    throw new ValidationError({
      loc,
      msg: problem,
      type: 'value_error',
      ...(secret ? {} : { input: value }),
    });
}

/** The known fields of a multi_modal_config; unknown ones are ignored, as in every body, not stored. */
function multiModalConfig(
  c: GatewayIntegrationInput['multi_modal_config'],
): GatewayIntegrationInput['multi_modal_config'] {
  if (!c) return null;
  const { max_files, max_file_size_bytes } = c;
  return { max_files, max_file_size_bytes };
}

/** An absolute http(s) URL (decisions.md), checked with the WHATWG URL parser. */
function checkEndpoint(endpoint: string): void {
  const loc: Loc = ['body', 'endpoint'];
  checkText(loc, endpoint);
  let url: URL | null = null;
  // The URL parser forgives surrounding blanks and control characters; a stored endpoint must not need that.
  const clean = ![...endpoint].some(
    (ch) => /\s/.test(ch) || ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f,
  );
  if (clean) {
    try {
      url = new URL(endpoint);
    } catch {
      url = null;
    }
  }
  if (url && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ValidationError({
      loc,
      msg: "URL scheme should be 'http' or 'https'",
      type: 'url_scheme',
      input: endpoint,
      ctx: { expected_schemes: "'http' or 'https'" },
    });
  }
  if (!url?.hostname) {
    throw new ValidationError({
      loc,
      msg: 'Input should be a valid URL (absolute, with a host)',
      type: 'url_parsing',
      input: endpoint,
    });
  }
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

  constructor(
    private readonly repo: IntegrationsRepo,
    private readonly users: UsersRepo,
    keyring: Keyring,
  ) {
    this.box = integrationsBox(keyring);
  }

  private describe(row: IntegrationRow, role: Role | null, caller: Caller) {
    return {
      id: row.id,
      name: row.name,
      provider: row.name,
      created_at: toIso(row.created_at),
      updated_at: toIso(row.updated_at),
      created_by: row.created_by,
      permissions: permissionsFor(role),
      is_selected: row.holder_id === caller.id,
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
   * Creates the caller's gateway integration, or updates it. "Theirs" is the one they created and
   * may still change (editor or owner); if sharing has taken that right away, it is left to its
   * owners and a new one is created for the caller.
   */
  async putGateway(caller: Caller, input: GatewayIntegrationInput) {
    checkEndpoint(input.endpoint);
    checkText(['body', 'use_case'], input.use_case);
    checkText(['body', 'token'], input.token, true);
    if (input.token.trim() === '') {
      // No `input` in this item: the value of a secret field is never echoed.
      throw new ValidationError({
        loc: ['body', 'token'],
        msg: 'The token must not be blank',
        type: 'value_error',
      });
    }
    const config = JSON.stringify({
      endpoint: input.endpoint,
      use_case: input.use_case,
      multi_modal_config: multiModalConfig(input.multi_modal_config),
    });
    for (let attempt = 0; ; attempt++) {
      const now = nowUs();
      const held = await this.repo.byHolder(caller.id, GATEWAY);
      if (held) {
        const role = await this.roleOn(caller, held.id);
        if (atLeast(role, 'editor')) {
          await this.repo.updateSettings(held.id, {
            config,
            token_ciphertext: this.box.seal(input.token, tokenAad(held.id)),
            key_id: this.box.keyId,
            updated_at: now,
          });
          return this.describe({ ...held, config, updated_at: now }, role, caller);
        }
        await this.repo.release(held.id);
      }
      const id = newId();
      const row = {
        id,
        name: GATEWAY,
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
        if (attempt === 0 && (await this.repo.byHolder(caller.id, GATEWAY))) continue;
        throw err;
      }
      const { token_ciphertext: _t, key_id: _k, ...visible } = row;
      return this.describe(visible, 'owner', caller);
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
    return rows.map((row) => {
      const mine = roles.filter((r) => r.integration_id === row.id).map((r) => r.role);
      return this.describe(row, caller.role === 'admin' ? 'owner' : strongest(mine.filter(isRole)), caller);
    });
  }

  async get(caller: Caller, id: string) {
    const { row, role } = await this.access(caller, id);
    return this.describe(row, role, caller);
  }

  async delete(caller: Caller, id: string) {
    await this.access(caller, id, 'owner');
    if (!(await this.repo.delete(id))) throw notFound('Integration');
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
