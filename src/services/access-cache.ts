/**
 * How long a credential or an access decision found valid may be reused without reading the store
 * again (services/auth.ts, ProjectsService.access). A change made through this process (key revoked,
 * share changed, group membership changed, project deleted) takes effect at once (the repositories'
 * `generation`); one made by another process on the same database within this time.
 */
export const ACCESS_CACHE_MS = 1000;
