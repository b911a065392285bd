export const DIST: string;
export function serverIsStale(): boolean;
export function buildServer(): Promise<void>;
export function ensureServerBuilt(): Promise<boolean>;
