/**
 * Record search (sessions, traces, spans) and available columns: access checks, scoping to a run,
 * filter and sort validation, and the page envelope. The SQL lives in the store (store/search-query.ts and one file per dialect), the column
 * semantics in query/.
 */
import { ValidationError, valueError } from '../domain/errors.ts';
import { RECORD_TYPES } from '../domain/records.ts';
import { timestampAt } from '../domain/time.ts';
import {
  ANNOTATION_PREFIX,
  type ColumnDef,
  type DataType,
  type JsonColumn,
  NEVER_NULL,
  type RecordType,
  SPAN_TYPES,
  STANDARD_COLUMNS,
  STANDARD_METRICS,
  namespacedColumn,
} from '../query/columns.ts';
import {
  type FilterContext,
  type FilterTree,
  andTrees,
  columnLeaves,
  unknownMetricFaults,
  validateFilterList,
  validateFilterTree,
} from '../query/filters.ts';
import { type SortSpec, validateSort } from '../query/sorts.ts';
import type { CatalogueRepo } from '../store/catalogue.ts';
import type { RunKind } from '../store/runs.ts';
import type { RecordSearch, SearchStore, TextIndexer } from '../store/search-query.ts';
import type { Caller } from './auth.ts';
import type { ProjectsService } from './projects.ts';
import type { RunsService } from './runs.ts';

export type SearchTarget = 'sessions' | 'traces' | 'spans';

export const TARGET_TYPES: Record<SearchTarget, readonly RecordType[]> = {
  sessions: ['session'],
  traces: ['trace'],
  spans: SPAN_TYPES,
};

/** A queue search's queue: its id, templates and members. */
export interface QueueScope {
  id: string;
  templateIds: string[];
  memberIds: string[];
}

/** The annotation columns of a project (services/annotations.ts). */
export interface AnnotationColumns {
  /** By id (`annotation/<template id>`). */
  columns(projectId: string): Promise<ReadonlyMap<string, ColumnDef>>;
  /** Whether the template has any reviewer annotation. */
  annotated(templateId: string): Promise<boolean>;
}

export const DEFAULT_LIMIT = 100;

interface ScopeBody {
  log_stream_id?: string | null;
  experiment_id?: string | null;
  metrics_testing_id?: string | null;
}

export interface SearchBody extends ScopeBody {
  filters?: unknown;
  filter_tree?: unknown;
  sort?: unknown;
  pagination?: { starting_token?: number; limit?: number } | null;
  starting_token?: number;
  limit?: number;
  include_counts?: boolean;
  include_code_metric_metadata?: boolean;
}

export interface ColumnsBody extends ScopeBody {
  start_time?: string | null;
  end_time?: string | null;
}

/** A validated search: what the repository needs plus the page envelope. */
export interface ParsedSearch {
  tree: FilterTree | null;
  sort: SortSpec | null;
  startingToken: number;
  limit: number;
  includeCounts: boolean;
}

/**
 * Body → filters, tree, sort and page, or a ValidationError pointing at each bad part. `ctx`: the
 * project's annotation columns, and the queue of a queue search.
 */
export function parseSearchBody(body: SearchBody, ctx: FilterContext = {}): ParsedSearch {
  const faults: ValidationError[] = [];
  const attempt = <T>(f: () => T): T | null => {
    try {
      return f();
    } catch (err) {
      if (err instanceof ValidationError) {
        faults.push(err);
        return null;
      }
      throw err;
    }
  };
  const list =
    body.filters === undefined || body.filters === null
      ? null
      : attempt(() => validateFilterList(body.filters, ['body', 'filters'], ctx));
  const tree =
    body.filter_tree === undefined || body.filter_tree === null
      ? null
      : attempt(() => validateFilterTree(body.filter_tree, ['body', 'filter_tree'], ctx));
  const sort = attempt(() => validateSort(body.sort, ['body', 'sort'], ctx));
  if (faults.length) throw new ValidationError(faults.flatMap((f) => f.items));
  return {
    tree: andTrees(list, tree),
    sort,
    startingToken: body.pagination?.starting_token ?? body.starting_token ?? 0,
    limit: body.pagination?.limit ?? body.limit ?? DEFAULT_LIMIT,
    includeCounts: body.include_counts ?? false,
  };
}

const CATEGORY_GROUP: Record<string, string> = {
  standard: 'Standard',
  annotation: 'Annotations',
  metric: 'Metrics',
  user_metadata: 'User metadata',
  dataset_metadata: 'Dataset metadata',
  tags: 'Tags',
};

