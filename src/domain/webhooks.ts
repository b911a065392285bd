/** Webhook bodies, their signature, and the retry schedule of a failed delivery. */
import crypto from 'node:crypto';
import { hostRefusal } from './provider-address.ts';

export const WEBHOOK_FORMATS = ['json', 'slack'] as const;
export const SIGNATURE_HEADER = 'x-spanbase-signature';

/** `sha256=` + the hex HMAC-SHA256 of the exact body bytes under the webhook's secret. */
export function signBody(secret: string, body: string): string {
  return `sha256=${crypto.createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** Whether `signature` is the body's (constant-time): what a receiver does. */
export function verifyBody(secret: string, body: string, signature: string): boolean {
  const want = Buffer.from(signBody(secret, body));
  const given = Buffer.from(signature);
  return want.length === given.length && crypto.timingSafeEqual(want, given);
}

/** Wait before attempt `attempt + 1` (attempt counts from 1): doubling from `baseMs`, capped. */
export function backoffMs(attempt: number, baseMs: number, maxMs = 3_600_000): number {
  return Math.min(maxMs, baseMs * 2 ** (attempt - 1));
}

export type NotificationEvent = { event: string; [key: string]: unknown };

/** One line a person reads in Slack (an incoming webhook's `{text}` body). */
export function slackText(e: NotificationEvent): string {
  if (e.event === 'signal') {
    const s = e.signal as { title: string; severity: string; observation: string; occurrence_count: number };
    return `*[${s.severity}] ${s.title}*\n${s.observation}\n(${s.occurrence_count} occurrence${s.occurrence_count === 1 ? '' : 's'})`;
  }
  if (e.event === 'alert') {
    const a = e.alert as {
      name: string;
      state: string;
      value: number | null;
      comparison: string;
      threshold: number;
    };
    const verb = a.state === 'firing' ? 'Alert firing' : 'Alert recovered';
    return `*${verb}: ${a.name}*\nvalue ${a.value ?? 'none'} (${a.comparison} ${a.threshold})`;
  }
  return JSON.stringify(e);
}

/** The body sent for an event in a webhook's format. */
export function webhookBody(format: string, e: NotificationEvent): string {
  return JSON.stringify(format === 'slack' ? { text: slackText(e) } : e);
}

/**
 * Why a webhook URL is not usable (scheme, credentials, a metadata host), or null. Its addresses are
 * judged when connecting, by the same guard as model calls (services/provider-fetch.ts).
 */
export function urlProblem(text: string): string | null {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return 'Not a valid URL';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'The URL must use http or https';
  if (u.username || u.password) return 'The URL must not hold credentials';
  return hostRefusal(u.hostname);
}
