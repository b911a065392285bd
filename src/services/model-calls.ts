/**
 * The one way Spanbase calls a model: every feature (scorer judges, experiments, Signals, the
 * playground, an integration's status check) calls `call()` and nothing else. Around the provider SDK
 * (model-providers.ts) it adds what the peers lack: a hard timeout per attempt, retries of 429, 5xx,
 * timeouts and network errors with backoff and jitter honouring Retry-After (bounded in attempts and
 * total time, each attempt recorded), a per-integration concurrency limit that backs off on 429, errors
 * classified so features pause on the ones a person must fix, and a spend record of every call.
 */
import type { Config } from '../config.ts';
import { ACCESS_CACHE_MS } from './access-cache.ts';
import { newId } from '../domain/ids.ts';
import type { CallPurpose } from '../domain/model-call-purposes.ts';
import {
  type AttemptFailure,
  ModelCallError,
  type ModelErrorKind,
  kindOfStatus,
  parseRetryAfter,
  redact,
  retriedOn,
} from '../domain/model-errors.ts';
import { Pricer } from '../domain/prices/pricer.ts';
import { backoffMs } from '../domain/retry-policy.ts';
import { nowUs } from '../domain/time.ts';
import type { ModelCallsRepo } from '../store/model-calls.ts';
import { configuredModels } from './integration-kinds.ts';
import type { IntegrationsService } from './integrations.ts';
import type { ModelPricesService } from './model-prices.ts';
import {
  type ChatMessage,
  type ChatResult,
  type ProviderClient,
  type ResponseFormat,
  type ToolSpec,
  providerClient,
} from './model-providers.ts';
import {
  type Exchange,
  ProviderFetchError,
  exchangeStore,
  guardedFetch,
  scrubExchange,
} from './provider-fetch.ts';
import { RateLimiter } from './rate-limiter.ts';

export { ModelCallError, type ModelErrorKind } from '../domain/model-errors.ts';
export type { ChatMessage } from './model-providers.ts';
export type { Exchange } from './provider-fetch.ts';

export { CALL_PURPOSES, type CallPurpose } from '../domain/model-call-purposes.ts';

export interface ModelCallInput {
  integrationId: string;
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  maxTokens?: number;
  n?: number;
  responseFormat?: ResponseFormat;
  tools?: ToolSpec[];
  purpose: CallPurpose;
  projectId: string | null;
  runId?: string | null;
  signal?: AbortSignal;
  /** Streams the reply's text as it arrives; a call that has streamed some text is not retried. */
  onDelta?: (text: string) => void;
  /** Filled with the last attempt's raw request and response (no headers: they carry the token). */
  exchange?: Exchange;
}

export interface ModelCallOutput {
  callId: string;
  model: string;
  choices: { text: string; toolCalls?: { name: string; arguments: string }[]; finishReason?: string }[];
  tokensIn: number;
  tokensOut: number;
  /** null: the model has no price (listed as such, never shown as $0). */
  costUsd: number | null;
  latencyMs: number;
  attempts: number;
}

interface Provider {
  client: ProviderClient;
  name: string;
  token: string;
  config: Record<string, any>;
  /** id and updated_at: a new version gets a new client. */
  version: string;
}

interface AttemptRecord {
  status: number | null;
  kind: ModelErrorKind | null;
  latency_ms: number;
  wait_ms: number;
}

const CATALOGUE_ONLY = new Pricer();
const MAX_CLIENTS = 1000;
const MAX_ERROR_LENGTH = 2000;
const MODELS_TTL_MS = 10 * 60_000;

/** The first error in a cause chain that is one of ours. */
function fetchFailure(err: unknown): ProviderFetchError | null {
  for (let e: any = err, depth = 0; e && depth < 8; e = e.cause, depth++) {
    if (e instanceof ProviderFetchError) return e;
  }
  return null;
}

