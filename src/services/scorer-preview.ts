/**
 * `POST /v2/scorers/{id}/preview` (ours, design/evaluations.md §4.3 B): a judge run on chosen records
 * without storing anything, answering for each record the rendered prompt, every judge's raw answer
 * and vote, and the combined score. It answers "why does my template render wrong" before a run
 * spends money on it. The calls are real (recorded and priced as the scorer's purpose).
 */
import { notFound, valueError } from '../domain/errors.ts';
import { JudgeTemplateError } from '../domain/judge.ts';
import { presetById } from '../domain/scorer-presets.ts';
import type { LlmVersionConfig } from '../domain/scorer-types.ts';
import { viewOf } from '../domain/scoring-plan.ts';
import type { ScorersRepo } from '../store/scorers.ts';
import type { Caller } from './auth.ts';
import type { IntegrationsService } from './integrations.ts';
import type { JudgesService } from './judges.ts';
import { ModelCallError } from './model-calls.ts';
import type { ProjectsService } from './projects.ts';
import { type ScorersService, llmConfigOf } from './scorers.ts';

type Obj = Record<string, any>;

export class ScorerPreviewService {
  constructor(
    private readonly repo: ScorersRepo,
    private readonly scorers: ScorersService,
    private readonly judges: JudgesService,
    private readonly projects: ProjectsService,
    private readonly integrations: Pick<IntegrationsService, 'canSee' | 'defaultFor'>,
  ) {}

  /** The version to try: the draft in the body, else the scorer's default (a preset's own). */
  private async config(id: string, draft: Obj | null | undefined): Promise<LlmVersionConfig> {
    const preset = presetById(id);
    if (preset) {
      if (preset.kind !== 'llm')
        throw valueError(['path', 'id'], `${preset.name} is computed in code, not by a judge`);
      const base = (await this.scorers.resolve({ id }, [])).llm as LlmVersionConfig;
      return draft
        ? {
            ...base,
            ...llmConfigOf(draft, { defaults: null, output_type: base.output_type, input_type: null }),
            chain_poll_template: draft.chain_poll_template ?? base.chain_poll_template,
          }
        : base;
    }
    const s = await this.scorers.row(id);
    if (s.scorer_type !== 'llm')
      throw valueError(['path', 'id'], `This is a ${s.scorer_type} scorer, not an llm scorer`);
    if (draft) {
      if (!draft.chain_poll_template && !draft.user_prompt && !draft.instructions)
        throw valueError(['body', 'version'], 'Give a chain_poll_template, a user_prompt or instructions');
      const c = llmConfigOf(draft, s);
      // A draft without a model keeps the one of the scorer's current version.
      if (!c.model_name && s.default_version_id)
        c.model_name = (await this.scorers.resolve({ id }, [])).llm?.model_name ?? null;
      return c;
    }
    const a = await this.scorers.resolve({ id }, ['path', 'id']);
    return a.llm as LlmVersionConfig;
  }

  async preview(caller: Caller, projectId: string, scorerId: string, body: Obj) {
    // Editors only: a preview calls the model and spends the project's money.
    await this.projects.access(caller, projectId, 'editor');
    const config = await this.config(scorerId, body.version);
    const integrationId =
      body.integration_id && (await this.integrations.canSee(caller, body.integration_id))
        ? body.integration_id
        : body.integration_id
          ? null
          : await this.integrations.defaultFor(caller);
    if (!integrationId)
      throw body.integration_id
        ? notFound('Integration')
        : valueError(['body', 'integration_id'], 'You have no LLM integration for the judge to call');
    const rows = await this.repo.recordRows(projectId, body.record_ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const missing = body.record_ids.filter((id: string) => !byId.has(id));
    if (missing.length)
      throw valueError(['body', 'record_ids'], `No record of this project has the id ${missing[0]}`);
    let model: string | null = null;
    const results = [];
    for (const id of body.record_ids as string[]) {
      const row = byId.get(id) as (typeof rows)[number];
      const base = {
        record_id: id,
        messages: [] as Obj[],
        rendered_prompt: null as string | null,
        judges: [] as Obj[],
        value: null,
        explanation: null,
        abstained: 0,
        cost: null,
      };
      try {
        const j = await this.judges.judge(config, viewOf(row), {
          integrationId,
          projectId: projectId,
          runId: row.run_id,
        });
        model = j.model;
        results.push({
          ...base,
          status: j.value === null ? 'error' : 'success',
          error: j.value === null ? 'every judge abstained' : null,
          messages: j.messages,
          rendered_prompt: j.messages[j.messages.length - 1].content,
          judges: j.judges.map((x) => ({ raw: x.raw, ...x.vote })),
          value: j.value,
          explanation: j.explanation,
          abstained: j.abstained,
          cost: j.cost,
        });
      } catch (err) {
        if (!(err instanceof JudgeTemplateError) && !(err instanceof ModelCallError)) throw err;
        results.push({
          ...base,
          status: err instanceof JudgeTemplateError ? 'error' : 'failed',
          error: err.message,
        });
      }
    }
    return { scorer_id: scorerId, model, results };
  }
}
