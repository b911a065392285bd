/**
 * The dashboard page's pure pieces: the time ranges and intervals it offers, where each widget sits
 * on the grid (the dashboard's `layout_map`), a widget's computed series as chart columns, and the
 * record table a chart point opens. Pure, so node:test checks them (test/unit/console-dashboard.test.ts).
 */
import type { Column, Dashboard, DashboardData, Widget } from './api-types.ts';
import type { FilterTreeJson } from './filter-form.ts';
import { distinctTicks, formatCost, formatCostTicks, memoize } from './format.ts';
import { type RecordTab, viewToParams, emptyView } from './list-view.ts';

export const AGGREGATION_LABELS: Record<string, string> = {
  Count: 'Count',
  Sum: 'Sum',
  Average: 'Average',
  Min: 'Minimum',
  Max: 'Maximum',
  P50: 'Median (P50)',
  P90: 'P90',
  P95: 'P95',
  P99: 'P99',
  PercentageFalse: '% false',
  PercentageTrue: '% true',
};

export const WIDGET_TYPE_LABELS: Record<string, string> = {
  line_chart: 'Line chart',
  bar_chart: 'Bar chart',
  number: 'Number',
  table: 'Table',
};

/** Relative ranges offered; a dashboard saved with another one (by the API) shows that one too. */
export const DASHBOARD_RANGES: [string, string][] = [
  ['last_1_hours', 'Last hour'],
  ['last_24_hours', 'Last 24 hours'],
  ['last_7_days', 'Last 7 days'],
  ['last_30_days', 'Last 30 days'],
  ['last_90_days', 'Last 90 days'],
];

export const INTERVALS: [number, string][] = [
  [5, '5 minutes'],
  [15, '15 minutes'],
  [60, '1 hour'],
  [360, '6 hours'],
  [1440, '1 day'],
  [10080, '1 week'],
];

/** "last_2_days" → "Last 2 days", for ranges the list does not name. */
export function rangeLabel(relative: string): string {
  const known = DASHBOARD_RANGES.find(([v]) => v === relative);
  if (known) return known[1];
  const [, n, unit] = /^last_(\d+)_(\w+)$/.exec(relative) ?? [];
  return n ? `Last ${n} ${unit}` : relative;
}

export function intervalLabel(mins: number): string {
  return INTERVALS.find(([m]) => m === mins)?.[1] ?? `${mins} minutes`;
}

// ---- layout ------------------------------------------------------------------------------------

export const GRID_COLUMNS = 12;

