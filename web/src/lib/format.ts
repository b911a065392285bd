/** Numbers, durations and dates as the console shows them. */

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const min = Math.floor(ms / 60_000);
  return `${min} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export const formatNs = (ns: unknown) => (typeof ns === 'number' ? formatDuration(ns / 1e6) : '');

const integer = new Intl.NumberFormat('en-US');
export const formatCount = (n: unknown) => (typeof n === 'number' ? integer.format(n) : '');

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** ISO → the value of a datetime-local input (local time), and back. */
export function isoToLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function localInputToIso(value: string): string | null {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export const totalTokens = (metrics: Record<string, number> | undefined) => {
  if (!metrics) return null;
  if (typeof metrics.num_total_tokens === 'number') return metrics.num_total_tokens;
  const i = metrics.num_input_tokens;
  const o = metrics.num_output_tokens;
  return typeof i === 'number' || typeof o === 'number' ? (i ?? 0) + (o ?? 0) : null;
};

const dollars = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
const smallDollars = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  maximumSignificantDigits: 3,
});

/**
 * A cost in US dollars: cents from a dollar up, three significant digits below (one llm call often
 * costs $0.000123), "—" when the record has no cost (its model has no price: unknown, not free).
 */
export function formatCost(usd: unknown): string {
  if (typeof usd !== 'number' || !Number.isFinite(usd)) return '—';
  if (Math.abs(usd) >= 1 || usd === 0) return dollars.format(usd);
  // Never fewer than two decimals: $0.10, not $0.1.
  const text = smallDollars.format(usd);
  const decimals = text.split('.')[1]?.length ?? 0;
  return decimals >= 2 ? text : `${text}${decimals === 0 ? '.' : ''}${'0'.repeat(2 - decimals)}`;
}

/** `make` called once per key (number formatters are costly to make). */
export function memoize<K, V>(make: (key: K) => V): (key: K) => V {
  const made = new Map<K, V>();
  return (key) => {
    if (!made.has(key)) made.set(key, make(key));
    return made.get(key) as V;
  };
}

const currency = memoize(
  (decimals: number) =>
    new Intl.NumberFormat('en-US', {
      style: 'currency',
      currency: 'USD',
      minimumFractionDigits: decimals,
      maximumFractionDigits: decimals,
    }),
);

/**
 * An axis' tick labels: `format` with the fewest decimals (from `min`) that keep distinct ticks
 * distinct ($0.0001, $0.00015, $0.0002, never $0.0001 three times).
 */
export function distinctTicks(
  values: number[],
  format: (v: number, decimals: number) => string,
  min = 0,
): string[] {
  const wanted = new Set(values).size;
  let texts = values.map((v) => format(v, min));
  for (let d = min + 1; d <= 12 && new Set(texts).size < wanted; d++) texts = values.map((v) => format(v, d));
  return texts;
}

/** Cost ticks: dollars with one number of decimals for the whole axis, at least two. */
export const formatCostTicks = (values: number[]) =>
  distinctTicks(values, (v, d) => currency(d).format(v), 2);

/** Facts in one line, " · " between those present (never an empty separator). */
export const joinFacts = (...facts: (string | null | false | undefined)[]) =>
  facts.filter(Boolean).join(' · ');

/** The record's cost when it has one (an llm span, trace or session with priced spans). */
export const costOf = (metrics: Record<string, number> | undefined) =>
  typeof metrics?.cost === 'number' ? metrics.cost : null;
