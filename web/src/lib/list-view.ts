/**
 * A record list's whole view (filter, quick search, sort, columns, time range, page) as URL query
 * parameters, and the search request it makes. Pure, so that a copied URL is known to rebuild the
 * same request (test/unit/console-list-view.test.ts).
 */
import type { FilterTreeJson } from './filter-form.ts';

export type RecordTab = 'traces' | 'spans' | 'sessions';

/** `last_<n><unit>` ranges the picker offers, in seconds. */
export const RELATIVE_RANGES: Record<string, { label: string; seconds: number }> = {
  '15m': { label: 'Last 15 minutes', seconds: 900 },
  '1h': { label: 'Last hour', seconds: 3600 },
  '24h': { label: 'Last 24 hours', seconds: 86_400 },
  '7d': { label: 'Last 7 days', seconds: 604_800 },
  '30d': { label: 'Last 30 days', seconds: 2_592_000 },
};

export type TimeRange =
  | { kind: 'all' }
  | { kind: 'relative'; last: string }
  /** ISO date-times; either end may be open. */
  | { kind: 'absolute'; from: string | null; to: string | null };

export interface Sort {
  name: string;
  ascending: boolean;
}

export interface ListView {
  filter: FilterTreeJson | null;
  /** "input or output contains", case-insensitive. */
  q: string;
  sort: Sort | null;
  /** Chosen columns; null: the remembered or default ones. */
  columns: string[] | null;
  range: TimeRange;
  start: number;
  limit: number;
}

export const PAGE_SIZES = [25, 50, 100, 200];
export const DEFAULT_LIMIT = 50;

export const emptyView = (): ListView => ({
  filter: null,
  q: '',
  sort: null,
  columns: null,
  range: { kind: 'all' },
  start: 0,
  limit: DEFAULT_LIMIT,
});

const nonNegativeInt = (text: string | null, fallback: number) => {
  const n = text === null ? Number.NaN : Number(text);
  return Number.isSafeInteger(n) && n >= 0 ? n : fallback;
};

/** The view a URL's query describes; parts that do not parse fall back to their defaults. */
export function parseView(params: URLSearchParams): ListView {
  const view = emptyView();
  const filter = params.get('filter');
  if (filter) {
    try {
      const parsed = JSON.parse(filter);
      if (parsed && typeof parsed === 'object') view.filter = parsed;
    } catch {
      // A hand-edited URL: show everything rather than nothing.
    }
  }
  view.q = params.get('q') ?? '';
  const sort = params.get('sort');
  if (sort) {
    const cut = sort.lastIndexOf(':');
    const dir = cut >= 0 ? sort.slice(cut + 1) : 'asc';
    view.sort = { name: cut >= 0 ? sort.slice(0, cut) : sort, ascending: dir !== 'desc' };
  }
  const cols = params.get('cols');
  if (cols !== null) view.columns = cols === '' ? [] : cols.split(',');
  const last = params.get('last');
  const from = params.get('from');
  const to = params.get('to');
  if (last && RELATIVE_RANGES[last]) view.range = { kind: 'relative', last };
  else if (from || to) view.range = { kind: 'absolute', from: from || null, to: to || null };
  view.start = nonNegativeInt(params.get('start'), 0);
  const limit = nonNegativeInt(params.get('limit'), DEFAULT_LIMIT);
  view.limit = Math.min(1000, Math.max(1, limit));
  return view;
}

/** The URL query of a view; defaults are left out, so a plain list has a plain URL. */
export function viewToParams(view: ListView): URLSearchParams {
  const p = new URLSearchParams();
  if (view.filter) p.set('filter', JSON.stringify(view.filter));
  if (view.q) p.set('q', view.q);
  if (view.sort) p.set('sort', `${view.sort.name}:${view.sort.ascending ? 'asc' : 'desc'}`);
  if (view.columns) p.set('cols', view.columns.join(','));
  if (view.range.kind === 'relative') p.set('last', view.range.last);
  if (view.range.kind === 'absolute') {
    if (view.range.from) p.set('from', view.range.from);
    if (view.range.to) p.set('to', view.range.to);
  }
  if (view.start) p.set('start', String(view.start));
  if (view.limit !== DEFAULT_LIMIT) p.set('limit', String(view.limit));
  return p;
}

