/**
 * Scorers, their immutable versions, runs' scorer settings and score results (migration 023).
 */
import { type Kysely, sql } from 'kysely';
import { newId } from '../domain/ids.ts';
import { type InlineTallies, SCORE_BATCH_JOB, type ScoreBatch, batchPairs } from '../domain/scoring-plan.ts';
import type { Dialect } from '../query/sql-dialect.ts';
import { toRow } from '../domain/ingest-plan.ts';
import type { RecordRow, StoredRecord } from '../domain/records.ts';
import { inSnapshot, parseJson, toJson } from './db.ts';
import type { DB } from './tables.ts';

export interface ScorerRow {
  id: string;
  name: string;
  scorer_type: string;
  description: string | null;
  tags: string[];
  defaults: Record<string, unknown> | null;
  output_type: string | null;
  input_type: string | null;
  scoreable_node_types: string[] | null;
  default_version_id: string | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface VersionRow {
  id: string;
  scorer_id: string;
  version: number;
  kind: 'llm' | 'rule';
  config: Record<string, unknown>;
  created_by: string | null;
  created_at: number;
}

export interface SettingsRow {
  run_id: string;
  project_id: string;
  scorers: Record<string, unknown>[];
  segment_filters: Record<string, unknown>[];
  paused_reason: string | null;
  /** The integration LLM judges call (the saver's, checked readable at save time). */
  integration_id: string | null;
  updated_at: number;
}

export interface ResultRow {
  record_id: string;
  scorer_id: string;
  status: string;
  reason: string | null;
  info: Record<string, unknown>;
  cost: number | null;
  /** The scorer version it was written for (null: before migration 034, or a batched task's). */
  version_id?: string | null;
}

const scorerOf = (r: any): ScorerRow => ({
  ...r,
  tags: parseJson<string[]>(r.tags) ?? [],
  defaults: parseJson(r.defaults),
  scoreable_node_types: parseJson(r.scoreable_node_types),
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
});
const versionOf = (r: any): VersionRow => ({
  ...r,
  version: Number(r.version),
  config: parseJson(r.config) ?? {},
  created_at: Number(r.created_at),
});

export class ScorersRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  async create(s: Omit<ScorerRow, 'id' | 'created_at' | 'updated_at' | 'default_version_id'>, now: number) {
    const id = newId();
    await this.db
      .insertInto('scorers')
      .values({
        ...s,
        id,
        tags: toJson(s.tags) as string,
        defaults: toJson(s.defaults),
        scoreable_node_types: toJson(s.scoreable_node_types),
        default_version_id: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    return id;
  }

  async byId(id: string): Promise<ScorerRow | null> {
    const r = await this.db.selectFrom('scorers').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? scorerOf(r) : null;
  }

  async byName(name: string): Promise<ScorerRow | null> {
    const r = await this.db.selectFrom('scorers').selectAll().where('name', '=', name).executeTakeFirst();
    return r ? scorerOf(r) : null;
  }

  async all(): Promise<ScorerRow[]> {
    return (await this.db.selectFrom('scorers').selectAll().orderBy('name').execute()).map(scorerOf);
  }

  async update(id: string, set: Partial<ScorerRow>, now: number): Promise<void> {
    const v: Record<string, unknown> = { ...set, updated_at: now };
    for (const k of ['tags', 'defaults', 'scoreable_node_types'] as const)
      if (k in set) v[k] = toJson(set[k]);
    await this.db
      .updateTable('scorers')
      .set(v as any)
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('scorers').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** A new version (number = last + 1), made the scorer's default. */
  async addVersion(
    scorerId: string,
    kind: 'llm' | 'rule',
    config: Record<string, unknown>,
    by: string | null,
    now: number,
  ): Promise<VersionRow> {
    return this.db.transaction().execute(async (tx) => {
      const last = await tx
        .selectFrom('scorer_versions')
        .select((eb) => eb.fn.max('version').as('v'))
        .where('scorer_id', '=', scorerId)
        .executeTakeFirst();
      const row = {
        id: newId(),
        scorer_id: scorerId,
        version: Number(last?.v ?? 0) + 1,
        kind,
        config: toJson(config) as string,
        created_by: by,
        created_at: now,
      };
      await tx.insertInto('scorer_versions').values(row).execute();
      await tx
        .updateTable('scorers')
        .set({ default_version_id: row.id, updated_at: now })
        .where('id', '=', scorerId)
        .execute();
      return versionOf(row);
    });
  }

  async versions(scorerId: string): Promise<VersionRow[]> {
    const rows = await this.db
      .selectFrom('scorer_versions')
      .selectAll()
      .where('scorer_id', '=', scorerId)
      .orderBy('version')
      .execute();
    return rows.map(versionOf);
  }

  async versionById(id: string): Promise<VersionRow | null> {
    const r = await this.db.selectFrom('scorer_versions').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? versionOf(r) : null;
  }

  async setDefault(scorerId: string, versionId: string, now: number): Promise<void> {
    await this.db
      .updateTable('scorers')
      .set({ default_version_id: versionId, updated_at: now })
      .where('id', '=', scorerId)
      .execute();
  }

  // ---- run settings ------------------------------------------------------------------------

  async settings(runId: string): Promise<SettingsRow | null> {
    const r = await this.db
      .selectFrom('run_scorer_settings')
      .selectAll()
      .where('run_id', '=', runId)
      .executeTakeFirst();
    return r ? settingsOf(r) : null;
  }

  async projectSettings(projectId: string): Promise<SettingsRow[]> {
    const rows = await this.db
      .selectFrom('run_scorer_settings')
      .selectAll()
      .where('project_id', '=', projectId)
      .execute();
    return rows.map(settingsOf);
  }

  async saveSettings(s: Omit<SettingsRow, 'paused_reason'>, by: string | null): Promise<void> {
    const v = {
      run_id: s.run_id,
      project_id: s.project_id,
      scorers: toJson(s.scorers) as string,
      segment_filters: toJson(s.segment_filters) as string,
      paused_reason: null,
      paused_at: null,
      integration_id: s.integration_id,
      updated_by: by,
      updated_at: s.updated_at,
    };
    await this.db
      .insertInto('run_scorer_settings')
      .values(v)
      .onConflict((oc) =>
        oc.column('run_id').doUpdateSet({
          scorers: v.scorers,
          segment_filters: v.segment_filters,
          integration_id: v.integration_id,
          // Saving again (a fixed integration, other scorers) lifts a pause.
          paused_reason: null,
          paused_at: null,
          updated_by: by,
          updated_at: s.updated_at,
        }),
      )
      .execute();
  }

  async setPaused(runId: string, reason: string | null, at: number | null = null): Promise<void> {
    await this.db
      .updateTable('run_scorer_settings')
      .set({ paused_reason: reason, paused_at: reason === null ? null : at })
      .where('run_id', '=', runId)
      .execute();
  }

  /** Paused runs whose integration was changed (its token or settings saved) since the pause. */
  async fixedRuns(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('run_scorer_settings as s')
      .innerJoin('integrations as i', 'i.id', 's.integration_id')
      .select('s.run_id')
      .where('s.paused_reason', 'is not', null)
      .whereRef('i.updated_at', '>', 's.paused_at')
      .execute();
    return rows.map((r) => r.run_id);
  }

  /** Runs whose LLM scorers are paused now. */
  async pausedRuns(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('run_scorer_settings')
      .select('run_id')
      .where('paused_reason', 'is not', null)
      .execute();
    return rows.map((r) => r.run_id);
  }

  /** Records of a project by id, as ingestion writes them (backfills decide on them). */
  async recordRows(projectId: string, ids: string[]): Promise<RecordRow[]> {
    if (!ids.length) return [];
    const rows = await this.db
      .selectFrom('records')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', 'in', ids)
      .execute();
    return rows.map((r) => toRow(r as unknown as StoredRecord));
  }

  /** Which of `ids` are records of the project (still: a batch may outlive a deleted record). */
  async existing(projectId: string, ids: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await this.db
        .selectFrom('records')
        .select('id')
        .where('project_id', '=', projectId)
        .where('id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const r of rows) out.add(r.id);
    }
    return out;
  }

  // ---- results -------------------------------------------------------------------------------

  /** Results written (replacing the earlier ones, or, with `keep`, only where a pair has none). */
  async putResults(
    rows: (ResultRow & { project_id: string; run_id: string })[],
    now: number,
    opts: { keep?: boolean } = {},
  ): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      const values = rows.slice(i, i + 500).map((r) => ({
        ...r,
        info: toJson(r.info) as string,
        updated_at: now,
      }));
      await this.db
        .insertInto('score_results')
        .values(values)
        .onConflict((oc) =>
          opts.keep
            ? oc.columns(['record_id', 'scorer_id']).doNothing()
            : oc.columns(['record_id', 'scorer_id']).doUpdateSet((eb) => ({
                status: eb.ref('excluded.status'),
                reason: eb.ref('excluded.reason'),
                info: eb.ref('excluded.info'),
                cost: eb.ref('excluded.cost'),
                updated_at: eb.ref('excluded.updated_at'),
                version_id: eb.ref('excluded.version_id'),
              })),
        )
        .execute();
    }
  }

