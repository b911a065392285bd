/**
 * The queue page's keyboard, without a DOM: what a key does to the active template's annotation, and
 * the keys' legend. Digits pick stars, scores and options; y / n (or 1 / 0) set thumbs.
 */
import type { AnnotationTemplate } from './api-types.ts';

/** What a key does to the annotation of one template: a new value, removal, or nothing. */
export type KeyEffect = { kind: 'set'; value: unknown } | { kind: 'clear' } | null;

const digit = (key: string) => (/^[0-9]$/.test(key) ? Number(key) : null);

/**
 * The effect of `key` on a template whose current value (the caller's) is `current`. A multiple-choice
 * categorical toggles the option; taking away its last one removes the annotation (an empty choice
 * is not a value the API takes).
 */
export function keyEffect(t: AnnotationTemplate, key: string, current: unknown): KeyEffect {
  if (key === 'Delete' || key === 'Backspace') return current === undefined ? null : { kind: 'clear' };
  const d = digit(key);
  switch (t.type) {
    case 'thumbs':
      if (key === 'y' || key === '1') return { kind: 'set', value: true };
      if (key === 'n' || key === '0') return { kind: 'set', value: false };
      return null;
    case 'stars':
      return d !== null && d >= 1 && d <= 5 ? { kind: 'set', value: d } : null;
    case 'score':
      return d !== null && d >= (t.min ?? 0) && d <= (t.max ?? 0) ? { kind: 'set', value: d } : null;
    case 'categorical': {
      const option = d !== null && d >= 1 ? t.options?.[d - 1] : undefined;
      if (option === undefined) return null;
      if (!t.multiple) return { kind: 'set', value: option };
      const chosen = Array.isArray(current) ? (current as string[]) : [];
      const next = chosen.includes(option) ? chosen.filter((o) => o !== option) : [...chosen, option];
      return next.length ? { kind: 'set', value: next } : { kind: 'clear' };
    }
    default:
      return null;
  }
}

/** The keys a template takes, as the form shows them beside it. */
export function keyHint(t: AnnotationTemplate): string {
  switch (t.type) {
    case 'thumbs':
      return 'y / n';
    case 'stars':
      return '1–5';
    case 'score': {
      const lo = Math.max(0, Math.ceil(t.min ?? 0));
      const hi = Math.min(9, Math.floor(t.max ?? 0));
      return lo <= hi ? `${lo}–${hi}, or Enter to type` : 'Enter to type';
    }
    case 'categorical':
      return `1–${Math.min(9, t.options?.length ?? 0)}`;
    default:
      return 'Enter to type';
  }
}

/** Which way a key moves: between records (j/k, arrows right/left) or between templates (down/up). */
export function moveOf(key: string): 'next' | 'previous' | 'down' | 'up' | null {
  if (key === 'j' || key === 'ArrowRight') return 'next';
  if (key === 'k' || key === 'ArrowLeft') return 'previous';
  if (key === 'ArrowDown') return 'down';
  if (key === 'ArrowUp') return 'up';
  return null;
}

/** The caller's own annotation values of a record, by template id (records key reviewers by user id). */
export function ownValues(
  annotations: Record<string, Record<string, { value?: unknown }>> | undefined,
  userId: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [templateId, byAuthor] of Object.entries(annotations ?? {})) {
    const mine = byAuthor[userId];
    if (mine && 'value' in mine) out[templateId] = mine.value;
  }
  return out;
}
