import { type FormEvent, useState } from 'react';
import { useSearchParams } from 'react-router';
import { api } from '../lib/api.ts';
import type { ConsoleSession } from '../lib/api-types.ts';

/** Only a path of this site: `next` comes from the URL, so it must not send the browser elsewhere. */
export function safeNext(next: string | null): string {
  return next?.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/';
}

export function LoginPage() {
  const [params] = useSearchParams();
  const [withKey, setWithKey] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const body = withKey
      ? { api_key: String(form.get('api_key') ?? '').trim() }
      : { email: String(form.get('email') ?? '').trim(), password: String(form.get('password') ?? '') };
    setBusy(true);
    setError(null);
    try {
      await api<ConsoleSession>('POST', '/v2/console/login', body);
      // A full load: the next page starts with the new cookie and nothing of the previous user.
      window.location.assign(safeNext(params.get('next')));
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  }

  return (
    <main className="login" id="main">
      <form className="login-card" onSubmit={submit} aria-labelledby="login-title">
        <div className="brand login-brand">
          <span className="brand-mark" aria-hidden="true" />
          Spanbase
        </div>
        <h1 id="login-title">Sign in</h1>
        {withKey ? (
          <label className="field">
            <span>API key</span>
            <input name="api_key" type="password" autoComplete="off" required placeholder="sb_…" />
          </label>
        ) : (
          <>
            <label className="field">
              <span>Email</span>
              <input name="email" type="email" autoComplete="username" required />
            </label>
            <label className="field">
              <span>Password</span>
              <input name="password" type="password" autoComplete="current-password" required />
            </label>
          </>
        )}
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="button primary wide" disabled={busy}>
          {busy ? 'Signing in…' : 'Log in'}
        </button>
        <button
          type="button"
          className="link-button"
          onClick={() => {
            setWithKey(!withKey);
            setError(null);
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
