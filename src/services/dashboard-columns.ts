/**
 * The columns a dashboard names (filter, group_by, widget metric): checked against the registry and
 * the project's catalogue when saved, read from the registry alone when queried.
 */
import { type Aggregation, aggregationNeeds } from '../domain/dashboards.ts';
import { NEEDS } from '../domain/widget-series.ts';
import { type ErrorItem, ValidationError } from '../domain/errors.ts';
import { ANNOTATION_PREFIX, type ColumnContext, type ColumnDef, lookupColumn } from '../query/columns.ts';
import { type FilterTree, columnLeaves, unknownMetricFaults, validateFilterTree } from '../query/filters.ts';
import type { CatalogueRepo } from '../store/catalogue.ts';
import type { AnnotationColumns } from './search.ts';

export class DashboardColumns {
  constructor(
    private readonly catalogue: CatalogueRepo,
    private readonly annotations: AnnotationColumns,
  ) {}

  /** The project's annotation columns, read when `ids` (or a filter tree's JSON) name one. */
  async context(projectId: string, ...named: unknown[]): Promise<ColumnContext> {
    const text = JSON.stringify(named) ?? '';
    if (!text.includes(ANNOTATION_PREFIX)) return {};
    return { annotations: await this.annotations.columns(projectId) };
  }

  /**
   * The column a dashboard names (filter, group_by, metric): a standard column, any metadata key, a
   * `metrics/<key>` the catalogue has seen in the project, or a bare standard metric name
   * (`duration_ns` for `metrics/duration_ns`). Null when unknown.
   */
  async column(projectId: string, id: string): Promise<ColumnDef | null> {
    let found = lookupColumn(id, await this.context(projectId, id));
    if (!found.ok) {
      const asMetric = lookupColumn(`metrics/${id}`);
      if (!asMetric.ok || asMetric.needsCatalogue) return null;
      found = asMetric;
    }
    if (found.needsCatalogue) {
      const known = await this.catalogue.knownMetricColumns(projectId, [found.column.id]);
      if (!known.has(found.column.id)) return null;
    }
    return found.column;
  }

  async checkFilterTree(projectId: string, json: unknown, loc: (string | number)[], faults: ErrorItem[]) {
    let tree: FilterTree;
    try {
      tree = validateFilterTree(json, loc, await this.context(projectId, json));
    } catch (err) {
      if (err instanceof ValidationError) {
        faults.push(...err.items);
        return null;
      }
      throw err;
    }
    const needed = [
      ...new Set(
        columnLeaves(tree)
          .filter((l) => l.needsCatalogue)
          .map((l) => l.filter.column.id),
      ),
    ];
    if (needed.length) {
      const known = await this.catalogue.knownMetricColumns(projectId, needed);
      const items = unknownMetricFaults(tree, known);
      if (items.length) {
        faults.push(...items);
        return null;
      }
    }
    return tree;
  }

  async checkGroupBy(projectId: string, groupBy: string, faults: ErrorItem[]) {
    const column = await this.column(projectId, groupBy);
    if (!column) {
      faults.push({
        loc: ['body', 'group_by'],
        msg: `Value error, unknown column '${groupBy}'`,
        type: 'value_error',
        input: groupBy,
      });
    } else if (column.source.kind === 'annotation') {
      faults.push({
        loc: ['body', 'group_by'],
        msg: `Value error, cannot group by the annotation column '${groupBy}' (a record may hold several annotations)`,
        type: 'value_error',
        input: groupBy,
      });
    } else if (column.multiValued) {
      faults.push({
        loc: ['body', 'group_by'],
        msg: `Value error, cannot group by the list column '${groupBy}'`,
        type: 'value_error',
        input: groupBy,
      });
    }
    return column;
  }

  /** Whether an aggregation applies to a column, or why not. */
  static metricProblem(column: ColumnDef, agg: Aggregation): string | null {
    const needs = aggregationNeeds(agg);
    // Annotation metrics aggregate annotations through the kept per-record aggregates: counts, sums,
    // minima and maxima merge; percentiles of the annotations do not.
    if (column.source.kind === 'annotation' && typeof NEEDS[agg] === 'number')
      return `${agg} does not apply to the annotation column '${column.id}' (Count, Sum, Average, Min, Max and the percentages do)`;
    if (needs === 'any')
      return column.multiValued ? `${agg} does not apply to the list column '${column.id}'` : null;
    // Metadata keys hold any JSON: aggregate the values of the wanted type; the rest count as missing.
    if (column.source.kind === 'json' && column.source.column !== 'metrics') return null;
    const numeric = column.dataType === 'integer' || column.dataType === 'floating_point';
    if (needs === 'number' && !numeric)
      return `${agg} needs a numeric column; '${column.id}' is ${column.dataType}`;
    if (needs === 'boolean' && column.dataType !== 'boolean')
      return `${agg} needs a boolean column; '${column.id}' is ${column.dataType}`;
    return null;
  }

  async checkMetric(projectId: string, metric: string, agg: Aggregation, faults: ErrorItem[]) {
    const column = await this.column(projectId, metric);
    const problem = column ? DashboardColumns.metricProblem(column, agg) : `unknown column '${metric}'`;
    if (problem)
      faults.push({
        loc: ['body', 'metric'],
        msg: `Value error, ${problem}`,
        type: 'value_error',
        input: metric,
      });
  }
}

/**
 * A column id (or bare standard metric name) from the static registry or `ctx`, without the
 * catalogue check.
 */
export function staticColumn(id: string, ctx: ColumnContext = {}): ColumnDef | null {
  const found = lookupColumn(id, ctx);
  if (found.ok) return found.column;
  const asMetric = lookupColumn(`metrics/${id}`);
  return asMetric.ok && !asMetric.needsCatalogue ? asMetric.column : null;
}

/** A filter tree saved with a dashboard (validated when saved). */
export function storedTree(json: unknown, ctx: ColumnContext = {}): FilterTree {
  try {
    return validateFilterTree(json, ['body', 'filter_tree'], ctx);
  } catch {
    // Only possible if the registry shrank, or an annotation template was deleted, since it was saved.
    throw new ValidationError({
      loc: ['path', 'dashboard_id'],
      msg: 'Value error, the filter_tree saved with this dashboard is no longer valid; save a new one',
      type: 'value_error',
    });
  }
}
