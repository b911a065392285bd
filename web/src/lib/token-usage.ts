/**
 * Token usage of a log stream as the console charts it: the request for a range of UTC days, and
 * the answer's records laid out one per day (a day without llm spans has no record: zero tokens,
 * no cost). Pure (test/unit/console-dashboard.test.ts).
 */
import type { TokenUsagePage } from './api-types.ts';

export const TOKEN_KINDS = [
  ['input_tokens', 'Input'],
  ['output_tokens', 'Output'],
  ['cache_read_input_tokens', 'Cache read'],
  ['cache_creation_input_tokens', 'Cache creation'],
] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number][0];

const DAY = 86_400;

/** "2025-06-01" → epoch seconds of that UTC midnight; null when it is not such a date. */
export function dayStart(date: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return null;
  const t = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(t) ? null : t / 1000;
}

export const dayOf = (epochSeconds: number) => new Date(epochSeconds * 1000).toISOString().slice(0, 10);

/** The page request for the days from `from` to `to`, both included, oldest first. */
export function usageRequest(from: string, to: string, startingToken = 0) {
  const start = dayStart(from);
  const end = dayStart(to);
  return {
    filters: [
      ...(start === null
        ? []
        : [{ name: 'created_at', operator: 'gte', value: new Date(start * 1000).toISOString() }]),
      ...(end === null
        ? []
        : [{ name: 'created_at', operator: 'lt', value: new Date((end + DAY) * 1000).toISOString() }]),
    ],
    sort: { name: 'created_at', ascending: true },
    starting_token: startingToken,
    limit: 1000,
  };
}

export interface DailyUsage {
  days: number[];
  tokens: Record<TokenKind, number[]>;
  cost: (number | null)[];
  totals: Record<TokenKind, number> & { cost: number | null };
}

/** One column per day from `from` to `to`; the records' sums in their days. */
export function dailyUsage(records: TokenUsagePage['token_usages'], from: string, to: string): DailyUsage {
  const start = dayStart(from) ?? 0;
  const end = dayStart(to) ?? start;
  const days: number[] = [];
  for (let d = start; d <= end && days.length <= 3660; d += DAY) days.push(d);
  const index = new Map(days.map((d, i) => [d, i]));
  const tokens = Object.fromEntries(TOKEN_KINDS.map(([k]) => [k, days.map(() => 0)])) as DailyUsage['tokens'];
  const cost: (number | null)[] = days.map(() => null);
  const totals = {
    ...Object.fromEntries(TOKEN_KINDS.map(([k]) => [k, 0])),
    cost: null,
  } as DailyUsage['totals'];
  for (const r of records) {
    const i = index.get(Math.floor(Date.parse(r.created_at) / 1000));
    if (i === undefined) continue;
    for (const [k] of TOKEN_KINDS) {
      tokens[k][i] += r.token_usage[k];
      totals[k] += r.token_usage[k];
    }
    if (r.cost !== null) {
      cost[i] = (cost[i] ?? 0) + r.cost;
      totals.cost = (totals.cost ?? 0) + r.cost;
    }
  }
  return { days, tokens, cost, totals };
}
