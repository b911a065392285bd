import { ROLES, type Role } from '../../../../src/domain/roles.ts';
import type { ControlProps } from '../../components/Field.tsx';

const STRONGEST_FIRST = [...ROLES].reverse();

/** A collaborator role: owner, editor, annotator or viewer. */
export function RoleSelect({
  value,
  onChange,
  label,
  disabled,
  control,
}: {
  value: Role;
  onChange: (role: Role) => void;
  label?: string;
  disabled?: boolean;
  control?: Partial<ControlProps>;
}) {
  return (
    <select
      {...control}
      aria-label={control?.id ? undefined : label}
      value={value}
      disabled={disabled}
      onChange={(e) => onChange(e.currentTarget.value as Role)}
    >
      {STRONGEST_FIRST.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </select>
  );
}
