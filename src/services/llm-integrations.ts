/**
 * What a caller's integrations offer and whether they work: the models of each (GET
 * /v2/llm_integrations...) and the status check (GET /v2/integrations/{name}/status), which makes one
 * cheap real call: the provider's model list where it has one (it proves the credential and costs
 * nothing), else a one-token chat recorded like every call (purpose `status`).
 */
import { MODEL_KINDS } from '../schemas/integrations.ts';
import type { Caller } from './auth.ts';
import { defaultModel } from './integration-kinds.ts';
import { type IntegrationsService, configOf } from './integrations.ts';
import { ModelCallError, type ModelCallsService } from './model-calls.ts';

/** Kinds whose provider answers a model list. */
const LISTS_MODELS = new Set(['example_gateway', 'openai', 'anthropic']);

export class LlmIntegrationsService {
  constructor(
    private readonly integrations: IntegrationsService,
    private readonly modelCalls: ModelCallsService,
  ) {}

  /** The models of an integration the caller may see; [] when the provider's list cannot be had. */
  async models(caller: Caller, ref: string): Promise<string[]> {
    const row = await this.integrations.resolve(caller, ref);
    return this.modelsOf(row.id);
  }

  private async modelsOf(id: string): Promise<string[]> {
    try {
      return await this.modelCalls.models(id);
    } catch (err) {
      if (err instanceof ModelCallError) return [];
      throw err;
    }
  }

  /** Each kind the caller has an integration of, with its models (the hosted map by kind). */
  async all(caller: Caller) {
    const out: Record<
      string,
      { integration_name: string; models: string[]; scorer_models: string[]; supports_num_judges: boolean }
    > = {};
    for (const kind of MODEL_KINDS) {
      const id = await this.integrations.idOfKind(caller, kind);
      if (!id) continue;
      const models = await this.modelsOf(id);
      // Every chat model can judge; `n` is native on OpenAI-shaped providers and fanned out on Anthropic.
      out[kind] = { integration_name: kind, models, scorer_models: models, supports_num_judges: true };
    }
    return out;
  }

  async status(caller: Caller, ref: string): Promise<Record<string, string>> {
    const row = await this.integrations.resolve(caller, ref);
    try {
      if (LISTS_MODELS.has(row.name)) {
        const models = await this.modelCalls.models(row.id);
        return { status: 'ok', message: `The credential works: the provider lists ${models.length} models` };
      }
      const model = defaultModel(row.name, configOf(row));
      if (!model)
        return { status: 'error', error_kind: 'config', message: 'The integration names no model to try' };
      const out = await this.modelCalls.call({
        integrationId: row.id,
        model,
        messages: [{ role: 'user', content: 'ping' }],
        maxTokens: 1,
        purpose: 'status',
        projectId: null,
      });
      return { status: 'ok', message: `The credential works: ${out.model} answered`, model: out.model };
    } catch (err) {
      if (!(err instanceof ModelCallError)) throw err;
      return {
        status: 'error',
        error_kind: err.kind,
        message: err.message,
        ...(err.providerStatus ? { provider_status: String(err.providerStatus) } : {}),
      };
    }
  }
}
