import { type FormEvent, useState } from 'react';
import { useSearchParams } from 'react-router';
import { api } from '../lib/api.ts';
import type { ConsoleSession } from '../lib/api-types.ts';
import { Field, FormProblem, useFormErrors } from '../components/Field.tsx';

const FIELDS = ['email', 'password', 'api_key'];

/** Only a path of this site: `next` comes from the URL, so it must not send the browser elsewhere. */
export function safeNext(next: string | null): string {
  return next?.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/';
}

export function LoginPage() {
  const [params] = useSearchParams();
  const [withKey, setWithKey] = useState(false);
  const { errors, busy, submit, clear } = useFormErrors(FIELDS);
  const [signingIn, setSigningIn] = useState(false);

  async function onSubmit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const body = withKey
      ? { api_key: String(form.get('api_key') ?? '').trim() }
      : { email: String(form.get('email') ?? '').trim(), password: String(form.get('password') ?? '') };
    const signedIn = await submit(async () => {
      await api<ConsoleSession>('POST', '/v2/console/login', body);
    });
    if (signedIn) {
      // A full load: the next page starts with the new cookie and nothing of the previous user.
      setSigningIn(true);
      window.location.assign(safeNext(params.get('next')));
    }
  }

  return (
    <main className="login" id="main">
      <form className="login-card" onSubmit={onSubmit} aria-labelledby="login-title">
        <div className="brand login-brand">
          <span className="brand-mark" aria-hidden="true" />
          Spanbase
        </div>
        <h1 id="login-title">Sign in</h1>
        {withKey ? (
          <Field label="API key" error={errors.fields.api_key}>
            {(c) => (
              <input {...c} name="api_key" type="password" autoComplete="off" required placeholder="sb_…" />
            )}
          </Field>
        ) : (
          <>
            <Field label="Email" error={errors.fields.email}>
              {(c) => <input {...c} name="email" type="email" autoComplete="username" required />}
            </Field>
            <Field label="Password" error={errors.fields.password}>
              {(c) => (
                <input {...c} name="password" type="password" autoComplete="current-password" required />
              )}
            </Field>
          </>
        )}
        <FormProblem message={errors.general} />
        <button type="submit" className="button primary wide" disabled={busy || signingIn}>
          {busy || signingIn ? 'Signing in…' : 'Log in'}
        </button>
        <button
          type="button"
          className="link-button"
          onClick={() => {
            setWithKey(!withKey);
            clear();
          }}
        >
          {withKey ? 'Sign in with email and password instead' : 'Sign in with an API key instead'}
        </button>
        <p className="hint">
          First time? The first start printed an admin API key (also in <code>data/initial-admin-key</code>).
        </p>
      </form>
    </main>
  );
}
