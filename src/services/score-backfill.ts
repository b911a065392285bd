/**
 * Recompute and backfill (`POST /projects/{p}/recompute_metrics` and `/recompute-metrics` with
 * `scorer_ids`): the run's records the filters select, scored again by the chosen scorers of its
 * settings. Inline scorers (rules, bleu, rouge) are computed right here, a page per transaction
 * (ingestion goes on between pages); LLM scorers get their tasks queued again. A dry run answers the
 * count and an estimated cost; more than the cap (25,000 by default) needs `max_records` raised.
 */
import { valueError } from '../domain/errors.ts';
import { RECORD_TYPES } from '../domain/records.ts';
import type { RunScoring } from '../domain/scorer-types.ts';
import { nowUs } from '../domain/time.ts';
import type { RecordSelection } from '../store/record-selection.ts';
import type { Caller } from './auth.ts';
import type { IngestService } from './ingest.ts';
import type { ModelPricesService } from './model-prices.ts';
import type { ProjectsService } from './projects.ts';
import { RECOMPUTE_CAP, type ScoringService } from './scoring.ts';
import type { SearchService } from './search.ts';

type Obj = Record<string, any>;

/** Records scored per transaction. */
export const BACKFILL_PAGE = 500;
/** What the cost estimate assumes one judge call reads and writes (a record's text and the template). */
export const ESTIMATE_TOKENS = { input: 800, output: 150 };

export class ScoreBackfillService {
  constructor(
    private readonly search: SearchService,
    private readonly selection: RecordSelection,
    private readonly ingest: IngestService,
    private readonly scoring: ScoringService,
    private readonly projects: ProjectsService,
    private readonly prices: ModelPricesService,
  ) {}

  async recompute(caller: Caller, projectId: string, body: Obj) {
    const runIdGiven = body.log_stream_id ?? body.experiment_id ?? null;
    if (!runIdGiven || (body.log_stream_id && body.experiment_id))
      throw valueError(['body'], 'Give exactly one of log_stream_id and experiment_id');
    await this.projects.access(caller, projectId, 'editor');
    const { runId, parsed } = await this.search.selection(caller, projectId, {
      log_stream_id: body.log_stream_id ?? null,
      experiment_id: body.experiment_id ?? null,
      filters: body.filters ?? undefined,
      filter_tree: body.filter_tree ?? undefined,
    });
    const run = (await this.scoring.forProject(projectId)).get(runId as string);
    const ids: string[] = body.scorer_ids;
    const unknown = ids.filter((id) => !run?.scorers.some((s) => s.id === id));
    if (unknown.length)
      throw valueError(
        ['body', 'scorer_ids'],
        `Not enabled on this run's scorer settings: ${unknown.join(', ')}`,
      );
    const chosen: RunScoring = {
      ...(run as RunScoring),
      scorers: (run as RunScoring).scorers.filter((s) => ids.includes(s.id)),
    };
    const types = RECORD_TYPES.filter((t) => chosen.scorers.some((s) => s.nodeTypes.includes(t)));
    const sel = { projectId, runId, queueId: null, types, tree: parsed.tree, sort: null };
    const count = await this.selection.count(sel);
    const cap = body.max_records ?? RECOMPUTE_CAP;
    const estimate = await this.estimate(projectId, chosen, count);
    if (body.dry_run)
      return {
        run_id: runId,
        dry_run: true,
        records: count,
        estimated_cost: estimate,
        cap,
        records_scored: 0,
        records_changed: 0,
        tasks_queued: 0,
      };
    if (count > cap)
      throw valueError(
        ['body', 'max_records'],
        `The selection has ${count} records, more than the cap of ${cap}; narrow the filters or raise max_records`,
      );
    const inline: RunScoring = { ...chosen, scorers: chosen.scorers.filter((s) => s.kind !== 'llm') };
    const llm = chosen.scorers.some((s) => s.kind === 'llm');
    let after = null;
    let scored = 0;
    let changed = 0;
    let queued = 0;
    for (;;) {
      const page = await this.selection.nextBatch(sel, after, BACKFILL_PAGE);
      if (!page.length) break;
      const pageIds = page.map((p) => p.id);
      if (inline.scorers.length)
        changed += await this.ingest.rescore(projectId, runId as string, pageIds, inline);
      if (llm) queued += await this.scoring.requeue(projectId, runId as string, pageIds, chosen);
      scored += page.length;
      after = page[page.length - 1];
      if (page.length < BACKFILL_PAGE) break;
    }
    return {
      run_id: runId,
      dry_run: false,
      records: count,
      estimated_cost: estimate,
      cap,
      records_scored: scored,
      records_changed: changed,
      tasks_queued: queued,
    };
  }

  /** Dollars the LLM scorers would spend on `count` records (null when a judge's model has no price). */
  private async estimate(projectId: string, sc: RunScoring, count: number): Promise<number | null> {
    const pricer = await this.prices.pricerFor(projectId);
    let total = 0;
    for (const s of sc.scorers) {
      if (s.kind !== 'llm' || !s.llm) continue;
      const per = pricer.costOf(
        s.llm.model_name,
        nowUs(),
        {
          input: ESTIMATE_TOKENS.input,
          output: ESTIMATE_TOKENS.output,
          cacheRead: null,
          cacheCreation: null,
        },
        null,
      );
      if (per === null) return null;
      total += per * s.llm.num_judges * count;
    }
    return total;
  }
}
