/**
 * Signals runs and the signals they keep, and the selection a run reads from `records`: every
 * statement of the selection ranges over one of migration 028's partial indexes (errors by time;
 * traces by time with their latency, cost and id), so a window of a million records is read from
 * index entries and only the few selected rows are fetched.
 */
import { type Kysely, sql } from 'kysely';
import type { SelectedRecord, WindowFigures } from '../domain/signal-runs.ts';
import { SEVERITIES } from '../domain/signals.ts';
import type { Dialect } from '../query/sql-dialect.ts';
import { parseJson } from './db.ts';
import type { DB, SignalRunsTable, SignalsConfigurationsTable, SignalsTable } from './tables.ts';

export type SignalRunRow = SignalRunsTable;
export type SignalRow = SignalsTable;

const SELECTED = [
  'id',
  'type',
  'trace_id',
  'session_id',
  'name',
  'created_at',
  'status_code',
  'duration_ns',
] as const;

/** Which scores count as low: the run's scorer names, and the threshold of a numeric score. */
export interface ScoreCheck {
  names: string[];
  below: number;
}
const NO_SCORES: ScoreCheck = { names: [], below: 0 };

/** Traces the medians of latency and cost are taken over (the window's latest). */
const MEDIAN_SAMPLE = 10_000;

export interface Window {
  runId: string;
  startUs: number;
  endUs: number;
}

