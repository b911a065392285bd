import { Link, useParams } from 'react-router';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { ShownValue } from '../components/Messages.tsx';
import { Neighbours } from '../components/Neighbours.tsx';
import { RecordPanel } from '../components/RecordPanel.tsx';
import { RunHeader, runBase, useRunInfo } from '../components/RunHeader.tsx';
import { hasFailed } from '../lib/failures.ts';
import { get } from '../lib/api.ts';
import type { RunKind, SessionRecord } from '../lib/api-types.ts';
import {
  costOf,
  formatCost,
  formatCount,
  formatNs,
  formatTime,
  joinFacts,
  totalTokens,
} from '../lib/format.ts';
import { runScope } from '../lib/list-view.ts';
import { useMetricLabels } from '../lib/metric-labels.ts';
import { useApi } from '../lib/use-api.ts';

/** A session as a conversation: its traces in order, each one's input and output, one click from the trace. */
export function SessionPage({ runKind }: { runKind: RunKind }) {
  const { projectId = '', runId = '', sessionId = '' } = useParams();
  const info = useRunInfo(projectId, runKind, runId);
  const base = runBase(projectId, runKind, runId);
  const scope = runScope(runKind, runId);
  const metricLabel = useMetricLabels(projectId, 'sessions', scope);
  const session = useApi(sessionId, () =>
    get<SessionRecord>(`/v2/projects/${projectId}/sessions/${sessionId}`),
  );
  const s = session.fresh ? session.data : undefined;
  const traces = s ? [...s.traces].sort((a, b) => a.created_at.localeCompare(b.created_at)) : [];
  const tokens = s ? totalTokens(s.metrics) : null;
  const cost = s ? costOf(s.metrics) : null;
  return (
    <>
      <RunHeader
        projectId={projectId}
        kind={runKind}
        runId={runId}
        info={info}
        tabs={false}
        tail={[{ label: 'Session' }]}
      />
      <Neighbours projectId={projectId} tab="sessions" base={base} scope={scope} />
      {session.error && <ErrorNote error={session.error} retry={session.reload} />}
      {!s && !session.error && <Loading what="the session" />}
      {s && (
        <>
          <div className="page-head">
            <h1>{s.name || s.external_id || 'Session'}</h1>
            <span className="muted">
              {joinFacts(
                `${formatCount(traces.length)} traces`,
                formatNs(s.metrics?.duration_ns) && `${formatNs(s.metrics?.duration_ns)} in all`,
                tokens !== null && `${formatCount(tokens)} tokens`,
                (tokens !== null || cost !== null) && formatCost(cost),
              )}
            </span>
          </div>
          <div className="session-layout">
            <ol className="transcript" aria-label="Conversation">
              {traces.map((t, i) => {
                const tt = totalTokens(t.metrics);
                const tc = costOf(t.metrics);
                return (
                  <li key={t.id} className="turn">
                    <div className="turn-head">
                      <span className="turn-number">{i + 1}</span>
                      <Link to={`${base}/traces/${t.id}`} className="turn-link">
                        {t.name || 'trace'}
                      </Link>
                      <span className="muted small">
                        {joinFacts(
                          formatTime(t.created_at),
                          formatNs(t.metrics?.duration_ns),
                          tt !== null && `${formatCount(tt)} tokens`,
                          (tt !== null || tc !== null) && formatCost(tc),
                        )}
                      </span>
                      {hasFailed(t) && <span className="status bad">error</span>}
                    </div>
                    <div className="bubble user">
                      <span className="bubble-role">Input</span>
                      <ShownValue value={t.input} />
                    </div>
                    <div className="bubble assistant">
                      <span className="bubble-role">Output</span>
                      {t.error_message && t.output == null ? (
                        <p className="form-error">{t.error_message}</p>
                      ) : (
                        <ShownValue value={t.output} />
                      )}
                    </div>
                  </li>
                );
              })}
              {traces.length === 0 && <p className="muted">This session has no traces yet.</p>}
            </ol>
            <RecordPanel record={s} metricLabel={metricLabel} />
          </div>
        </>
      )}
    </>
  );
}
