/**
 * Experiments (migration 029): what each experiment run was created with, its hosted jobs and their
 * progress, and the traces its rows wrote (read back for metrics and comparison).
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { ExperimentRecord } from '../domain/experiments.ts';
import { parseJson, toJson } from './db.ts';
import { isPostgres } from './migrations/helpers.ts';
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

/** The row index of a trace without one: it sorts last. */
const NO_INDEX = 9e15;

/** Trace ids are looked up in chunks of this many (bound parameters). */
const CHUNK = 500;

/** One metric over a set of experiment rows: what buckets and averages are made of. */
export interface MetricStat {
  name: string;
  count: number;
  sum: number;
  lo: number;
  hi: number;
  /** Rows per bucket 0..9 (equal widths between lo and hi; all in 0 when lo = hi). */
  buckets: Map<number, number>;
}

export interface RowCounts {
  rows: number;
  errors: number;
}

/** A comparison page: the rows' keys in order, and every trace (with its llm spans) of those rows. */
export interface ComparePage {
  total: number;
  keys: { key: string; index: number | null }[];
  /** Traces and llm spans, as rowResults reads them; `row_key` on traces. */
  records: (ExperimentRecord & { run_id: string; row_key: string | null })[];
}

export class ExperimentsRepo {
  private readonly pg: boolean;
  constructor(private readonly db: Kysely<DB>) {
    this.pg = isPostgres(db);
  }

  /**
   * The row a trace answers: `dataset_metadata.dataset_row_id`, else the trace itself. The same
   * expression as the index records_experiment_row (migration 029), so lookups by row use it.
   */
  private rowKey(t: string): RawBuilder<string> {
    return this.pg
      ? sql`coalesce(${sql.ref(`${t}.dataset_metadata`)}->>'dataset_row_id', ${sql.ref(`${t}.id`)})`
      : sql`coalesce(json_extract(${sql.ref(`${t}.dataset_metadata`)}, '$.dataset_row_id'), ${sql.ref(`${t}.id`)})`;
  }

  /**
   * `records t` read through the index records_experiment_row: SQLite's planner prefers
   * records_run_type_created (two equalities), which reads every trace's row instead of the index.
   */
  private get tracesByRow() {
    return this.pg ? sql`records t` : sql`records t indexed by records_experiment_row`;
  }

  /**
   * `dataset_metadata.dataset_row_index` when it is a number, else NO_INDEX (rows without one sort
   * last); the expression of the index records_experiment_order.
   */
  private rowIndex(t: string): RawBuilder<number> {
    const dm = sql.ref(`${t}.dataset_metadata`);
    return this.pg
      ? sql`coalesce(case when jsonb_typeof(${dm}->'dataset_row_index') = 'number' then (${dm}->>'dataset_row_index')::float8 end, 9e15)`
      : sql`coalesce(case when json_type(${dm}, '$.dataset_row_index') in ('integer', 'real') then json_extract(${dm}, '$.dataset_row_index') end, 9e15)`;
  }

