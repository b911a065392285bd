import { useEffect, useMemo, useRef, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { AnnotationField, type SaveState } from '../components/AnnotationField.tsx';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { useUser } from '../components/Layout.tsx';
import { useAccess } from '../lib/access.tsx';
import { QueueMembers } from '../components/QueueMembers.tsx';
import { QueueProgressView } from '../components/QueueProgressView.tsx';
import { RecordPanel } from '../components/RecordPanel.tsx';
import { keyEffect, moveOf, ownValues } from '../lib/annotation-keys.ts';
import { ApiError, api, get, post } from '../lib/api.ts';
import type {
  AnnotationQueue,
  AnnotationTemplate,
  ApiRecord,
  Project,
  QueueProgress,
  RecordsPage,
  RunKind,
} from '../lib/api-types.ts';
import { formatCount } from '../lib/format.ts';
import { useMetricLabels } from '../lib/metric-labels.ts';
import { useApi } from '../lib/use-api.ts';
import './queue.css';

/** Where a record of the queue opens in its run (a log stream or an experiment): its trace, span or session view. */
function recordHref(projectId: string, kind: RunKind, r: ApiRecord): string {
  const tab = r.type === 'trace' ? 'traces' : r.type === 'session' ? 'sessions' : 'spans';
  return `/projects/${projectId}/${kind}/${r.run_id}/${tab}/${r.id}`;
}

/** Whether a run is a log stream or an experiment (records name only its id). */
async function runKindOf(projectId: string, runId: string): Promise<RunKind> {
  try {
    await get(`/v2/projects/${projectId}/log_streams/${runId}`);
    return 'log_streams';
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return 'experiments';
    throw e;
  }
}

/** Keys the page takes while no text field has the focus. */
function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (/^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || el.isContentEditable);
}

const SHORTCUTS: [string, string][] = [
  ['j  or  →', 'next record'],
  ['k  or  ←', 'previous record'],
  ['↓  /  ↑', 'next / previous template'],
  ['y  /  n', 'thumbs up / down'],
  ['1 – 9', 'stars, score or option'],
  ['Enter', 'type a score, text or tags (Esc leaves)'],
  ['Delete', 'clear the template'],
];

/**
 * An annotation queue, one record at a time (its place in the queue is `?i=` in the URL): the record
 * as the trace view shows it, the queue's templates as a form that saves each change as the caller's
 * annotation, the keyboard for ratings and moving, and each member's progress.
 */
