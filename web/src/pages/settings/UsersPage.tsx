import { type FormEvent, useState } from 'react';
import { ErrorNote, Loading } from '../../components/ErrorNote.tsx';
import { Field, FieldError, FormProblem, useFormErrors } from '../../components/Field.tsx';
import { useUser } from '../../components/Layout.tsx';
import { del, get, patch, post } from '../../lib/api.ts';
import type { Group, User } from '../../lib/api-types.ts';
import { formErrors } from '../../lib/form-errors.ts';
import { formatTime } from '../../lib/format.ts';
import { useApi } from '../../lib/use-api.ts';
import { SettingsHeader } from './SettingsHeader.tsx';

const USER_FIELDS = ['email', 'first_name', 'last_name', 'password', 'role'];
const GROUP_FIELDS = ['name', 'description'];

function CreateUserForm({ onCreated }: { onCreated: () => void }) {
  const { errors, busy, submit } = useFormErrors(USER_FIELDS);
  async function onSubmit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const text = (k: string) => String(d.get(k) ?? '');
    const ok = await submit(async () => {
      await post('/v2/users', {
        email: text('email').trim(),
        first_name: text('first_name'),
        last_name: text('last_name'),
        password: text('password') || null,
        role: text('role'),
      });
    });
    if (ok) {
      form.reset();
      onCreated();
    }
  }
  return (
    <form className="settings-form grid-form" onSubmit={onSubmit} aria-labelledby="new-user-title">
      <h3 id="new-user-title">Create a user</h3>
      <Field label="Email" error={errors.fields.email}>
        {(c) => <input {...c} name="email" type="email" required />}
      </Field>
      <Field label="First name" error={errors.fields.first_name}>
        {(c) => <input {...c} name="first_name" maxLength={255} />}
      </Field>
      <Field label="Last name" error={errors.fields.last_name}>
        {(c) => <input {...c} name="last_name" maxLength={255} />}
      </Field>
      <Field
        label="Password (optional)"
        error={errors.fields.password}
        hint="Without one, the user signs in with API keys only. Give it to them yourself."
      >
        {(c) => <input {...c} name="password" type="password" autoComplete="new-password" />}
      </Field>
      <Field label="System role" error={errors.fields.role}>
        {(c) => (
          <select {...c} name="role" defaultValue="user">
            <option value="user">user</option>
            <option value="admin">admin</option>
          </select>
        )}
      </Field>
      <FormProblem message={errors.general} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy}>
          Create user
        </button>
      </div>
    </form>
  );
}

function UserRow({ u, onChanged }: { u: User; onChanged: () => void }) {
  const [problem, setProblem] = useState<string | undefined>();
  async function setRole(role: string) {
    setProblem(undefined);
    try {
      await patch(`/v2/users/${u.id}`, { role });
      onChanged();
    } catch (err) {
      const e = formErrors(err, ['role']);
      setProblem(e.fields.role ?? e.general ?? undefined);
    }
  }
  return (
    <tr>
      <td>{u.email}</td>
      <td className="wide-only">{`${u.first_name} ${u.last_name}`.trim()}</td>
      <td>
        <select
          aria-label={`System role of ${u.email}`}
          value={u.role}
          onChange={(e) => setRole(e.currentTarget.value)}
        >
          <option value="user">user</option>
          <option value="admin">admin</option>
        </select>
        <FieldError message={problem} />
      </td>
      <td className="nowrap wide-only">{formatTime(u.created_at)}</td>
    </tr>
  );
}