  /** A numeric metric `name` of a record's metrics JSON, else null. */
  private metric(t: string, name: string): RawBuilder<number | null> {
    const m = sql.ref(`${t}.metrics`);
    if (this.pg)
      return sql`case when jsonb_typeof(${m}->${name}::text) = 'number' then (${m}->>${name}::text)::float8 end`;
    // A JSON path quotes the name; one a path cannot quote is looked up among the object's members.
    if (/["\\]/.test(name))
      return sql`(select j.value from json_each(${m}) j where j.key = ${name} and j.type in ('integer', 'real'))`;
    const path = `$."${name}"`;
    return sql`case when json_type(${m}, ${path}) in ('integer', 'real') then json_extract(${m}, ${path}) end`;
  }

  /**
   * Each score, cost and latency over the rows (traces) of these experiments together, computed in
   * SQL: per row a score is its llm span's value, else its trace's; cost is the sum of its llm spans'
   * costs; latency the trace's duration. Names in `notScores` (token counts, durations) are skipped.
   */
  async metricStats(runIds: string[], notScores: readonly string[]): Promise<MetricStat[]> {
    if (!runIds.length) return [];
    const ids = sql.join(runIds);
    const skip = sql.join(notScores.length ? notScores : ['']);
    // Cost is not a score, but it is read from the spans' metrics with them (summed per row).
    const spanSkip = sql.join([...notScores.filter((n) => n !== 'cost'), '']);
    const num = this.pg ? sql`jsonb_typeof(j.value) = 'number'` : sql`j.type in ('integer', 'real')`;
    const val = this.pg ? sql`(j.value #>> '{}')::float8` : sql`j.value`;
    const each = (t: string) =>
      this.pg ? sql`jsonb_each(${sql.ref(`${t}.metrics`)}) j` : sql`json_each(${sql.ref(`${t}.metrics`)}) j`;
    const bucket = this.pg
      ? sql`case when st.hi = st.lo then 0 else least(9, floor((r.val - st.lo) / ((st.hi - st.lo) / 10.0)))::int end`
      : sql`case when st.hi = st.lo then 0 else min(9, cast((r.val - st.lo) / ((st.hi - st.lo) / 10.0) as integer)) end`;
    const q = sql<{ name: string; n: number; total: number; lo: number; hi: number; b: number; c: number }>`
      with v as (
        select t.id as tid, j.key as name, ${val} as val, 0 as sp
          from records t, ${each('t')}
         where t.run_id in (${ids}) and t.type = 'trace' and ${num} and j.key not in (${skip})
        union all
        select s.trace_id as tid, j.key as name, ${val} as val, 1 as sp
          from records s, ${each('s')}
         where s.run_id in (${ids}) and s.type = 'llm' and ${num} and j.key not in (${spanSkip})
        union all
        select t.id as tid, 'latency_ms' as name, t.duration_ns / 1000000.0 as val, 0 as sp
          from records t
         where t.run_id in (${ids}) and t.type = 'trace' and t.duration_ns is not null
      ),
      r as (
        select tid, name,
               case when name = 'cost' then sum(val)
                    else coalesce(max(case when sp = 1 then val end), max(val)) end as val
          from v where val is not null group by tid, name
      ),
      st as (
        select name, count(*) as n, sum(val) as total, min(val) as lo, max(val) as hi from r group by name
      )
      select st.name, st.n, st.total, st.lo, st.hi, ${bucket} as b, count(*) as c
        from r join st on st.name = r.name
       group by st.name, st.n, st.total, st.lo, st.hi, ${bucket}`;
    const out = new Map<string, MetricStat>();
    for (const row of (await q.execute(this.db)).rows) {
      let m = out.get(row.name);
      if (!m) {
        m = {
          name: row.name,
          count: Number(row.n),
          sum: Number(row.total),
          lo: Number(row.lo),
          hi: Number(row.hi),
          buckets: new Map(),
        };
        out.set(row.name, m);
      }
      m.buckets.set(Number(row.b), Number(row.c));
    }
    return [...out.values()];
  }

  /** Rows (traces) of these experiments, and how many have an error (the trace's or an llm span's). */
  async rowCounts(runIds: string[]): Promise<RowCounts> {
    if (!runIds.length) return { rows: 0, errors: 0 };
    const ids = sql.join(runIds);
    const r = await sql<{ n: number; e: number }>`
      select count(*) as n,
             coalesce(sum(case when t.error_message is not null or exists (
               select 1 from records s where s.trace_id = t.id and s.type = 'llm' and s.error_message is not null
             ) then 1 else 0 end), 0) as e
        from records t where t.run_id in (${ids}) and t.type = 'trace'`.execute(this.db);
    return { rows: Number(r.rows[0]?.n ?? 0), errors: Number(r.rows[0]?.e ?? 0) };
  }

  /**
   * One page of a comparison in one query: the rows of these experiments keyed by dataset row
   * (index records_experiment_row), ordered by dataset row index (or by the spread of one score's
   * values across the experiments, largest first), paged, joined back to each row's traces and their
   * llm spans.
   */
  async comparePage(
    runIds: string[],
    opts: { sortBy?: string; offset: number; limit: number },
  ): Promise<ComparePage> {
    const ids = sql.join(runIds);
    const key = this.rowKey('t');
    const grouped = opts.sortBy
      ? await this.byScoreSpread(runIds, opts.sortBy)
      : await this.firstRows(runIds, opts.offset + opts.limit);
    const cols = (t: string) =>
      sql.join(
        [
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
          ...(t === 't' ? ['run_id', 'body'] : []),
        ].map((c) => sql`${sql.ref(`${t}.${c}`)} as ${sql.ref(`${t}_${c}`)}`),
      );
    const r = await sql<Record<string, any>>`
      with g as (${grouped.sql}),
      page as (
        select rk, ri, pos from (
          select rk, ri, row_number() over (order by (d is null), d desc, ri, rk) as pos from g
        ) o where pos > ${opts.offset} and pos <= ${opts.offset + opts.limit}
      )
      select page.rk, page.ri, page.pos, ${cols('t')}, ${cols('s')}
        from page
        join ${this.tracesByRow} on t.run_id in (${ids}) and t.type = 'trace' and ${key} = page.rk
        left join records s on s.trace_id = t.id and s.type = 'llm'
       order by page.pos`.execute(this.db);
    const keys: ComparePage['keys'] = [];
    const records: ComparePage['records'] = [];
    const seenKey = new Set<string>();
    const seenTrace = new Set<string>();
    const total = grouped.total;
    const pick = (row: Record<string, any>, t: string) =>
      Object.fromEntries(
        Object.entries(row)
          .filter(([k]) => k.startsWith(`${t}_`))
          .map(([k, v]) => [k.slice(2), v]),
      );
    for (const row of r.rows) {
      const k = String(row.rk);
      if (!seenKey.has(k)) {
        seenKey.add(k);
        const index = row.ri === null || row.ri === undefined ? null : Number(row.ri);
        keys.push({ key: k, index: index === null || index >= NO_INDEX ? null : index });
      }
      if (!seenTrace.has(row.t_id)) {
        seenTrace.add(row.t_id);
        records.push({ ...(pick(row, 't') as any), row_key: k });
      }
      if (row.s_id) records.push({ ...(pick(row, 's') as any), run_id: row.t_run_id, row_key: null });
    }
    return { total, keys, records };
  }

  /**
   * Every row of a comparison with the spread (largest minus smallest) of one score's values across
   * the experiments (a row's value: its llm span's, else its trace's): a full pass over the rows.
   */
  private async byScoreSpread(runIds: string[], name: string) {
    const ids = sql.join(runIds);
    const key = this.rowKey('t');
    const grouped = sql`select rk, min(ri) as ri, case when count(v) >= 2 then max(v) - min(v) end as d
      from (
        select ${key} as rk, ${this.rowIndex('t')} as ri, coalesce(sv.v, ${this.metric('t', name)}) as v
          from records t
          left join (
            select s.trace_id, max(${this.metric('s', name)}) as v
              from records s where s.run_id in (${ids}) and s.type = 'llm' group by s.trace_id
          ) sv on sv.trace_id = t.id
         where t.run_id in (${ids}) and t.type = 'trace'
      ) k
     group by rk`;
    const total = await sql<{ n: number }>`
      select count(distinct ${key}) as n from ${this.tracesByRow}
       where t.run_id in (${ids}) and t.type = 'trace'`.execute(this.db);
    return { total: Number(total.rows[0]?.n ?? 0), sql: grouped };
  }

  /**
   * The rows of a comparison in row order, enough for its first `upTo`: each experiment's first
   * entries of the index records_experiment_order (no full scan), merged by row. An experiment
   * that logged a row more than once (n entries, d rows) gives n - d more entries, so the first
   * `upTo` rows are always among them. Also the number of rows (count of distinct rows).
   */
  private async firstRows(runIds: string[], upTo: number) {
    const key = this.rowKey('t');
    const totalQ = await sql<{ n: number }>`
      select count(distinct ${key}) as n from ${this.tracesByRow}
       where t.run_id in (${sql.join(runIds)}) and t.type = 'trace'`.execute(this.db);
    // Each experiment's first `upTo` distinct rows (a row logged twice counts once), from the
    // records_experiment_order index.
    const firsts = runIds.map(
      (id, i) => sql`select * from (
        select distinct ${this.rowIndex('t')} as ri, ${key} as rk from records t
         where t.run_id = ${id} and t.type = 'trace'
         order by ri, rk limit ${upTo}
      ) f${sql.raw(String(i))}`,
    );
    return {
      total: Number(totalQ.rows[0]?.n ?? 0),
      sql: sql`select rk, min(ri) as ri, null as d from (${sql.join(firsts, sql` union all `)}) u group by rk`,
    };
  }

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
