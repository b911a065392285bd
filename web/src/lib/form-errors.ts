import { ApiError } from './api-error.ts';

/**
 * A form's errors as the API gave them: each 422 item beside the field its `loc` points at (the
 * field's path in the request body, such as `schedule.cron`), anything else above the buttons.
 */
export interface FormErrors {
  fields: Record<string, string>;
  general: string | null;
}

export const NO_ERRORS: FormErrors = { fields: {}, general: null };

/**
 * The form field a 422 `loc` is about: the longest of `fields` that the loc's body path starts with
 * (`['body','notification_severities',2]` is the `notification_severities` field); null when none is.
 */
export function fieldOf(loc: readonly (string | number)[], fields: readonly string[]): string | null {
  if (loc[0] !== 'body') return null;
  const path = loc.slice(1).map(String);
  let best: string | null = null;
  for (const field of fields) {
    const parts = field.split('.');
    if (parts.length <= path.length && parts.every((p, i) => p === path[i]))
      if (best === null || parts.length > best.split('.').length) best = field;
  }
  return best;
}

/** What a failed request means for a form with these fields (the first message per field is kept). */
export function formErrors(err: unknown, fields: readonly string[]): FormErrors {
  if (!(err instanceof ApiError) || err.items.length === 0)
    return { fields: {}, general: err instanceof Error ? err.message : String(err) };
  const byField: Record<string, string> = {};
  const rest: string[] = [];
  for (const item of err.items) {
    const field = fieldOf(item.loc ?? [], fields);
    const msg = item.msg ?? 'Invalid value';
    if (field === null) rest.push(msg);
    else byField[field] ??= msg;
  }
  return { fields: byField, general: rest.length ? rest.join('; ') : null };
}
