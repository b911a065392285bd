/**
 * The answer of a widget-data query, assembled from the aggregate cells the store computed: each
 * widget's series per group and bucket, and its total over the range.
 */
import type { CellRow } from './cell-columns.ts';
import type { Aggregation } from './dashboards.ts';
import { toIso } from './time.ts';

/** What the answer shows of the group_by column. */
export interface GroupColumn {
  dataType: string;
  source: { kind: string };
}

/** What the answer shows of a widget. */
export interface WidgetOf {
  id: string;
  name: string;
  metric: string;
  aggregation: string;
  section_id: string | null;
}

/** Which aggregate (or percentile) each aggregation reads. */
export const NEEDS: Record<Aggregation, 'sum' | 'min' | 'max' | 'true' | number | null> = {
  Count: null,
  Sum: 'sum',
  Average: 'sum',
  Min: 'min',
  Max: 'max',
  P50: 50,
  P90: 90,
  P95: 95,
  P99: 99,
  PercentageTrue: 'true',
  PercentageFalse: 'true',
};

/** Adds up the cells of each group over the whole range (percentiles come from their own query). */
function totalsOf(cells: CellRow[], percentileTotals: CellRow[] | null): Map<unknown, CellRow> {
  const totals = new Map<unknown, CellRow>();
  for (const c of cells) {
    const t = totals.get(c.g);
    if (!t) {
      totals.set(c.g, { ...c, b: -1 });
      continue;
    }
    for (const [k, v] of Object.entries(c)) {
      if (k === 'b' || k === 'g' || v === null || v === undefined) continue;
      const cur = t[k];
      if (cur === null || cur === undefined) t[k] = v;
      else if (k.endsWith('_min')) t[k] = Math.min(Number(cur), Number(v));
      else if (k.endsWith('_max')) t[k] = Math.max(Number(cur), Number(v));
      else if (!/_p\d+$/.test(k)) t[k] = Number(cur) + Number(v);
    }
  }
  for (const t of totals.values()) for (const k of Object.keys(t)) if (/_p\d+$/.test(k)) t[k] = null;
  for (const p of percentileTotals ?? []) {
    const t = totals.get(p.g);
    if (t) for (const [k, v] of Object.entries(p)) if (/_p\d+$/.test(k)) t[k] = v;
  }
  return totals;
}

/** Turns aggregate cells into the widget series of the query answer. */
export function assemble(a: {
  dashboardId: string;
  range: { start: number; end: number };
  layout: { first: number; size: number; count: number };
  intervalMins: number;
  groupBy: string | null;
  group: GroupColumn | null;
  /** The groups shown, in order, and how many there are in all. */
  shown: unknown[];
  groupCount: number;
  widgets: WidgetOf[];
  specOf: Map<string, { key: string }>;
  cells: CellRow[];
  percentileTotals: CellRow[] | null;
  /** Whether the dashboard rollups answered or the records were scanned, and why not rollups. */
  answered_by?: 'rollup' | 'scan';
  fallback_reason?: string | null;
}) {
  const totals = totalsOf(a.cells, a.percentileTotals);
  const shown = a.shown;
  const index = new Map(shown.map((g, i) => [g, i]));
  const byCell = new Map<string, CellRow>();
  for (const c of a.cells) if (index.has(c.g)) byCell.set(`${c.b}|${index.get(c.g)}`, c);
  return {
    dashboard_id: a.dashboardId,
    start_time: a.range.start,
    end_time: a.range.end,
    interval_mins: a.intervalMins,
    group_by: a.groupBy,
    buckets: Array.from({ length: a.layout.count }, (_, i) => a.layout.first + i * a.layout.size),
    groups: shown.map((g) => presentGroup(g, a.group)),
    other_groups: a.group ? Math.max(0, a.groupCount - shown.length) : 0,
    answered_by: a.answered_by ?? 'scan',
    fallback_reason: a.fallback_reason ?? null,
    widgets: a.widgets.map((w) => {
      const spec = a.specOf.get(w.id);
      const agg = w.aggregation as Aggregation;
      return {
        id: w.id,
        name: w.name,
        metric: w.metric,
        aggregation: w.aggregation,
        section_id: w.section_id,
        series: shown.map((g, gi) => ({
          group: presentGroup(g, a.group),
          values: Array.from({ length: a.layout.count }, (_, b) =>
            spec ? cellValue(byCell.get(`${b}|${gi}`), spec, agg) : null,
          ),
          total: spec ? cellValue(totals.get(g), spec, agg) : null,
        })),
      };
    }),
  };
}

/** One aggregation from a cell's aggregates (store/widget-cells.ts aggregateSpecs names them). */
export function cellValue(cell: CellRow | undefined, spec: { key: string }, agg: Aggregation): number | null {
  const count = cell ? Number(cell[`${spec.key}_n`] ?? 0) : 0;
  if (agg === 'Count') return count;
  if (!cell || count === 0) return null;
  const num = (k: string) => {
    const v = cell[`${spec.key}_${k}`];
    return v === null || v === undefined ? null : Number(v);
  };
  switch (agg) {
    case 'Sum':
      return num('sum');
    case 'Average':
      return num('sum')! / count;
    case 'Min':
      return num('min');
    case 'Max':
      return num('max');
    case 'PercentageTrue':
      return (100 * num('true')!) / count;
    case 'PercentageFalse':
      return (100 * (count - num('true')!)) / count;
    default:
      return num(`p${{ P50: 50, P90: 90, P95: 95, P99: 99 }[agg]}`);
  }
}

/** A group value as the API shows it: booleans as booleans, timestamps as date-times. */
function presentGroup(g: unknown, column: GroupColumn | null): unknown {
  if (g === null || g === undefined || !column) return null;
  if (column.dataType === 'boolean' && column.source.kind === 'scalar') return Number(g) === 1;
  if (column.dataType === 'timestamp') return toIso(Number(g));
  const numeric = column.dataType === 'integer' || column.dataType === 'floating_point';
  // PostgreSQL answers numeric values as text.
  return numeric || typeof g === 'bigint' ? Number(g) : g;
}
