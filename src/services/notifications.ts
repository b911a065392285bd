/**
 * Notifications: a project's webhooks (editors manage them; the signing secret is shown once and kept
 * sealed), and the deliveries of Signals and alerts to them. Each event becomes one delivery row per
 * enabled webhook; a leased job posts the due ones, signed with an HMAC of the body, and retries a
 * failed one with backoff until its attempts run out. Every attempt's outcome is recorded.
 */
import crypto from 'node:crypto';
import type { Clock } from '../domain/clock.ts';
import { notFound, valueError } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { SecretBox } from '../domain/secretbox.ts';
import { toIso } from '../domain/time.ts';
import {
  type NotificationEvent,
  SIGNATURE_HEADER,
  backoffMs,
  signBody,
  urlProblem,
  webhookBody,
} from '../domain/webhooks.ts';
import type { Leases } from '../store/leases.ts';
import type { DeliveryRow, WebhookRow, WebhooksRepo } from '../store/webhooks.ts';
import type { Caller } from './auth.ts';
import type { Keyring } from './keyring.ts';
import { LeasedJob } from './leased-job.ts';
import { guardedFetch } from './provider-fetch.ts';
import type { ProjectsService } from './projects.ts';

export const DELIVERY_JOB = 'webhook-deliveries';

/** What Signals and alerts notify through. */
export interface Notifier {
  notify(projectId: string, kind: 'signal' | 'alert', event: NotificationEvent): Promise<void>;
}

export interface DeliveryOptions {
  allowPrivate: boolean;
  maxAttempts: number;
  retryBaseMs: number;
  timeoutMs: number;
  tickMs: number;
}

const secretAad = (id: string) => `spanbase:webhook:${id}:secret`;
const us = (ms: number) => ms * 1000;

export class NotificationsService implements Notifier {
  readonly job: LeasedJob;
  private readonly box: SecretBox;
  /** Connects only where model calls may (link-local and metadata never; private when allowed). */
  private readonly fetch: typeof fetch;

  constructor(
    private readonly repo: WebhooksRepo,
    private readonly projects: ProjectsService,
    keyring: Keyring,
    private readonly clock: Clock,
    leases: Leases,
    private readonly opts: DeliveryOptions,
  ) {
    this.box = new SecretBox(keyring.derive('webhooks'));
    this.fetch = guardedFetch({ allowPrivate: opts.allowPrivate, maxResponseBytes: 64 * 1024 });
    this.job = new LeasedJob(DELIVERY_JOB, leases, opts.tickMs, async (signal) => {
      await this.deliverDue(signal);
      return signal.aborted ? 'stopped' : 'done';
    });
  }

  async list(caller: Caller, projectId: string) {
    await this.projects.access(caller, projectId, 'editor');
    return { webhooks: (await this.repo.list(projectId)).map(describeWebhook) };
  }

  async create(
    caller: Caller,
    projectId: string,
    input: { url: string; format?: string; enabled?: boolean },
  ) {
    await this.projects.access(caller, projectId, 'editor');
    checkUrl(input.url);
    const id = newId();
    const secret = `whsec_${crypto.randomBytes(24).toString('hex')}`;
    const now = us(this.clock.now());
    const row: WebhookRow = {
      id,
      project_id: projectId,
      url: input.url,
      format: input.format ?? 'json',
      secret_ciphertext: this.box.seal(secret, secretAad(id)),
      key_id: this.box.keyId,
      enabled: input.enabled === false ? 0 : 1,
      created_by: caller.id,
      created_at: now,
      updated_at: now,
    };
    await this.repo.insert(row);
    // The secret is answered this once; later reads never show it.
    return { ...describeWebhook(row), secret };
  }

