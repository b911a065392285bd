import type { Migration } from 'kysely';
import * as core from './001_core.ts';
import * as records from './002_records.ts';
import * as ingest from './003_ingest.ts';
import * as search from './004_search.ts';
import * as integrations from './005_integrations.ts';
import * as dashboards from './006_dashboards.ts';
import * as pageSize from './007_page_size.ts';
import * as pgTextQueue from './008_pg_text_queue.ts';
import * as caseFold from './009_case_fold.ts';
import * as costs from './010_costs.ts';
import * as annotations from './012_annotations.ts';
import * as lifecycle from './013_lifecycle.ts';
import * as consoleSessions from './011_console_sessions.ts';
import * as metadataIndex from './014_metadata_index.ts';
import * as pgTextBlocks from './015_pg_text_blocks.ts';
import * as pageSize16k from './016_page_size_16k.ts';
import * as pgTextGinDirect from './017_pg_text_gin_direct.ts';
import * as pgTextGinBulk from './018_pg_text_gin_bulk.ts';
import * as pgRunTypeCreatedSlim from './019_pg_run_type_created_slim.ts';
import * as modelCalls from './020_model_calls.ts';
import * as promptTemplates from './022_prompt_templates.ts';
import * as jobsScorers from './023_jobs_scorers.ts';
import * as datasets from './021_datasets.ts';
import * as signalsRunsAlerts from './028_signals_runs_alerts.ts';
import * as queueNames from './024_queue_names.ts';
import * as scorersMore from './026_scorers_more.ts';
import * as experiments from './029_experiments.ts';
import * as signalCostOrder from './031_signal_cost_order.ts';
import * as rollups from './032_rollups.ts';
import * as metadataInTextBlocks from './033_metadata_in_text_blocks.ts';
import * as scoreResultVersions from './034_score_result_versions.ts';
import * as rollupDays from './035_rollup_days.ts';

/** Numbered migrations, applied in key order at start on either store. */
export const migrations: Record<string, Migration> = {
  '001_core': core,
  '002_records': records,
  '003_ingest': ingest,
  '004_search': search,
  '005_integrations': integrations,
  '006_dashboards': dashboards,
  '007_page_size': pageSize,
  '008_pg_text_queue': pgTextQueue,
  '009_case_fold': caseFold,
  '010_costs': costs,
  '012_annotations': annotations,
  '013_lifecycle': lifecycle,
  '011_console_sessions': consoleSessions,
  '014_metadata_index': metadataIndex,
  '015_pg_text_blocks': pgTextBlocks,
  '016_page_size_16k': pageSize16k,
  '017_pg_text_gin_direct': pgTextGinDirect,
  '018_pg_text_gin_bulk': pgTextGinBulk,
  '019_pg_run_type_created_slim': pgRunTypeCreatedSlim,
  '020_model_calls': modelCalls,
  '022_prompt_templates': promptTemplates,
  '023_jobs_scorers': jobsScorers,
  '021_datasets': datasets,
  '028_signals_runs_alerts': signalsRunsAlerts,
  '024_queue_names': queueNames,
  '026_scorers_more': scorersMore,
  '029_experiments': experiments,
  '031_signal_cost_order': signalCostOrder,
  '032_rollups': rollups,
  '033_metadata_in_text_blocks': metadataInTextBlocks,
  '034_score_result_versions': scoreResultVersions,
  '035_rollup_days': rollupDays,
};
