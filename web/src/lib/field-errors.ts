/**
 * A 422's items placed beside the fields their `loc` points at: `["body", "metric"]` belongs to the
 * field `metric`, `["body", "filter_tree", "and", 0, ...]` to `filter_tree`; an item that names no
 * field of the form (`["body"]`, or a field the form lacks) is shown above the form's buttons.
 * Pure, so the placement is tested without a browser (test/unit/console-dashboard.test.ts).
 */
import { ApiError, type ErrorItem } from './api-error.ts';

/** Where in the request the item points, without the request part (`body`, `query`, `path`). */
const pathOf = (item: ErrorItem) => {
  const loc = item.loc ?? [];
  return ['body', 'query', 'path'].includes(String(loc[0])) ? loc.slice(1) : loc;
};

/** The message as a person reads it: without the validator's "Value error, " prefix. */
const messageOf = (item: ErrorItem) => (item.msg ?? 'invalid').replace(/^Value error, /, '');

export class FieldErrors {
  static readonly none = new FieldErrors([], '', []);

  private constructor(
    private readonly items: ErrorItem[],
    /** The whole error's text, when it had no items (a 404, a 403, the network). */
    readonly general: string,
    private readonly fields: readonly string[],
  ) {}

  /** The errors of a failed request, for a form with `fields`. */
  static of(err: unknown, fields: readonly string[]): FieldErrors {
    if (err instanceof ApiError && err.items.length) return new FieldErrors(err.items, '', fields);
    return new FieldErrors([], err instanceof Error ? err.message : String(err), fields);
  }

  /** The messages for `field` (joined), or null. */
  of(field: string): string | null {
    const mine = this.items.filter((i) => String(pathOf(i)[0]) === field);
    return mine.length ? mine.map(messageOf).join('; ') : null;
  }

  /** Messages no field of the form shows, with where they point when that is somewhere. */
  unplaced(): string[] {
    const rest = this.items
      .filter((i) => !this.fields.includes(String(pathOf(i)[0])))
      .map((i) => {
        const where = pathOf(i).join('.');
        return where ? `${where}: ${messageOf(i)}` : messageOf(i);
      });
    return this.general ? [this.general, ...rest] : rest;
  }

  get any(): boolean {
    return this.items.length > 0 || this.general !== '';
  }
}
