/**
 * The console's one way to the HTTP API: same-origin fetch with the session cookie, the CSRF token
 * on every request that may change something, errors turned into readable messages, and a 401
 * (the session ended) sending the browser back to the sign-in page.
 */
import { ApiError, type ErrorItem } from './api-error.ts';

export { ApiError };

const CSRF_COOKIE = 'spanbase_csrf';

export function csrfToken(): string {
  for (const part of document.cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === CSRF_COOKIE) return decodeURIComponent(rest.join('='));
  }
  return '';
}

/** The `detail` of an error answer as one sentence: a string as it is, 422 items as "where: what". */
export function errorText(status: number, body: unknown): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return (detail as ErrorItem[])
      .map(
        (d) => `${(d.loc ?? []).filter((p) => p !== 'body').join('.') || 'request'}: ${d.msg ?? 'invalid'}`,
      )
      .join('; ');
  }
  return `The server answered ${status}`;
}

export function loginUrl(next = window.location.pathname + window.location.search): string {
  return `/login?next=${encodeURIComponent(next)}`;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return (await apiResponse<T>(method, path, body)).body;
}

/** The same, with the answer's headers (an ETag) and extra request headers (If-Match). */
export async function apiResponse<T>(
  method: string,
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<{ body: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken();
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'Spanbase cannot be reached: check that the server is running');
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (res.status === 401 && !path.startsWith('/v2/console/login')) {
    window.location.assign(loginUrl());
  }
  if (!res.ok) {
    const detail = (parsed as { detail?: unknown } | null)?.detail;
    throw new ApiError(res.status, errorText(res.status, parsed), Array.isArray(detail) ? detail : []);
  }
  return { body: parsed as T, headers: res.headers };
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => api<T>('POST', path, body ?? {});
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);

/**
 * A POST whose answer is NDJSON (one JSON value a line, e.g. the playground's streamed reply): each
 * line is handed to `onLine` as it arrives. Error answers are thrown as `api` throws them.
 */
export async function postLines(path: string, body: unknown, onLine: (value: any) => void): Promise<void> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: 'POST',
      headers: {
        accept: 'application/x-ndjson',
        'content-type': 'application/json',
        'x-csrf-token': csrfToken(),
      },
      body: JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'Spanbase cannot be reached: check that the server is running');
  }
  if (!res.ok || !res.body) {
    let parsed: unknown = null;
    try {
      parsed = await res.json();
    } catch {}
    if (res.status === 401) window.location.assign(loginUrl());
    const detail = (parsed as { detail?: unknown } | null)?.detail;
    throw new ApiError(res.status, errorText(res.status, parsed), Array.isArray(detail) ? detail : []);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += value;
    const lines = rest.split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) onLine(JSON.parse(line));
  }
  if (rest.trim()) onLine(JSON.parse(rest));
}
