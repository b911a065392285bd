/**
 * The one rule that turns an llm span's token counts into US dollars.
 *
 * Providers count cached input two ways. Where the input count already includes the cached tokens
 * (OpenAI style: `prompt_tokens` holds `cached_tokens`), the cached part is billed at the cache price
 * and taken out of the tokens billed at the input price. Where it excludes them (Anthropic style:
 * `input_tokens` beside `cache_read_input_tokens` and `cache_creation_input_tokens`), they are added.
 * Either way every token is billed once, at its own price:
 *
 *   inclusive: (input − read − write) × input + read × cache_read + write × cache_creation + output × output
 *   exclusive:  input × input          + read × cache_read + write × cache_creation + output × output
 *
 * A count cannot hold more than itself: an "inclusive" input smaller than its cache reads and writes
 * is read as exclusive. A missing cache price bills those tokens at the input price. Prices for long
 * inputs (`long_context`) apply to the whole request when its input, cached tokens included, exceeds
 * the threshold, as the providers bill it.
 */
import type { LongContextPrices, TokenPrices } from './catalogue.ts';

export interface PriceSheet extends TokenPrices {
  long_context?: LongContextPrices;
}

/** Token counts of one llm span (null: not reported). */
export interface TokenUsage {
  input: number | null;
  output: number | null;
  cacheRead: number | null;
  cacheCreation: number | null;
}

/** Cost in dollars, rounded to 1e-12 (below any real price of one token); null without any count. */
export function costOf(price: PriceSheet, usage: TokenUsage, inputIncludesCached: boolean): number | null {
  if (
    usage.input === null &&
    usage.output === null &&
    usage.cacheRead === null &&
    usage.cacheCreation === null
  ) {
    return null;
  }
  const input = usage.input ?? 0;
  const output = usage.output ?? 0;
  const read = usage.cacheRead ?? 0;
  const write = usage.cacheCreation ?? 0;
  const inclusive = inputIncludesCached && read + write <= input;
  const prompt = inclusive ? input : input + read + write;
  const lc = price.long_context;
  const p: TokenPrices = lc && prompt > lc.above_input_tokens ? { ...price, ...lc } : price;
  const uncached = inclusive ? input - read - write : input;
  const micro =
    uncached * p.input +
    read * (p.cache_read ?? p.input) +
    write * (p.cache_creation ?? p.input) +
    output * p.output;
  return Math.round(micro * 1e6) / 1e12;
}
