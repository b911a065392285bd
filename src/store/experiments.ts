/**
 * Experiments (migration 029): what each experiment run was created with, its hosted jobs and their
 * progress, and the traces its rows wrote (read back for metrics and comparison).
 */
import type { Kysely } from 'kysely';
import type { ExperimentRecord } from '../domain/experiments.ts';
import { parseJson, toJson } from './db.ts';
import type { DB, ExperimentJobsTable, ExperimentsTable } from './tables.ts';

/** A foreign key refused a row (PostgreSQL 23503, SQLite SQLITE_CONSTRAINT_FOREIGNKEY). */
function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

export type ExperimentMeta = ExperimentsTable;
export type ExperimentJobRow = ExperimentJobsTable;

export interface ExperimentTag {
  key: string;
  value: string;
  tag_type: string;
}

function meta(r: Record<string, any>): ExperimentMeta {
  return {
    ...(r as ExperimentMeta),
    dataset_version_index: r.dataset_version_index === null ? null : Number(r.dataset_version_index),
    task_type: Number(r.task_type),
    prompt_settings: parseJson(r.prompt_settings),
    tags: parseJson(r.tags) ?? [],
  };
}

function job(r: Record<string, any>): ExperimentJobRow {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    ...(r as ExperimentJobRow),
    request_data: parseJson(r.request_data) ?? {},
    steps_completed: Number(r.steps_completed),
    steps_total: Number(r.steps_total),
    failed_rows: Number(r.failed_rows),
    retries: Number(r.retries),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    processing_started: n(r.processing_started),
    completed_at: n(r.completed_at),
    failed_at: n(r.failed_at),
  };
}

/** Trace ids are looked up in chunks of this many (bound parameters). */
const CHUNK = 500;