function errnoOf(err: unknown): string | null {
  for (let e: any = err, depth = 0; e && depth < 8; e = e.cause, depth++) {
    if (typeof e.code === 'string') return e.code;
  }
  return null;
}

/** An SDK's HTTP error (both SDKs: status, headers, message with the provider's error text). */
function httpError(err: any): { status: number; headers: Headers | null; text: string } | null {
  if (!err || typeof err.status !== 'number') return null;
  const body =
    err.error === undefined ? '' : typeof err.error === 'string' ? err.error : JSON.stringify(err.error);
  return {
    status: err.status,
    headers: err.headers instanceof Headers ? err.headers : null,
    text: `${err.message} ${body}`,
  };
}

export class ModelCallsService {
  private readonly fetch: typeof fetch;
  readonly limiter: RateLimiter;
  private readonly providers = new Map<string, { provider: Provider; generation: number; until: number }>();
  private readonly modelLists = new Map<string, { models: string[]; until: number }>();

  constructor(
    private readonly repo: ModelCallsRepo,
    private readonly integrations: IntegrationsService,
    private readonly prices: ModelPricesService,
    private readonly config: Config,
  ) {
    this.fetch = guardedFetch({
      allowPrivate: config.allowPrivateProviders,
      maxResponseBytes: config.modelMaxResponseBytes,
    });
    this.limiter = new RateLimiter(config.modelConcurrency);
  }

  /**
   * The SDK client of an integration's current settings, built once per settings version and reused
   * for ACCESS_CACHE_MS (a change made through this process applies at once).
   */
  async client(integrationId: string): Promise<Provider> {
    const hit = this.providers.get(integrationId);
    if (hit && hit.generation === this.integrations.generation && hit.until > Date.now()) return hit.provider;
    const generation = this.integrations.generation;
    const s = await this.integrations.providerSettings(integrationId);
    if (!s) throw new ModelCallError('config', 'The integration does not exist (deleted?)', 0, null, null);
    if (s.isDisabled) throw new ModelCallError('config', 'The integration is disabled', 0, null, null);
    const version = `${s.id}:${s.updatedAt}`;
    const provider =
      hit?.provider.version === version
        ? hit.provider
        : {
            client: providerClient(s, this.fetch, this.config.modelTimeoutMs),
            name: s.name,
            token: s.token,
            config: s.config,
            version,
          };
    if (this.providers.size >= MAX_CLIENTS) this.providers.clear();
    this.providers.set(integrationId, { provider, generation, until: Date.now() + ACCESS_CACHE_MS });
    return provider;
  }

