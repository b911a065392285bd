/**
 * A project's notification webhooks (editors): add one (its signing secret is shown once), turn it
 * on or off, remove it, and see its latest deliveries with their status and attempts.
 */
import { type FormEvent, useState } from 'react';
import { useParams } from 'react-router';
import type { WEBHOOK_FORMATS } from '../../../src/domain/webhooks.ts';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { Field, FormProblem, useFormErrors } from '../components/Field.tsx';
import { del, get, patch, post } from '../lib/api.ts';
import type { CreatedWebhook, DeliveryList, Webhook, WebhookList } from '../lib/api-types.ts';
import { formatTime } from '../lib/format.ts';
import { projectRequest } from '../lib/requests.ts';
import { useApi } from '../lib/use-api.ts';
import './signals.css';

// Written out: the server's module signs with node:crypto, which stays out of the bundle. The type
// keeps the two lists the same.
const FORMATS: typeof WEBHOOK_FORMATS = ['json', 'slack'];

function Deliveries({ base, hook }: { base: string; hook: Webhook }) {
  const url = `${base}/${hook.id}/deliveries`;
  const d = useApi(url, () => get<DeliveryList>(url));
  return (
    <section aria-label="Deliveries">
      <div className="page-head">
        <h2>Deliveries to {hook.url}</h2>
        <button type="button" className="button" onClick={d.reload}>
          Refresh
        </button>
      </div>
      {d.error && <ErrorNote error={d.error} retry={d.reload} />}
      {d.data && !d.data.deliveries.length && <p className="muted">Nothing sent yet.</p>}
      {d.data && d.data.deliveries.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th>Created</th>
              <th>Event</th>
              <th>Status</th>
              <th className="num">Attempts</th>
              <th className="num">Answer</th>
              <th>Error / next attempt</th>
            </tr>
          </thead>
          <tbody>
            {d.data.deliveries.map((x) => (
              <tr key={x.id}>
                <td>{formatTime(x.created_at)}</td>
                <td>{x.event}</td>
                <td className={`run-status status-${x.status === 'delivered' ? 'succeeded' : x.status}`}>
                  {x.status}
                </td>
                <td className="num">{x.attempts}</td>
                <td className="num">{x.response_status ?? '—'}</td>
                <td className="muted">
                  {x.error}
                  {x.status === 'pending' ? ` next at ${formatTime(x.next_attempt_at)}` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function WebhooksPage() {
  const { projectId = '' } = useParams();
  const p = projectRequest(projectId);
  const project = useApi(p.key, p.load);
  const base = `/v2/projects/${projectId}/webhooks`;
  const list = useApi(base, () => get<WebhookList>(base));
  const [url, setUrl] = useState('');
  const [format, setFormat] = useState<string>('json');
  const [created, setCreated] = useState<CreatedWebhook | null>(null);
  const [shown, setShown] = useState<Webhook | null>(null);
  const [failure, setFailure] = useState<Error | null>(null);
  const { errors, busy, submit } = useFormErrors(['url', 'format']);

  async function add(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    await submit(async () => {
      setCreated(await post<CreatedWebhook>(base, { url, format }));
      setUrl('');
      list.reload();
    });
  }
  async function act(what: () => Promise<unknown>) {
    setFailure(null);
    try {
      await what();
      list.reload();
    } catch (err) {
      setFailure(err as Error);
    }
  }

  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Webhooks' },
        ]}
      />
      <div className="page-head">
        <h1>Webhooks</h1>
        <span className="muted">
          Signals of the notified severities and alert transitions are sent to each.
        </span>
      </div>
      {list.error && <ErrorNote error={list.error} retry={list.reload} />}
      {failure && <ErrorNote error={failure} />}
      {!list.data && !list.error && <Loading what="the webhooks" />}
      {list.data && !list.data.webhooks.length && <p className="muted">No webhooks yet.</p>}
      {list.data && list.data.webhooks.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th>URL</th>
              <th>Format</th>
              <th>On</th>
              <th>Added</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.webhooks.map((h) => (
              <tr key={h.id}>
                <td className="mono">{h.url}</td>
                <td>{h.format}</td>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Send to ${h.url}`}
                    checked={h.enabled}
                    onChange={(e) => {
                      const enabled = e.currentTarget.checked;
                      void act(() => patch(`${base}/${h.id}`, { enabled }));
                    }}
                  />
                </td>
                <td>{formatTime(h.created_at)}</td>
                <td>
                  <button type="button" className="button" onClick={() => setShown(h)}>
                    Deliveries
                  </button>{' '}
                  <button
                    type="button"
                    className="button"
                    onClick={() =>
                      act(async () => {
                        await del(`${base}/${h.id}`);
                        if (shown?.id === h.id) setShown(null);
                      })
                    }
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {created && (
        <p role="status">
          Added. Its signing secret, shown this once:{' '}
          <span className="secret" data-testid="webhook-secret">
            {created.secret}
          </span>
        </p>
      )}
      <form className="settings-form" onSubmit={add} aria-label="Add a webhook" noValidate>
        <h2>Add a webhook</h2>
        <div className="two-col">
          <Field label="URL" error={errors.fields.url}>
            {(props) => (
              <input
                {...props}
                type="url"
                maxLength={2048}
                value={url}
                placeholder="https://example.com/hooks/spanbase"
                onChange={(e) => setUrl(e.currentTarget.value)}
              />
            )}
          </Field>
          <Field label="Body" error={errors.fields.format}>
            {(props) => (
              <select {...props} value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
                {FORMATS.map((f) => (
                  <option key={f} value={f}>
                    {f === 'slack' ? 'Slack incoming webhook' : 'JSON event, signed'}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <FormProblem message={errors.general} />
        <div className="form-actions">
          <button type="submit" className="button primary" disabled={busy}>
            Add webhook
          </button>
        </div>
      </form>
      {shown && <Deliveries key={shown.id} base={base} hook={shown} />}
    </>
  );
}
