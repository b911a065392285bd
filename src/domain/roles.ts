/** Collaborator roles, weakest first; a role may do everything a weaker one may. */
export const ROLES = ['viewer', 'annotator', 'editor', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(v: unknown): v is Role {
  return typeof v === 'string' && (ROLES as readonly string[]).includes(v);
}

export function roleRank(role: Role | null | undefined): number {
  return role ? ROLES.indexOf(role) : -1;
}

/** The strongest of several roles (a user's own and those of the groups they are in). */
export function strongest(roles: (Role | null | undefined)[]): Role | null {
  let best: Role | null = null;
  for (const r of roles) if (r && roleRank(r) > roleRank(best)) best = r;
  return best;
}

export function atLeast(role: Role | null, needed: Role): boolean {
  return roleRank(role) >= roleRank(needed);
}

/** The permission list of api.md records: what the caller may do with its role. */
export function permissionsFor(role: Role | null, isAdmin = false) {
  const r = isAdmin ? 'owner' : role;
  return [
    { action: 'read', allowed: atLeast(r, 'viewer') },
    { action: 'update', allowed: atLeast(r, 'editor') },
    { action: 'delete', allowed: atLeast(r, 'owner') },
    { action: 'share', allowed: atLeast(r, 'owner') },
  ];
}