  /**
   * A task started: its result becomes `computing` unless it already ended (another worker finished
   * it while this one's lease was being given back).
   */
  async markComputing(recordId: string, scorerId: string, reason: string, now: number): Promise<void> {
    await this.db
      .updateTable('score_results')
      .set({ status: 'computing', reason, updated_at: now })
      .where('record_id', '=', recordId)
      .where('scorer_id', '=', scorerId)
      .where('status', 'in', ['pending', 'computing'])
      .execute();
  }

  async results(recordIds: string[]): Promise<ResultRow[]> {
    if (!recordIds.length) return [];
    const out: ResultRow[] = [];
    for (let i = 0; i < recordIds.length; i += 500) {
      const rows = await this.db
        .selectFrom('score_results')
        .select(['record_id', 'scorer_id', 'status', 'reason', 'info', 'cost', 'version_id'])
        .where('record_id', 'in', recordIds.slice(i, i + 500))
        .execute();
      for (const r of rows)
        out.push({ ...r, info: parseJson(r.info) ?? {}, cost: r.cost === null ? null : Number(r.cost) });
    }
    return out;
  }

  /**
   * The tasks (record id, scorer id) of the score batches of `runIds` not yet expanded, among those
   * written at `stamps` (epoch µs: a batch is created at its records' updated_at).
   */
  async batchedTasks(runIds: string[], stamps: number[]): Promise<[string, string][]> {
    const out: [string, string][] = [];
    if (!runIds.length) return out;
    for (let i = 0; i < stamps.length; i += 500) {
      const rows = await this.openBatches()
        .where('run_id', 'in', runIds)
        .where('created_at', 'in', stamps.slice(i, i + 500))
        .execute();
      for (const r of rows) out.push(...batchPairs(batchOf(r.payload)));
    }
    return out;
  }