/** One widget's place on its grid (12 columns; rows are ROW_HEIGHT pixels). */
export interface Cell {
  i: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

const DEFAULT_SIZE: Record<string, { w: number; h: number }> = {
  number: { w: 3, h: 3 },
  table: { w: 6, h: 5 },
  line_chart: { w: 6, h: 5 },
  bar_chart: { w: 6, h: 5 },
};

/** A stored `[x, y, w, h]`, or null when the entry is not one (left by another client). */
function storedCell(id: string, entry: unknown): Cell | null {
  if (!Array.isArray(entry) || entry.length !== 4) return null;
  const [x, y, w, h] = entry as number[];
  const ok = (n: number, min: number) => Number.isSafeInteger(n) && n >= min;
  if (!ok(x, 0) || !ok(y, 0) || !ok(w, 1) || !ok(h, 1) || x + w > GRID_COLUMNS) return null;
  return { i: id, x, y, w, h };
}

/**
 * Where a grid's widgets sit: each widget's stored `layout_map` entry, and for a widget without one
 * (new, or added through the API) the next free place below the others, left to right.
 */
export function layoutOf(widgets: Widget[], layoutMap: Record<string, unknown>): Cell[] {
  const placed: Cell[] = [];
  const unplaced: Widget[] = [];
  for (const w of widgets) {
    const cell = storedCell(w.id, layoutMap[w.id]);
    if (cell) placed.push(cell);
    else unplaced.push(w);
  }
  let y = placed.reduce((m, c) => Math.max(m, c.y + c.h), 0);
  let x = 0;
  let rowHeight = 0;
  for (const w of unplaced) {
    const size = DEFAULT_SIZE[w.type] ?? DEFAULT_SIZE.line_chart;
    if (x + size.w > GRID_COLUMNS) {
      y += rowHeight;
      x = 0;
      rowHeight = 0;
    }
    placed.push({ i: w.id, x, y, w: size.w, h: size.h });
    x += size.w;
    rowHeight = Math.max(rowHeight, size.h);
  }
  return placed;
}

/** The dashboard's layout_map with one grid's cells written in (other grids' entries kept). */
export function withCells(layoutMap: Record<string, unknown>, cells: Cell[]): Record<string, number[]> {
  const next: Record<string, number[]> = {};
  for (const [k, v] of Object.entries(layoutMap)) {
    if (Array.isArray(v) && v.every((n) => Number.isSafeInteger(n))) next[k] = v as number[];
  }
  for (const c of cells) next[c.i] = [c.x, c.y, c.w, c.h];
  return next;
}

/** Whether two layouts place every widget alike (a drag that ends where it started saves nothing). */
export function sameCells(a: Cell[], b: Cell[]): boolean {
  if (a.length !== b.length) return false;
  const byId = new Map(b.map((c) => [c.i, c]));
  return a.every((c) => {
    const o = byId.get(c.i);
    return o !== undefined && o.x === c.x && o.y === c.y && o.w === c.w && o.h === c.h;
  });
}

// ---- series ------------------------------------------------------------------------------------

export type WidgetSeries = DashboardData['widgets'][number]['series'][number];

/** A group value as a legend shows it. */
export const groupLabel = (group: unknown): string =>
  group === null || group === undefined
    ? '(none)'
    : typeof group === 'string'
      ? group
      : JSON.stringify(group);

/** A widget's computed data, or undefined while it is not in the answer (just added). */
export const dataOf = (data: DashboardData | undefined, widgetId: string) =>
  data?.widgets.find((w) => w.id === widgetId);

/** Series colours: distinguishable, and readable on the light background. */
export const PALETTE = [
  '#2563eb',
  '#d97706',
  '#059669',
  '#dc2626',
  '#7c3aed',
  '#0891b2',
  '#be185d',
  '#65a30d',
  '#475569',
  '#ea580c',
];

export const colourOf = (i: number) => PALETTE[i % PALETTE.length];

const isCost = (metric: string, aggregation: string) => aggregation !== 'Count' && /(^|\/)cost$/.test(metric);

/**
 * A widget's value as shown: durations in ms, percentages with %, cost in dollars (the console's one
 * money formatter), others as numbers; `compactDigits` for an axis (12K, 1.5M, with at most that
 * many decimals).
 */
export function formatValue(
  metric: string,
  aggregation: string,
  v: number | null | undefined,
  compactDigits?: number,
): string {
  if (v === null || v === undefined) return '–';
  if (isCost(metric, aggregation)) return formatCost(v);
  const n = (x: number) => (compactDigits === undefined ? NUMBER : compact(compactDigits)).format(x);
  if (aggregation.startsWith('Percentage')) return `${n(v)} %`;
  if (aggregation !== 'Count' && /(^|\/)duration_ns$/.test(metric)) return `${n(v / 1e6)} ms`;
  return n(v);
}

/** A widget's axis labels, distinct for distinct ticks. */
export function formatTicks(metric: string, aggregation: string, values: number[]): string[] {
  if (isCost(metric, aggregation)) return formatCostTicks(values);
  return distinctTicks(values, (v, d) => formatValue(metric, aggregation, v, d));
}

const NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 });
const compact = memoize(
  (digits: number) => new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: digits }),
);

/** Counts on an axis: 12K, 1.5M, distinct for distinct ticks. */
export const compactCounts = (values: number[]) => distinctTicks(values, (v, d) => compact(d).format(v));

// ---- long tables ---------------------------------------------------------------------------

/**
 * The rows of a long table of one-line rows that a scroll box shows, with `overscan` more on each
 * side: rows [start, end). `offset` is the height above the first row inside the box (a header).
 * Pure, for useRowWindow and for unit tests.
 */
export function rowWindow(
  scrollTop: number,
  viewport: number,
  rowPx: number,
  count: number,
  overscan: number,
  offset = 0,
): { start: number; end: number } {
  const first = Math.floor(Math.max(0, scrollTop - offset) / rowPx);
  const last = Math.ceil(Math.max(0, scrollTop + viewport - offset) / rowPx);
  return { start: Math.max(0, first - overscan), end: Math.min(count, last + overscan) };
}

// ---- drill-down --------------------------------------------------------------------------------

/** The available columns of each record table of the log stream. */
export type Catalogues = Partial<Record<RecordTab, Column[]>>;

/** The record table a filter keeps to, when it keeps only traces or only sessions. */
function typeTab(tree: unknown): RecordTab | null {
  const leaves: unknown[] = [];
  const walk = (t: unknown) => {
    if (!t || typeof t !== 'object') return;
    const o = t as Record<string, unknown>;
    if (o.filter) leaves.push(o.filter);
    if (Array.isArray(o.and)) for (const c of o.and) walk(c);
  };
  walk(tree);
  for (const l of leaves as { column_id?: string; operator?: string; value?: unknown }[]) {
    if (l.column_id === 'type' && (l.operator ?? 'eq') === 'eq') {
      if (l.value === 'trace') return 'traces';
      if (l.value === 'session') return 'sessions';
    }
  }
  return null;
}

/**
 * The record table a point opens: traces or sessions when the dashboard's filter keeps only those,
 * else the first of spans, traces and sessions that has the group column (a trace's metadata key is
 * not a span's), else spans.
 */