function describeColumn(c: ColumnDef, isEmpty: boolean, applicableTypes: readonly string[]) {
  const optional = !(c.source.kind === 'scalar' && NEVER_NULL.has(c.source.column));
  return {
    id: c.id,
    label: c.label,
    description: c.description,
    category: c.category,
    group_label: CATEGORY_GROUP[c.category],
    data_type: c.dataType,
    filter_type: c.filterKind,
    multi_valued: c.multiValued,
    allowed_values: c.allowedValues ?? null,
    sortable: c.sortable,
    filterable: c.filterable,
    is_empty: isEmpty,
    applicable_types: [...applicableTypes],
    is_optional: optional,
    roll_up_method: null,
    metric_key_alias: null,
    scorer_id: null,
    scorer_config: null,
    threshold: null,
  };
}

/** One data type for a key seen with several. */
function mergeDataTypes(types: Set<string>): DataType {
  if (types.size === 1) {
    const [only] = types;
    if (['text', 'integer', 'floating_point', 'boolean'].includes(only)) return only as DataType;
    return 'text';
  }
  if ([...types].every((t) => t === 'integer' || t === 'floating_point')) return 'floating_point';
  return 'text';
}

export class SearchService {
  constructor(
    readonly repo: SearchStore,
    private readonly catalogue: CatalogueRepo,
    private readonly projects: ProjectsService,
    private readonly runs: RunsService,
    readonly indexer: TextIndexer,
    private readonly annotationColumns: AnnotationColumns,
  ) {}

  /** Starts the background work of search: the SQLite text indexer, and a reader thread when there are records. */
  start(): void {
    this.indexer.start();
    this.repo.warmReaders();
  }

  /** Stops the text indexer. */
  async close(): Promise<void> {
    await this.indexer.stop();
  }

  /**
   * The access check of a search: the caller may see the project, and the run the body names (at
   * most one of the three ids) belongs to it; the run's id, or null for the whole project.
   */
  private async access(caller: Caller, projectId: string, body: ScopeBody): Promise<string | null> {
    const given = (['log_stream_id', 'experiment_id', 'metrics_testing_id'] as const).filter(
      (k) => body[k] !== undefined && body[k] !== null,
    );
    if (given.length > 1) {
      await this.projects.access(caller, projectId);
      throw valueError(['body'], `Value error, give only one of ${given.join(', ')}`, undefined);
    }
    if (given.length === 0) {
      await this.projects.access(caller, projectId);
      return null;
    }
    const field = given[0];
    const kind: RunKind | undefined =
      field === 'log_stream_id' ? 'log_stream' : field === 'experiment_id' ? 'experiment' : undefined;
    // check: access to the project first (once), then that the run is in it.
    return this.runs.check(caller, projectId, body[field] as string, kind);
  }

  private async checkMetrics(
    projectId: string,
    tree: FilterTree | null,
    sort: SortSpec | null,
  ): Promise<void> {
    const needed = new Set<string>();
    if (tree) for (const l of columnLeaves(tree)) if (l.needsCatalogue) needed.add(l.filter.column.id);
    if (sort?.needsCatalogue) needed.add(sort.column.id);
    if (!needed.size) return;
    const known = await this.catalogue.knownMetricColumns(projectId, [...needed]);
    const items = tree ? unknownMetricFaults(tree, known) : [];
    if (sort?.needsCatalogue && !known.has(sort.column.id)) {
      items.push({
        loc: sort.columnLoc,
        msg: `Value error, unknown column '${sort.column.id}'`,
        type: 'value_error',
        input: sort.column.id,
      });
    }
    if (items.length) throw new ValidationError(items);
  }

  /**
   * What a search body selects, checked as a search checks it: the caller may see the project and the
   * run, the filters and sort are valid and name known columns. Counts, deletes and exports select
   * through this, so they take exactly the records a search with the same body finds. `queue`: a
   * queue search (fully_annotated works).
   */
  async selection(
    caller: Caller,
    projectId: string,
    body: SearchBody,
    queue?: QueueScope,
  ): Promise<{ runId: string | null; parsed: ParsedSearch }> {
    const runId = await this.access(caller, projectId, body);
    const ctx: FilterContext = {
      ...(mentionsAnnotationColumns(body)
        ? { annotations: await this.annotationColumns.columns(projectId) }
        : {}),
      ...(queue ? { queue: { templateIds: queue.templateIds, memberIds: queue.memberIds } } : {}),
    };
    const parsed = parseSearchBody(body, ctx);
    await this.checkMetrics(projectId, parsed.tree, parsed.sort);
    return { runId, parsed };
  }

