/**
 * LLM judges at work: one record judged by a version's N judges through the model-call module (its
 * timeouts, retries, rate limits and spend), for the score tasks of the job queue and for the
 * editor's preview, which answers the same thing without storing it.
 */
import {
  type JudgeMessage,
  type Verdict,
  type Vote,
  combine,
  judgeMessages,
  parseVote,
} from '../domain/judge.ts';
import type { LlmVersionConfig, ScoreView } from '../domain/scorer-types.ts';
import { configuredModels, defaultModel } from './integration-kinds.ts';
import type { IntegrationsService } from './integrations.ts';
import { ModelCallError, type ModelCallsService } from './model-calls.ts';

/** Judges of one version vote at this temperature (above 0, so that they may disagree). */
const JUDGE_TEMPERATURE = 0.7;
const MAX_ANSWER_TOKENS = 800;

export interface JudgeAnswer {
  raw: string | null;
  vote: Vote;
  /** A call that failed after its retries (the judge abstains). */
  error: string | null;
}

export interface Judgement extends Verdict {
  messages: JudgeMessage[];
  judges: JudgeAnswer[];
  model: string;
  /** Dollars; null when the model has no price. */
  cost: number | null;
  tokensIn: number;
  tokensOut: number;
}

export class JudgesService {
  constructor(
    private readonly modelCalls: Pick<ModelCallsService, 'call' | 'models'>,
    private readonly integrations: Pick<IntegrationsService, 'providerSettings'>,
  ) {}

  /** The model a version names, else the integration's default one. */
  async modelFor(c: LlmVersionConfig, integrationId: string): Promise<string> {
    if (c.model_name) return c.model_name;
    const p = await this.integrations.providerSettings(integrationId);
    if (!p) throw new ModelCallError('config', 'The integration of these scorers was deleted', 0, null, null);
    // Presets name no model: the integration's default, else the first its provider lists.
    const m =
      defaultModel(p.name, p.config) ??
      configuredModels(p.name, p.config)[0] ??
      (await this.modelCalls.models(integrationId).catch(() => []))[0];
    if (!m)
      throw new ModelCallError(
        'config',
        'The judge names no model and its integration has no default model',
        0,
        null,
        null,
      );
    return m;
  }

  /**
   * The verdict of `c`'s judges on one record. A template problem throws JudgeTemplateError; a call
   * error that needs a person (ModelCallError.pauses) is thrown at once; other failed calls make
   * their judge abstain, and when every judge failed the last error is thrown (the task retries).
   */
  async judge(
    c: LlmVersionConfig,
    view: ScoreView,
    ctx: { integrationId: string; projectId: string | null; runId: string | null; signal?: AbortSignal },
  ): Promise<Judgement> {
    const messages = judgeMessages(c, view);
    const model = await this.modelFor(c, ctx.integrationId);
    const n = Math.max(1, c.num_judges || 1);
    const settled = await Promise.allSettled(
      Array.from({ length: n }, () =>
        this.modelCalls.call({
          integrationId: ctx.integrationId,
          model,
          messages,
          temperature: n > 1 ? JUDGE_TEMPERATURE : 0,
          maxTokens: MAX_ANSWER_TOKENS,
          responseFormat: { type: 'json' },
          purpose: 'scorer',
          projectId: ctx.projectId,
          runId: ctx.runId,
          signal: ctx.signal,
        }),
      ),
    );
    const pausing = settled.find(
      (s) => s.status === 'rejected' && s.reason instanceof ModelCallError && s.reason.pauses,
    );
    if (pausing) throw (pausing as PromiseRejectedResult).reason;
    const judges: JudgeAnswer[] = [];
    let cost: number | null = null;
    let tokensIn = 0;
    let tokensOut = 0;
    let lastError: unknown = null;
    for (const s of settled) {
      if (s.status === 'rejected') {
        lastError = s.reason;
        const msg = s.reason instanceof Error ? s.reason.message : String(s.reason);
        judges.push({
          raw: null,
          vote: { value: null, explanation: null, abstained: `the call failed: ${msg}` },
          error: msg,
        });
        continue;
      }
      const out = s.value;
      const raw = out.choices[0]?.text ?? '';
      judges.push({ raw, vote: parseVote(c, raw), error: null });
      if (out.costUsd !== null) cost = (cost ?? 0) + out.costUsd;
      tokensIn += out.tokensIn;
      tokensOut += out.tokensOut;
    }
    if (judges.every((j) => j.error !== null)) throw lastError;
    return {
      ...combine(
        c.output_type,
        judges.map((j) => j.vote),
      ),
      messages,
      judges,
      model,
      cost,
      tokensIn,
      tokensOut,
    };
  }
}
