/**
 * The playground: one model call with the caller's messages, their {{variables}} filled by the one
 * template renderer, answered with the reply, tokens, cost, latency and the raw request and response.
 * It spends the project's money, so it takes an editor of the project (a viewer may not), through an
 * integration the caller may see. A model error is part of the answer (the playground shows it).
 */
import { ValidationError, notFound } from '../domain/errors.ts';
import { TemplateSyntaxError, renderTemplate } from '../domain/templates.ts';
import type { Caller } from './auth.ts';
import type { IntegrationsService } from './integrations.ts';
import { type ChatMessage, type Exchange, ModelCallError, type ModelCallsService } from './model-calls.ts';
import type { ProjectsService } from './projects.ts';
import { responseText } from './provider-fetch.ts';

export interface PlaygroundInput {
  integration_id: string;
  model: string;
  messages: ChatMessage[];
  variables?: Record<string, unknown>;
  temperature?: number;
  max_tokens?: number;
  json?: boolean;
}

export class PlaygroundService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly integrations: IntegrationsService,
    private readonly modelCalls: ModelCallsService,
  ) {}

  /** The messages with their variables filled; a 422 naming every variable left without a value. */
  private render(input: PlaygroundInput): ChatMessage[] {
    const vars = input.variables ?? {};
    return input.messages.map((m, i) => {
      let r: ReturnType<typeof renderTemplate>;
      try {
        r = renderTemplate(m.content, vars);
      } catch (err) {
        if (!(err instanceof TemplateSyntaxError)) throw err;
        throw new ValidationError({
          loc: ['body', 'messages', i, 'content'],
          msg: `Template syntax error: ${err.message}`,
          type: 'value_error',
        });
      }
      if (r.missing.length)
        throw new ValidationError({
          loc: ['body', 'variables'],
          msg: `No value for ${r.missing.map((v) => `{{${v}}}`).join(', ')} (message ${i + 1})`,
          type: 'missing',
        });
      return { role: m.role, content: r.text };
    });
  }

  /**
   * Checks access and renders the messages (4xx faults surface here, before any reply is streamed),
   * and answers the function that makes the call.
   */
  async prepare(caller: Caller, projectId: string, input: PlaygroundInput) {
    await this.projects.access(caller, projectId, 'editor');
    if (!(await this.integrations.canSee(caller, input.integration_id))) throw notFound('Integration');
    const messages = this.render(input);
    return (opts: { onDelta?: (text: string) => void; signal?: AbortSignal } = {}) =>
      this.call(projectId, input, messages, opts);
  }

  private async call(
    projectId: string,
    input: PlaygroundInput,
    messages: ChatMessage[],
    opts: { onDelta?: (text: string) => void; signal?: AbortSignal },
  ) {
    const exchange: Exchange = { request: null, response: null };
    const raw = () => ({
      request: exchange.request
        ? { method: exchange.request.method, url: exchange.request.url, body: exchange.request.body }
        : null,
      response: exchange.response ? { status: exchange.response.status, body: responseText(exchange) } : null,
    });
    try {
      const out = await this.modelCalls.call({
        integrationId: input.integration_id,
        model: input.model,
        messages,
        temperature: input.temperature,
        maxTokens: input.max_tokens,
        responseFormat: input.json ? { type: 'json' } : undefined,
        purpose: 'playground',
        projectId,
        signal: opts.signal,
        onDelta: opts.onDelta,
        exchange,
      });
      return {
        call_id: out.callId,
        model: out.model,
        text: out.choices[0]?.text ?? '',
        messages,
        tokens_in: out.tokensIn,
        tokens_out: out.tokensOut,
        cost_usd: out.costUsd,
        latency_ms: out.latencyMs,
        attempts: out.attempts,
        error: null,
        ...raw(),
      };
    } catch (err) {
      if (!(err instanceof ModelCallError)) throw err;
      return {
        call_id: err.callId,
        model: input.model,
        text: '',
        messages,
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: null,
        latency_ms: null,
        attempts: err.attempts,
        error: {
          kind: err.kind,
          message: err.message,
          provider_status: err.providerStatus,
          pauses: err.pauses,
        },
        ...raw(),
      };
    }
  }
}
