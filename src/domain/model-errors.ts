/**
 * What went wrong with a model call, in the terms features act on: the kinds that pause a feature
 * (its integration or model needs a person), the ones worth another attempt, and an unusable answer.
 */
export type ModelErrorKind =
  | 'credential'
  | 'billing'
  | 'unknown_model'
  | 'address_refused'
  | 'config'
  | 'rate_limited'
  | 'timeout'
  | 'network'
  | 'server'
  | 'bad_response';

const PAUSING = new Set<ModelErrorKind>([
  'credential',
  'billing',
  'unknown_model',
  'address_refused',
  'config',
]);
const RETRIED = new Set<ModelErrorKind>(['rate_limited', 'timeout', 'network', 'server']);

export const pausesOn = (kind: ModelErrorKind) => PAUSING.has(kind);
export const retriedOn = (kind: ModelErrorKind) => RETRIED.has(kind);

export class ModelCallError extends Error {
  readonly pauses: boolean;

  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly attempts: number,
    readonly callId: string | null,
    readonly providerStatus: number | null,
  ) {
    super(message);
    this.name = 'ModelCallError';
    this.pauses = pausesOn(kind);
  }
}

/** One attempt's failure before the retry policy decides: its kind, text, status and Retry-After. */
export interface AttemptFailure {
  kind: ModelErrorKind;
  message: string;
  status: number | null;
  retryAfterMs: number | null;
}

const BILLING = /insufficient[_ ]quota|billing|credit balance|payment|exceeded your current quota/i;
const UNKNOWN_MODEL =
  /model[_ ]not[_ ]found|(model|deployment)\b[^.]{0,80}\b(does not exist|not found|unknown|invalid|is not supported)|unknown model|invalid model|DeploymentNotFound/i;

/**
 * The kind of an HTTP error answer from a provider. Billing hides behind 429 (OpenAI's
 * insufficient_quota) and 400 (Anthropic's credit balance); an unknown model behind 404 or 400.
 */
export function kindOfStatus(status: number, body: string): ModelErrorKind {
  if (status === 401 || status === 403) return 'credential';
  if (status === 402 || ((status === 429 || status === 400) && BILLING.test(body))) return 'billing';
  if ((status === 404 || status === 400 || status === 422) && UNKNOWN_MODEL.test(body))
    return 'unknown_model';
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'server';
  if (status >= 300 && status < 400) return 'config';
  // A wrong path (404), or a request this provider refuses: retrying cannot help, nor must it pause.
  return status === 404 ? 'config' : 'bad_response';
}

/** Retry-After in milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * The text with every secret replaced, also in its common encodings (a provider may echo a token
 * back in an error, e.g. "Incorrect API key provided: sk-...").
 */
export function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    for (const form of new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])) {
      out = out.split(form).join('[redacted]');
    }
    // Providers often show a token's first and last few characters: hide a long head too.
    if (secret.length >= 16) out = out.split(secret.slice(0, 12)).join('[redacted]');
  }
  return out;
}
