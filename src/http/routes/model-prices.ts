import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  CreateModelPrice,
  ModelPrice,
  ModelPriceList,
  ModelPriceParams,
  ModelsWithoutPrice,
  RunModelsParams,
  UpdateModelPrice,
} from '../../schemas/model-prices.ts';
import type { ModelPriceBody } from '../../services/model-prices.ts';

/** Model prices of a project and the models of a run without a price (the recompute is in routes/scorers.ts). */
export default async function modelPriceRoutes(app: FastifyInstance) {
  const { prices } = app.services;
  const tags = ['model_prices'];
  type P = { project_id: string };
  type PP = { project_id: string; price_id: string };

  app.post<{ Params: P; Body: ModelPriceBody & { model_pattern: string } }>(
    '/v2/projects/:project_id/model_prices',
    {
      schema: {
        tags,
        summary: 'Create a model price of the project (it beats the catalogue)',
        params: ProjectParams,
        body: CreateModelPrice,
        response: withErrors({ 200: ModelPrice }),
      },
    },
    async (req) => prices.create(req.caller, req.params.project_id, req.body),
  );
  app.get<{ Params: P }>(
    '/v2/projects/:project_id/model_prices',
    {
      schema: {
        tags,
        summary: "List the project's model prices and the shipped catalogue's, each with its source",
        params: ProjectParams,
        response: withErrors({ 200: ModelPriceList }),
      },
    },
    async (req) => prices.list(req.caller, req.params.project_id),
  );
  app.patch<{ Params: PP; Body: ModelPriceBody }>(
    '/v2/projects/:project_id/model_prices/:price_id',
    {
      schema: {
        tags,
        summary: 'Change a model price of the project (fields left out keep their value)',
        params: ModelPriceParams,
        body: UpdateModelPrice,
        response: withErrors({ 200: ModelPrice }),
      },
    },
    async (req) => prices.update(req.caller, req.params.project_id, req.params.price_id, req.body),
  );
  app.delete<{ Params: PP }>(
    '/v2/projects/:project_id/model_prices/:price_id',
    {
      schema: {
        tags,
        summary: 'Delete a model price of the project',
        params: ModelPriceParams,
        response: withErrors({ 200: Type.Object({ message: Type.String() }) }),
      },
    },
    async (req) => prices.delete(req.caller, req.params.project_id, req.params.price_id),
  );
  app.get<{ Params: { project_id: string; run_id: string } }>(
    '/v2/projects/:project_id/runs/:run_id/models_without_price',
    {
      schema: {
        tags,
        summary: 'Models seen on the llm spans of a run that no project or catalogue price matches',
        params: RunModelsParams,
        response: withErrors({ 200: ModelsWithoutPrice }),
      },
    },
    async (req) => prices.modelsWithoutPrice(req.caller, req.params.project_id, req.params.run_id),
  );
}
