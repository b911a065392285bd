import type { FormEvent } from 'react';
import { ErrorNote, Loading } from '../../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../../components/Field.tsx';
import { get, post, put } from '../../lib/api.ts';
import type { GatewaySettings, Integration } from '../../lib/api-types.ts';
import { formatTime } from '../../lib/format.ts';
import { useApi } from '../../lib/use-api.ts';
import { SettingsHeader } from './SettingsHeader.tsx';
import { type Share, SharingEditor } from './SharingEditor.tsx';

const GATEWAY_FIELDS = ['endpoint', 'use_case', 'token', 'multi_modal_config'];

const allowed = (i: Integration, action: string) =>
  i.permissions.some((p) => p.action === action && p.allowed);

/**
 * The caller's gateway integration: endpoint, use case and token, the first two filled in with what
 * is saved. The token is write-only: the API never answers it, so the page shows only that it is set
 * and when it last changed, and each save sends a token again.
 */
function GatewayForm({
  mine,
  saved,
  onSaved,
}: {
  mine: Integration | undefined;
  saved: GatewaySettings | undefined;
  onSaved: () => void;
}) {
  const { errors, busy, submit } = useFormErrors(GATEWAY_FIELDS);
  async function save(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const ok = await submit(async () => {
      await put('/v2/integrations/example_gateway', {
        endpoint: String(d.get('endpoint') ?? '').trim(),
        use_case: String(d.get('use_case') ?? '').trim(),
        token: String(d.get('token') ?? ''),
      });
    });
    if (ok) {
      (form.elements.namedItem('token') as HTMLInputElement).value = '';
      onSaved();
    }
  }
  return (
    <form className="settings-form" onSubmit={save} aria-labelledby="gateway-title">
      <h2 id="gateway-title">
        {mine ? 'Update your gateway integration' : 'Create your gateway integration'}
      </h2>
      <p className="muted">One per user. The token is not read back by the API: enter it with each save.</p>
      <Field label="Endpoint" error={errors.fields.endpoint}>
        {(c) => (
          <input
            {...c}
            name="endpoint"
            type="url"
            required
            defaultValue={saved?.endpoint}
            placeholder="https://gateway.example.com/v1"
          />
        )}
      </Field>
      <Field label="Use case" error={errors.fields.use_case}>
        {(c) => (
          <input
            {...c}
            name="use_case"
            required
            maxLength={255}
            defaultValue={saved?.use_case}
            placeholder="chat"
          />
        )}
      </Field>
      <Field
        label="Token"
        error={errors.fields.token}
        hint={
          mine ? (
            <span className="token-state" data-token-state="set">
              Set · last updated {formatTime(mine.updated_at)}. It is never shown again; a save replaces it.
            </span>
          ) : (
            <span className="token-state" data-token-state="unset">
              Not set. Once saved it is never shown again.
            </span>
          )
        }
      >
        {(c) => <input {...c} name="token" type="password" autoComplete="off" required />}
      </Field>
      <FormProblem message={errors.general} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy}>
          {mine ? 'Save integration' : 'Create integration'}
        </button>
      </div>
    </form>
  );
}

/** Integrations the caller owns or is shared on, the gateway form, and sharing for owners. */
export function IntegrationsPage() {
  const list = useApi('integrations', () => get<Integration[]>('/v2/integrations'));
  // The caller's own gateway (the one a PUT updates) is the selected one.
  const mine = list.data?.find((i) => i.name === 'example_gateway' && i.is_selected);
  const saved = useApi(mine ? `gateway-settings-${mine.id}-${mine.updated_at}` : null, () =>
    get<GatewaySettings>('/v2/integrations/example_gateway'),
  );
  return (
    <>
      <SettingsHeader current="Integrations" />
      {list.error && <ErrorNote error={list.error} retry={list.reload} />}
      {!list.data && !list.error && <Loading what="integrations" />}
      {list.data && (
        <>
          <section className="section settings-section">
            {mine && saved.error && <ErrorNote error={saved.error} retry={saved.reload} />}
            {mine && !saved.data && !saved.error ? (
              <Loading what="your gateway integration" />
            ) : (
              <GatewayForm
                // Filled in again when the saved values change (the previous ones stay while they load).
                key={saved.data ? `${saved.data.endpoint}\n${saved.data.use_case}` : 'new'}
                mine={mine}
                saved={mine ? saved.data : undefined}
                onSaved={list.reload}
              />
            )}
          </section>
          {list.data.map((i) => (
            <section
              key={i.id}
              className="section"
              aria-labelledby={`int-${i.id}`}
              data-integration-id={i.id}
            >
              <div className="section-head">
                <h2 id={`int-${i.id}`}>
                  {i.name}
                  {i.is_selected ? ' (yours)' : ''}
                </h2>
                <span className="muted">
                  Token set · last updated {formatTime(i.updated_at)}
                  {i.is_disabled ? ' · disabled' : ''}
                </span>
              </div>
              <h3>Shared with</h3>
              <SharingEditor
                base={`/v2/integrations/${i.id}`}
                canShare={allowed(i, 'share')}
                share={(s: Share) =>
                  post(`/v2/integrations/${i.id}/${s.kind}s`, [
                    s.kind === 'user' ? { user_id: s.id, role: s.role } : { group_id: s.id, role: s.role },
                  ]).then(() => undefined)
                }
              />
            </section>
          ))}
        </>
      )}
    </>
  );
}
