/**
 * The ingest write path: runs an ingest flow (store/ingest-flow.ts) in ONE transaction and applies its
 * plan. A batch is written whole or not at all.
 *
 * SQLite: the raw better-sqlite3 handle, statements prepared once, multi-row inserts, everything
 * synchronous inside `db.transaction` (no other request can interleave). PostgreSQL: one pooled
 * client, multi-row `INSERT`s and `ON CONFLICT` upserts; rows a batch will change are locked
 * (`FOR UPDATE`, in id order), and a transaction that loses a race (two first writes of one id,
 * a deadlock) runs again from the start.
 */
import type SQLite from 'better-sqlite3';
import type pg from 'pg';
import { newId } from '../domain/ids.ts';
import type { CatalogueEntry, ModelSeen, Plan, TokenDelta } from '../domain/ingest-plan.ts';
import { RECORD_COLUMNS, type RecordRow, type StoredRecord } from '../domain/records.ts';
import { type RollupRecord, rollupDelta } from '../domain/rollups.ts';
import { scoreBatchesOf } from '../domain/scoring-plan.ts';
import { jobRow } from './jobs.ts';
import { type Store, ingestWriterPragmas } from './db.ts';
import type { Flow, FlowResult, Read } from './ingest-flow.ts';
import { SQLITE_DELTA, SQLITE_GAP } from './rollups.ts';
import { retryTransient } from './retry.ts';
import { SqliteWriter, type Step } from './sqlite-writer.ts';

const NCOLS = RECORD_COLUMNS.length;
/** A day's cost moves by the batch's change; it stays null until some span of the day has a cost. */
const COST_SUM =
  'cost = case when excluded.cost is null then token_usage.cost else coalesce(token_usage.cost, 0) + excluded.cost end';
/**
 * Columns a write may change. Ids, the run, the type, created_at and the tree links never change, and
 * leaving the indexed ones out of the UPDATE spares SQLite the index maintenance.
 */
const MUTABLE = RECORD_COLUMNS.filter(
  (c) =>
    !['id', 'project_id', 'run_id', 'type', 'created_at', 'session_id', 'trace_id', 'parent_id'].includes(c),
);

export interface IngestStore {
  /** `records`: about how many records the flow writes (a hint for grouping commits). */
  run<R>(flow: () => Flow<R>, records?: number): Promise<FlowResult<R>>;
  /** Raw baseline for the benchmark: inserts ready rows as one batch (no planning, no aggregates). */
  insertRaw(rows: RecordRow[]): Promise<void>;
  /** Once the writes under way are done, stops what the store started. */
  close(): Promise<void>;
}

export interface IngestOptions {
  /**
   * Keep the dashboard rollups (store/rollups.ts; default on). Without, the log streams written are
   * marked as gaps (their dashboards scan until rebuilt).
   */
  rollups?: boolean;
}

export function ingestStore(store: Store, opts: IngestOptions = {}): IngestStore {
  const rollups = opts.rollups ?? true;
  return store.dialect === 'sqlite' ? new SqliteIngest(store, rollups) : new PgIngest(store, rollups);
}

/** A plan's rollup delta (domain/rollups.ts rollupDelta). */
function rollupDeltaOf(plan: Plan): string {
  return rollupDelta(
    plan.inserts as unknown as RollupRecord[],
    plan.updates.map((r, i) => [plan.replaced[i], r] as unknown as [RollupRecord, RollupRecord]),
  );
}

/**
 * A plan's LLM score tasks as rows: a batch job per run (domain/scoring-plan.ts SCORE_BATCH_JOB),
 * created at the rows' updated_at so that readers find a task's batch from its record.
 */
const JOB_COLUMNS = Object.keys(
  jobRow({ kind: '', key: '', projectId: null, runId: null, payload: null, maxAttempts: 0 }, 0),
);
function scoreBatchValues(plan: Plan, projectId: string): unknown[][] {
  const at = plan.writtenAt / 1000;
  return scoreBatchesOf(plan.scoreTasks, projectId, newId).map((j) => Object.values(jobRow(j, at)));
}
const JOB_INSERT = `insert into jobs (${JOB_COLUMNS.join(', ')}) values`;
const tuple = (n: number) => `(${Array.from({ length: n }, () => '?').join(', ')})`;

/** A day's token usage row as both stores insert it (its columns in the order of their INSERTs). */
function tokenUsageValues(t: TokenDelta, projectId: string, runId: string, now: number): unknown[] {
  return [
    newId(),
    projectId,
    runId,
    t.day,
    t.input_tokens,
    t.output_tokens,
    t.cache_read_input_tokens,
    t.cache_creation_input_tokens,
    t.cost,
    t.day,
    now,
  ];
}

