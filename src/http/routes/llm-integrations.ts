import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { withErrors } from '../../schemas/common.ts';
import { IntegrationModels, KindParams, type ModelKind } from '../../schemas/integrations.ts';

const tags = ['integrations'];

/** The models each of the caller's integrations offers (the hosted /llm_integrations routes). */
export default async function llmIntegrationRoutes(app: FastifyInstance) {
  const { llmIntegrations } = app.services;
  type P = { name: ModelKind };

  app.get(
    '/v2/llm_integrations',
    {
      schema: {
        summary: 'The models of each of your integrations, by kind',
        description:
          "Your selected integration of each kind, with the provider's model list where it has one (cached for 10 minutes), else the models its settings name.",
        tags,
        response: withErrors({ 200: Type.Record(Type.String(), IntegrationModels) }),
      },
    },
    async (req) => llmIntegrations.all(req.caller),
  );
  for (const [suffix, summary] of [
    ['models', 'The models your integration of a kind offers'],
    ['scorer_models', 'The models your integration of a kind offers for judging (scorers)'],
  ]) {
    app.get<{ Params: P }>(
      `/v2/llm_integrations/:name/${suffix}`,
      {
        schema: {
          summary,
          description:
            "[] when the provider's list cannot be had; GET /v2/integrations/{name}/status says why.",
          tags,
          params: KindParams,
          response: withErrors({ 200: Type.Array(Type.String()) }),
        },
      },
      async (req) => llmIntegrations.models(req.caller, req.params.name),
    );
  }
}
