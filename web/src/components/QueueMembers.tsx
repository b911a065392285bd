import { type FormEvent, useState } from 'react';
import { get, patch } from '../lib/api.ts';
import type { AnnotationQueue, UserCollaborator } from '../lib/api-types.ts';
import { useApi } from '../lib/use-api.ts';
import { useUser } from './Layout.tsx';

/**
 * Who annotates a queue: its members, each removable, and any collaborator of the project (or the
 * caller) added. Saved as the queue's user_ids (PATCH); the API checks each has the annotator role.
 */
export function QueueMembers({
  projectId,
  queue,
  changed,
}: {
  projectId: string;
  queue: AnnotationQueue;
  changed: () => void;
}) {
  const me = useUser();
  const people = useApi(`collaborators/${projectId}`, () =>
    get<UserCollaborator[]>(`/v2/projects/${projectId}/users`),
  );
  const [error, setError] = useState<string | null>(null);
  const emails = new Map((people.data ?? []).map((u) => [u.user_id, u.email]));
  if (me) emails.set(me.id, me.email);
  const candidates = [...emails].filter(([id]) => !queue.user_ids.includes(id));
  const save = async (userIds: string[]) => {
    try {
      await patch(`/v2/projects/${projectId}/annotation_queues/${queue.id}`, { user_ids: userIds });
      setError(null);
      changed();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const add = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const id = String(new FormData(e.currentTarget).get('user') ?? '');
    if (id) save([...queue.user_ids, id]);
  };
  return (
    <section className="panel queue-members" aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      {queue.user_ids.length === 0 && <p className="muted small">No members: nobody annotates this queue.</p>}
      <ul className="member-list">
        {queue.user_ids.map((id) => (
          <li key={id} data-user={id}>
            <span>{emails.get(id) ?? id}</span>
            <button
              type="button"
              className="button small ghost"
              onClick={() => save(queue.user_ids.filter((u) => u !== id))}
            >
              Remove<span className="visually-hidden"> {emails.get(id) ?? id}</span>
            </button>
          </li>
        ))}
      </ul>
      {candidates.length > 0 && (
        <form className="inline-form" onSubmit={add}>
          <select name="user" aria-label="Collaborator to add">
            {candidates.map(([id, email]) => (
              <option key={id} value={id}>
                {email}
              </option>
            ))}
          </select>
          <button type="submit" className="button small">
            Add member
          </button>
        </form>
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
