import { ValidationError, conflict, notFound } from '../domain/errors.ts';
import { newId } from '../domain/ids.ts';
import { nowUs, timestampAt, toIso } from '../domain/time.ts';
import { RUN_COLUMNS } from '../query/columns.ts';
import type { FilterTree, Leaf } from '../query/filters.ts';
import type { RunKind, RunRow, RunSort, RunsRepo } from '../store/runs.ts';
import type { UserRow, UsersRepo } from '../store/users.ts';
import type { Caller } from './auth.ts';
import { rejectUnstorable } from '../domain/text.ts';
import { ACCESS_CACHE_MS } from './access-cache.ts';
import type { ProjectsService } from './projects.ts';

export type { RunKind };

const KIND_LABEL: Record<RunKind, string> = { log_stream: 'Log stream', experiment: 'Experiment' };

/**
 * A run as the API answers it. The counts are kept current on the run's row at ingestion, so every
 * answer carries them (`include_counts` of log stream search costs nothing and changes nothing).
 */
function describeRun(r: RunRow, creator: UserRow | undefined) {
  return {
    id: r.id,
    name: r.name,
    project_id: r.project_id,
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at),
    created_by: r.created_by,
    created_by_user: creator
      ? { id: creator.id, email: creator.email, first_name: creator.first_name, last_name: creator.last_name }
      : null,
    num_traces: Number(r.num_traces),
    num_spans: Number(r.num_spans),
    has_user_created_sessions: Boolean(r.has_user_created_sessions),
    retention_days: r.retention_days ?? null,
  };
}

/** A log stream search filter as the body's schema admits it. */
export interface RunFilterInput {
  name: 'id' | 'name' | 'created_by' | 'created_at' | 'updated_at';
  operator?: string;
  value: string | string[];
  case_sensitive?: boolean;
}

/**
 * Schema-valid filters → one tree over RUN_COLUMNS (all must hold), compiled as record filters are;
 * defaults applied, date-times in microseconds.
 */
export function runFilterTree(filters: RunFilterInput[]): FilterTree | null {
  if (!filters.length) return null;
  const leaves = filters.map((f, i): FilterTree => {
    const column = RUN_COLUMNS[f.name];
    const columnLoc = ['body', 'filters', i, 'name'];
    const valueLoc = ['body', 'filters', i, 'value'];
    let filter: Leaf;
    if (f.name === 'created_at' || f.name === 'updated_at') {
      filter = {
        kind: 'date',
        column,
        operator: f.operator as Extract<Leaf, { kind: 'date' }>['operator'],
        value: timestampAt(f.value as string, valueLoc),
      };
    } else {
      const operator = (f.operator ?? 'eq') as Extract<Leaf, { kind: 'text' }>['operator'];
      const listOp = operator === 'one_of' || operator === 'not_in';
      if (listOp !== Array.isArray(f.value)) {
        throw new ValidationError({
          loc: valueLoc,
          msg: listOp
            ? `Operator '${operator}' takes a list of strings`
            : `Operator '${operator}' takes one string`,
          type: listOp ? 'list_type' : 'string_type',
          input: f.value,
        });
      }
      const text = f.name === 'name';
      filter = {
        kind: text ? 'text' : 'id',
        column,
        operator,
        value: f.value,
        caseSensitive: text ? (f.case_sensitive ?? true) : true,
      };
    }
    return { op: 'leaf', filter, columnLoc, needsCatalogue: false };
  });
  return leaves.length === 1 ? leaves[0] : { op: 'and', children: leaves };
}

/** Log streams and experiments: the runs of a project that records belong to. */
export class RunsService {
  /** Runs found by `exists`, by project, id and kind, with the generation they were found in. */
  private readonly known = new Map<string, { gen: string; until: number }>();
  /** Runs deleted through this process: a run remembered before is looked up again. */
  private deleted = 0;

  constructor(
    private readonly runs: RunsRepo,
    private readonly users: UsersRepo,
    private readonly projects: ProjectsService,
  ) {}

  private async describeAll(rows: RunRow[]) {
    const creators = await this.users.byIds([...new Set(rows.map((r) => r.created_by))]);
    const byId = new Map(creators.map((u) => [u.id, u]));
    return rows.map((r) => describeRun(r, byId.get(r.created_by)));
  }

