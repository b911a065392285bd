import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { valueError } from '../../domain/errors.ts';
import { ProjectParams, withErrors } from '../../schemas/common.ts';
import { RecomputeMetricsResult } from '../../schemas/model-prices.ts';
import {
  CodeTask,
  CreateLlmVersion,
  CreateRuleVersion,
  CreateScorer,
  ListQuery,
  ListScorers,
  PreviewBody,
  PreviewParams,
  PreviewResponse,
  Message,
  RecomputeBody,
  RunParams,
  Scorer,
  ScorerList,
  ScorerParams,
  ScorerVersion,
  ScoringStatus,
  SettingsBody,
  SettingsResponse,
  UpdateScorer,
  VersionList,
  VersionParams,
  VersionQuery,
} from '../../schemas/scorers.ts';
import { CODE_SCORERS_REFUSED } from '../../services/scorers.ts';

type Obj = Record<string, any>;

/** Scorers (hosted routes plus the rule-version extension), run scorer settings, status, recompute. */
export default async function scorerRoutes(app: FastifyInstance) {
  const { scorers, scoring, backfill, ingest, jobs, scoreWorker, scorerPreview } = app.services;
  const tags = ['scorers'];
  type I = { id: string };

  // The job queue runs while the app is up: its jobs go back to pending when it stops.
  app.addHook('onReady', async () => {
    jobs.start();
    scoreWorker.start();
  });
  app.addHook('onClose', async () => {
    scoreWorker.stop();
    await jobs.stop();
  });

  app.post<{ Body: Obj }>(
    '/v2/scorers',
    {
      schema: { tags, summary: 'Create a scorer', body: CreateScorer, response: withErrors({ 200: Scorer }) },
    },
    async (req) => scorers.create(req.caller, req.body),
  );
  app.post<{ Body: Obj; Querystring: { starting_token?: number; limit?: number } }>(
    '/v2/scorers/list',
    {
      schema: {
        tags,
        summary: 'List scorers (presets and stored), filtered, a page at a time',
        body: ListScorers,
        querystring: ListQuery,
        response: withErrors({ 200: ScorerList }),
      },
    },
    async (req) =>
      scorers.list(req.caller, req.body ?? {}, req.query.starting_token ?? 0, req.query.limit ?? 100),
  );
  app.get(
    '/v2/scorers/tags',
    {
      schema: {
        tags,
        summary: 'Tags used by scorers',
        response: withErrors({ 200: Type.Array(Type.String()) }),
      },
    },
    async (req) => scorers.tags(req.caller),
  );
  app.post<{ Params: { project_id: string; id: string }; Body: Obj }>(
    '/v2/projects/:project_id/scorers/:id/preview',
    {
      schema: {
        tags,
        summary:
          'Run an LLM judge on chosen records without storing scores (rendered prompt, raw answers, score)',
        params: PreviewParams,
        body: PreviewBody,
        response: withErrors({ 200: PreviewResponse }),
      },
    },
    async (req) => scorerPreview.preview(req.caller, req.params.project_id, req.params.id, req.body),
  );
  app.get<{ Params: I }>(
    '/v2/scorers/:id',
    {
      schema: { tags, summary: 'Get a scorer', params: ScorerParams, response: withErrors({ 200: Scorer }) },
    },
    async (req) => scorers.get(req.caller, req.params.id),
  );
  app.patch<{ Params: I; Body: Obj }>(
    '/v2/scorers/:id',
    {
      schema: {
        tags,
        summary: 'Change a scorer (its creator or an admin)',
        params: ScorerParams,
        body: UpdateScorer,
        response: withErrors({ 200: Scorer }),
      },
    },
    async (req) => scorers.update(req.caller, req.params.id, req.body),
  );
  app.delete<{ Params: I }>(
    '/v2/scorers/:id',
    {
      schema: {
        tags,
        summary: 'Delete a scorer (its creator or an admin)',
        params: ScorerParams,
        response: withErrors({ 200: Message }),
      },
    },
    async (req) => scorers.delete(req.caller, req.params.id),
  );
  app.post<{ Params: I; Body: Obj }>(
    '/v2/scorers/:id/version/llm',
    {
      schema: {
        tags,
        summary: 'Add an LLM judge version (it becomes the default)',
        params: ScorerParams,
        body: CreateLlmVersion,
        response: withErrors({ 200: ScorerVersion }),
      },
    },
    async (req) => scorers.addLlmVersion(req.caller, req.params.id, req.body),
  );
  app.post<{ Params: I; Body: Obj }>(
    '/v2/scorers/:id/version/rule',
    {
      schema: {
        tags,
        summary: 'Add a rule scorer version (Spanbase extension; it becomes the default)',
        params: ScorerParams,
        body: CreateRuleVersion,
        response: withErrors({ 200: ScorerVersion }),
      },
    },
    async (req) => scorers.addRuleVersion(req.caller, req.params.id, req.body),
  );
  app.get<{ Params: I; Querystring: { version?: number } }>(
    '/v2/scorers/:id/version',
    {
      schema: {
        tags,
        summary: 'A version of a scorer (the default one without `version`)',
        params: ScorerParams,
        querystring: VersionQuery,
        response: withErrors({ 200: ScorerVersion }),
      },
    },
    async (req) => scorers.version(req.caller, req.params.id, req.query.version),
  );
  app.get<{ Params: I }>(
    '/v2/scorers/:id/versions',
    {
      schema: {
        tags,
        summary: 'Versions of a scorer',
        params: ScorerParams,
        response: withErrors({ 200: VersionList }),
      },
    },
    async (req) => scorers.versions(req.caller, req.params.id),
  );
  app.post<{ Params: { id: string; version: number } }>(
    '/v2/scorers/:id/versions/:version/restore',
    {
      schema: {
        tags,
        summary: 'Make an earlier version the default',
        params: VersionParams,
        response: withErrors({ 200: ScorerVersion }),
      },
    },
    async (req) => scorers.restore(req.caller, req.params.id, req.params.version),
  );

  // Python code scorers: the hosted task shape, refused (Spanbase does not run users' code).
  app.post(
    '/v2/scorers/code/validate',
    {
      schema: {
        tags,
        summary: 'Validate a Python code scorer: refused (use a rule scorer)',
        description: CODE_SCORERS_REFUSED,
        response: withErrors({ 200: CodeTask }),
      },
    },
    async () => refusedTask('refused'),
  );
  app.get<{ Params: { task_id: string } }>(
    '/v2/scorers/code/validate/:task_id',
    {
      schema: {
        tags,
        summary: 'A code-scorer validation task: always failed (Spanbase does not run Python scorers)',
        params: Type.Object({ task_id: Type.String({ maxLength: 200 }) }),
        response: withErrors({ 200: CodeTask }),
      },
    },
    async (req) => refusedTask(req.params.task_id),
  );
  app.post<{ Params: I }>(
    '/v2/scorers/:id/version/code',
    {
      schema: {
        tags,
        summary: 'Add a Python code version: refused with 422 (use a rule scorer)',
        params: ScorerParams,
        response: withErrors({ 200: ScorerVersion }),
      },
    },
    async () => {
      throw valueError(['body'], CODE_SCORERS_REFUSED);
    },
  );

  // ---- run scorer settings -----------------------------------------------------------------

  type R = { project_id: string; run_id: string };
  const settingsUrl = '/v2/projects/:project_id/runs/:run_id/scorer-settings';
  app.get<{ Params: R }>(
    settingsUrl,
    {
      schema: {
        tags,
        summary: 'The scorers of a log stream or experiment',
        params: RunParams,
        response: withErrors({ 200: SettingsResponse }),
      },
    },
    async (req) => scoring.getSettings(req.caller, req.params.project_id, req.params.run_id),
  );
  for (const method of ['post', 'patch'] as const) {
    app[method]<{ Params: R; Body: Obj }>(
      settingsUrl,
      {
        schema: {
          tags,
          summary: 'Set the scorers of a run (editors)',
          description:
            'The scorers list replaces the saved one (as enabling metrics does); segment_filters left out keep their saved value. Each scorer is pinned to its default version (or the `scorer_version` given).',
          params: RunParams,
          body: SettingsBody,
          response: withErrors({ 200: SettingsResponse }),
        },
      },
      async (req) =>
        scoring.saveSettings(req.caller, req.params.project_id, req.params.run_id, req.body ?? {}),
    );
  }
  app.get<{ Params: R }>(
    `${settingsUrl}/status`,
    {
      schema: {
        tags,
        summary: "Why a score did or did not run: each scorer's records by state and reason",
        params: RunParams,
        response: withErrors({ 200: ScoringStatus }),
      },
    },
    async (req) => scoring.status(req.caller, req.params.project_id, req.params.run_id),
  );

  // ---- recompute (both spellings: the client's and the hosted API's) -----------------------

  const Recomputed = Type.Union([
    RecomputeMetricsResult,
    Type.Object({
      run_id: Type.String(),
      dry_run: Type.Boolean(),
      records: Type.Integer({ description: "records the filters select (of the scorers' node types)" }),
      estimated_cost: Type.Union([Type.Number(), Type.Null()], {
        description: 'dollars the LLM scorers would spend (null: a judge model has no price)',
      }),
      cap: Type.Integer(),
      records_scored: Type.Integer(),
      records_changed: Type.Integer({ description: 'records whose inline (rule) scores changed' }),
      tasks_queued: Type.Integer({ description: 'LLM score tasks queued again' }),
    }),
  ]);
  for (const url of [
    '/v2/projects/:project_id/recompute-metrics',
    '/v2/projects/:project_id/recompute_metrics',
  ]) {
    app.post<{ Params: { project_id: string }; Body: Obj }>(
      url,
      {
        schema: {
          tags,
          summary: "Recompute a run's metrics: with scorer_ids, re-score records; without, reprice costs",
          description:
            "With `scorer_ids`: the records `filters`/`filter_tree` select are scored again by those scorers of the run (`dry_run`: only count them and estimate the cost; more than 25,000 records need `max_records` raised). Without: every llm span is priced again with today's prices.",
          params: ProjectParams,
          body: RecomputeBody,
          response: withErrors({ 200: Recomputed }),
        },
      },
      async (req) =>
        req.body.scorer_ids?.length
          ? backfill.recompute(req.caller, req.params.project_id, req.body)
          : ingest.recompute(req.caller, req.params.project_id, req.body),
    );
  }
}

function refusedTask(id: string) {
  return {
    id,
    status: 'failed',
    result: { result_type: 'INVALID', score_type: null, error_message: CODE_SCORERS_REFUSED },
  };
}
