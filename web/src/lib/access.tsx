/**
 * What the caller may do on the page's project, so that the console shows only the controls their
 * role allows (the API refuses the rest with 403 anyway). One request per project, made by the
 * signed-in layout for the project in the URL: GET /v2/projects/{id}/current_user_role (admins are
 * owners there). Pages ask `useAccess().can('editor')` and hide or disable what needs more.
 */
import { type ReactNode, createContext, useContext, useMemo } from 'react';
import { useMatches } from 'react-router';
import { type Role, atLeast } from '../../../src/domain/roles.ts';
import { ApiError } from './api-error.ts';
import { projectRoleRequest } from './requests.ts';
import { useApi } from './use-api.ts';

export interface Access {
  /** The caller's role on the page's project; null while unknown or on a page of no project. */
  role: Role | null;
  /** Whether the caller may act with `needed` on the page's project: false until the role is known. */
  can: (needed: Role) => boolean;
  /** The role is being asked for (a page may wait for it rather than show controls and hide them). */
  loading: boolean;
  /** The URL's project does not exist, or the caller may not see it (the API answered 404). */
  missing: boolean;
}

const none: Access = { role: null, can: () => false, loading: false, missing: false };
const AccessContext = createContext<Access>(none);

export const useAccess = () => useContext(AccessContext);

/** Provides the caller's role on the project the URL names (`:projectId` of the matched route). */
export function AccessProvider({ children }: { children: ReactNode }) {
  const matches = useMatches();
  const projectId = matches[matches.length - 1]?.params.projectId;
  const request = projectId ? projectRoleRequest(projectId) : null;
  const answer = useApi(request?.key ?? null, request?.load ?? (() => Promise.reject()));
  // The answer for another project (kept while the next loads) says nothing about this one.
  const role = answer.data && answer.data.project_id === projectId ? answer.data.role : null;
  const loading = request !== null && role === null && !answer.error;
  const missing = answer.error instanceof ApiError && answer.error.status === 404 && !answer.loading;
  const access = useMemo<Access>(
    () =>
      role
        ? { role, can: (needed) => atLeast(role, needed), loading: false, missing: false }
        : { ...none, loading, missing },
    [role, loading, missing],
  );
  return <AccessContext.Provider value={access}>{children}</AccessContext.Provider>;
}
