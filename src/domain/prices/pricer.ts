/**
 * The price of a model at a moment, for one project: the project's own prices first (a case-insensitive
 * RE2 pattern matched against the whole model name, in force from its start date), then the shipped
 * catalogue. Among project prices that match and are in force, the latest start wins (no start date:
 * always in force, oldest), then the latest created.
 *
 * Lookups are cached per model name (ingestion prices every llm span): the project prices a name
 * matches and its catalogue entry are found once, and only the start dates are compared per span.
 */
import { RE2JS } from 're2js';
import { type CatalogueModel, catalogueModel, inputIncludesCached } from './catalogue.ts';
import { type PriceSheet, type TokenUsage, costOf } from './cost.ts';

/** A project price as stored. */
export interface ProjectPrice {
  id: string;
  model_pattern: string;
  input_price_per_million: number;
  output_price_per_million: number;
  cache_read_input_price_per_million: number | null;
  cache_creation_input_price_per_million: number | null;
  /** Null: as the catalogue's provider of the model says, else OpenAI style. */
  input_includes_cached_tokens: boolean | null;
  /** Epoch microseconds; null: always in force. */
  start_date: number | null;
  created_at: number;
}

export interface ResolvedPrice {
  sheet: PriceSheet;
  inputIncludesCached: boolean;
  /** The project price's id, or null for the catalogue. */
  projectPriceId: string | null;
  catalogue: CatalogueModel | null;
}

/** Longest model_pattern accepted (with RE2's linear matching this bounds the work per name). */
export const MAX_PATTERN_LENGTH = 500;

/** Compiles a model pattern (case-insensitive, whole name); throws RE2JSSyntaxException when invalid. */
export function compilePattern(pattern: string): RE2JS {
  return RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
}

interface Compiled {
  price: ProjectPrice;
  regex: RE2JS;
  sheet: PriceSheet;
}

interface CacheEntry {
  /** Project prices matching the name, latest start first. */
  project: Compiled[];
  catalogue: CatalogueModel | null;
}

const MAX_CACHED_NAMES = 10_000;

export class Pricer {
  private readonly compiled: Compiled[];
  private readonly names = new Map<string, CacheEntry>();

  constructor(prices: ProjectPrice[] = []) {
    this.compiled = [...prices]
      .sort(
        (a, b) =>
          (b.start_date ?? Number.NEGATIVE_INFINITY) - (a.start_date ?? Number.NEGATIVE_INFINITY) ||
          b.created_at - a.created_at ||
          (a.id < b.id ? -1 : 1),
      )
      .map((price) => ({
        price,
        regex: compilePattern(price.model_pattern),
        sheet: {
          input: price.input_price_per_million,
          output: price.output_price_per_million,
          ...(price.cache_read_input_price_per_million === null
            ? {}
            : { cache_read: price.cache_read_input_price_per_million }),
          ...(price.cache_creation_input_price_per_million === null
            ? {}
            : { cache_creation: price.cache_creation_input_price_per_million }),
        },
      }));
  }

  private entry(model: string): CacheEntry {
    let e = this.names.get(model);
    if (!e) {
      e = {
        project: this.compiled.filter((c) => c.regex.matches(model)),
        catalogue: catalogueModel(model),
      };
      if (this.names.size >= MAX_CACHED_NAMES) this.names.clear();
      this.names.set(model, e);
    }
    return e;
  }

  /** The price in force for `model` at `at` (epoch µs); null when neither the project nor the catalogue has one. */
  priceAt(model: string, at: number): ResolvedPrice | null {
    const e = this.entry(model);
    const own = e.project.find((c) => c.price.start_date === null || c.price.start_date <= at);
    if (own) {
      const convention = own.price.input_includes_cached_tokens;
      return {
        sheet: own.sheet,
        inputIncludesCached: convention ?? (e.catalogue ? inputIncludesCached(e.catalogue) : true),
        projectPriceId: own.price.id,
        catalogue: e.catalogue,
      };
    }
    if (!e.catalogue) return null;
    return {
      sheet: e.catalogue,
      inputIncludesCached: inputIncludesCached(e.catalogue),
      projectPriceId: null,
      catalogue: e.catalogue,
    };
  }

  /**
   * The cost of an llm span in dollars, or null (no model, no price, no token count). `includesCached`
   * is the span's own statement of its convention (null: the price's).
   */
  costOf(model: string | null, at: number, usage: TokenUsage, includesCached: boolean | null): number | null {
    if (model === null || model === '') return null;
    const price = this.priceAt(model, at);
    if (!price) return null;
    return costOf(price.sheet, usage, includesCached ?? price.inputIncludesCached);
  }

  /** Whether any price (project or catalogue) matches `model` at any time. */
  hasPrice(model: string): boolean {
    const e = this.entry(model);
    return e.project.length > 0 || e.catalogue !== null;
  }
}
