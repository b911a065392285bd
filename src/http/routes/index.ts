import type { FastifyInstance } from 'fastify';
import annotationRoutes from './annotations.ts';
import compatRoutes from './compat.ts';
import consolePages from './console-pages.ts';
import consoleRoutes from './console.ts';
import dashboardRoutes from './dashboards.ts';
import docsRoutes from './docs.ts';
import healthRoutes from './health.ts';
import insightRoutes from './insights.ts';
import integrationRoutes from './integrations.ts';
import modelPriceRoutes from './model-prices.ts';
import lifecycleRoutes from './lifecycle.ts';
import operationsRoutes from './operations.ts';
import otelRoutes from './otel.ts';
import projectRoutes from './projects.ts';
import recordRoutes from './records.ts';
import runRoutes from './runs.ts';
import experimentRoutes from './experiments.ts';
import searchRoutes from './search.ts';
import signalsRoutes from './signals.ts';
import scorerRoutes from './scorers.ts';
import userRoutes from './users.ts';
import promptTemplateRoutes from './prompt-templates.ts';
import datasetRoutes from './datasets.ts';
import alertRoutes from './alerts.ts';
import llmIntegrationRoutes from './llm-integrations.ts';
import modelCallRoutes from './model-calls.ts';

/** Every route group; each file owns one resource group. */
export async function registerRoutes(app: FastifyInstance): Promise<void> {
  for (const plugin of [
    healthRoutes,
    operationsRoutes,
    userRoutes,
    projectRoutes,
    runRoutes,
    experimentRoutes,
    recordRoutes,
    searchRoutes,
    lifecycleRoutes,
    dashboardRoutes,
    insightRoutes,
    modelPriceRoutes,
    integrationRoutes,
    signalsRoutes,
    annotationRoutes,
    scorerRoutes,
    otelRoutes,
    promptTemplateRoutes,
    compatRoutes,
    datasetRoutes,
    docsRoutes,
    consoleRoutes,
    consolePages,
    alertRoutes,
    llmIntegrationRoutes,
    modelCallRoutes,
  ]) {
    await app.register(plugin);
  }
}
