import { useState } from 'react';
import { Link } from 'react-router';
import { get, post } from '../lib/api.ts';
import type { AnnotationQueue } from '../lib/api-types.ts';
import { formatCount } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';

/**
 * Hands records of a table to an annotation queue: the selected rows, or every record the table's
 * filters match (`matching`: the body of that search; `count`: how many match when the table has
 * shown them all, else how many at least).
 */
export function AddToQueue({
  projectId,
  selectedIds,
  matching,
  count,
  exact,
  onAdded,
}: {
  projectId: string;
  selectedIds: string[];
  matching: () => object;
  count: number;
  exact: boolean;
  onAdded: () => void;
}) {
  const queues = useApi(`queues/${projectId}`, () =>
    get<AnnotationQueue[]>(`/v2/projects/${projectId}/annotation_queues`),
  );
  const [queueId, setQueueId] = useState('');
  const [outcome, setOutcome] = useState<{ text: string; queueId?: string; failed?: boolean } | null>(null);
  const chosen = queueId || queues.data?.[0]?.id || '';
  if (!queues.data || queues.data.length === 0) {
    return queues.data ? (
      <p className="muted small add-to-queue">
        No annotation queue to add records to yet:{' '}
        <Link to={`/projects/${projectId}/annotation_queues`}>make one</Link>.
      </p>
    ) : null;
  }
  const add = async (body: object) => {
    try {
      const r = await post<{ added?: number; num_records: number }>(
        `/v2/projects/${projectId}/annotation_queues/${chosen}/records`,
        body,
      );
      const name = queues.data?.find((q) => q.id === chosen)?.name ?? 'the queue';
      setOutcome({
        text: `Added ${formatCount(r.added ?? 0)} to ${name} (now ${formatCount(r.num_records)} records).`,
        queueId: chosen,
      });
      onAdded();
    } catch (err) {
      setOutcome({ text: (err as Error).message, failed: true });
    }
  };
  return (
    <fieldset className="add-to-queue plain">
      <legend className="visually-hidden">Add to an annotation queue</legend>
      <label>
        <span className="muted small">Annotation queue</span>{' '}
        <select value={chosen} onChange={(e) => setQueueId(e.currentTarget.value)}>
          {queues.data.map((q) => (
            <option key={q.id} value={q.id}>
              {q.name}
            </option>
          ))}
        </select>
      </label>
      <button
        type="button"
        className="button small"
        disabled={selectedIds.length === 0}
        onClick={() => add({ record_ids: selectedIds })}
      >
        Add {formatCount(selectedIds.length)} selected
      </button>
      <button type="button" className="button small" disabled={count === 0} onClick={() => add(matching())}>
        Add all {formatCount(count)}
        {exact ? '' : '+'} matching
      </button>
      {outcome && (
        <span className={outcome.failed ? 'form-error' : 'muted small'} role="status">
          {outcome.text}{' '}
          {outcome.queueId && (
            <Link to={`/projects/${projectId}/annotation_queues/${outcome.queueId}`}>Open the queue</Link>
          )}
        </span>
      )}
    </fieldset>
  );
}
