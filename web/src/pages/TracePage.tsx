import { useMemo, useState } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { Neighbours } from '../components/Neighbours.tsx';
import { RecordPanel } from '../components/RecordPanel.tsx';
import { RunHeader, runBase, useRunInfo } from '../components/RunHeader.tsx';
import { TraceTree } from '../components/TraceTree.tsx';
import { get } from '../lib/api.ts';
import type { ApiRecord, RunKind, TreeRecord } from '../lib/api-types.ts';
import { costOf, formatCost, formatCount, formatDuration, joinFacts, totalTokens } from '../lib/format.ts';
import { ancestorsOf, derivedDurationMs, indexTree } from '../lib/span-tree.ts';
import { runScope } from '../lib/list-view.ts';
import { useMetricLabels } from '../lib/metric-labels.ts';
import { useApi } from '../lib/use-api.ts';

/**
 * A trace (or a span, opened in its trace): the span tree and waterfall beside the selected record.
 * The selection lives in the URL (`span`), so a copied link opens the same span.
 */
export function TracePage({ runKind }: { runKind: RunKind }) {
  const { projectId = '', runId = '', traceId, spanId } = useParams();
  const [params, setParams] = useSearchParams();
  const info = useRunInfo(projectId, runKind, runId);
  const base = runBase(projectId, runKind, runId);
  const scope = runScope(runKind, runId);
  const metricLabel = useMetricLabels(projectId, 'spans', scope);

  const trace = useApi(`trace/${traceId ?? ''}/${spanId ?? ''}`, async () => {
    let id = traceId;
    if (!id) {
      const span = await get<ApiRecord>(`/v2/projects/${projectId}/spans/${spanId}`);
      id = span.trace_id ?? undefined;
      if (!id) throw new Error('This span belongs to no trace');
    }
    return get<TreeRecord>(`/v2/projects/${projectId}/traces/${id}`);
  });
  const root = trace.fresh ? trace.data : undefined;
  const byId = useMemo(() => (root ? indexTree(root) : new Map<string, TreeRecord>()), [root]);
  const selectedId = params.get('span') ?? spanId ?? root?.id ?? '';
  const selected = byId.get(selectedId) ?? root;

  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  // A deep link to a span inside collapsed parents opens them.
  const visibleCollapsed = useMemo(() => {
    const hidden = ancestorsOf(byId, selectedId).filter((id) => collapsed.has(id));
    if (hidden.length === 0) return collapsed;
    const next = new Set(collapsed);
    for (const id of hidden) next.delete(id);
    return next;
  }, [byId, selectedId, collapsed]);

  const select = (id: string) => {
    const next = new URLSearchParams(params);
    if (id === (spanId ?? root?.id)) next.delete('span');
    else next.set('span', id);
    setParams(next, { replace: true });
  };
  const toggle = (id: string, open?: boolean) => {
    const closing = !(open ?? collapsed.has(id));
    // Folding away the selected span selects the span that folds it.
    if (closing && ancestorsOf(byId, selectedId).includes(id)) select(id);
    setCollapsed((c) => {
      const next = new Set(c);
      if (open ?? c.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  };

  const tokens = root ? totalTokens(root.metrics) : null;
  const cost = root ? costOf(root.metrics) : null;
  return (
    <>
      <RunHeader
        projectId={projectId}
        kind={runKind}
        runId={runId}
        info={info}
        tabs={false}
        tail={[{ label: spanId ? 'Span' : 'Trace' }]}
      />
      <Neighbours projectId={projectId} tab={spanId ? 'spans' : 'traces'} base={base} scope={scope} />
      {trace.error && <ErrorNote error={trace.error} retry={trace.reload} />}
      {!root && !trace.error && <Loading what="the trace" />}
      {root && selected && (
        <>
          <div className="page-head">
            <h1>{root.name || 'Trace'}</h1>
            <span className="muted">
              {joinFacts(
                formatDuration(derivedDurationMs(root)),
                tokens !== null && `${formatCount(tokens)} tokens`,
                (tokens !== null || cost !== null) && formatCost(cost),
                `${formatCount(byId.size - 1)} spans`,
              )}
            </span>
          </div>
          <div className="trace-layout">
            <TraceTree
              root={root}
              selectedId={selected.id}
              onSelect={select}
              collapsed={visibleCollapsed}
              onToggle={toggle}
            />
            <RecordPanel
              record={selected}
              downloadValue={selected === root ? root : undefined}
              metricLabel={metricLabel}
            />
          </div>
        </>
      )}
    </>
  );
}
