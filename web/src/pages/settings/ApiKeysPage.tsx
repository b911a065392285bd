import { type FormEvent, useState } from 'react';
import { ErrorNote, Loading } from '../../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../../components/Field.tsx';
import { del, get, post } from '../../lib/api.ts';
import type { ApiKey, CreatedApiKey } from '../../lib/api-types.ts';
import { formatTime, localInputToIso } from '../../lib/format.ts';
import { useApi } from '../../lib/use-api.ts';
import { SettingsHeader } from './SettingsHeader.tsx';

const FIELDS = ['description', 'expires_at'];

/** The secret of a key just created: shown this once, with a copy button. */
function NewKey({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  async function copy() {
    try {
      await navigator.clipboard.writeText(created.api_key);
      setCopied('Copied');
    } catch {
      setCopied('Select the key and copy it: this browser did not let the page copy');
    }
  }
  return (
    <section className="new-key" aria-labelledby="new-key-title">
      <h3 id="new-key-title">New key{created.description ? `: ${created.description}` : ''}</h3>
      <p>Copy it now: Spanbase keeps only a hash of it and will not show it again.</p>
      <div className="secret-row">
        <input
          readOnly
          className="mono"
          aria-label="New API key"
          value={created.api_key}
          onFocus={(e) => e.currentTarget.select()}
        />
        <button type="button" className="button primary" onClick={copy}>
          Copy
        </button>
        <button type="button" className="button ghost" onClick={onDone}>
          Done
        </button>
      </div>
      <p className="muted" aria-live="polite">
        {copied}
      </p>
    </section>
  );
}

function KeyRow({ k, onRevoked }: { k: ApiKey; onRevoked: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const name = k.description || k.key_prefix;
  async function revoke() {
    try {
      await del(`/v2/users/api_keys/${k.id}`);
      onRevoked();
    } catch (err) {
      setProblem((err as Error).message);
    }
  }
  return (
    <tr data-key-id={k.id}>
      <td>{k.description || <span className="muted">no description</span>}</td>
      <td className="mono">{k.key_prefix}…</td>
      <td className="nowrap wide-only">{formatTime(k.created_at)}</td>
      <td className="nowrap wide-only">
        {k.last_used_at ? formatTime(k.last_used_at) : <span className="muted">never</span>}
      </td>
      <td className="nowrap wide-only">
        {k.expires_at ? formatTime(k.expires_at) : <span className="muted">never</span>}
      </td>
      <td className="actions">
        {confirming ? (
          <span className="confirm">
            <span>Revoke it? Requests with it will fail.</span>
            <button type="button" className="button small danger" onClick={revoke}>
              Revoke {name}
            </button>
            <button type="button" className="button small ghost" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        ) : (
          <button
            type="button"
            className="button small"
            aria-label={`Revoke key ${name}`}
            onClick={() => setConfirming(true)}
          >
            Revoke
          </button>
        )}
        {problem && (
          <p className="form-error" role="alert">
            {problem}
          </p>
        )}
      </td>
    </tr>
  );
}

/** The signed-in user's API keys: create one (its secret shown once), list them, revoke one. */
export function ApiKeysPage() {
  const keys = useApi('api-keys', () => get<ApiKey[]>('/v2/users/api_keys'));
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const { errors, busy, submit } = useFormErrors(FIELDS);

  async function create(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const expires = String(data.get('expires_at') ?? '');
    const ok = await submit(async () => {
      setCreated(
        await post<CreatedApiKey>('/v2/users/api_keys', {
          description: String(data.get('description') ?? ''),
          expires_at: expires ? localInputToIso(expires) : null,
        }),
      );
    });
    if (ok) {
      form.reset();
      keys.reload();
    }
  }

  return (
    <>
      <SettingsHeader current="API keys" />
      <section className="section settings-section" aria-labelledby="create-key-title">
        <h2 id="create-key-title">Create an API key</h2>
        <p className="muted">
          A key acts as you: send it in the <code>Service-API-Key</code> header.
        </p>
        <form className="settings-form" onSubmit={create}>
          <Field label="Description" error={errors.fields.description}>
            {(c) => <input {...c} name="description" maxLength={1000} placeholder="ci, notebook, …" />}
          </Field>
          <Field label="Expires (optional)" error={errors.fields.expires_at}>
            {(c) => <input {...c} name="expires_at" type="datetime-local" />}
          </Field>
          <FormProblem message={errors.general} />
          <div className="form-actions">
            <button type="submit" className="button primary" disabled={busy}>
              Create key
            </button>
          </div>
        </form>
        {created && <NewKey created={created} onDone={() => setCreated(null)} />}
      </section>
      <section className="section" aria-labelledby="keys-title">
        <h2 id="keys-title">Your keys</h2>
        {keys.error && <ErrorNote error={keys.error} retry={keys.reload} />}
        {!keys.data && !keys.error && <Loading what="keys" />}
        {keys.data?.length === 0 && <p className="muted">No keys.</p>}
        {keys.data && keys.data.length > 0 && (
          <div className="table-wrap">
            <table className="table keys">
              <thead>
                <tr>
                  <th scope="col">Description</th>
                  <th scope="col">Key</th>
                  <th scope="col" className="wide-only">
                    Created
                  </th>
                  <th scope="col" className="wide-only">
                    Last used
                  </th>
                  <th scope="col" className="wide-only">
                    Expires
                  </th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((k) => (
                  <KeyRow key={k.id} k={k} onRevoked={keys.reload} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
