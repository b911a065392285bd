/**
 * The shipped price catalogue (catalogue.json): its shape, the check `npm run check:prices` runs,
 * and the lookup of a model name (most specific entry first, see model-names.ts).
 */
import data from './catalogue.json' with { type: 'json' };
import { lookupNames } from './model-names.ts';

/** US dollars per million tokens of each kind a bill counts. */
export interface TokenPrices {
  input: number;
  output: number;
  /** Cached input read back; absent: billed as input. */
  cache_read?: number;
  /** Input written to the cache; absent: billed as input. */
  cache_creation?: number;
}

/** Prices that replace the base ones when a request's input is longer than `above_input_tokens`. */
export interface LongContextPrices extends Partial<TokenPrices> {
  above_input_tokens: number;
  input: number;
}

export interface CatalogueModel extends TokenPrices {
  /** The normalised model name (lower case, no provider prefix, no date suffix). */
  pattern: string;
  provider: string;
  /** Who serves and bills it, where that is not the provider itself (Meta models). */
  host?: string;
  long_context?: LongContextPrices;
  /** Names clients send that must find this entry (checked). */
  examples: string[];
  /** `<source id>:<the source's own key>`. */
  source: string;
}

export interface ProviderConvention {
  /** Whether this provider's input token count already includes cache reads and writes. */
  input_includes_cached_tokens: boolean;
  why: string;
}

export interface CatalogueDoc {
  about: string;
  /** YYYY-MM-DD: when the figures were last compared with their sources. */
  checked: string;
  sources: Record<string, Record<string, string>>;
  providers: Record<string, ProviderConvention>;
  models: CatalogueModel[];
}

export const CATALOGUE = data as CatalogueDoc;

const PRICE_KEYS = ['input', 'output', 'cache_read', 'cache_creation'] as const;
const MODEL_KEYS = new Set([
  'pattern',
  'provider',
  'host',
  ...PRICE_KEYS,
  'long_context',
  'examples',
  'source',
]);

const isPrice = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** Every fault of a catalogue document, one line each; empty when it is sound. */
export function checkCatalogue(doc: CatalogueDoc): string[] {
  const faults: string[] = [];
  if (!/^\d{4}-\d{2}-\d{2}$/.test(doc.checked ?? '')) faults.push('`checked` must be a YYYY-MM-DD date');
  const sources = Object.keys(doc.sources ?? {});
  if (!sources.length) faults.push('`sources` must name at least one source');
  const seen = new Map<string, number>();
  (doc.models ?? []).forEach((m, i) => {
    const at = `models[${i}] (${m.pattern})`;
    for (const k of Object.keys(m)) if (!MODEL_KEYS.has(k)) faults.push(`${at}: unknown field ${k}`);
    if (typeof m.pattern !== 'string' || m.pattern === '' || m.pattern !== m.pattern.toLowerCase().trim()) {
      faults.push(`${at}: pattern must be a non-empty lower-case name`);
    }
    const first = seen.get(m.pattern);
    if (first !== undefined) faults.push(`${at}: duplicate pattern (also models[${first}])`);
    else seen.set(m.pattern, i);
    if (!Object.hasOwn(doc.providers ?? {}, m.provider)) faults.push(`${at}: unknown provider ${m.provider}`);
    for (const k of PRICE_KEYS) {
      const required = k === 'input' || k === 'output';
      if ((required || m[k] !== undefined) && !isPrice(m[k])) faults.push(`${at}: ${k} must be a price ≥ 0`);
    }
    const lc = m.long_context;
    if (lc !== undefined) {
      if (!Number.isInteger(lc.above_input_tokens) || lc.above_input_tokens <= 0) {
        faults.push(`${at}: long_context.above_input_tokens must be a positive integer`);
      }
      for (const k of PRICE_KEYS) {
        if ((k === 'input' || lc[k] !== undefined) && !isPrice(lc[k])) {
          faults.push(`${at}: long_context.${k} must be a price ≥ 0`);
        }
      }
    }
    const [source] = typeof m.source === 'string' ? m.source.split(':') : [];
    if (!sources.includes(source)) faults.push(`${at}: source must start with a source id and a colon`);
    if (!Array.isArray(m.examples) || !m.examples.length) faults.push(`${at}: needs at least one example`);
  });
  // Examples are checked against the whole catalogue: another, more specific entry must not take them.
  const index = indexOf(doc.models ?? []);
  for (const m of doc.models ?? []) {
    for (const e of Array.isArray(m.examples) ? m.examples : []) {
      const found = findIn(index, e);
      if (found !== m) {
        faults.push(
          `example ${JSON.stringify(e)} of ${m.pattern} finds ${found ? found.pattern : 'nothing'}`,
        );
      }
    }
  }
  return faults;
}

function indexOf(models: CatalogueModel[]): Map<string, CatalogueModel> {
  const index = new Map<string, CatalogueModel>();
  for (const m of models) if (!index.has(m.pattern)) index.set(m.pattern, m);
  return index;
}

function findIn(index: Map<string, CatalogueModel>, model: string): CatalogueModel | null {
  for (const name of lookupNames(model)) {
    const m = index.get(name);
    if (m) return m;
  }
  return null;
}

const INDEX = indexOf(CATALOGUE.models);

/** The catalogue entry for a model name as a client sent it; null when none matches. */
export function catalogueModel(model: string): CatalogueModel | null {
  return findIn(INDEX, model);
}

/** Whether the provider of a catalogue entry counts cached tokens inside the input count. */
export function inputIncludesCached(m: CatalogueModel): boolean {
  return CATALOGUE.providers[m.provider]?.input_includes_cached_tokens ?? true;
}