  /**
   * A search body checked (see selection) and resolved into what the store runs (without the page's
   * extra row); a queue search takes the queue's records only, of every type.
   */
  async prepare(
    caller: Caller,
    projectId: string,
    body: SearchBody,
    target: SearchTarget | null,
    queue?: QueueScope,
  ): Promise<{ search: RecordSearch; parsed: ParsedSearch }> {
    const { runId, parsed } = await this.selection(caller, projectId, body, queue);
    return {
      search: {
        projectId,
        runId,
        queueId: queue?.id ?? null,
        types: target ? TARGET_TYPES[target] : RECORD_TYPES,
        tree: parsed.tree,
        sort: parsed.sort,
        offset: parsed.startingToken,
        limit: parsed.limit,
      },
      parsed,
    };
  }

  /**
   * One page of a search as the response body, JSON (domain/record-json.ts): records decoded and
   * serialized through the route's response schema, on the reader thread that read them (SQLite).
   */
  async search(
    caller: Caller,
    projectId: string,
    target: SearchTarget | null,
    body: SearchBody,
    queue?: QueueScope,
  ): Promise<Buffer> {
    const { search, parsed } = await this.prepare(caller, projectId, body, target, queue);
    return this.repo.searchPage(
      { ...search, limit: parsed.limit + 1 },
      { startingToken: parsed.startingToken, limit: parsed.limit, includeCounts: parsed.includeCounts },
    );
  }

  async availableColumns(caller: Caller, projectId: string, target: SearchTarget, body: ColumnsBody) {
    const runId = await this.access(caller, projectId, body);
    const window = {
      start: timeField(body.start_time, 'start_time'),
      end: timeField(body.end_time, 'end_time'),
    };
    if (window.start !== null && window.end !== null && window.start > window.end) {
      throw valueError(['body', 'end_time'], 'Value error, end_time is before start_time', body.end_time);
    }
    const types = TARGET_TYPES[target];
    const present = await this.catalogue.typesPresent(projectId, runId, types, window);
    const columns = [];
    for (const c of STANDARD_COLUMNS) {
      const applicable = c.applicableTypes.filter((t) => types.includes(t));
      if (!applicable.length) continue;
      columns.push(describeColumn(c, !applicable.some((t) => present.has(t)), applicable));
    }
    // The session route lists keys seen on any record of the run; traces and spans those seen on them.
    const entries = await this.catalogue.catalogue(
      projectId,
      runId,
      window,
      target === 'sessions' ? null : types,
    );
    const byColumn = new Map<string, { types: Set<string>; dataTypes: Set<string> }>();
    for (const e of entries) {
      const slash = e.column_id.indexOf('/');
      const ns = e.column_id.slice(0, slash);
      const key = e.column_id.slice(slash + 1);
      if (!['metrics', 'user_metadata', 'dataset_metadata'].includes(ns) || key === '') continue;
      if (ns === 'metrics' && Object.hasOwn(STANDARD_METRICS, key)) continue;
      const seen = byColumn.get(e.column_id) ?? { types: new Set(), dataTypes: new Set() };
      seen.types.add(e.record_type);
      seen.dataTypes.add(e.data_type);
      byColumn.set(e.column_id, seen);
    }
    for (const [id, seen] of byColumn) {
      const slash = id.indexOf('/');
      const ns = id.slice(0, slash) as JsonColumn;
      const dataType = mergeDataTypes(seen.dataTypes);
      const seenTypes = [...seen.types].sort() as RecordType[];
      const c = namespacedColumn(
        ns,
        id.slice(slash + 1),
        ns === 'metrics' && dataType === 'text' ? 'floating_point' : dataType,
        seenTypes,
      );
      columns.push(describeColumn(c, false, seenTypes));
    }
    // The project's annotation templates, on every record type.
    for (const c of (await this.annotationColumns.columns(projectId)).values()) {
      const src = c.source as { kind: 'annotation'; templateId: string };
      const empty = !(await this.annotationColumns.annotated(src.templateId));
      columns.push(describeColumn(c, empty, types));
    }
    return { columns };
  }
}

function timeField(value: string | null | undefined, field: string): number | null {
  return value === undefined || value === null ? null : timestampAt(value, ['body', field]);
}

/**
 * Whether a search body names an annotation column anywhere (then the project's templates are
 * read): a walk of its filters and sort, bounded however deep they nest.
 */
function mentionsAnnotationColumns(body: SearchBody): boolean {
  const stack: unknown[] = [body.filters, body.filter_tree, body.sort];
  for (let seen = 0; stack.length && seen < 100_000; seen++) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.startsWith(ANNOTATION_PREFIX)) return true;
    } else if (Array.isArray(v)) stack.push(...v.slice(0, 10_000));
    else if (v && typeof v === 'object') stack.push(...Object.values(v).slice(0, 10_000));
  }
  return false;
}
