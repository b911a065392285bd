export const ROOT: string;
export function hashOf(files: string[]): string;
export function readStamp(stampFile: string): { files: string[]; hash: string } | null;
export function writeStamp(stampFile: string, files: string[]): void;
export function isStale(stampFile: string, files?: string[]): boolean;
export function withLock<T>(lockFile: string, fn: () => Promise<T>): Promise<T>;
