import type { QueueProgress } from '../lib/api-types.ts';
import { formatCount } from '../lib/format.ts';
import { ErrorNote } from './ErrorNote.tsx';

/**
 * A queue's progress as the API counts it: per member, the records they annotated on every template
 * of the queue; and the records every member has finished.
 */
export function QueueProgressView({
  progress,
  error,
  meId,
}: {
  progress: QueueProgress | undefined;
  error: Error | undefined;
  meId: string | undefined;
}) {
  const total = progress?.num_records ?? 0;
  return (
    <section className="panel queue-progress" aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      {error && <ErrorNote error={error} />}
      {progress && (
        <>
          <p className="muted small" data-testid="complete">
            {formatCount(progress.num_complete)} of {formatCount(total)} done by every member
          </p>
          <ul className="members">
            {progress.users.map((u) => (
              <li key={u.user_id} data-user={u.user_id}>
                <span className="member-name">
                  {u.email}
                  {u.user_id === meId && <span className="muted"> (you)</span>}
                  {!u.member && <span className="muted"> · not a member</span>}
                </span>
                <span className="member-count" data-testid="annotated">
                  {formatCount(u.num_annotated)} / {formatCount(total)}
                </span>
                <progress
                  max={Math.max(total, 1)}
                  value={u.num_annotated}
                  aria-label={`${u.email}: ${u.num_annotated} of ${total} annotated`}
                />
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
