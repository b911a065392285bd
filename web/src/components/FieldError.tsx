import type { FieldErrors } from '../lib/field-errors.ts';

/** The API's message for one field, beside it (the input names it with aria-describedby). */
export function FieldError({ errors, field, id }: { errors: FieldErrors; field: string; id: string }) {
  const text = errors.of(field);
  return text ? (
    <span className="field-problem" id={id} role="alert" data-field={field}>
      {text}
    </span>
  ) : null;
}

/** The messages no field of the form shows (a range that is wrong as a whole, a 404). */
export function FormErrors({ errors }: { errors: FieldErrors }) {
  const rest = errors.unplaced();
  return rest.length ? (
    <p className="form-error" role="alert">
      {rest.join('; ')}
    </p>
  ) : null;
}

/** Props that tie an input to its FieldError. */
export const invalidProps = (errors: FieldErrors, field: string, id: string) =>
  errors.of(field) ? { 'aria-invalid': true as const, 'aria-describedby': id } : {};
