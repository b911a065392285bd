/** Experiments and their jobs (issue #34), on the hosted routes; the comparison is an extension. */
import type { Static } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import {
  CompareQuery,
  CreateExperiment,
  CreateJob,
  ExperimentParams,
  JobParams,
  JobsQuery,
  Loose,
  MetricsBody,
  PageQuery,
  RunJobParams,
  TagBody,
  TagParams,
  UpdateExperiment,
} from '../../schemas/experiments.ts';

export default async function experimentRoutes(app: FastifyInstance) {
  const { experiments } = app.services;
  type P = Static<typeof ProjectParams>;
  type E = Static<typeof ExperimentParams>;
  const tags = ['experiments'];
  const base = '/v2/projects/:project_id/experiments';

  app.post<{ Params: P; Body: Static<typeof CreateExperiment> }>(
    base,
    {
      schema: {
        summary: 'Create an experiment',
        description:
          'Names are unique within the project (409 when taken). `dataset` (id and version, the current one by default), `prompt_template_version_id` and `prompt_settings` are what a `playground_run` job runs unless it names others.',
        tags,
        params: ProjectParams,
        body: CreateExperiment,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.create(req.caller, req.params.project_id, req.body),
  );
  app.get<{ Params: P }>(
    base,
    {
      schema: {
        summary: 'List the experiments of a project',
        description: 'Each with its dataset, prompt, model, progress, aggregate metrics, rank and winner.',
        tags,
        params: ProjectParams,
        response: withErrors({ 200: Type.Array(Loose) }),
      },
    },
    async (req) => experiments.list(req.caller, req.params.project_id),
  );
  for (const method of ['GET', 'POST'] as const) {
    app.route<{ Params: P; Querystring: Static<typeof PageQuery> }>({
      method,
      url: `${base}/paginated`,
      schema: {
        summary: 'A page of the experiments of a project',
        tags,
        params: ProjectParams,
        querystring: PageQuery,
        response: withErrors({ 200: Loose }),
      },
      handler: async (req) => experiments.paginated(req.caller, req.params.project_id, req.query),
    });
    app.route<{ Params: P }>({
      method,
      url: `${base}/available_columns`,
      schema: {
        summary: 'The columns experiments can be read by',
        tags,
        params: ProjectParams,
        response: withErrors({ 200: Loose }),
      },
      handler: async (req) => experiments.availableColumns(req.caller, req.params.project_id),
    });
  }
  app.post<{ Params: P; Body: Static<typeof MetricsBody> }>(
    `${base}/metrics`,
    {
      schema: {
        summary: 'Metrics across the experiments of a project',
        description:
          'Each score, cost and latency: its average and ten buckets over every row of the experiments (or of `experiment_ids`). `filters` are not supported: a non-empty list answers 422.',
        tags,
        params: ProjectParams,
        body: MetricsBody,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.projectMetrics(req.caller, req.params.project_id, req.body),
  );
  app.get<{ Params: P; Querystring: Static<typeof CompareQuery> }>(
    `${base}/compare`,
    {
      schema: {
        summary: 'Compare experiments row by row (Spanbase extension)',
        description:
          "Two or more experiments over the same dataset (`experiment_ids`, comma-separated), aligned by dataset row: input, ground truth, and each experiment's output, scores and trace id; rows whose outputs or scores differ are marked. `sort_by` a score name sorts by its difference across the experiments, largest first.",
        tags,
        params: ProjectParams,
        querystring: CompareQuery,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) =>
      experiments.compare(
        req.caller,
        req.params.project_id,
        [
          ...new Set(
            req.query.experiment_ids
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          ),
        ].slice(0, 10),
        req.query,
      ),
  );
  app.get<{ Params: E }>(
    `${base}/:experiment_id`,
    {
      schema: {
        summary: 'Get an experiment',
        tags,
        params: ExperimentParams,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.get(req.caller, req.params.project_id, req.params.experiment_id),
  );
  for (const method of ['PUT', 'PATCH'] as const)
    app.route<{ Params: E; Body: Static<typeof UpdateExperiment> }>({
      method,
      url: `${base}/:experiment_id`,
      schema: {
        summary: 'Rename an experiment',
        tags,
        params: ExperimentParams,
        body: UpdateExperiment,
        response: withErrors({ 200: Loose }),
      },
      handler: async (req) =>
        experiments.update(req.caller, req.params.project_id, req.params.experiment_id, req.body),
    });
  app.delete<{ Params: E }>(
    `${base}/:experiment_id`,
    {
      schema: {
        summary: 'Delete an experiment',
        description: 'With its traces and jobs (a running job is cancelled).',
        tags,
        params: ExperimentParams,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => {
      await experiments.delete(req.caller, req.params.project_id, req.params.experiment_id);
      return {};
    },
  );
  app.post<{ Params: E; Body: Static<typeof MetricsBody> }>(
    `${base}/:experiment_id/metrics`,
    {
      schema: {
        summary: 'Metrics of an experiment',
        description:
          'Each score, cost and latency: its average and ten buckets over the rows. `filters` are not supported: a non-empty list answers 422.',
        tags,
        params: ExperimentParams,
        body: MetricsBody,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.metrics(req.caller, req.params.project_id, req.params.experiment_id, req.body),
  );
  app.get<{ Params: E }>(
    `${base}/:experiment_id/tags`,
    {
      schema: {
        summary: 'Tags of an experiment',
        tags,
        params: ExperimentParams,
        response: withErrors({ 200: Type.Array(Loose) }),
      },
    },
    async (req) => experiments.tags(req.caller, req.params.project_id, req.params.experiment_id),
  );
  app.post<{ Params: E; Body: Static<typeof TagBody> }>(
    `${base}/:experiment_id/tags`,
    {
      schema: {
        summary: 'Add (or set, by key) a tag of an experiment',
        tags,
        params: ExperimentParams,
        body: TagBody,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) =>
      experiments.putTag(req.caller, req.params.project_id, req.params.experiment_id, null, req.body),
  );
  app.put<{ Params: Static<typeof TagParams>; Body: Static<typeof TagBody> }>(
    `${base}/:experiment_id/tags/:tag_id`,
    {
      schema: {
        summary: 'Update a tag',
        tags,
        params: TagParams,
        body: TagBody,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) =>
      experiments.putTag(
        req.caller,
        req.params.project_id,
        req.params.experiment_id,
        req.params.tag_id,
        req.body,
      ),
  );
  app.delete<{ Params: Static<typeof TagParams> }>(
    `${base}/:experiment_id/tags/:tag_id`,
    {
      schema: { summary: 'Delete a tag', tags, params: TagParams, response: withErrors({ 200: Loose }) },
    },
    async (req) => {
      await experiments.deleteTag(
        req.caller,
        req.params.project_id,
        req.params.experiment_id,
        req.params.tag_id,
      );
      return {};
    },
  );

  // ---- jobs ---------------------------------------------------------------------------------------
  const jobTags = ['jobs'];
  app.post<{ Body: Static<typeof CreateJob> }>(
    '/v2/jobs',
    {
      schema: {
        summary: 'Start a job',
        description:
          "`playground_run` runs a prompt template version over a dataset into an experiment (other job names answer 422). Spanbase extensions: `integration_id` (default: your integration of a kind that has `prompt_settings.model_alias`), `concurrency` (rows called at once, default 8), `dataset_version_index` (default the experiment's).",
        tags: jobTags,
        body: CreateJob,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.createJob(req.caller, req.body),
  );
  app.get<{ Params: Static<typeof JobParams> }>(
    '/v2/jobs/:job_id',
    {
      schema: {
        summary: 'Get a job',
        tags: jobTags,
        params: JobParams,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.getJob(req.caller, req.params.job_id),
  );
  app.post<{ Params: Static<typeof JobParams> }>(
    '/v2/jobs/:job_id/cancel',
    {
      schema: {
        summary: 'Cancel a job (Spanbase extension)',
        description: 'A pending or running job stops before its next row; rows written stay.',
        tags: jobTags,
        params: JobParams,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.cancelJob(req.caller, req.params.job_id),
  );
  app.get<{ Params: Static<typeof RunJobParams>; Querystring: Static<typeof JobsQuery> }>(
    '/v2/projects/:project_id/runs/:run_id/jobs',
    {
      schema: {
        summary: 'The jobs of a run',
        tags: jobTags,
        params: RunJobParams,
        querystring: JobsQuery,
        response: withErrors({ 200: Type.Array(Loose) }),
      },
    },
    async (req) =>
      experiments.jobsOfRun(req.caller, req.params.project_id, req.params.run_id, req.query.status),
  );
  app.get<{ Params: Static<typeof RunJobParams> }>(
    '/v2/projects/:project_id/runs/:run_id/jobs/latest',
    {
      schema: {
        summary: 'The latest job of a run',
        tags: jobTags,
        params: RunJobParams,
        response: withErrors({ 200: Loose }),
      },
    },
    async (req) => experiments.latestJob(req.caller, req.params.project_id, req.params.run_id),
  );
}
