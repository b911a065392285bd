import { useState } from 'react';
import { hasFailed } from '../lib/failures.ts';
import type { ApiRecord, TreeRecord } from '../lib/api-types.ts';
import {
  costOf,
  formatCost,
  formatCount,
  formatDuration,
  formatNs,
  formatTime,
  totalTokens,
} from '../lib/format.ts';
import { derivedDurationMs } from '../lib/span-tree.ts';
import { JsonView } from './JsonView.tsx';
import { KindIcon } from './KindIcon.tsx';
import { ShownValue } from './Messages.tsx';
import { ScoresView } from './ScoresView.tsx';

async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // Plain http on another host has no clipboard API: the old way still works there.
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}

function download(name: string, value: unknown) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A metric as a person reads it: durations in their unit, cost in dollars, counts with separators. */
function metricText(key: string, value: number): string {
  if (key === 'cost') return formatCost(value);
  return key.endsWith('_ns') ? formatNs(value) : formatCount(value);
}

function KeyValues({
  values,
  format,
  label = (k) => k,
}: {
  values: Record<string, unknown>;
  format?: (k: string, v: number) => string;
  label?: (k: string) => string;
}) {
  const entries = Object.entries(values);
  if (entries.length === 0) return <p className="muted">None</p>;
  return (
    <dl className="kv">
      {entries.map(([k, v]) => (
        <div key={k}>
          <dt>{label(k)}</dt>
          <dd>
            {typeof v === 'string' ? v : format && typeof v === 'number' ? format(k, v) : JSON.stringify(v)}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * The selected record: status, timing and ids, input and output (as chat when they are messages),
 * metrics, metadata, tags, and the raw JSON; copy its id or download it.
 */
export function RecordPanel({
  record,
  downloadValue,
  metricLabel,
}: {
  record: ApiRecord;
  downloadValue?: unknown;
  /** A metric's name as shown (lib/metric-labels.ts); its key without one. */
  metricLabel?: (key: string) => string;
}) {
  const [copied, setCopied] = useState(false);
  const tokens = totalTokens(record.metrics);
  const cost = costOf(record.metrics);
  const {
    spans: _children,
    traces: _traces,
    ...own
  } = record as ApiRecord & { spans?: unknown; traces?: unknown };
  const failed = hasFailed(record);
  const facts: [string, string | null | undefined][] = [
    ['Status', record.status_code == null ? null : String(record.status_code)],
    ['Started', formatTime(record.created_at)],
    ['Duration', formatDuration(derivedDurationMs(record as TreeRecord))],
    [
      'Tokens',
      tokens === null
        ? null
        : `${formatCount(tokens)} (${formatCount(record.metrics?.num_input_tokens ?? 0)} in, ${formatCount(record.metrics?.num_output_tokens ?? 0)} out)`,
    ],
    // Where tokens are, so is their cost; "—" says the model has no price (not that it was free).
    ['Cost', tokens === null && cost === null ? null : formatCost(cost)],
    ['Model', record.model],
    ['Complete', record.is_complete ? 'yes' : 'no'],
    ['Updated', formatTime(record.updated_at)],
    ['Trace', record.trace_id],
    ['Parent', record.parent_id],
    ['Session', record.session_id],
    ['External id', record.external_id],
  ];
  return (
    <article className="panel" aria-labelledby="panel-title">
      <header className="panel-head">
        <KindIcon type={record.type} />
        <h2 id="panel-title">{record.name || record.type}</h2>
        {failed && (
          <span className="status bad" title="error">
            error
          </span>
        )}
        <span className="spacer" />
        <button
          type="button"
          className="button small"
          onClick={async () => {
            await copyText(record.id);
            setCopied(true);
            setTimeout(() => setCopied(false), 1500);
          }}
        >
          {copied ? 'Copied' : 'Copy id'}
        </button>
        <button
          type="button"
          className="button small"
          onClick={() => download(`${record.type}-${record.id}.json`, downloadValue ?? own)}
        >
          Download JSON
        </button>
      </header>
      <p className="mono muted small">{record.id}</p>
      {record.error_message && (
        <p className="error-note" role="note">
          {record.error_message}
        </p>
      )}
      <dl className="facts">
        {facts
          .filter(([, v]) => v !== null && v !== undefined && v !== '')
          .map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd className={/^[0-9a-f-]{36}$/.test(v ?? '') ? 'mono' : undefined}>{v}</dd>
            </div>
          ))}
      </dl>
      <section aria-labelledby="input-title">
        <h3 id="input-title">Input</h3>
        <ShownValue value={record.input} />
      </section>
      <section aria-labelledby="output-title">
        <h3 id="output-title">Output</h3>
        <ShownValue value={record.output} />
      </section>
      <section aria-labelledby="metrics-title">
        <h3 id="metrics-title">Metrics</h3>
        <KeyValues values={record.metrics ?? {}} format={metricText} label={metricLabel} />
      </section>
      <section aria-labelledby="scores-title">
        <h3 id="scores-title">Scores</h3>
        <ScoresView
          info={(record as { metric_info?: Record<string, Record<string, unknown>> }).metric_info}
        />
      </section>
      <section aria-labelledby="meta-title">
        <h3 id="meta-title">Metadata</h3>
        <KeyValues values={record.user_metadata ?? {}} />
      </section>
      <section aria-labelledby="tags-title">
        <h3 id="tags-title">Tags</h3>
        {record.tags.length ? (
          <span className="tags">
            {record.tags.map((t) => (
              <span key={t} className="tag">
                {t}
              </span>
            ))}
          </span>
        ) : (
          <p className="muted">None</p>
        )}
      </section>
      <details className="raw">
        <summary>Raw JSON</summary>
        <JsonView value={own} openDepth={1} />
      </details>
    </article>
  );
}
