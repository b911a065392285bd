/**
 * Text that every store can hold. PostgreSQL's text and json types reject the NUL character and
 * UTF-16 lone surrogates (which no UTF-8 store can represent). Record ingestion (JSON routes and
 * OTLP) replaces both with U+FFFD rather than refuse a batch of captured LLM text, so the same value
 * reaches SQLite and PostgreSQL and searches match it the same way. Configuration routes (names,
 * dashboards, integrations, Signals) answer 422 for such text instead.
 */
import { type ErrorItem, type Loc, ValidationError } from './errors.ts';

const REPLACEMENT = '\uFFFD';

/**
 * Case folding for `case_sensitive: false`, on every store: JavaScript's toLowerCase (full Unicode
 * mapping, independent of any locale: final sigma by context, İ to i + U+0307, ß kept). SQLite calls
 * it as the SQL function `spanbase_fold`; PostgreSQL's `spanbase_fold` (migration 009) is ICU's
 * root-locale lower(), the same mapping.
 */
export const foldCase = (s: string): string => s.toLowerCase();

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
  // A plain substring search first: most bodies hold no `\u` at all, and it is about 30 times
  // quicker than the pattern.
  return text.includes('\\u') && /\\u(?:0000|d[89a-f])/i.test(text);
}

/** Why a text cannot be stored as given, or null. */
export function textProblem(value: string): string | null {
  if (value.includes('\0')) return 'Text must not contain the NUL character (\\u0000)';
  if (!value.isWellFormed()) return 'Text must be valid Unicode (no lone surrogates)';
  return null;
}

/** One 422 item per unstorable string or object key in `value`, at any depth. */
export function textFaults(value: unknown, loc: Loc, faults: ErrorItem[] = []): ErrorItem[] {
  const check = (at: Loc, text: string) => {
    const msg = textProblem(text);
    if (msg) faults.push({ loc: at, msg, type: 'value_error', input: text });
    return msg === null;
  };
  if (typeof value === 'string') check(loc, value);
  else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) textFaults(value[i], [...loc, i], faults);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (check([...loc, k], k)) textFaults(v, [...loc, k], faults);
  }
  return faults;
}

/** Throws a 422 when `value` (a string or a structure) holds unstorable text. */
export function rejectUnstorable(loc: Loc, value: unknown): void {
  const faults = textFaults(value, loc);
  if (faults.length) throw new ValidationError(faults);
}

/**
 * Byte offset where the first ill-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF, no truncated sequence) starts, or -1 when `bytes` is valid UTF-8. Callers
 * check with node:buffer's `isUtf8` first (much quicker) and call this only to name the fault.
 */
export function invalidUtf8At(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const c = bytes[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    // Continuation bytes needed, and the range of the first one (the rest are 0x80-0xBF).
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0)
        lo = 0xa0; // overlong below U+0800
      else if (c === 0xed) hi = 0x9f; // UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0)
        lo = 0x90; // overlong below U+10000
      else if (c === 0xf4) hi = 0x8f; // above U+10FFFF
    } else return i;
    for (let k = 1; k <= need; k++) {
      const d = i + k < n ? bytes[i + k] : -1;
      if (d < (k === 1 ? lo : 0x80) || d > (k === 1 ? hi : 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}
