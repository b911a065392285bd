/**
 * How a model name as clients send it is looked up in the price catalogue: the names to try, most
 * specific first. The catalogue holds normalised names (`gpt-4o`, `claude-sonnet-4-5`), so a name
 * is lower-cased, then tried as it is, then without each provider prefix in turn, then with one
 * date or version suffix after another taken off the end:
 *
 *   "OpenAI/gpt-4o-2024-08-06"  → openai/gpt-4o-2024-08-06, gpt-4o-2024-08-06, gpt-4o
 *   "us.anthropic.claude-sonnet-4-5-20250929-v1:0" → … claude-sonnet-4-5-20250929-v1, …, claude-sonnet-4-5
 *
 * The first name the catalogue holds wins, so a dated entry (gpt-4o-2024-05-13, priced apart) beats
 * its family, and a host-qualified entry (together_ai/meta-llama/…) beats the bare model name. Only
 * dates, version numbers and `-latest` are taken off, never words: `gpt-4o-mini` never falls back to
 * `gpt-4o`.
 */

/** Bedrock cross-region inference prefixes, then the vendor of a Bedrock model id. */
const REGIONS = ['us-gov.', 'us.', 'eu.', 'apac.', 'jp.', 'au.', 'ca.', 'global.'];
const VENDORS = [
  'anthropic.',
  'meta.',
  'amazon.',
  'mistral.',
  'cohere.',
  'deepseek.',
  'ai21.',
  'writer.',
  'qwen.',
  'openai.',
];

/** Suffixes taken off one at a time (the first rule that applies each round). */
const SUFFIXES = [
  /@[\w.-]+$/, // Vertex AI version: claude-opus-4-1@20250805
  /:\d+$/, // Bedrock revision: -v1:0
  /-\d{4}-\d{2}-\d{2}$/, // gpt-4o-2024-08-06
  /-\d{8}$/, // claude-3-haiku-20240307
  /-\d{2}-\d{4}$/, // gemini-2.5-flash-preview-09-2025
  /-\d{4}$/, // gpt-4-0613, mistral-large-2411
  /-\d{3}$/, // gemini-2.0-flash-001
  /-latest$/,
];
/** Bedrock ids end in a model version (`-v1`, `-v2`) that does not change the price. */
const BEDROCK_VERSION = /-v\d+$/;

/** The names to look up for `model`, most specific first, without repeats. */
export function lookupNames(model: string): string[] {
  let s = model.trim().toLowerCase();
  const out: string[] = [s];
  for (let slash = s.indexOf('/'); slash >= 0; slash = s.indexOf('/')) {
    s = s.slice(slash + 1);
    out.push(s);
  }
  const region = REGIONS.find((r) => s.startsWith(r));
  if (region) {
    s = s.slice(region.length);
    out.push(s);
  }
  const vendor = VENDORS.find((v) => s.startsWith(v));
  if (vendor) {
    s = s.slice(vendor.length);
    out.push(s);
  }
  const rules = vendor ? [...SUFFIXES, BEDROCK_VERSION] : SUFFIXES;
  for (;;) {
    let next = s;
    for (const rule of rules) {
      next = s.replace(rule, '');
      if (next !== s && next !== '') break;
      next = s;
    }
    if (next === s) break;
    s = next;
    out.push(s);
  }
  return [...new Set(out.filter((n) => n !== ''))];
}
