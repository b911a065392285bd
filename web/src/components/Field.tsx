import { type ReactNode, useCallback, useId, useState } from 'react';
import { type FormErrors, NO_ERRORS, formErrors } from '../lib/form-errors.ts';

/** What a control needs to be tied to its label and to the message beside it. */
export interface ControlProps {
  id: string;
  'aria-invalid': boolean | undefined;
  'aria-describedby': string | undefined;
}

/**
 * One labelled form control with the API's message about it underneath (from a 422's `loc`), tied
 * to the control by aria-describedby so a screen reader reads it with the field.
 */
export function Field({
  label,
  error,
  hint,
  className,
  children,
}: {
  label: string;
  error?: string;
  hint?: ReactNode;
  className?: string;
  children: (control: ControlProps) => ReactNode;
}) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className={['field', error ? 'invalid' : '', className ?? ''].filter(Boolean).join(' ')}>
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        'aria-invalid': error ? true : undefined,
        'aria-describedby': describedBy || undefined,
      })}
      {hint && (
        <div id={`${id}-hint`} className="field-hint">
          {hint}
        </div>
      )}
      <FieldError id={`${id}-error`} message={error} />
    </div>
  );
}

/** The API's message about one field, where the field is (nothing when there is none). */
export function FieldError({ id, message }: { id?: string; message?: string }) {
  if (!message) return null;
  return (
    <p id={id} className="field-error" role="alert">
      {message}
    </p>
  );
}

/** A form's message that belongs to no one field. */
export function FormProblem({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <p className="form-error" role="alert">
      {message}
    </p>
  );
}

/**
 * A form's sending state: `submit(action)` runs the request, and a refusal lands beside the fields
 * its 422 items name (`fields` are their body paths) or, for the rest, in `errors.general`.
 */
export function useFormErrors(fields: readonly string[]) {
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const key = fields.join('\n');
  const submit = useCallback(
    async (action: () => Promise<void>): Promise<boolean> => {
      setBusy(true);
      setErrors(NO_ERRORS);
      try {
        await action();
        return true;
      } catch (err) {
        setErrors(formErrors(err, key.split('\n')));
        return false;
      } finally {
        setBusy(false);
      }
    },
    [key],
  );
  const clear = useCallback(() => setErrors(NO_ERRORS), []);
  return { errors, busy, submit, clear };
}