export function drillTab(tree: unknown, groupBy: string | null, catalogues: Catalogues): RecordTab {
  const byType = typeTab(tree);
  if (byType) return byType;
  if (groupBy) {
    for (const tab of ['spans', 'traces', 'sessions'] as const)
      if (groupColumn(groupBy, catalogues[tab] ?? [])) return tab;
  }
  return 'spans';
}

/** Every table's columns once (the first table's descriptor of a column wins). */
export function mergedColumns(catalogues: Catalogues): Column[] {
  const byId = new Map<string, Column>();
  for (const tab of ['spans', 'traces', 'sessions'] as const)
    for (const c of catalogues[tab] ?? []) if (!byId.has(c.id)) byId.set(c.id, c);
  return [...byId.values()];
}

/** The group column as the catalogue has it (group_by may name a standard metric bare). */
export function groupColumn(groupBy: string | null, columns: Column[]): Column | undefined {
  if (!groupBy) return undefined;
  return columns.find((c) => c.id === groupBy) ?? columns.find((c) => c.id === `metrics/${groupBy}`);
}

/** The filter that keeps one group's records; null for the records without a value. */
export function groupFilter(column: Column | undefined, group: unknown): FilterTreeJson | null {
  if (!column || group === null || group === undefined) return null;
  const type = (column.filter_type ?? 'text') as 'text' | 'number' | 'boolean' | 'id';
  return { filter: { column_id: column.id, type, operator: 'eq', value: group } };
}

/**
 * The record table (path and query) for the records behind one point: the bucket's time window
 * clipped to the dashboard's range, the dashboard's filter, and the group's value.
 */
export function drillDownHref(
  runBase: string,
  dashboard: Pick<Dashboard, 'filter_tree' | 'group_by'>,
  data: Pick<DashboardData, 'start_time' | 'end_time' | 'interval_mins'>,
  bucketStart: number | null,
  group: unknown,
  catalogues: Catalogues,
): string {
  return drillDowns(runBase, dashboard, data, catalogues)(bucketStart, group);
}

/**
 * drillDownHref for every point of one answer: the table and each group's filter are worked out
 * once, not once per link (a table widget over months of hourly buckets has thousands).
 */
export function drillDowns(
  runBase: string,
  dashboard: Pick<Dashboard, 'filter_tree' | 'group_by'>,
  data: Pick<DashboardData, 'start_time' | 'end_time' | 'interval_mins'>,
  catalogues: Catalogues,
): (bucketStart: number | null, group: unknown) => string {
  const tab = drillTab(dashboard.filter_tree, dashboard.group_by, catalogues);
  const column = dashboard.group_by ? groupColumn(dashboard.group_by, catalogues[tab] ?? []) : undefined;
  // Each group's filter, as the query string's first parameter ('' for none).
  const byGroup = new Map<unknown, string>();
  const filterOf = (group: unknown) => {
    let param = byGroup.get(group);
    if (param === undefined) {
      const trees = [
        dashboard.filter_tree as FilterTreeJson | null,
        dashboard.group_by ? groupFilter(column, group) : null,
      ].filter((t): t is FilterTreeJson => t !== null && t !== undefined);
      const filter = trees.length === 0 ? null : trees.length === 1 ? trees[0] : { and: trees };
      param = viewToParams({ ...emptyView(), filter }).toString();
      byGroup.set(group, param);
    }
    return param;
  };
  // viewToParams' from and to, as URLSearchParams writes them (an ISO time's only such character is ':').
  const time = (seconds: number) => new Date(seconds * 1000).toISOString().replaceAll(':', '%3A');
  return (bucketStart, group) => {
    const from = bucketStart === null ? data.start_time : Math.max(bucketStart, data.start_time);
    const to =
      bucketStart === null ? data.end_time : Math.min(bucketStart + data.interval_mins * 60, data.end_time);
    const filter = filterOf(group);
    return `${runBase}/${tab}?${filter ? `${filter}&` : ''}from=${time(from)}&to=${time(to)}`;
  };
}

// ---- the settings bar --------------------------------------------------------------------------

/** Columns a dashboard may group by: single-valued, not annotations (the API's rule). */
export const groupableColumns = (columns: Column[]) =>
  columns.filter((c) => !c.multi_valued && c.category !== 'annotation' && c.id !== 'tags');

/** Columns an aggregation may take (numbers, booleans for the percentages, any for Count). */
export function metricColumns(columns: Column[], aggregation: string): Column[] {
  if (aggregation === 'Count') return columns.filter((c) => !c.multi_valued);
  const metadata = (c: Column) => c.category === 'user_metadata' || c.category === 'dataset_metadata';
  if (aggregation.startsWith('Percentage'))
    return columns.filter((c) => c.data_type === 'boolean' || metadata(c));
  return columns.filter((c) => c.data_type === 'integer' || c.data_type === 'floating_point' || metadata(c));
}