function rowValues(rows: RecordRow[], out: unknown[] = []): unknown[] {
  for (const r of rows) for (let i = 0; i < NCOLS; i++) out.push(r[RECORD_COLUMNS[i]]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// SQLite

const SQLITE_CHUNK = 32;
const SQLITE_ID_CHUNK = 200;
/**
 * Group commit: a drain that has a large request to write (at least GROUP_MIN_RECORDS) starts
 * GROUP_WAIT_MS later, or later still while the thread is busy (parsing the next requests), so that
 * requests arriving together commit together. Most of a commit's cost does not grow with its size:
 * each random id dirties a page of the id index, and a page dirtied by several requests is written
 * once (store layer, 200,000 records: about 45 µs of CPU per record in transactions of 1,000, 35 in
 * transactions of 4,000). Small requests (a session, a PATCH) are not held back.
 */
const GROUP_WAIT_MS = 10;
const GROUP_MIN_RECORDS = 100;

const RECORD_TUPLE = `(${RECORD_COLUMNS.map(() => '?').join(', ')})`;
const SQLITE = {
  insertOne: `insert or rollback into records (${RECORD_COLUMNS.join(', ')}) values ${RECORD_TUPLE}`,
  insertChunk: `insert or rollback into records (${RECORD_COLUMNS.join(', ')}) values ${Array.from({ length: SQLITE_CHUNK }, () => RECORD_TUPLE).join(', ')}`,
  update: `update records set ${MUTABLE.map((c) => `${c} = ?`).join(', ')} where id = ?`,
  byIds: `select * from records where id in (${Array.from({ length: SQLITE_ID_CHUNK }, () => '?').join(', ')})`,
  byExternal:
    "select * from records where run_id = ? and type = 'session' and external_id = ? and external_id is not null",
  runCounts: 'update runs set num_traces = num_traces + ?, num_spans = num_spans + ? where id = ?',
  runUserSession:
    'update runs set has_user_created_sessions = 1 where id = ? and has_user_created_sessions = 0',
  tokenUpsert: `insert into token_usage (id, project_id, log_stream_id, day, input_tokens, output_tokens,
         cache_read_input_tokens, cache_creation_input_tokens, cost, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (log_stream_id, day) do update set
         input_tokens = input_tokens + excluded.input_tokens,
         output_tokens = output_tokens + excluded.output_tokens,
         cache_read_input_tokens = cache_read_input_tokens + excluded.cache_read_input_tokens,
         cache_creation_input_tokens = cache_creation_input_tokens + excluded.cache_creation_input_tokens,
         ${COST_SUM},
         updated_at = excluded.updated_at`,
  modelUpsert: `insert into run_models (run_id, model, first_seen, last_seen) values (?, ?, ?, ?)
       on conflict (run_id, model) do update set
         first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen)
       where excluded.first_seen < first_seen or excluded.last_seen > last_seen`,
  llmPage: `select * from records where run_id = ? and type = 'llm' and (created_at, id) > (?, ?)
       order by created_at, id limit ?`,
  // Takes the write lock of the records' database only (see `writeGroup`).
  lockMain: 'update runs set num_traces = num_traces where 0',
  jobInsert: `${JOB_INSERT} ${tuple(JOB_COLUMNS.length)}`,
  catalogueUpsert: `insert into column_catalogue (run_id, column_id, record_type, data_type, first_seen, last_seen)
       values (?, ?, ?, ?, ?, ?)
       on conflict (run_id, column_id, record_type, data_type) do update set
         first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen)
       where excluded.first_seen < first_seen or excluded.last_seen > last_seen`,
};

interface Queued {
  flow: () => Flow<unknown>;
  resolve: (r: FlowResult<unknown>) => void;
  reject: (err: unknown) => void;
}

/**
 * The rows a group's plans have written so far, by id and (sessions) by run and external id: what its
 * later flows read over the stored rows (SqliteIngest.read). Plans never change the rows they read, so
 * a planned row is handed out as it is. A group planned while the group before it commits starts
 * with that group's rows, which the store may not show yet.
 */
class PlannedRows {
  private readonly rows = new Map<string, RecordRow>();
  private readonly sessionsByExternal = new Map<string, RecordRow>();
  /** The rows this group's own plans wrote (a group planned after it starts with them). */
  private readonly own: RecordRow[] = [];

  constructor(before?: PlannedRows) {
    if (before) for (const row of before.own) this.put(row);
  }

  private put(row: RecordRow): void {
    this.rows.set(row.id, row);
    if (row.type === 'session' && row.external_id !== null)
      this.sessionsByExternal.set(`${row.run_id}\u0000${row.external_id}`, row);
  }

  add(plan: Plan): void {
    for (const rows of [plan.inserts, plan.updates])
      for (const row of rows) {
        this.put(row);
        this.own.push(row);
      }
  }

  /** The records of `ids`: planned ones over the stored ones. */
  byIds(ids: string[], stored: StoredRecord[]): StoredRecord[] {
    if (!this.rows.size) return stored;
    const out = new Map<string, StoredRecord>();
    for (const row of stored) out.set(row.id, row);
    for (const id of ids) {
      const row = this.rows.get(id);
      if (row) out.set(id, row as unknown as StoredRecord);
    }
    return [...out.values()];
  }

  /** The sessions of a run with these external ids: planned ones over the stored ones. */
  sessions(runId: string, externalIds: string[], stored: StoredRecord[]): StoredRecord[] {
    if (!this.rows.size) return stored;
    const out = new Map<string, StoredRecord>();
    for (const row of stored) out.set(row.id, (this.rows.get(row.id) as unknown as StoredRecord) ?? row);
    for (const x of externalIds) {
      const row = this.sessionsByExternal.get(`${runId}\u0000${x}`);
      if (row) out.set(row.id, row as unknown as StoredRecord);
    }
    return [...out.values()];
  }
}

/** A failure of the writer (not a refusal of the flow): the whole group goes back. */
class WriteFailed extends Error {
  constructor(readonly reason: unknown) {
    super('write failed');
  }
}

/** The group before failed, and the plans made over its rows with it: the group is planned again. */
class PlanAgain extends Error {}

/** A group whose writes are all sent, while its commit is awaited. */
interface Committing {
  /** Its rows: the next group's plans read them over the stored ones until it commits. */
  planned: PlannedRows;
  /** True once it committed and its jobs were answered; false when it failed (its jobs then went alone). */
  done: Promise<boolean>;
}

/** What a group's plans read through: its planned rows, and the writer once the group is live there. */
interface GroupReads {
  planned: PlannedRows;
  /** Resolves once the group's transaction is open on the writer (false: the group before failed). */
  live: Promise<boolean>;
}

/**
 * SQLite: every write request joins a queue; one drain runs all requests queued so far in ONE
 * transaction (group commit) on the writer thread (sqlite-writer.ts); a refused request leaves nothing
 * and the others commit together. Answers go out only after the commit. Small requests (a session, a
 * PATCH) then cost a share of one commit instead of a commit each, and a random index page dirtied by
 * several batches is written once. The flows' planning runs here, their writes on the writer's
 * connection, inside its transaction; their reads mostly on the main connection (see `read`). The
 * requests that arrive while a group commits are planned meanwhile, as the next group (`writeGroup`).
 */
class SqliteIngest implements IngestStore {
  private queue: Queued[] = [];
  private queuedRecords = 0;
  private draining: Promise<void> | null = null;
  private writerThread: SqliteWriter | null = null;
  private readonly gapsMarked = new Set<string>();
  private readonly mainStatements = new Map<string, SQLite.Statement>();

  constructor(
    private readonly store: Store,
    private readonly rollups: boolean,
  ) {}

  /** Started on the first write: the schema is migrated by then. */
  private get writer(): SqliteWriter {
    const h = this.store.sqlite as SQLite.Database;
    this.writerThread ??= new SqliteWriter(h.name, ingestWriterPragmas(h));
    return this.writerThread;
  }

  /** A statement of the main connection, prepared once. */
  private mainStatement(sql: string): SQLite.Statement {
    let st = this.mainStatements.get(sql);
    if (!st) {
      st = (this.store.sqlite as SQLite.Database).prepare(sql);
      this.mainStatements.set(sql, st);
    }
    return st;
  }

  /**
   * A read of a group's flow. Records by id and sessions by external id are read on the main
   * connection, which sees the store as committed (only the writer writes records, and the drain
   * holds the main connection), with the rows of the group's earlier plans, and of the group before
   * while it commits, laid over them: planning a job then need not wait for the writer to finish the
   * jobs before it, so the main thread plans while the writer writes. A page of llm spans (a cost
   * recompute) is read on the writer, once the group's transaction is open there, after the writes
   * sent before it.
   */
  private async read(r: Read, group: GroupReads): Promise<StoredRecord[]> {
    const planned = group.planned;
    if (r.op === 'llmPage' && !(await group.live)) throw new PlanAgain();
    try {
      if (r.op === 'llmPage') {
        return await this.writer.all(SQLITE.llmPage, [[r.runId, r.after.createdAt, r.after.id, r.limit]]);
      }
      if (r.op === 'external' || r.op === 'externals') {
        const wanted = r.op === 'external' ? [r.externalId] : r.externalIds;
        const st = this.mainStatement(SQLITE.byExternal);
        const stored = wanted.flatMap((x) => st.all(r.runId, x) as StoredRecord[]);
        return planned.sessions(r.runId, wanted, stored);
      }
      const st = this.mainStatement(SQLITE.byIds);
      const stored: StoredRecord[] = [];
      for (let i = 0; i < r.ids.length; i += SQLITE_ID_CHUNK) {
        const chunk: unknown[] = r.ids.slice(i, i + SQLITE_ID_CHUNK);
        while (chunk.length < SQLITE_ID_CHUNK) chunk.push(null);
        for (const row of st.all(chunk)) stored.push(row as StoredRecord);
      }
      return planned.byIds(r.ids, stored);
    } catch (err) {
      throw new WriteFailed(err);
    }
  }

  private static insertSteps(rows: RecordRow[], steps: Step[]) {
    let i = 0;
    for (; i + SQLITE_CHUNK <= rows.length; i += SQLITE_CHUNK) {
      steps.push([SQLITE.insertChunk, rowValues(rows.slice(i, i + SQLITE_CHUNK))]);
    }
    for (; i < rows.length; i++) steps.push([SQLITE.insertOne, rowValues([rows[i]])]);
  }

  /** A plan's statements. */
  private static steps(plan: Plan, runId: string, projectId: string, now: number): Step[] {
    const steps: Step[] = [];
    SqliteIngest.insertSteps(plan.inserts, steps);
    for (const r of plan.updates) steps.push([SQLITE.update, [...MUTABLE.map((c) => r[c]), r.id]]);
    if (plan.newTraces || plan.newSpans)
      steps.push([SQLITE.runCounts, [plan.newTraces, plan.newSpans, runId]]);
    if (plan.userSession) steps.push([SQLITE.runUserSession, [runId]]);
    for (const t of plan.tokenUsage)
      steps.push([SQLITE.tokenUpsert, tokenUsageValues(t, projectId, runId, now)]);
    for (const c of plan.catalogue) {
      steps.push([
        SQLITE.catalogueUpsert,
        [runId, c.column_id, c.record_type, c.data_type, c.first_seen, c.last_seen],
      ]);
    }
    for (const m of plan.models)
      steps.push([SQLITE.modelUpsert, [runId, m.model, m.first_seen, m.last_seen]]);
    if (plan.scoreTasks.length)
      for (const j of scoreBatchValues(plan, projectId)) steps.push([SQLITE.jobInsert, j]);
    return steps;
  }

  /** Runs a flow's reads and planning (no writes: a refusal here leaves nothing to undo). */
  private async plan<R>(flow: () => Flow<R>, group: GroupReads): Promise<FlowResult<R>> {
    const gen = flow();
    let step = gen.next();
    while (!step.done) step = gen.next(await this.read(step.value, group));
    return step.value;
  }

  /** Sends a group's rollup deltas (one a plan), or marks its log streams as gaps when rollups are off. */
  private applyRollups(results: FlowResult<unknown>[], send: (steps: Step[]) => void): string[] {
    const steps: Step[] = [];
    const gaps: string[] = [];
    if (!this.rollups) {
      for (const res of results)
        if (res.plan && !this.gapsMarked.has(res.runId)) {
          steps.push([SQLITE_GAP, [res.runId]]);
          gaps.push(res.runId);
        }
    } else {
      for (const res of results)
        if (res.plan && (res.plan.inserts.length || res.plan.updates.length))
          steps.push([SQLITE_DELTA, [res.runId, rollupDeltaOf(res.plan)]]);
    }
    if (steps.length) send(steps);
    return gaps;
  }

  /** Sends a plan's writes (their failure fails the commit). */
  private apply(res: FlowResult<unknown>, send: (steps: Step[]) => void) {
    if (!res.plan) return;
    const projectId = res.plan.inserts[0]?.project_id ?? res.plan.updates[0]?.project_id ?? '';
    const steps = SqliteIngest.steps(res.plan, res.runId, projectId, Date.now() * 1000);
    if (steps.length) send(steps);
  }

  run<R>(flow: () => Flow<R>, records = 1): Promise<FlowResult<R>> {
    // The writer thread opens the database file: an in-memory database has none to share.
    if ((this.store.sqlite as SQLite.Database).memory) {
      return Promise.reject(new Error('SQLite ingestion needs a database file'));
    }
    return new Promise<FlowResult<R>>((resolve, reject) => {
      this.queue.push({ flow, resolve, reject } as unknown as Queued);
      this.queuedRecords += records;
      this.arrived?.();
      this.arrived = null;
      this.draining ??= this.drain();
    });
  }

  /**
   * Begins a transaction on the writer, deferred, with the write lock taken by its first statement
   * (lockMain): BEGIN IMMEDIATE would also take the write lock of every attached database, among them
   * the text index, which the indexer thread holds while it writes a slice. Taking the lock first
   * keeps the snapshot the flows read the one they write on.
   */
  private begin() {
    this.writer.begin();
    this.writer.send([[SQLITE.lockMain, []]]);
  }

  /**
   * Plans a group of jobs and sends their writes, then its commit, without waiting for it: the next
   * group is planned while the writer writes and commits this one. A group planned while the group
   * before it commits reads that group's rows over the stored ones, and its writes wait here until
   * that commit (its transaction then opens on the writer); should that group fail, this one is
   * planned again. A job refused while planning (validation, 404) has written nothing, so the others
   * go on without savepoints (a savepoint would copy every page a job touches into the statement
   * journal). Should a write itself fail, the whole transaction rolls back and each job is retried
   * alone, so one bad job cannot sink the others. Null: nothing is left to commit.
   */
  private async writeGroup(jobs: Queued[], before: Committing | null): Promise<Committing | null> {
    const results: ({ ok: true; value: FlowResult<unknown> } | { ok: false; err: unknown })[] = [];
    const planned = new PlannedRows(before?.planned);
    const held: Step[][] = [];
    let open = false;
    const send = (steps: Step[]) => (open ? this.writer.send(steps) : held.push(steps));
    const goLive = () => {
      this.begin();
      for (const steps of held) this.writer.send(steps);
      held.length = 0;
      open = true;
    };
    const live = before
      ? before.done.then((ok) => {
          if (ok) goLive();
          return ok;
        })
      : Promise.resolve(true);
    if (!before) goLive();
    const group: GroupReads = { planned, live };
    try {
      for (const [i, job] of jobs.entries()) {
        // The reads do not wait for the writer: let requests that arrived meanwhile be parsed between
        // jobs, while the writer writes, rather than after the whole group's planning.
        if (i > 0) await new Promise(setImmediate);
        let res: FlowResult<unknown>;
        try {
          res = await this.plan(job.flow, group);
        } catch (err) {
          if (err instanceof WriteFailed || err instanceof PlanAgain) throw err;
          results.push({ ok: false, err });
          continue;
        }
        this.apply(res, send);
        if (res.plan) planned.add(res.plan);
        results.push({ ok: true, value: res });
      }
      if (!(await live)) throw new PlanAgain();
    } catch (err) {
      if (err instanceof PlanAgain || !(await live)) return this.writeGroup(jobs, null);
      // A read failed: nothing of the group is committed.
      await this.writer.rollback().catch(() => {});
      await this.alone(jobs, err instanceof WriteFailed ? err.reason : err);
      return null;
    }
    const gaps = this.applyRollups(
      results.flatMap((r) => (r.ok ? [r.value] : [])),
      send,
    );
    const done = this.writer.commit().then(
      () => {
        for (const runId of gaps) this.gapsMarked.add(runId);
        jobs.forEach((job, i) => {
          const r = results[i];
          if (r.ok) job.resolve(r.value);
          else job.reject(r.err);
        });
        return true;
      },
      async (err) => {
        await this.writer.rollback().catch(() => {});
        await this.alone(jobs, err);
        return false;
      },
    );
    return { planned, done };
  }

  /** The jobs of a failed group, each in a transaction of its own; a job alone that failed is refused. */
  private async alone(jobs: Queued[], err: unknown): Promise<void> {
    if (jobs.length === 1) {
      jobs[0].reject(err);
      return;
    }
    for (const job of jobs) await (await this.writeGroup([job], null))?.done;
  }

  /** Resolves at the next request queued. */
  private arrived: (() => void) | null = null;
  private arrival(): Promise<void> {
    return new Promise((resolve) => {
      this.arrived = resolve;
    });
  }

  /**
   * Writes groups until the queue is empty: the first after GROUP_WAIT_MS when it holds a large
   * request, the next planned while the one before commits.
   */
  private async drain(): Promise<void> {
    try {
      await new Promise((r) =>
        this.queuedRecords >= GROUP_MIN_RECORDS ? setTimeout(r, GROUP_WAIT_MS) : setImmediate(r),
      );
      while (this.queue.length) {
        // Kysely serialises its own use of the main connection: hold its turn while groups are written,
        // so that no other write of this process waits on the writer's lock with the main thread
        // blocked. A query waiting for it gets it after the group under way, as without pipelining.
        await this.store.db.connection().execute(async () => {
          let committing: Committing | null = null;
          for (;;) {
            if (!this.queue.length && committing) await Promise.race([committing.done, this.arrival()]);
            if (!this.queue.length || this.store.connectionWaiters?.()) break;
            const jobs = this.queue;
            this.queue = [];
            this.queuedRecords = 0;
            committing = await this.writeGroup(jobs, committing);
          }
          await committing?.done;
        });
      }
    } finally {
      this.draining = null;
    }
  }

  async insertRaw(rows: RecordRow[]): Promise<void> {
    const steps: Step[] = [];
    SqliteIngest.insertSteps(rows, steps);
    await this.store.db.connection().execute(async () => {
      this.begin();
      this.writer.send(steps);
      try {
        await this.writer.commit();
      } catch (err) {
        await this.writer.rollback().catch(() => {});
        throw err;
      }
    });
  }

  async close(): Promise<void> {
    await this.draining;
    await this.writerThread?.close();
  }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

/** Rows per multi-row INSERT (PostgreSQL allows 65,535 parameters per statement). */
const PG_CHUNK = 1000;

/** Catalogue rows per upsert statement (6 parameters each). */
const CATALOGUE_CHUNK = 2000;

/** A PostgreSQL upsert of a batch's token usage days, its parameters through `$`. */
function tokensUpsert(
  list: TokenDelta[],
  runId: string,
  projectId: string,
  now: number,
  $: (v: unknown) => string,
): string {
  const tuples = [...list]
    .sort((a, b) => a.day - b.day)
    .map((t) => {
      const row = tokenUsageValues(t, projectId, runId, now);
      return `(${row.map((v, i) => `${$(v)}${i === 8 ? '::double precision' : ''}`).join(', ')})`;
    });
  return `insert into token_usage (id, project_id, log_stream_id, day, input_tokens, output_tokens,
       cache_read_input_tokens, cache_creation_input_tokens, cost, created_at, updated_at)
     values ${tuples.join(', ')}
     on conflict (log_stream_id, day) do update set
       input_tokens = token_usage.input_tokens + excluded.input_tokens,
       output_tokens = token_usage.output_tokens + excluded.output_tokens,
       cache_read_input_tokens = token_usage.cache_read_input_tokens + excluded.cache_read_input_tokens,
       cache_creation_input_tokens = token_usage.cache_creation_input_tokens + excluded.cache_creation_input_tokens,
       ${COST_SUM},
       updated_at = excluded.updated_at`;
}

/** A PostgreSQL upsert of a batch's models (in model order, as rows are locked). */
function modelsUpsert(list: ModelSeen[], runId: string, $: (v: unknown) => string): string {
  const tuples = [...list]
    .sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0))
    .map((m) => `(${$(runId)}, ${$(m.model)}, ${$(m.first_seen)}::bigint, ${$(m.last_seen)}::bigint)`);
  return `insert into run_models as m (run_id, model, first_seen, last_seen) values ${tuples.join(', ')}
     on conflict (run_id, model) do update set
       first_seen = least(m.first_seen, excluded.first_seen), last_seen = greatest(m.last_seen, excluded.last_seen)
     where excluded.first_seen < m.first_seen or excluded.last_seen > m.last_seen`;
}

/** Catalogue entries in key order (as rows are locked). */
function sortedCatalogue(list: CatalogueEntry[]): CatalogueEntry[] {
  return [...list].sort((a, b) => {
    const ka = `${a.column_id}\u0000${a.record_type}\u0000${a.data_type}`;
    const kb = `${b.column_id}\u0000${b.record_type}\u0000${b.data_type}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

/**
 * A PostgreSQL upsert of catalogue entries (sorted). Entries a stored row already covers are left out
 * by a plain read: an upsert locks the row it meets even when its WHERE then changes nothing, and the
 * lock would queue every concurrent batch of the log stream behind this one until its commit.
 */
function catalogueUpsert(list: CatalogueEntry[], runId: string, $: (v: unknown) => string): string {
  const tuples = list.map(
    (c) =>
      `(${$(runId)}, ${$(c.column_id)}, ${$(c.record_type)}, ${$(c.data_type)}, ${$(c.first_seen)}::bigint, ${$(c.last_seen)}::bigint)`,
  );
  return `insert into column_catalogue as c (run_id, column_id, record_type, data_type, first_seen, last_seen)
     select * from (values ${tuples.join(', ')}) as v (run_id, column_id, record_type, data_type, first_seen, last_seen)
     where not exists (select 1 from column_catalogue k where k.run_id = v.run_id and k.column_id = v.column_id
       and k.record_type = v.record_type and k.data_type = v.data_type
       and k.first_seen <= v.first_seen and k.last_seen >= v.last_seen)
     on conflict (run_id, column_id, record_type, data_type) do update set
       first_seen = least(c.first_seen, excluded.first_seen), last_seen = greatest(c.last_seen, excluded.last_seen)
     where excluded.first_seen < c.first_seen or excluded.last_seen > c.last_seen`;
}

class PgIngest implements IngestStore {
  private readonly insertSql = new Map<number, string>();
  private readonly updateSql = new Map<number, string>();
  /** The records table's column types, read once from the catalogue (for the VALUES of an update). */
  private columnTypes: Promise<Map<string, string>> | null = null;
  private readonly gapsMarked = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly rollups: boolean,
  ) {}

  private get pool(): pg.Pool {
    return this.store.pool as pg.Pool;
  }

  private insertStatement(n: number): string {
    let s = this.insertSql.get(n);
    if (!s) {
      const tuples: string[] = [];
      for (let r = 0; r < n; r++) {
        tuples.push(`(${RECORD_COLUMNS.map((_, c) => `$${r * NCOLS + c + 1}`).join(', ')})`);
      }
      s = `insert into records (${RECORD_COLUMNS.join(', ')}) values ${tuples.join(', ')}`;
      if (this.insertSql.size < 64) this.insertSql.set(n, s);
    }
    return s;
  }

  /**
   * `update … from (values …)`: one statement for up to PG_CHUNK rows instead of one per row (a cost
   * recompute changes 1,000 spans and their traces a page). The first tuple carries the column types,
   * which PostgreSQL gives to the rest of the VALUES list.
   */
  private async updateStatement(client: pg.PoolClient, n: number): Promise<string> {
    let s = this.updateSql.get(n);
    if (s) return s;
    this.columnTypes ??= client
      .query(
        `select attname, format_type(atttypid, atttypmod) as type from pg_attribute
         where attrelid = 'records'::regclass and attnum > 0 and not attisdropped`,
      )
      .then((res) => new Map(res.rows.map((r) => [r.attname as string, r.type as string])));
    const types = await this.columnTypes;
    const cols = ['id', ...MUTABLE];
    const tuples: string[] = [];
    for (let r = 0; r < n; r++) {
      const cast = (c: string) => (r === 0 ? `::${types.get(c)}` : '');
      tuples.push(`(${cols.map((c, i) => `$${r * cols.length + i + 1}${cast(c)}`).join(', ')})`);
    }
    s = `update records as r set ${MUTABLE.map((c) => `${c} = v.${c}`).join(', ')}
         from (values ${tuples.join(', ')}) as v (${cols.join(', ')}) where r.id = v.id`;
    if (this.updateSql.size < 64) this.updateSql.set(n, s);
    return s;
  }

  private async updateRows(client: pg.PoolClient, rows: RecordRow[]) {
    const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
    for (let i = 0; i < sorted.length; i += PG_CHUNK) {
      const chunk = sorted.slice(i, i + PG_CHUNK);
      const values: unknown[] = [];
      for (const r of chunk) values.push(r.id, ...MUTABLE.map((c) => r[c]));
      await client.query({ text: await this.updateStatement(client, chunk.length), values });
    }
  }

  private async read(client: pg.PoolClient, r: Read): Promise<StoredRecord[]> {
    if (r.op === 'llmPage') {
      const res = await client.query(
        `select * from records where run_id = $1 and type = 'llm' and (created_at, id) > ($2::bigint, $3::text)
         order by created_at, id limit $4 for update`,
        [r.runId, r.after.createdAt, r.after.id, r.limit],
      );
      return res.rows;
    }
    if (r.op === 'external' || r.op === 'externals') {
      const res = await client.query(
        `select * from records where run_id = $1 and type = 'session' and external_id = any($2::text[])
         order by id for update`,
        [r.runId, r.op === 'external' ? [r.externalId] : r.externalIds],
      );
      return res.rows;
    }
    const res = await client.query(
      'select * from records where id = any($1::text[]) order by id for update',
      [r.ids],
    );
    return res.rows;
  }

  private async insertRows(client: pg.PoolClient, rows: RecordRow[]) {
    for (let i = 0; i < rows.length; i += PG_CHUNK) {
      const chunk = rows.slice(i, i + PG_CHUNK);
      await client.query({ text: this.insertStatement(chunk.length), values: rowValues(chunk) });
    }
  }

  /**
   * Rows that concurrent batches of a log stream share (its day's token usage, its models, its
   * catalogue keys, its counts) stay locked by their upserts until the commit. They go last, in ONE
   * statement (data-modifying CTEs) with the score batch and the rollup delta: batches then wait on
   * each other for one round trip and the commit. Written one statement each, after the records,
   * the token usage upsert held its row for four round trips to a busy process, and 4 clients spent
   * most of their time waiting on it (bench:ingest --profile metadata, PostgreSQL: sampled
   * pg_stat_activity, the commonest state `Lock transactionid` on `insert into token_usage`).
   */
  private async apply(
    client: pg.PoolClient,
    plan: Plan,
    runId: string,
    projectId: string,
    now: number,
    rollupDelta: string | null,
  ) {
    await this.insertRows(client, plan.inserts);
    if (plan.updates.length) await this.updateRows(client, plan.updates);
    const values: unknown[] = [];
    const $ = (v: unknown) => `$${values.push(v)}`;
    const inserts: string[] = [];
    if (plan.tokenUsage.length) inserts.push(tokensUpsert(plan.tokenUsage, runId, projectId, now, $));
    if (plan.catalogue.length) {
      const sorted = sortedCatalogue(plan.catalogue);
      // Past a chunk (a new log stream's first batch of many keys), the rest go first, apart.
      for (let i = CATALOGUE_CHUNK; i < sorted.length; i += CATALOGUE_CHUNK) {
        const more: unknown[] = [];
        const text = catalogueUpsert(sorted.slice(i, i + CATALOGUE_CHUNK), runId, (v) => `$${more.push(v)}`);
        await client.query(text, more);
      }
      inserts.push(catalogueUpsert(sorted.slice(0, CATALOGUE_CHUNK), runId, $));
    }
    if (plan.models.length) inserts.push(modelsUpsert(plan.models, runId, $));
    if (plan.scoreTasks.length)
      inserts.push(
        `${JOB_INSERT} ${scoreBatchValues(plan, projectId)
          .map((row) => `(${row.map($).join(', ')})`)
          .join(', ')}`,
      );
    if (rollupDelta !== null)
      inserts.push(`insert into rollup_deltas (run_id, body) values (${$(runId)}, ${$(rollupDelta)})`);
    const userSession = plan.userSession ? ', has_user_created_sessions = 1' : '';
    const last =
      plan.newTraces || plan.newSpans
        ? `update runs set num_traces = num_traces + ${$(plan.newTraces)}, num_spans = num_spans + ${$(plan.newSpans)}${userSession} where id = ${$(runId)}`
        : plan.userSession
          ? `update runs set has_user_created_sessions = 1 where id = ${$(runId)} and has_user_created_sessions = 0`
          : inserts.pop();
    if (last) {
      const ctes = inserts.map((text, i) => `w${i} as (${text})`);
      await client.query(`${ctes.length ? `with ${ctes.join(', ')} ` : ''}${last}`, values);
    }
  }

  /** The flow in one transaction, run again after a lost race with a concurrent ingest (same ids). */
  run<R>(flow: () => Flow<R>): Promise<FlowResult<R>> {
    return retryTransient(() => this.runOnce(flow), { uniqueRace: true });
  }

  private async runOnce<R>(flow: () => Flow<R>): Promise<FlowResult<R>> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('begin');
      const gen = flow();
      let step = gen.next();
      while (!step.done) step = gen.next(await this.read(client, step.value));
      const res = step.value;
      if (res.plan) {
        const projectId = res.plan.inserts[0]?.project_id ?? res.plan.updates[0]?.project_id ?? '';
        const delta =
          this.rollups && (res.plan.inserts.length || res.plan.updates.length)
            ? rollupDeltaOf(res.plan)
            : null;
        await this.apply(client, res.plan, res.runId, projectId, Date.now() * 1000, delta);
        if (!this.rollups && !this.gapsMarked.has(res.runId)) {
          await client.query('insert into rollup_gaps (run_id) values ($1) on conflict do nothing', [
            res.runId,
          ]);
        }
      }
      await client.query('commit');
      if (!this.rollups) this.gapsMarked.add(res.runId);
      return res;
    } catch (err) {
      try {
        await client.query('rollback');
      } catch {
        broken = true;
      }
      throw err;
    } finally {
      client.release(broken);
    }
  }

  async close(): Promise<void> {}

  async insertRaw(rows: RecordRow[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      await this.insertRows(client, rows);
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }
}