export class ExperimentsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  async insertMeta(m: ExperimentMeta): Promise<void> {
    await this.db
      .insertInto('experiments')
      .values({ ...m, prompt_settings: toJson(m.prompt_settings), tags: toJson(m.tags) ?? '[]' } as any)
      .execute();
  }

  /**
   * Gives a run its experiment row unless it has one (two requests may both find none), only while
   * the run exists (a concurrent delete may have removed it since it was read): false when it is gone.
   */
  async ensureMeta(m: ExperimentMeta): Promise<boolean> {
    try {
      await this.db
        .insertInto('experiments')
        .values({ ...m, prompt_settings: toJson(m.prompt_settings), tags: toJson(m.tags) ?? '[]' } as any)
        .onConflict((oc) => oc.column('run_id').doNothing())
        .execute();
    } catch (err) {
      // The run was deleted since it was read: the foreign key refuses its row.
      if (isForeignKeyViolation(err)) return false;
      throw err;
    }
    return (await this.meta(m.run_id)) !== undefined;
  }

  async meta(runId: string): Promise<ExperimentMeta | undefined> {
    const r = await this.db
      .selectFrom('experiments')
      .selectAll()
      .where('run_id', '=', runId)
      .executeTakeFirst();
    return r ? meta(r) : undefined;
  }

  async metas(runIds: string[]): Promise<Map<string, ExperimentMeta>> {
    if (!runIds.length) return new Map();
    const rows = await this.db.selectFrom('experiments').selectAll().where('run_id', 'in', runIds).execute();
    return new Map(rows.map((r) => [r.run_id, meta(r)]));
  }

  /** Experiments of a project over a dataset (for rank and winner). */
  async ofDataset(projectId: string, datasetId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('experiments')
      .select('run_id')
      .where('project_id', '=', projectId)
      .where('dataset_id', '=', datasetId)
      .execute();
    return rows.map((r) => r.run_id);
  }

  async updateMeta(
    runId: string,
    set: Partial<Omit<ExperimentMeta, 'run_id' | 'project_id'>>,
  ): Promise<void> {
    const v: Record<string, unknown> = { ...set };
    if ('prompt_settings' in set) v.prompt_settings = toJson(set.prompt_settings);
    if ('tags' in set) v.tags = toJson(set.tags);
    if (Object.keys(v).length)
      await this.db.updateTable('experiments').set(v).where('run_id', '=', runId).execute();
  }

  async renameRun(runId: string, name: string, at: number): Promise<void> {
    await this.db.updateTable('runs').set({ name, updated_at: at }).where('id', '=', runId).execute();
  }

  /** Removes an experiment's own rows (the run and its records go with RunsRepo.delete). */
  async deleteOf(runId: string): Promise<void> {
    await this.db.deleteFrom('experiment_jobs').where('run_id', '=', runId).execute();
    await this.db.deleteFrom('experiments').where('run_id', '=', runId).execute();
  }

  async insertJob(j: ExperimentJobRow): Promise<void> {
    await this.db
      .insertInto('experiment_jobs')
      .values({ ...j, request_data: toJson(j.request_data) } as any)
      .execute();
  }

  async job(id: string): Promise<ExperimentJobRow | undefined> {
    const r = await this.db.selectFrom('experiment_jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? job(r) : undefined;
  }

  async jobsOfRun(runId: string, status?: string): Promise<ExperimentJobRow[]> {
    let q = this.db.selectFrom('experiment_jobs').selectAll().where('run_id', '=', runId);
    if (status) q = q.where('status', '=', status);
    return (await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1000).execute()).map(job);
  }

  /** The newest job of each run. */
  async latestJobs(runIds: string[]): Promise<Map<string, ExperimentJobRow>> {
    const out = new Map<string, ExperimentJobRow>();
    if (!runIds.length) return out;
    const rows = await this.db
      .selectFrom('experiment_jobs')
      .selectAll()
      .where('run_id', 'in', runIds)
      .orderBy('created_at', 'asc')
      .execute();
    for (const r of rows) out.set(r.run_id, job(r));
    return out;
  }

  async updateJob(id: string, set: Partial<ExperimentJobRow>): Promise<void> {
    await this.db.updateTable('experiment_jobs').set(set).where('id', '=', id).execute();
  }

  /** Sets a job's status only if it is still in one of `from` (a cancel is never overwritten). */
  async moveJob(id: string, from: string[], set: Partial<ExperimentJobRow>): Promise<boolean> {
    const r = await this.db
      .updateTable('experiment_jobs')
      .set(set)
      .where('id', '=', id)
      .where('status', 'in', from)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Which of these trace ids exist in the run (rows already done). */
  async existingTraces(runId: string, ids: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = await this.db
        .selectFrom('records')
        .select('id')
        .where('run_id', '=', runId)
        .where('id', 'in', ids.slice(i, i + CHUNK))
        .execute();
      for (const r of rows) out.add(r.id);
    }
    return out;
  }

  /** The traces of a run and their llm spans (the rows of an experiment). */
  records(runId: string): Promise<ExperimentRecord[]> {
    return this.db
      .selectFrom('records')
      .select([
        'id',
        'type',
        'trace_id',
        'created_at',
        'metrics',
        'dataset_metadata',
        'input_text',
        'output_text',
        'error_message',
        'duration_ns',
        'num_input_tokens',
        'num_output_tokens',
        'model',
        'body',
      ])
      .where('run_id', '=', runId)
      .where('type', 'in', ['trace', 'llm'])
      .execute() as Promise<ExperimentRecord[]>;
  }

  /** A prompt template version by id, with its template's id and name. */
  promptVersion(id: string) {
    return this.db
      .selectFrom('prompt_template_versions as v')
      .innerJoin('prompt_templates as t', 't.id', 'v.template_id')
      .select(['v.id', 'v.version', 'v.template', 'v.settings', 'v.template_id', 't.name', 't.project_id'])
      .where('v.id', '=', id)
      .executeTakeFirst();
  }

  async datasetName(id: string): Promise<string | null> {
    const r = await this.db.selectFrom('datasets').select('name').where('id', '=', id).executeTakeFirst();
    return r?.name ?? null;
  }
}