/** The time range as created_at bounds (ISO), a relative one resolved at `now`. */
export function rangeBounds(range: TimeRange, now: number): { from: string | null; to: string | null } {
  switch (range.kind) {
    case 'all':
      return { from: null, to: null };
    case 'relative':
      return { from: new Date(now - RELATIVE_RANGES[range.last].seconds * 1000).toISOString(), to: null };
    case 'absolute':
      return { from: range.from, to: range.to };
  }
}

export const quickSearchTree = (q: string): FilterTreeJson => ({
  or: ['input', 'output'].map((column_id) => ({
    filter: { column_id, type: 'text', operator: 'contains', value: q, case_sensitive: false },
  })),
});

export interface Scope {
  log_stream_id?: string;
  experiment_id?: string;
}

/** Which run a search or column list is about. */
export const runScope = (kind: 'log_streams' | 'experiments', runId: string): Scope =>
  kind === 'experiments' ? { experiment_id: runId } : { log_stream_id: runId };

/** The record types each table lists. */
const TAB_TYPES: Record<RecordTab, FilterTreeJson> = {
  traces: { filter: { column_id: 'type', type: 'text', operator: 'eq', value: 'trace' } },
  sessions: { filter: { column_id: 'type', type: 'text', operator: 'eq', value: 'session' } },
  spans: { filter: { column_id: 'type', type: 'text', operator: 'not_in', value: ['trace', 'session'] } },
};

/**
 * Every record a view's table matches, as an annotation queue's "add what this search finds" takes
 * it (that search covers records of every type, so the table's own types are a condition of it).
 */
export function matchingBody(view: ListView, scope: Scope, tab: RecordTab, now: number) {
  const { filter_tree, filters } = searchBody(view, scope, [], now);
  return {
    ...scope,
    filter_tree: filter_tree ? { and: [filter_tree, TAB_TYPES[tab]] } : TAB_TYPES[tab],
    ...(filters ? { filters } : {}),
  };
}

/** Columns whose values come only with include_counts. */
const COUNT_COLUMNS = ['num_spans', 'num_traces'];

/** The search request body of a view (POST /v2/projects/{id}/{tab}/search). */
export function searchBody(view: ListView, scope: Scope, columns: string[], now: number) {
  const trees = [view.filter, view.q ? quickSearchTree(view.q) : null].filter(
    (t): t is FilterTreeJson => t !== null,
  );
  const { from, to } = rangeBounds(view.range, now);
  const filters = [
    ...(from ? [{ column_id: 'created_at', type: 'date', operator: 'gte', value: from }] : []),
    ...(to ? [{ column_id: 'created_at', type: 'date', operator: 'lt', value: to }] : []),
  ];
  return {
    ...scope,
    ...(trees.length ? { filter_tree: trees.length === 1 ? trees[0] : { and: trees } } : {}),
    ...(filters.length ? { filters } : {}),
    ...(view.sort ? { sort: view.sort } : {}),
    pagination: { starting_token: view.start, limit: view.limit },
    ...(columns.some((c) => COUNT_COLUMNS.includes(c)) ? { include_counts: true } : {}),
  };
}

/** Columns shown before the user chooses, per tab (those the run has; see the column chooser). */
export const DEFAULT_COLUMNS: Record<RecordTab, string[]> = {
  traces: [
    'name',
    'input',
    'output',
    'created_at',
    'metrics/duration_ns',
    'metrics/num_total_tokens',
    'metrics/cost',
    'status_code',
  ],
  spans: [
    'type',
    'name',
    'input',
    'output',
    'model',
    'created_at',
    'metrics/duration_ns',
    'metrics/num_total_tokens',
    'metrics/cost',
  ],
  sessions: [
    'name',
    'external_id',
    'input',
    'output',
    'num_traces',
    'created_at',
    'metrics/duration_ns',
    'metrics/num_total_tokens',
    'metrics/cost',
  ],
};