  /**
   * The models an integration offers: the provider's own list where it has one (asked once per
   * settings version and MODELS_TTL_MS), else the ones its settings name. Throws a ModelCallError
   * when the provider's list cannot be had.
   */
  async models(integrationId: string): Promise<string[]> {
    const { client, name, token, config, version } = await this.client(integrationId);
    const hit = this.modelLists.get(version);
    if (hit && hit.until > Date.now()) return hit.models;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.config.modelTimeoutMs);
    let listed: string[] | null;
    try {
      listed = await client.listModels(controller.signal);
    } catch (err) {
      const f = this.failure(err, timedOut, token);
      throw new ModelCallError(f.kind, f.message, 1, null, f.status);
    } finally {
      clearTimeout(timer);
    }
    const models = listed ?? configuredModels(name, config);
    if (this.modelLists.size >= MAX_CLIENTS) this.modelLists.clear();
    this.modelLists.set(version, { models, until: Date.now() + MODELS_TTL_MS });
    return models;
  }

  /** What one failed attempt was, its text free of the token. */
  private failure(err: unknown, timedOut: boolean, token: string): AttemptFailure {
    const ours = fetchFailure(err);
    if (ours)
      return { kind: ours.kind, message: redact(ours.message, [token]), status: null, retryAfterMs: null };
    if (timedOut)
      return {
        kind: 'timeout',
        message: `No answer within ${this.config.modelTimeoutMs} ms (SPANBASE_MODEL_TIMEOUT_MS)`,
        status: null,
        retryAfterMs: null,
      };
    const http = httpError(err);
    if (http) {
      const retryAfter =
        parseRetryAfter(
          http.headers?.get('retry-after-ms')
            ? String(Number(http.headers.get('retry-after-ms')) / 1000)
            : null,
        ) ?? parseRetryAfter(http.headers?.get('retry-after'));
      return {
        kind: kindOfStatus(http.status, http.text),
        message: redact(`The provider answered ${http.status}: ${http.text}`.trim(), [token]).slice(
          0,
          MAX_ERROR_LENGTH,
        ),
        status: http.status,
        retryAfterMs: retryAfter,
      };
    }
    const code = errnoOf(err);
    const text = redact(String((err as Error)?.message ?? err), [token]).slice(0, MAX_ERROR_LENGTH);
    if (code === 'ENOTFOUND')
      return {
        kind: 'config',
        message: `The provider's host name does not resolve: ${text}`,
        status: null,
        retryAfterMs: null,
      };
    if (err instanceof SyntaxError)
      return {
        kind: 'bad_response',
        message: `The provider's answer is not valid JSON: ${text}`,
        status: null,
        retryAfterMs: null,
      };
    const name = (err as Error)?.constructor?.name ?? '';
    if (code || /Connection|Timeout/.test(name))
      return {
        kind: /Timeout/.test(name) ? 'timeout' : 'network',
        message: `Could not reach the provider: ${text}${code ? ` (${code})` : ''}`,
        status: null,
        retryAfterMs: null,
      };
    return { kind: 'bad_response', message: text, status: null, retryAfterMs: null };
  }

  async call(input: ModelCallInput): Promise<ModelCallOutput> {
    const callId = newId();
    const started = performance.now();
    const startedAt = Date.now();
    const attempts: AttemptRecord[] = [];
    const record = async (
      integrationName: string,
      model: string,
      result: { tokensIn: number; tokensOut: number; costUsd: number | null } | null,
      failure: AttemptFailure | null,
    ) => {
      const at = nowUs();
      await this.repo.insert({
        id: callId,
        project_id: input.projectId,
        run_id: input.runId ?? null,
        integration_id: input.integrationId,
        integration_name: integrationName,
        purpose: input.purpose,
        model,
        status: failure ? 'error' : 'ok',
        error_kind: failure?.kind ?? null,
        error: failure?.message ?? null,
        provider_status: failure?.status ?? null,
        tokens_in: result?.tokensIn ?? 0,
        tokens_out: result?.tokensOut ?? 0,
        cost_usd: result?.costUsd ?? null,
        latency_ms: Math.round(performance.now() - started),
        attempts: attempts.length,
        attempt_log: JSON.stringify(attempts),
        day: new Date(at / 1000).toISOString().slice(0, 10),
        created_at: at,
      });
    };
    const exchange = input.exchange;
    let token = '';
    const scrub = () => exchange && scrubExchange(exchange, (t) => redact(t, [token]));
    const fail = async (name: string, f: AttemptFailure): Promise<never> => {
      scrub();
      await record(name, input.model, null, f);
      throw new ModelCallError(f.kind, f.message, attempts.length, callId, f.status);
    };

    let provider: Provider;
    try {
      provider = await this.client(input.integrationId);
    } catch (err) {
      if (err instanceof ModelCallError) throw err;
      throw new ModelCallError('config', (err as Error).message, 0, null, null);
    }
    const { client, name } = provider;
    token = provider.token;
    if (!input.model.trim())
      return fail(name, { kind: 'config', message: 'No model given', status: null, retryAfterMs: null });
    if (input.messages.length === 0)
      return fail(name, { kind: 'config', message: 'No messages given', status: null, retryAfterMs: null });

    let streamed = false;
    const onDelta = input.onDelta
      ? (t: string) => {
          streamed = true;
          input.onDelta!(t);
        }
      : undefined;
    const deadline = startedAt + this.config.modelRetryMaxTotalMs;
    for (;;) {
      if (input.signal?.aborted) return fail(name, cancelled());
      let release: Awaited<ReturnType<RateLimiter['acquire']>>;
      try {
        release = await this.limiter.acquire(input.integrationId, input.projectId, input.signal);
      } catch {
        return fail(name, cancelled());
      }
      const t0 = performance.now();
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, this.config.modelTimeoutMs);
      // The caller's abort is forwarded to the attempt's own controller, not composed with
      // AbortSignal.any: the SDKs add an abort listener they never remove, and Node keeps a composed
      // signal that has listeners alive until it aborts. With a job's signal living through
      // thousands of calls, that kept every call's signal and controller (6,477 in 3.5 minutes of
      // bench:memory's soak, about 14 MB).
      const forward = () => controller.abort(input.signal?.reason);
      input.signal?.addEventListener('abort', forward, { once: true });
      const signal = controller.signal;
      let result: ChatResult | null = null;
      let failure: AttemptFailure | null = null;
      try {
        const chat = () =>
          client.chat(
            {
              model: input.model,
              messages: input.messages,
              temperature: input.temperature,
              maxTokens: input.maxTokens,
              n: input.n,
              responseFormat: input.responseFormat,
              tools: input.tools,
              onDelta,
            },
            signal,
          );
        result = await (exchange ? exchangeStore.run(exchange, chat) : chat());
      } catch (err) {
        failure = input.signal?.aborted ? cancelled() : this.failure(err, timedOut, token);
      } finally {
        clearTimeout(timer);
        input.signal?.removeEventListener('abort', forward);
      }
      const latency = Math.round(performance.now() - t0);
      release(
        failure ? (failure.kind === 'rate_limited' ? 'rate_limited' : 'other') : 'ok',
        failure?.retryAfterMs ?? null,
      );
      attempts.push({
        status: failure ? failure.status : 200,
        kind: failure?.kind ?? null,
        latency_ms: latency,
        wait_ms: 0,
      });

      if (result) {
        const pricer = input.projectId ? await this.prices.pricerFor(input.projectId) : CATALOGUE_ONLY;
        const usage = {
          input: result.tokensIn,
          output: result.tokensOut,
          cacheRead: null,
          cacheCreation: null,
        };
        const at = nowUs();
        const costUsd =
          pricer.costOf(result.model, at, usage, null) ?? pricer.costOf(input.model, at, usage, null);
        scrub();
        await record(name, result.model, { ...result, costUsd }, null);
        return {
          callId,
          model: result.model,
          choices: result.choices,
          tokensIn: result.tokensIn,
          tokensOut: result.tokensOut,
          costUsd,
          latencyMs: Math.round(performance.now() - started),
          attempts: attempts.length,
        };
      }
      const f = failure!;
      const last = attempts.length >= this.config.modelMaxAttempts;
      if (!retriedOn(f.kind) || last || streamed || input.signal?.aborted) {
        const why =
          retriedOn(f.kind) && last && attempts.length > 1 ? ` (after ${attempts.length} attempts)` : '';
        return fail(name, { ...f, message: f.message + why });
      }
      const wait = backoffMs(attempts.length, this.config.modelRetryBaseMs, f.retryAfterMs);
      if (Date.now() + wait > deadline) {
        return fail(name, {
          ...f,
          message: `${f.message} (gave up after ${attempts.length} attempts: the next, in ${wait} ms, would pass SPANBASE_MODEL_RETRY_MAX_TOTAL_MS)`,
        });
      }
      attempts[attempts.length - 1].wait_ms = wait;
      if (!(await sleep(wait, input.signal))) return fail(name, cancelled());
    }
  }
}

function cancelled(): AttemptFailure {
  return {
    kind: 'network',
    message: 'The call was cancelled by its caller',
    status: null,
    retryAfterMs: null,
  };
}

/** Waits `ms`; false when the signal aborted first. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