  /**
   * A run's result counts and the tasks still only in its unexpanded batches, from one snapshot: a
   * batch expanded between two separate reads would be counted in neither.
   */
  async taskCounts(runId: string) {
    return inSnapshot(this.db, this.dialect, async (trx) => {
      const repo = new ScorersRepo(trx, this.dialect);
      return { results: await repo.resultCounts(runId), batched: await repo.batchedCounts(runId) };
    });
  }

  /**
   * How many tasks of each scorer wait only in a run's score batches not yet expanded (a task
   * written twice counts once; one whose result row exists is counted with the results).
   */
  async batchedCounts(runId: string): Promise<Map<string, number>> {
    const pairs = new Map<string, Set<string>>();
    for (const r of await this.openBatches().where('run_id', '=', runId).execute())
      for (const [rec, scorer] of batchPairs(batchOf(r.payload))) {
        const set = pairs.get(rec) ?? new Set<string>();
        pairs.set(rec, set);
        set.add(scorer);
      }
    for (const r of await this.results([...pairs.keys()])) pairs.get(r.record_id)?.delete(r.scorer_id);
    const out = new Map<string, number>();
    for (const set of pairs.values()) for (const scorer of set) out.set(scorer, (out.get(scorer) ?? 0) + 1);
    return out;
  }

