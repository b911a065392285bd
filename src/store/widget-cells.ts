/**
 * Widget data, the part both stores share: what a query asks (CellQuery), what it answers
 * (WidgetCells), the interface each store implements (widget-cells-sqlite.ts, widget-cells-pg.ts),
 * and the aggregate statement, written once over the store's SQL dialect: percentiles by SQLite's
 * percentile_disc and by an ordered array on PostgreSQL, with the same definition
 * (domain/dashboards.ts).
 */
import { type RawBuilder, sql } from 'kysely';
import type { AggregateSpec, BinCounts } from '../domain/cell-aggregates.ts';
import { type CellColumns, type CellRow, rankGroups } from '../domain/cell-columns.ts';
import { type TextCandidates, columnValue, compileFilterTree } from '../query/compile.ts';
import type { ColumnDef } from '../query/columns.ts';
import type { FilterTree } from '../query/filters.ts';
import type { SqlDialect } from '../query/sql-dialect.ts';

/** One metric the widgets aggregate: a column read as a number or as a boolean (1/0). */
export interface MetricSpec {
  /** Prefix of this metric's aggregate columns in a cell (`m0_n`, `m0_sum`, ...). */
  key: string;
  column: ColumnDef;
  kind: 'number' | 'boolean' | 'any';
  /** Which aggregates the widgets need besides the count of present values. */
  needs: Set<'sum' | 'min' | 'max' | 'true'>;
  /** Percentiles (50, 90, 95, 99) the widgets need. */
  percentiles: Set<number>;
  /**
   * Percentiles also wanted over the whole range per group (the `total` of number and table widgets).
   * Unlike counts and sums they cannot be merged from the buckets: they take one more pass.
   */
  totalPercentiles: Set<number>;
}

export interface CellQuery {
  runId: string;
  /** Range [startUs, endUs) of created_at. */
  startUs: number;
  endUs: number;
  /** Start of bucket 0 and the bucket size. */
  firstUs: number;
  sizeUs: number;
  buckets: number;
  tree: FilterTree | null;
  group: ColumnDef | null;
  metrics: MetricSpec[];
}

/**
 * Widget data: the groups shown (`[null]` without a group column) and how many there are, their
 * cells, and their whole-range percentile totals (null when no widget needs them).
 */
export interface WidgetCells {
  shown: unknown[];
  groupCount: number;
  cells: CellRow[];
  percentileTotals: CellRow[] | null;
}

/** A store's widget data. */
export interface WidgetCellsStore {
  /**
   * The cells of the groups shown (at most `groupLimit` with a group column, by records over the
   * whole range, most first) and, for the percentiles in `totalPercentiles` (which cannot be merged
   * from buckets), their values per group over the whole range.
   */
  cells(q: CellQuery, groupLimit: number): Promise<WidgetCells>;
}

/** What one thread computed: cells of some buckets, and the percentile totals when asked. */
export interface ThreadCells {
  cells: CellColumns;
  percentileTotals: CellColumns | null;
}

/** One piece of a query for a reader thread: the query and which buckets. */
export interface CellJob {
  q: CellQuery;
  from: number;
  to: number;
  totals: boolean;
}

/** The cells of the shown groups from a kept scan, and their values of some metrics counted by bin. */
export interface TakenCells {
  cells: CellColumns;
  bins: BinCounts[];
}

/**
 * A value a cell statement reads per record: read i < metrics.length is metric i's value (for an
 * annotation metric, the number of its reviewers' annotations), the others the sum, min and max of
 * annotation metrics' kept aggregates.
 */
export interface ValueRead {
  metric: number;
  part: 'value' | 'n' | 'sum' | 'min' | 'max';
}

const isAnnotation = (m: MetricSpec) => m.column.source.kind === 'annotation';

/** The values a query reads per record (see ValueRead), in order. */
export function valueReads(metrics: readonly MetricSpec[]): ValueRead[] {
  const reads: ValueRead[] = metrics.map((m, metric) => ({ metric, part: isAnnotation(m) ? 'n' : 'value' }));
  metrics.forEach((m, metric) => {
    if (isAnnotation(m)) for (const part of ['sum', 'min', 'max'] as const) reads.push({ metric, part });
  });
  return reads;
}

/**
 * A read as SQL over `records`. An annotation metric reads the record's kept aggregate of its
 * template (reviewers' annotations), so that its widgets aggregate the annotations themselves: Count
 * counts them, Average is the average annotation, PercentageTrue the share of up votes.
 */
export function readValue(read: ValueRead, metrics: readonly MetricSpec[], d: SqlDialect) {
  const m = metrics[read.metric];
  if (read.part === 'value') return columnValue(m.column, m.kind, d);
  const src = m.column.source as { kind: 'annotation'; templateId: string };
  const column = sql.ref(`ag.${read.part}`);
  return {
    expr: sql`(select ${column} from annotation_aggregates as ag where ag.record_id = records.id
      and ag.template_id = ${d.text(src.templateId)} and ag.source = 'reviewer')`,
    nullable: true,
  };
}

/** The metrics (their indices, which are their value reads') whose whole-range percentiles are wanted. */
export function totalPercentileMetrics(metrics: readonly MetricSpec[]): number[] {
  return metrics.flatMap((m, i) => (m.totalPercentiles.size > 0 ? [i] : []));
}

/**
 * The aggregate columns of a cell, in order: the record count `n`, then per metric `<key>_n` and
 * what its widgets need; only the whole-range percentiles for `percentilesOnly`. Each column reads
 * a ValueRead (`metric` is its index in valueReads): an annotation metric's `<key>_n` totals its
 * annotations, and its sum and up votes (`_true`) total the aggregates' sums.
 */