function GroupMembers({ group, users, isAdmin }: { group: Group; users: User[]; isAdmin: boolean }) {
  const members = useApi(`members/${group.id}`, () => get<User[]>(`/v2/groups/${group.id}/members`));
  const { errors, busy, submit } = useFormErrors(['0.user_id']);
  const [problem, setProblem] = useState<string | null>(null);
  const inGroup = new Set((members.data ?? []).map((m) => m.id));
  const others = users.filter((u) => !inGroup.has(u.id));
  async function add(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const userId = String(new FormData(e.currentTarget).get('user_id') ?? '');
    if (await submit(() => post(`/v2/groups/${group.id}/members`, [{ user_id: userId }]))) members.reload();
  }
  async function remove(u: User) {
    setProblem(null);
    try {
      await del(`/v2/groups/${group.id}/members/${u.id}`);
      members.reload();
    } catch (err) {
      setProblem((err as Error).message);
    }
  }
  if (members.error) return <ErrorNote error={members.error} retry={members.reload} />;
  if (!members.data) return <Loading what="members" />;
  return (
    <div className="group-members">
      {members.data.length === 0 ? (
        <p className="muted">No members yet.</p>
      ) : (
        <ul className="member-list" aria-label={`Members of ${group.name}`}>
          {members.data.map((m) => (
            <li key={m.id}>
              <span>{m.email}</span>
              {isAdmin && (
                <button
                  type="button"
                  className="button small ghost"
                  aria-label={`Remove ${m.email} from ${group.name}`}
                  onClick={() => remove(m)}
                >
                  Remove
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <FormProblem message={problem} />
      {isAdmin && others.length > 0 && (
        <form className="inline-form" onSubmit={add}>
          <Field label={`Add to ${group.name}`} error={errors.fields['0.user_id']}>
            {(c) => (
              <select {...c} name="user_id">
                {others.map((u) => (
                  <option key={u.id} value={u.id}>
                    {u.email}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit" className="button" disabled={busy}>
            Add member
          </button>
          <FormProblem message={errors.general} />
        </form>
      )}
    </div>
  );
}

function Groups({ users, isAdmin }: { users: User[]; isAdmin: boolean }) {
  const groups = useApi('groups', () => get<Group[]>('/v2/groups'));
  const [open, setOpen] = useState<string | null>(null);
  const { errors, busy, submit } = useFormErrors(GROUP_FIELDS);
  async function create(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const d = new FormData(form);
    const ok = await submit(async () => {
      const g = await post<Group>('/v2/groups', {
        name: String(d.get('name') ?? '').trim(),
        description: String(d.get('description') ?? '') || null,
      });
      setOpen(g.id);
    });
    if (ok) {
      form.reset();
      groups.reload();
    }
  }
  return (
    <section className="section" aria-labelledby="groups-title">
      <h2 id="groups-title">Groups</h2>
      {groups.error && <ErrorNote error={groups.error} retry={groups.reload} />}
      {!groups.data && !groups.error && <Loading what="groups" />}
      {groups.data?.length === 0 && <p className="muted">No groups yet.</p>}
      <ul className="group-list">
        {groups.data?.map((g) => (
          <li key={g.id} className="group-item">
            <button
              type="button"
              className="group-toggle"
              aria-expanded={open === g.id}
              onClick={() => setOpen(open === g.id ? null : g.id)}
            >
              <strong>{g.name}</strong>
              {g.description && <span className="muted"> · {g.description}</span>}
            </button>
            {open === g.id && <GroupMembers group={g} users={users} isAdmin={isAdmin} />}
          </li>
        ))}
      </ul>
      {isAdmin && (
        <form className="settings-form grid-form" onSubmit={create} aria-labelledby="new-group-title">
          <h3 id="new-group-title">Create a group</h3>
          <Field label="Group name" error={errors.fields.name}>
            {(c) => <input {...c} name="name" required maxLength={255} />}
          </Field>
          <Field label="Description (optional)" error={errors.fields.description}>
            {(c) => <input {...c} name="description" maxLength={1000} />}
          </Field>
          <FormProblem message={errors.general} />
          <div className="form-actions">
            <button type="submit" className="button primary" disabled={busy}>
              Create group
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

/** Users and groups: admins create users, set their system role and manage groups; others see groups. */
export function UsersPage() {
  const me = useUser();
  const isAdmin = me?.role === 'admin';
  const users = useApi(isAdmin ? 'users' : null, () => get<User[]>('/v2/users'));
  return (
    <>
      <SettingsHeader current="Users and groups" />
      {me && !isAdmin && (
        <p className="notice" role="note">
          Only admins create users, change roles and manage group members; you are signed in as a user. Ask an
          admin of this Spanbase for changes.
        </p>
      )}
      {isAdmin && (
        <section className="section" aria-labelledby="users-title">
          <h2 id="users-title">Users</h2>
          {users.error && <ErrorNote error={users.error} retry={users.reload} />}
          {!users.data && !users.error && <Loading what="users" />}
          {users.data && (
            <div className="table-wrap">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Email</th>
                    <th scope="col" className="wide-only">
                      Name
                    </th>
                    <th scope="col">System role</th>
                    <th scope="col" className="wide-only">
                      Created
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {users.data.map((u) => (
                    <UserRow key={u.id} u={u} onChanged={users.reload} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <CreateUserForm onCreated={users.reload} />
        </section>
      )}
      {me && <Groups users={users.data ?? []} isAdmin={isAdmin} />}
    </>
  );
}