  private openBatches() {
    return this.db
      .selectFrom('jobs')
      .select('payload')
      .where('kind', '=', SCORE_BATCH_JOB)
      .where('status', 'in', ['pending', 'running']);
  }

  /** A run's results counted by scorer, state and reason, with their cost. */
  async resultCounts(runId: string) {
    const rows = await this.db
      .selectFrom('score_results')
      .select([
        'scorer_id',
        'status',
        'reason',
        (eb) => eb.fn.countAll<number>().as('n'),
        (eb) => eb.fn.sum<number>('cost').as('cost'),
      ])
      .where('run_id', '=', runId)
      .groupBy(['scorer_id', 'status', 'reason'])
      .execute();
    return rows.map((r) => ({ ...r, n: Number(r.n), cost: r.cost === null ? 0 : Number(r.cost) }));
  }

  /**
   * A run's inline scorer tallies read from its records (when the dashboard rollups cannot answer):
   * an index count per type, and one pass over the run's metrics for the names.
   */
  async inlineTallies(runId: string, names: string[]): Promise<InlineTallies> {
    const types = new Map<string, number>();
    const rows = await this.db
      .selectFrom('records')
      .select(['type', (eb) => eb.fn.countAll<number>().as('n')])
      .where('run_id', '=', runId)
      .groupBy('type')
      .execute();
    for (const r of rows) types.set(r.type, Number(r.n));
    const scored = new Map<string, number>();
    if (names.length) {
      const q =
        this.dialect === 'postgres'
          ? sql<{ key: string; n: string }>`select j.key, count(*) as n
              from records r cross join lateral jsonb_each(r.metrics) j
              where r.run_id = ${runId} and j.key in (${sql.join(names)}) and jsonb_typeof(j.value) = 'number'
              group by j.key`
          : sql<{ key: string; n: number }>`select j.key, count(*) as n
              from records r, json_each(r.metrics) j
              where r.run_id = ${runId} and j.key in (${sql.join(names)}) and j.type in ('integer', 'real')
              group by j.key`;
      for (const r of (await q.execute(this.db)).rows) scored.set(r.key, Number(r.n));
    }
    return { types, scored };
  }

  /** Spend of a run's scores since `since` (µs). */
  async spendSince(runId: string, since: number): Promise<number> {
    const r = await this.db
      .selectFrom('score_results')
      .select((eb) => eb.fn.sum<number>('cost').as('cost'))
      .where('run_id', '=', runId)
      .where('updated_at', '>=', since)
      .executeTakeFirst();
    return Number(r?.cost ?? 0);
  }
}

function batchOf(payload: unknown): ScoreBatch {
  return (parseJson(payload) as ScoreBatch | null) ?? { groups: [] };
}

function settingsOf(r: any): SettingsRow {
  return {
    run_id: r.run_id,
    project_id: r.project_id,
    scorers: parseJson(r.scorers) ?? [],
    segment_filters: parseJson(r.segment_filters) ?? [],
    paused_reason: r.paused_reason,
    integration_id: r.integration_id ?? null,
    updated_at: Number(r.updated_at),
  };
}