export function QueuePage() {
  const { projectId = '', queueId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const me = useUser();
  const access = useAccess();
  // A queue holds records of any run of the project: the project's catalogue labels their metrics.
  const metricLabel = useMetricLabels(projectId, 'spans', {});
  const annotator = access.can('annotator');
  const index = Math.max(0, Number.parseInt(params.get('i') ?? '0', 10) || 0);
  const base = `/v2/projects/${projectId}/annotation_queues/${queueId}`;

  const project = useApi(`project/${projectId}`, () => get<Project>(`/v2/projects/${projectId}`));
  const queue = useApi(`queue/${queueId}`, () => get<AnnotationQueue>(base));
  const templates = useApi(`templates/${projectId}`, () =>
    get<AnnotationTemplate[]>(`/v2/projects/${projectId}/annotation_templates`),
  );
  const progress = useApi(`progress/${queueId}`, () => get<QueueProgress>(`${base}/progress`));
  const page = useApi(`queue-record/${queueId}/${index}`, () =>
    post<RecordsPage>(`${base}/records/search`, { pagination: { starting_token: index, limit: 1 } }),
  );
  const record = page.fresh ? page.data?.records[0] : undefined;
  const runKind = useApi(record ? `run-kind/${record.run_id}` : null, () =>
    runKindOf(projectId, record?.run_id ?? ''),
  );
  const total = queue.data?.num_records ?? 0;

  const fields = useMemo(() => {
    const byId = new Map((templates.data ?? []).map((t) => [t.id, t]));
    return (queue.data?.template_ids ?? []).flatMap((id) => byId.get(id) ?? []);
  }, [templates.data, queue.data]);

  // The caller's values on this record, changed by each save (the record is not read again).
  const [values, setValues] = useState<Record<string, unknown>>({});
  const [states, setStates] = useState<Record<string, SaveState>>({});
  const [active, setActive] = useState(0);
  const recordId = record?.id;
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new record (by id) starts a new form
  useEffect(() => {
    setValues(record && me ? ownValues(record.annotations as never, me.id) : {});
    setStates({});
    setActive(0);
  }, [recordId, me?.id]);

  const inputs = useRef(new Map<string, HTMLInputElement & HTMLTextAreaElement>());

  // A save that ends after the reviewer moved on must not touch the next record's form.
  const shownId = useRef(recordId);
  const [earlier, setEarlier] = useState<Error | null>(null);
  shownId.current = recordId;
  const setValue = (templateId: string, value: unknown | undefined) =>
    setValues((v) => {
      const next = { ...v };
      if (value === undefined) delete next[templateId];
      else next[templateId] = value;
      return next;
    });
  // The form shows the new value at once (the next key reads it), and the old one again if refused.
  const save = async (t: AnnotationTemplate, value: unknown | undefined) => {
    if (!recordId) return;
    const savedId = recordId;
    const before = values[t.id];
    const path = `/v2/projects/${projectId}/records/${recordId}/annotations/${t.id}`;
    setValue(t.id, value);
    setStates((s) => ({ ...s, [t.id]: { kind: 'saving' } }));
    try {
      if (value === undefined) await api('DELETE', path);
      else await api('PUT', path, { value });
      progress.reload();
      if (shownId.current === savedId) setStates((s) => ({ ...s, [t.id]: { kind: 'saved' } }));
    } catch (e) {
      const message = (e as Error).message;
      if (shownId.current !== savedId)
        return setEarlier(new Error(`${t.name} of an earlier record was not saved: ${message}`));
      setValue(t.id, before);
      setStates((s) => ({ ...s, [t.id]: { kind: 'error', message } }));
    }
  };

  const go = (to: number) => {
    if (to < 0 || to >= total) return;
    const next = new URLSearchParams(params);
    next.set('i', String(to));
    setParams(next);
  };

  // The page's keys, read through a ref so that the listener sees the current record and values.
  const keys = useRef<(e: KeyboardEvent) => void>(() => {});
  keys.current = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
    const move = moveOf(e.key);
    if (move === 'next' || move === 'previous') {
      e.preventDefault();
      go(index + (move === 'next' ? 1 : -1));
      return;
    }
    if (!record || fields.length === 0) return;
    if (move) {
      e.preventDefault();
      setActive((a) => Math.max(0, Math.min(fields.length - 1, a + (move === 'down' ? 1 : -1))));
      return;
    }
    const t = fields[Math.min(active, fields.length - 1)];
    if (e.key === 'Enter' && inputs.current.has(t.id)) {
      e.preventDefault();
      inputs.current.get(t.id)?.focus();
      return;
    }
    const effect = keyEffect(t, e.key, values[t.id]);
    if (!effect) return;
    e.preventDefault();
    void save(t, effect.kind === 'set' ? effect.value : undefined);
    // A rating moves on to the next template; a toggle of several choices stays.
    if (effect.kind === 'set' && !(t.type === 'categorical' && t.multiple))
      setActive((a) => Math.min(fields.length - 1, a + 1));
  };
  useEffect(() => {
    const listener = (e: KeyboardEvent) => keys.current(e);
    window.addEventListener('keydown', listener);
    return () => window.removeEventListener('keydown', listener);
  }, []);

  const error = queue.error ?? templates.error;
  const runHref =
    record && runKind.fresh && runKind.data ? recordHref(projectId, runKind.data, record) : null;
  return (
    <>
      <Crumbs
        items={[
          { label: 'Projects', to: '/' },
          { label: project.data?.name ?? '…', to: `/projects/${projectId}` },
          { label: 'Annotation queues', to: `/projects/${projectId}/annotation_queues` },
          { label: queue.data?.name ?? '…' },
        ]}
      />
      {error && <ErrorNote error={error} retry={queue.error ? queue.reload : templates.reload} />}
      {queue.data && (
        <div className="page-head">
          <h1>{queue.data.name}</h1>
          <span className="muted" aria-live="polite">
            {total === 0
              ? 'No records in this queue yet'
              : `Record ${formatCount(Math.min(index + 1, total))} of ${formatCount(total)}`}
          </span>
        </div>
      )}
      {queue.data?.description && <p className="muted queue-description">{queue.data.description}</p>}
      <nav className="neighbours" aria-label="Records of the queue">
        <button type="button" className="button small" disabled={index <= 0} onClick={() => go(index - 1)}>
          ← Previous <kbd>k</kbd>
        </button>
        <button
          type="button"
          className="button small"
          disabled={index + 1 >= total}
          onClick={() => go(index + 1)}
        >
          Next <kbd>j</kbd> →
        </button>
        {runHref && (
          <Link to={runHref} className="button ghost small">
            Open in its {record?.type === 'session' ? 'session' : 'trace'}
          </Link>
        )}
      </nav>
      {page.error && <ErrorNote error={page.error} retry={page.reload} />}
      {earlier && <ErrorNote error={earlier} />}
      {queue.data && total === 0 && (
        <div className="empty">
          <h2>Nothing to annotate yet</h2>
          <p>
            Add records from a log stream's traces, spans or sessions: select rows and choose{' '}
            <strong>Add to queue</strong>, or add every record the table's filters match.
          </p>
        </div>
      )}
      {queue.data && total > 0 && index >= total && page.fresh && !record && (
        <div className="empty">
          <h2>The end of the queue</h2>
          <button type="button" className="button" onClick={() => go(0)}>
            Back to the first record
          </button>
        </div>
      )}
      {!record && !page.error && total > 0 && index < total && <Loading what="the record" />}
      <div className="queue-layout">
        {record && <RecordPanel record={record} metricLabel={metricLabel} />}
        <aside className="queue-side" aria-label="Annotation">
          {record && (
            <section className="panel" aria-labelledby="form-title">
              <h2 id="form-title">Your annotation</h2>
              {fields.length === 0 && templates.data && (
                <p className="muted">This queue has no templates: nothing to annotate.</p>
              )}
              {access.role && !annotator && (
                <p className="muted">
                  Annotating needs the annotator role on the project: this is read only.
                </p>
              )}
              <fieldset className="plain" disabled={!annotator}>
                {fields.map((t, i) => (
                  <AnnotationField
                    key={`${recordId}/${t.id}`}
                    template={t}
                    value={values[t.id]}
                    active={i === active}
                    state={states[t.id] ?? null}
                    onSet={(v) => save(t, v)}
                    onClear={() => save(t, undefined)}
                    onActivate={() => setActive(i)}
                    inputRef={(el) => {
                      if (el) inputs.current.set(t.id, el);
                      else inputs.current.delete(t.id);
                    }}
                  />
                ))}
              </fieldset>
            </section>
          )}
          <QueueProgressView progress={progress.data} error={progress.error} meId={me?.id} />
          {queue.data && access.can('editor') && (
            <QueueMembers
              projectId={projectId}
              queue={queue.data}
              changed={() => {
                queue.reload();
                progress.reload();
              }}
            />
          )}
          <section className="panel shortcuts" aria-labelledby="keys-title">
            <h2 id="keys-title">Keyboard</h2>
            <dl>
              {SHORTCUTS.map(([k, what]) => (
                <div key={k}>
                  <dt>
                    <kbd>{k}</kbd>
                  </dt>
                  <dd>{what}</dd>
                </div>
              ))}
            </dl>
          </section>
        </aside>
      </div>
    </>
  );
}