  async create(caller: Caller, projectId: string, kind: RunKind, name: string) {
    await this.projects.access(caller, projectId, 'editor');
    rejectUnstorable(['body', 'name'], name);
    const label = KIND_LABEL[kind].toLowerCase();
    const taken = () =>
      conflict(
        `${/^[aeiou]/.test(label) ? 'An' : 'A'} ${label} named '${name}' already exists in this project`,
      );
    if (await this.runs.byName(projectId, kind, name)) throw taken();
    const now = nowUs();
    const run: RunRow = {
      id: newId(),
      project_id: projectId,
      kind,
      name,
      created_by: caller.id,
      created_at: now,
      updated_at: now,
      num_traces: 0,
      num_spans: 0,
      has_user_created_sessions: 0,
      retention_days: null,
    };
    try {
      await this.runs.insert(run);
    } catch (err) {
      if (await this.runs.byName(projectId, kind, name)) throw taken();
      throw err;
    }
    return (await this.describeAll([run]))[0];
  }

  /**
   * Deletes a run with its records (editors). No route offers it yet: `spanbase import` takes back
   * a log stream it created when the import fails.
   */
  async delete(caller: Caller, projectId: string, runId: string): Promise<void> {
    await this.projects.access(caller, projectId, 'editor');
    try {
      await this.runs.delete((await this.resolve(caller, projectId, runId)).id);
    } finally {
      this.deleted++;
    }
  }

  async list(caller: Caller, projectId: string, kind: RunKind) {
    await this.projects.access(caller, projectId);
    return this.describeAll(await this.runs.list(projectId, kind));
  }

  async get(caller: Caller, projectId: string, runId: string, kind: RunKind) {
    await this.projects.access(caller, projectId);
    const run = await this.runs.byId(projectId, runId, kind);
    if (!run) throw notFound(KIND_LABEL[kind]);
    return (await this.describeAll([run]))[0];
  }

  /** PATCH of a log stream: `retention_days` (editors); `undefined` leaves it. */
  async update(caller: Caller, projectId: string, runId: string, patch: { retention_days?: number | null }) {
    await this.projects.access(caller, projectId, 'editor');
    const run = await this.runs.byId(projectId, runId, 'log_stream');
    if (!run) throw notFound(KIND_LABEL.log_stream);
    if (patch.retention_days !== undefined) await this.runs.setRetention(runId, patch.retention_days);
    return this.get(caller, projectId, runId, 'log_stream');
  }

  /** The id of a run of the project (of `kind` when given) the caller may see; 404 otherwise. */
  async check(caller: Caller, projectId: string, runId: string, kind?: RunKind): Promise<string> {
    await this.projects.access(caller, projectId);
    if (!(await this.exists(projectId, runId, kind))) throw notFound(kind ? KIND_LABEL[kind] : 'Run');
    return runId;
  }

  /**
   * Whether the run is one of the project's (of `kind` when given). A run found is remembered for
   * ACCESS_CACHE_MS; deleting it or its project through this process forgets it at once. Ingestion
   * asks on every request, and on SQLite a read of the store's one connection would wait behind the
   * group commit under way (store/ingest.ts), so the next batch could not queue while it commits.
   */
  async exists(projectId: string, runId: string, kind?: RunKind): Promise<boolean> {
    const key = `${projectId} ${runId} ${kind ?? ''}`;
    const gen = `${this.projects.generation} ${this.deleted}`;
    const hit = this.known.get(key);
    if (hit && hit.until > Date.now() && hit.gen === gen) return true;
    const run = await this.runs.byId(projectId, runId, kind);
    if (!run) return false;
    if (this.known.size >= 10_000) this.known.clear();
    this.known.set(key, { gen, until: Date.now() + ACCESS_CACHE_MS });
    return true;
  }

  /** A run of the project (either kind) the caller may see; 404 otherwise. */
  async resolve(caller: Caller, projectId: string, runId: string, kind?: RunKind): Promise<RunRow> {
    await this.projects.access(caller, projectId);
    const run = await this.runs.byId(projectId, runId, kind);
    if (!run) throw notFound(kind ? KIND_LABEL[kind] : 'Run');
    return run;
  }

  async search(
    caller: Caller,
    projectId: string,
    q: {
      filters: RunFilterInput[];
      sort: RunSort;
      starting_token: number;
      limit: number;
    },
  ) {
    const tree = runFilterTree(q.filters);
    await this.projects.access(caller, projectId);
    const rows = await this.runs.search(projectId, 'log_stream', tree, q.sort, q.starting_token, q.limit);
    const more = rows.length > q.limit;
    const page = more ? rows.slice(0, q.limit) : rows;
    return {
      log_streams: await this.describeAll(page),
      starting_token: q.starting_token,
      limit: q.limit,
      paginated: more,
      next_starting_token: more ? q.starting_token + q.limit : null,
    };
  }
}