export class SignalRunsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  /** Configurations whose scheduled runs are on. */
  scheduled(): Promise<SignalsConfigurationsTable[]> {
    return this.db
      .selectFrom('signals_configurations')
      .selectAll()
      .where('run_mode', '=', 'SCHEDULED')
      .where('scheduled_runs_enabled', '=', 1)
      .execute();
  }

  async lastSlot(runId: string): Promise<number | null> {
    const row = await this.db
      .selectFrom('signal_runs')
      .select((eb) => eb.fn.max('slot_time').as('slot'))
      .where('run_id', '=', runId)
      .executeTakeFirst();
    return row?.slot === null || row?.slot === undefined ? null : Number(row.slot);
  }

  /** Inserts a run; false when its (run, slot) has one already (another process, or before a restart). */
  async insert(row: SignalRunRow): Promise<boolean> {
    const r = await this.db
      .insertInto('signal_runs')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    return r !== undefined;
  }

  /** Takes a queued run for this process; false when another took it. */
  async claim(id: string, nowUs: number): Promise<boolean> {
    const r = await this.db
      .updateTable('signal_runs')
      .set({ status: 'running', started_at: nowUs })
      .where('id', '=', id)
      .where('status', '=', 'queued')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Queued runs, and runs left running before `staleUs` (their process stopped), oldest first. */
  async waiting(staleUs: number): Promise<SignalRunRow[]> {
    return this.db
      .selectFrom('signal_runs')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb('status', '=', 'queued'),
          eb.and([eb('status', '=', 'running'), eb('started_at', '<', staleUs)]),
        ]),
      )
      .orderBy('created_at')
      .limit(100)
      .execute();
  }

  /** A run left running by a stopped process goes back to the queue. */
  async requeue(id: string, startedAt: number | null): Promise<void> {
    await this.db
      .updateTable('signal_runs')
      .set({ status: 'queued' })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where('started_at', '=', startedAt)
      .execute();
  }

  async finish(id: string, fields: Partial<SignalRunRow>): Promise<void> {
    await this.db.updateTable('signal_runs').set(fields).where('id', '=', id).execute();
  }

  get(id: string): Promise<SignalRunRow | undefined> {
    return this.db.selectFrom('signal_runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  list(runId: string, limit: number, offset: number): Promise<SignalRunRow[]> {
    return this.db
      .selectFrom('signal_runs')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
  }

  /** Where the next run's window starts: the end of the latest finished run's window. */
  async lastWindowEnd(runId: string): Promise<number | null> {
    const row = await this.db
      .selectFrom('signal_runs')
      .select((eb) => eb.fn.max('window_end').as('end'))
      .where('run_id', '=', runId)
      .where('status', 'in', ['succeeded', 'partial'])
      .executeTakeFirst();
    return row?.end === null || row?.end === undefined ? null : Number(row.end);
  }

  // --- the selection -------------------------------------------------------------------------------

  private cost() {
    return this.dialect === 'postgres'
      ? sql<
          number | null
        >`(case when jsonb_typeof(metrics -> 'cost') = 'number' then (metrics ->> 'cost')::float8 end)`
      : sql<number | null>`json_extract(metrics, '$.cost')`;
  }

  private traces(w: Window) {
    return this.db
      .selectFrom('records')
      .where('run_id', '=', w.runId)
      .where('type', '=', 'trace')
      .where('created_at', '>=', w.startUs)
      .where('created_at', '<', w.endUs);
  }

  private window(w: Window) {
    return this.db
      .selectFrom('records')
      .where('run_id', '=', w.runId)
      .where('created_at', '>=', w.startUs)
      .where('created_at', '<', w.endUs);
  }

  /** The score `name` in a record's metrics is false, or a number below `below` (parameters only). */
  private lowScore(name: string, below: number) {
    if (this.dialect === 'postgres')
      return sql<boolean>`((metrics -> ${name}) = 'false'::jsonb or (jsonb_typeof(metrics -> ${name}) = 'number' and (metrics ->> ${name})::float8 < ${below}))`;
    const path = `$."${name.replaceAll('"', '\\"')}"`;
    return sql<boolean>`(json_type(metrics, ${path}) = 'false' or (json_type(metrics, ${path}) in ('integer', 'real') and json_extract(metrics, ${path}) < ${below}))`;
  }

  /** The names of the run's scorers (their scores are the `metrics/<name>` of its records). */
  async scoreNames(runId: string): Promise<string[]> {
    const r = await this.db
      .selectFrom('run_scorer_settings')
      .select('scorers')
      .where('run_id', '=', runId)
      .executeTakeFirst();
    const list = parseJson<{ name?: unknown }[]>(r?.scorers) ?? [];
    return [...new Set(list.map((x) => x.name).filter((n): n is string => typeof n === 'string'))];
  }

  private errors(w: Window) {
    return this.db
      .selectFrom('records')
      .where('run_id', '=', w.runId)
      .where('status_code', '>=', 400)
      .where('created_at', '>=', w.startUs)
      .where('created_at', '<', w.endUs);
  }

  /** The window's counts: records, error groups, and the median trace latency and cost. */
  async figures(w: Window): Promise<WindowFigures> {
    const count = await this.db
      .selectFrom('records')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('run_id', '=', w.runId)
      .where('created_at', '>=', w.startUs)
      .where('created_at', '<', w.endUs)
      .executeTakeFirstOrThrow();
    const errors = await this.errors(w)
      .select(['name', 'status_code', (eb) => eb.fn.countAll<number>().as('count')])
      .groupBy(['name', 'status_code'])
      .orderBy('count', 'desc')
      .limit(20)
      .execute();
    return {
      records: Number(count.n),
      errors: errors.map((e) => ({
        name: e.name,
        status_code: Number(e.status_code),
        count: Number(e.count),
      })),
      medianDurationNs: await this.median(w, sql<number | null>`duration_ns`),
      medianCost: await this.median(w, this.cost()),
    };
  }

  /**
   * The median over the window's latest MEDIAN_SAMPLE traces: what an outlier is measured against.
   * Bounded, so a window of a million records sorts ten thousand values, not all of them.
   */
  private async median(w: Window, value: ReturnType<typeof sql<number | null>>): Promise<number | null> {
    const rows = await this.traces(w)
      .select(value.as('v'))
      .orderBy('created_at', 'desc')
      .limit(MEDIAN_SAMPLE)
      .execute();
    const values = rows
      .map((r) => r.v)
      .filter((v) => v !== null && v !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    return values.length ? values[Math.floor((values.length - 1) / 2)] : null;
  }

  /**
   * At most `limit` records of the window: errors first, then low scores of the run's scorers, then
   * the slowest and the costliest traces, then the latest others; each once, with the reason it was
   * taken.
   */
  async select(w: Window, limit: number, scores: ScoreCheck = NO_SCORES): Promise<SelectedRecord[]> {
    const out = new Map<string, SelectedRecord>();
    const take = (rows: Record<string, unknown>[], reason: SelectedRecord['reason']) => {
      for (const r of rows) {
        if (out.size >= limit) return;
        if (!out.has(String(r.id))) out.set(String(r.id), toSelected(r, reason));
      }
    };
    const share = Math.max(1, Math.floor(limit / 4));
    take(
      await this.errors(w)
        .select(SELECTED)
        .select(this.cost().as('cost'))
        .orderBy('created_at', 'desc')
        .limit(share)
        .execute(),
      'error',
    );
    // Low scores: a boolean score false or a number below the threshold, on any record type.
    for (const name of scores.names) {
      if (out.size >= limit) break;
      const rows = await this.window(w)
        .select(SELECTED)
        .select(this.cost().as('cost'))
        .where(this.lowScore(name, scores.below))
        .orderBy('created_at', 'desc')
        .limit(share)
        .execute();
      take(
        rows.map((r) => ({ ...r, score: name })),
        'low_score',
      );
    }
    // Ids from the index alone, then the few rows.
    for (const [reason, value] of [
      ['latency', sql<number | null>`duration_ns`],
      ['cost', this.cost()],
    ] as const) {
      const ids = await this.traces(w)
        .select('id')
        .where(value, 'is not', null)
        // `nulls last`: the order of PostgreSQL's cost index (031); the same rows, nulls being excluded.
        .orderBy(sql`${value} desc nulls last`)
        .limit(share)
        .execute();
      take(await this.rows(ids.map((r) => r.id)), reason);
    }
    const recent = await this.traces(w).select('id').orderBy('created_at', 'desc').limit(limit).execute();
    take(
      await this.rows(
        recent
          .map((r) => r.id)
          .filter((id) => !out.has(id))
          .slice(0, limit - out.size),
      ),
      'recent',
    );
    return [...out.values()];
  }

  private async rows(ids: string[]): Promise<Record<string, unknown>[]> {
    if (!ids.length) return [];
    const rows = await this.db
      .selectFrom('records')
      .select(SELECTED)
      .select(this.cost().as('cost'))
      .where('id', 'in', ids)
      .execute();
    const order = new Map(ids.map((id, i) => [id, i]));
    return rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  /** The input and output texts of the sampled records. */
  async texts(ids: string[]): Promise<Map<string, { input: string; output: string }>> {
    if (!ids.length) return new Map();
    const rows = await this.db
      .selectFrom('records')
      .select(['id', 'input_text', 'output_text'])
      .where('id', 'in', ids)
      .execute();
    return new Map(rows.map((r) => [r.id, { input: r.input_text ?? '', output: r.output_text ?? '' }]));
  }

  // --- signals ----------------------------------------------------------------------------------

  open(runId: string, limit: number): Promise<SignalRow[]> {
    return this.db
      .selectFrom('signals')
      .selectAll()
      .where('run_id', '=', runId)
      .where('status', '=', 'open')
      .orderBy('last_seen', 'desc')
      .limit(limit)
      .execute();
  }

  async insertSignal(row: SignalRow): Promise<void> {
    await this.db.insertInto('signals').values(row).execute();
  }

  async updateSignal(id: string, fields: Partial<SignalRow>): Promise<void> {
    await this.db.updateTable('signals').set(fields).where('id', '=', id).execute();
  }

  signal(id: string): Promise<SignalRow | undefined> {
    return this.db.selectFrom('signals').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** A log stream's signals, most severe first, then the latest seen. */
  signals(
    runId: string,
    f: { severities?: string[]; statuses?: string[]; signalRunId?: string },
    limit: number,
    offset: number,
  ): Promise<SignalRow[]> {
    let q = this.db.selectFrom('signals').selectAll().where('run_id', '=', runId);
    if (f.severities?.length) q = q.where('severity', 'in', f.severities);
    if (f.statuses?.length) q = q.where('status', 'in', f.statuses);
    if (f.signalRunId) q = q.where('last_signal_run_id', '=', f.signalRunId);
    const rank = sql<number>`case severity ${sql.join(
      SEVERITIES.map((s, i) => sql`when ${sql.lit(s)} then ${sql.lit(i)}`),
      sql` `,
    )} else -1 end`;
    return q
      .orderBy(rank, 'desc')
      .orderBy('last_seen', 'desc')
      .orderBy('id')
      .limit(limit)
      .offset(offset)
      .execute();
  }
}

function toSelected(r: Record<string, unknown>, reason: SelectedRecord['reason']): SelectedRecord {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: String(r.id),
    type: String(r.type),
    trace_id: (r.trace_id as string | null) ?? null,
    session_id: (r.session_id as string | null) ?? null,
    name: String(r.name),
    created_at: Number(r.created_at),
    status_code: num(r.status_code),
    duration_ns: num(r.duration_ns),
    cost: num(r.cost),
    reason,
    ...(typeof r.score === 'string' ? { score: r.score } : {}),
  };
}
