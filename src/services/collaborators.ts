import type { Role } from '../domain/roles.ts';
import { toIso } from '../domain/time.ts';

/** Collaborator records (users and groups a project or integration is shared with), as the API answers them. */

interface Shared {
  id: string;
  created_at: number;
  role: string;
}

/** Which of the caller's actions a collaborator record allows (owners change sharing). */
function collaboratorPermissions(callerRole: Role | null) {
  const owner = callerRole === 'owner';
  return [
    { action: 'update', allowed: owner },
    { action: 'delete', allowed: owner },
  ];
}

export function describeUserCollaborator(
  c: Shared & { user_id: string; first_name: string; last_name: string; email: string },
  callerRole: Role | null,
) {
  return {
    id: c.id,
    created_at: toIso(c.created_at),
    user_id: c.user_id,
    first_name: c.first_name,
    last_name: c.last_name,
    email: c.email,
    role: c.role as Role,
    permissions: collaboratorPermissions(callerRole),
  };
}

export function describeGroupCollaborator(
  c: Shared & { group_id: string; group_name: string },
  callerRole: Role | null,
) {
  return {
    id: c.id,
    created_at: toIso(c.created_at),
    group_id: c.group_id,
    group_name: c.group_name,
    role: c.role as Role,
    permissions: collaboratorPermissions(callerRole),
  };
}
