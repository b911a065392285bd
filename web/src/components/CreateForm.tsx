import { type FormEvent, useId } from 'react';
import { FieldError, FormProblem, useFormErrors } from './Field.tsx';

const FIELDS = ['name'];

/** One labelled name input and a button that creates something; the server's refusal is shown. */
export function CreateForm({
  label,
  button,
  create,
}: {
  label: string;
  button: string;
  create: (name: string) => Promise<void>;
}) {
  const { errors, busy, submit } = useFormErrors(FIELDS);
  const id = useId();
  async function onSubmit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const name = String(new FormData(form).get('name') ?? '').trim();
    if (!name) return;
    if (await submit(() => create(name))) form.reset();
  }
  const error = errors.fields.name;
  return (
    <form className="create-form" onSubmit={onSubmit}>
      <label htmlFor={id} className="visually-hidden">
        {label}
      </label>
      <input
        id={id}
        name="name"
        placeholder={label}
        required
        maxLength={255}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      />
      <button type="submit" className="button" disabled={busy}>
        {button}
      </button>
      <FieldError id={`${id}-error`} message={error} />
      <FormProblem message={errors.general} />
    </form>
  );
}
