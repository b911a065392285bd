/**
 * Text that every store can hold. PostgreSQL's text and json types reject the NUL character and
 * UTF-16 lone surrogates (which no UTF-8 store can represent), so both are replaced with U+FFFD at
 * the edge, before validation: the same value then reaches SQLite and PostgreSQL, searches match it
 * the same way, and no such input can fail a write with a 500.
 */
const REPLACEMENT = '\uFFFD';

export function storableText(s: string): string {
  const clean = s.includes('\0') ? s.replaceAll('\0', REPLACEMENT) : s;
  return clean.isWellFormed() ? clean : clean.toWellFormed();
}

const needsCleaning = (s: string) => s.includes('\0') || !s.isWellFormed();

/** `value` with every string (object keys included) made storable; the same object when none needed it. */
export function storableValue<T>(value: T): T {
  if (typeof value === 'string') return (needsCleaning(value) ? storableText(value) : value) as T;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = storableValue(value[i]);
    return value;
  }
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const v = storableValue(o[k]);
      if (needsCleaning(k)) {
        delete o[k];
        o[storableText(k)] = v;
      } else o[k] = v;
    }
  }
  return value;
}

/**
 * Whether a JSON text may decode to a string that needs cleaning: NUL and lone surrogates can only
 * come from `\u` escapes (raw control characters are invalid JSON, and UTF-8 cannot encode
 * surrogates), so a body without such an escape is skipped without walking it.
 */
export function jsonMayNeedCleaning(text: string): boolean {
  return /\\u(?:0000|d[89a-f])/i.test(text);
}
