import { type FormEvent, useId, useState } from 'react';

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
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const name = String(new FormData(form).get('name') ?? '').trim();
    if (!name) return;
    setBusy(true);
    setError(null);
    try {
      await create(name);
      form.reset();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="create-form" onSubmit={submit}>
      <label htmlFor={id} className="visually-hidden">
        {label}
      </label>
      <input id={id} name="name" placeholder={label} required maxLength={255} />
      <button type="submit" className="button" disabled={busy}>
        {button}
      </button>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
