/**
 * Free-form keys (metadata, metrics, extra fields of messages and documents, OTel attributes) are
 * plain strings, kept whatever they are, including the names of Object.prototype's properties.
 * Copy them with `setKey` and look them up with `Object.hasOwn`: `o[k] = v` with `k` "__proto__"
 * sets the prototype of `o` (an object value) or does nothing (any other value), and `k in o` is
 * true for "constructor", "toString"... on every plain object.
 */

/** `o[k] = v` as an own, enumerable property, as JSON.parse makes it, whatever `k` is. */
export function setKey<T>(o: Record<string, T>, k: string, v: NoInfer<T>): void {
  if (k === '__proto__')
    Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

/** `o[k]` when `o` has it as its own property (not `constructor`, `__proto__`... of Object.prototype). */
export function getKey<T>(o: Record<string, T>, k: string): T | undefined {
  return Object.hasOwn(o, k) ? o[k] : undefined;
}
