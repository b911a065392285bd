import { type FormEvent, useState } from 'react';
import type { Role } from '../../../../src/domain/roles.ts';
import { ErrorNote, Loading } from '../../components/ErrorNote.tsx';
import { Field, FieldError, FormProblem, useFormErrors } from '../../components/Field.tsx';
import { useUser } from '../../components/Layout.tsx';
import { del, get, patch } from '../../lib/api.ts';
import type { Group, GroupCollaborator, User, UserCollaborator } from '../../lib/api-types.ts';
import { formErrors } from '../../lib/form-errors.ts';
import { formatTime } from '../../lib/format.ts';
import { useApi } from '../../lib/use-api.ts';
import { RoleSelect } from './RoleSelect.tsx';

export interface Share {
  kind: 'user' | 'group';
  id: string;
  role: Role;
}

/** One collaborator row: its role (changed at once) and a remove button; the API's refusal beside it. */
function CollaboratorRow({
  name,
  detail,
  url,
  role,
  canShare,
  onChanged,
}: {
  name: string;
  detail: string;
  url: string;
  role: Role;
  canShare: boolean;
  onChanged: () => void;
}) {
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function act(action: () => Promise<unknown>) {
    setBusy(true);
    setProblem(null);
    try {
      await action();
      onChanged();
    } catch (err) {
      const e = formErrors(err, ['role']);
      setProblem(e.fields.role ?? e.general);
    } finally {
      setBusy(false);
    }
  }
  return (
    <tr>
      <td>
        <div>{name}</div>
        <div className="muted small">{detail}</div>
      </td>
      <td>
        <RoleSelect
          label={`Role of ${name}`}
          value={role}
          disabled={!canShare || busy}
          onChange={(r) => act(() => patch(url, { role: r }))}
        />
        <FieldError message={problem ?? undefined} />
      </td>
      <td className="actions">
        {canShare && (
          <button
            type="button"
            className="button small"
            disabled={busy}
            aria-label={`Remove ${name}`}
            onClick={() => act(() => del(url))}
          >
            Remove
          </button>
        )}
      </td>
    </tr>
  );
}

const SHARE_FIELDS = ['user_id', 'group_id', 'role', '0.user_id', '0.group_id', '0.role'];

/** Picks a user (a list for admins, who may list users; else their id) or a group, with a role. */
function ShareForm({ share, onShared }: { share: (s: Share) => Promise<void>; onShared: () => void }) {
  const me = useUser();
  const isAdmin = me?.role === 'admin';
  const users = useApi(isAdmin ? 'users' : null, () => get<User[]>('/v2/users'));
  const groups = useApi('groups', () => get<Group[]>('/v2/groups'));
  const [kind, setKind] = useState<'user' | 'group'>('group');
  const [role, setRole] = useState<Role>('viewer');
  const { errors, busy, submit } = useFormErrors(SHARE_FIELDS);
  const idError =
    errors.fields.user_id ??
    errors.fields['0.user_id'] ??
    errors.fields.group_id ??
    errors.fields['0.group_id'];
  async function onSubmit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const id = String(new FormData(e.currentTarget).get('who') ?? '').trim();
    if (await submit(() => share({ kind, id, role }))) onShared();
  }
  return (
    <form className="inline-form" onSubmit={onSubmit} aria-label="Share">
      <Field label="Share with">
        {(c) => (
          <select {...c} value={kind} onChange={(e) => setKind(e.currentTarget.value as 'user' | 'group')}>
            <option value="group">a group</option>
            <option value="user">a user</option>
          </select>
        )}
      </Field>
      {kind === 'group' ? (
        <Field label="Group" error={idError}>
          {(c) => (
            <select {...c} name="who" required key="group">
              {(groups.data ?? []).map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      ) : isAdmin ? (
        <Field label="User" error={idError}>
          {(c) => (
            <select {...c} name="who" required key="user">
              {(users.data ?? []).map((u) => (
                <option key={u.id} value={u.id}>
                  {u.email}
                </option>
              ))}
            </select>
          )}
        </Field>
      ) : (
        <Field label="User id" error={idError} hint="Only admins can list users: ask for the user's id.">
          {(c) => <input {...c} name="who" required key="user-id" className="mono" />}
        </Field>
      )}
      <Field label="Role" error={errors.fields.role ?? errors.fields['0.role']}>
        {(c) => <RoleSelect control={c} value={role} onChange={setRole} />}
      </Field>
      <button type="submit" className="button primary" disabled={busy}>
        Share
      </button>
      <FormProblem message={errors.general} />
    </form>
  );
}

/**
 * Who a project or integration is shared with (`base` answers GET/PATCH/DELETE .../users and
 * .../groups alike), their roles, and a form to share it further. Only owners change sharing: each
 * collaborator record says whether the caller may (`permissions`), unless `canShare` is given.
 */
export function SharingEditor({
  base,
  canShare: given,
  share,
}: {
  base: string;
  canShare?: boolean;
  share: (s: Share) => Promise<void>;
}) {
  const users = useApi(`${base}/users`, () => get<UserCollaborator[]>(`${base}/users`));
  const groups = useApi(`${base}/groups`, () => get<GroupCollaborator[]>(`${base}/groups`));
  const reload = () => {
    users.reload();
    groups.reload();
  };
  const error = users.error ?? groups.error;
  if (error) return <ErrorNote error={error} retry={reload} />;
  if (!users.data || !groups.data) return <Loading what="collaborators" />;
  const canShare =
    given ??
    [...users.data, ...groups.data].some((c) =>
      c.permissions.some((p) => p.action === 'update' && p.allowed),
    );
  return (
    <div className="sharing">
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Shared with</th>
              <th scope="col">Role</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.data.map((u) => (
              <CollaboratorRow
                key={u.id}
                name={u.email}
                detail={`User · since ${formatTime(u.created_at)}`}
                url={`${base}/users/${u.user_id}`}
                role={u.role}
                canShare={canShare}
                onChanged={reload}
              />
            ))}
            {groups.data.map((g) => (
              <CollaboratorRow
                key={g.id}
                name={g.group_name}
                detail={`Group · since ${formatTime(g.created_at)}`}
                url={`${base}/groups/${g.group_id}`}
                role={g.role}
                canShare={canShare}
                onChanged={reload}
              />
            ))}
          </tbody>
        </table>
      </div>
      {canShare ? (
        <ShareForm share={share} onShared={reload} />
      ) : (
        <p className="muted">Only an owner changes who this is shared with.</p>
      )}
    </div>
  );
}