  async update(
    caller: Caller,
    projectId: string,
    id: string,
    patch: { url?: string; format?: string; enabled?: boolean },
  ) {
    const row = await this.owned(caller, projectId, id);
    if (patch.url !== undefined) checkUrl(patch.url);
    const fields: Partial<WebhookRow> = { updated_at: us(this.clock.now()) };
    if (patch.url !== undefined) fields.url = patch.url;
    if (patch.format !== undefined) fields.format = patch.format;
    if (patch.enabled !== undefined) fields.enabled = patch.enabled ? 1 : 0;
    await this.repo.update(id, fields);
    return describeWebhook({ ...row, ...fields });
  }

  async remove(caller: Caller, projectId: string, id: string) {
    await this.owned(caller, projectId, id);
    await this.repo.delete(id);
  }

  async deliveries(caller: Caller, projectId: string, id: string) {
    await this.owned(caller, projectId, id);
    return { deliveries: (await this.repo.deliveries(id, 100)).map(describeDelivery) };
  }

  private async owned(caller: Caller, projectId: string, id: string): Promise<WebhookRow> {
    await this.projects.access(caller, projectId, 'editor');
    const row = await this.repo.get(id);
    if (!row || row.project_id !== projectId) throw notFound('Webhook');
    return row;
  }

  async notify(projectId: string, kind: 'signal' | 'alert', event: NotificationEvent): Promise<void> {
    const now = us(this.clock.now());
    const hooks = (await this.repo.list(projectId)).filter((h) => h.enabled);
    await this.repo.enqueue(
      hooks.map((h) => ({
        id: newId(),
        webhook_id: h.id,
        project_id: projectId,
        event: kind,
        body: webhookBody(h.format, event),
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        response_status: null,
        error: null,
        created_at: now,
        finished_at: null,
      })),
    );
  }

  /** Posts every due delivery once (the job's pass; tests call it with a moved clock). */
  async deliverDue(signal?: AbortSignal): Promise<void> {
    for (const d of await this.repo.due(us(this.clock.now()), 100)) {
      if (signal?.aborted) return;
      await this.attempt(d);
    }
  }

  private async attempt(d: DeliveryRow): Promise<void> {
    const hook = await this.repo.get(d.webhook_id);
    if (!hook) return;
    const attempts = d.attempts + 1;
    // Claimed by moving it past this attempt's time: a second pass does not post it again meanwhile.
    const claimed = await this.repo.attempted(d.id, d.attempts, {
      attempts,
      next_attempt_at: us(this.clock.now() + 2 * this.opts.timeoutMs),
    });
    if (!claimed) return;
    let status: number | null = null;
    let error: string | null = null;
    try {
      const secret = this.box.open(hook.secret_ciphertext, secretAad(hook.id));
      const res = await this.fetch(hook.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signBody(secret, d.body) },
        body: d.body,
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      status = res.status;
      const text = await res.text();
      if (status < 200 || status >= 300) error = `Answered ${status}: ${text.slice(0, 300)}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const now = this.clock.now();
    const done = error === null;
    const last = attempts >= this.opts.maxAttempts;
    await this.repo.attempted(d.id, attempts, {
      status: done ? 'delivered' : last ? 'failed' : 'pending',
      response_status: status,
      error,
      next_attempt_at: us(done || last ? now : now + backoffMs(attempts, this.opts.retryBaseMs)),
      finished_at: done || last ? us(now) : null,
    });
  }
}

function checkUrl(url: string) {
  const problem = urlProblem(url);
  if (problem) throw valueError(['body', 'url'], problem, url);
}

function describeWebhook(h: WebhookRow) {
  return {
    id: h.id,
    project_id: h.project_id,
    url: h.url,
    format: h.format,
    enabled: Boolean(h.enabled),
    created_at: toIso(Number(h.created_at)),
    updated_at: toIso(Number(h.updated_at)),
  };
}

function describeDelivery(d: DeliveryRow) {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event: d.event,
    status: d.status,
    attempts: Number(d.attempts),
    response_status: d.response_status === null ? null : Number(d.response_status),
    error: d.error,
    next_attempt_at: toIso(Number(d.next_attempt_at)),
    created_at: toIso(Number(d.created_at)),
    finished_at: d.finished_at === null ? null : toIso(Number(d.finished_at)),
  };
}