export function aggregateSpecs(metrics: readonly MetricSpec[], percentilesOnly: boolean): AggregateSpec[] {
  const specs: AggregateSpec[] = [];
  if (!percentilesOnly) specs.push({ name: 'n', op: 'n', metric: -1 });
  const reads = valueReads(metrics);
  const readOf = (metric: number, part: ValueRead['part']) =>
    reads.findIndex((r) => r.metric === metric && r.part === part);
  metrics.forEach((m, metric) => {
    if (isAnnotation(m)) {
      if (percentilesOnly) return;
      specs.push({ name: `${m.key}_n`, op: 'total', metric: readOf(metric, 'n') });
      for (const op of ['sum', 'min', 'max', 'true'] as const)
        if (m.needs.has(op))
          specs.push({
            name: `${m.key}_${op}`,
            op: op === 'true' ? 'sum' : op,
            metric: readOf(metric, op === 'true' ? 'sum' : op),
          });
      return;
    }
    if (!percentilesOnly) {
      specs.push({ name: `${m.key}_n`, op: 'count', metric });
      for (const op of ['sum', 'min', 'max', 'true'] as const)
        if (m.needs.has(op)) specs.push({ name: `${m.key}_${op}`, op, metric });
    }
    for (const percent of percentilesOnly ? m.totalPercentiles : m.percentiles)
      specs.push({ name: `${m.key}_p${percent}`, op: 'percentile', metric, percent });
  });
  return specs;
}

/** How a group_by column is read: metadata keys by their string values, other columns as they are. */
export function groupExpr(column: ColumnDef, d: SqlDialect): RawBuilder<unknown> {
  const src = column.source;
  const want = src.kind === 'json' && src.column === 'metrics' ? 'number' : 'text';
  return columnValue(column, want, d).expr;
}

/** The bucket of a record, or -1 where a statement covers a single bucket or the whole range. */
export function bucketExpr(q: CellQuery, bucket: boolean): RawBuilder<unknown> {
  const big = (v: number) => sql`cast(${v} as bigint)`;
  return bucket ? sql`(records.created_at - ${big(q.firstUs)}) / ${big(q.sizeUs)}` : sql`-1`;
}

/** The records of the run in [low, high) that pass the filters (`candidates`: their text candidates). */
export function cellWhere(
  q: CellQuery,
  o: { low: number; high: number },
  d: SqlDialect,
  candidates?: TextCandidates,
) {
  const where = [
    sql`records.run_id = ${q.runId}`,
    sql`records.created_at >= ${o.low}`,
    sql`records.created_at < ${o.high}`,
  ];
  if (q.tree) where.push(sql`${compileFilterTree(q.tree, { dialect: d.name, candidates })}`);
  return sql.join(where, sql` and `);
}

/**
 * SELECT <bucket>, <group>, <aggregates> FROM records WHERE <run, range, filter>
 * GROUP BY <bucket?>, <group>; `aggregates` names the columns after the first two.
 */
export function cellStatement(
  q: CellQuery,
  o: { bucket: boolean; percentilesOnly: boolean; low: number; high: number },
  d: SqlDialect,
  candidates?: TextCandidates,
) {
  const specs = aggregateSpecs(q.metrics, o.percentilesOnly);
  const values = valueReads(q.metrics).map((r) => readValue(r, q.metrics, d));
  const parts = [bucketExpr(q, o.bucket), q.group ? groupExpr(q.group, d) : sql`null`];
  for (const spec of specs) {
    const v = values[spec.metric];
    const x = v?.expr;
    switch (spec.op) {
      case 'n':
        parts.push(sql`count(*)`);
        break;
      case 'count':
        parts.push(v.nullable ? sql`count(${x})` : sql`count(*)`);
        break;
      case 'sum':
        parts.push(d.sum(x));
        break;
      case 'total':
        parts.push(sql`coalesce(${d.sum(x)}, 0)`);
        break;
      case 'min':
        parts.push(sql`min(${x})`);
        break;
      case 'max':
        parts.push(sql`max(${x})`);
        break;
      case 'true':
        parts.push(sql`sum(case when ${x} = 1 then 1 else 0 end)`);
        break;
      case 'percentile':
        parts.push(d.percentile(x, spec.percent!));
        break;
    }
  }
  const names = ['b', 'g', ...specs.map((a) => a.name)];
  const select = sql.join(parts.map((e, i) => sql`${e} as ${sql.id(names[i])}`));
  const from = sql`select ${select} from records where ${cellWhere(q, o, d, candidates)}`;
  const aggregates = names.slice(2);
  // Without a bucket column the statement covers one bucket (or none): it groups by the group alone,
  // and without a group it needs no GROUP BY (so no sort) at all.
  if (o.bucket) return { query: sql<CellRow>`${from} group by 1, 2`, aggregates };
  return { query: q.group ? sql<CellRow>`${from} group by 2` : sql<CellRow>`${from}`, aggregates };
}

/** The groups a query shows, by their record counts (`[null]` without a group column), and how many there are. */
export function shownGroups(
  q: CellQuery,
  counts: Map<unknown, number>,
  groupLimit: number,
): { shown: unknown[]; groupCount: number } {
  const ranked = rankGroups(counts, q.group ? groupLimit : 1);
  return { shown: q.group ? ranked.shown : [null], groupCount: ranked.count };
}
