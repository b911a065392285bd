import Mustache from 'mustache';

/**
 * The one template renderer of Spanbase: prompt templates, judge templates, experiment rows and the
 * playground all render here. Mustache syntax (`{{name}}`, `{{a.b}}`, sections, `{{{raw}}}`), with
 * three differences that suit prompts rather than HTML:
 * - nothing is HTML-escaped (`{{x}}` and `{{{x}}}` render the same);
 * - an object or array renders as JSON, not `[object Object]`;
 * - a variable that resolves to nothing (missing, null or undefined) is reported by its path instead
 *   of rendering silently as an empty string (callers turn it into a warning or an error).
 */

export interface Rendered {
  text: string;
  /** Dotted paths of variables that resolved to nothing, in the order first met, each once. */
  missing: string[];
}

export class TemplateSyntaxError extends Error {}

function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function renderTemplate(template: string, variables: Record<string, unknown>): Rendered {
  const missing = new Set<string>();
  const writer = new Mustache.Writer();
  const value = (token: string[], context: Mustache.Context) => {
    const v = context.lookup(token[1] as string);
    if (v == null) {
      missing.add(token[1] as string);
      return undefined;
    }
    return asText(v);
  };
  // Both variable forms go through one lookup: no escaping, JSON for structures, missing recorded.
  const w = writer as unknown as Record<string, unknown>;
  w.escapedValue = value;
  w.unescapedValue = value;
  let text: string;
  try {
    text = writer.render(template, variables, undefined, { escape: (s: string) => s });
  } catch (err) {
    throw new TemplateSyntaxError(err instanceof Error ? err.message : String(err));
  }
  return { text, missing: [...missing] };
}

/** The top-level and dotted variable names a template uses (sections' inner names included). */
export function templateVariables(template: string): string[] {
  let tokens: unknown[];
  try {
    tokens = Mustache.parse(template);
  } catch (err) {
    throw new TemplateSyntaxError(err instanceof Error ? err.message : String(err));
  }
  const names = new Set<string>();
  const walk = (list: unknown[]) => {
    for (const t of list as [string, string, number, number, unknown[]?][]) {
      if (t[0] === 'name' || t[0] === '&' || t[0] === '#' || t[0] === '^') if (t[1] !== '.') names.add(t[1]);
      if (Array.isArray(t[4])) walk(t[4]);
    }
  };
  walk(tokens);
  return [...names];
}
