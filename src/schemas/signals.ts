import { Type } from '@sinclair/typebox';
import { PREFERENCE_MAX, RUN_MODES, SCHEDULE_TYPES, SEVERITIES } from '../domain/signals.ts';
import { DateTime, Nullable, Uuid } from './common.ts';

const enumOf = (values: readonly string[]) => Type.Unsafe<string>({ type: 'string', enum: [...values] });
const CalendarDate = Type.String({ format: 'date', maxLength: 10 });

export const SignalsParams = Type.Object({ project_id: Uuid, run_id: Uuid });

export const SignalsConfiguration = Type.Object(
  {
    id: Nullable(Uuid),
    project_id: Uuid,
    run_id: Uuid,
    run_mode: Type.String(),
    schedule: Type.Object({ cron: Type.String(), type: Type.String(), timezone: Type.String() }),
    start_date: Nullable(Type.String()),
    end_date: Nullable(Type.String()),
    scheduled_runs_enabled: Type.Boolean(),
    model: Nullable(Type.String()),
    integration_id: Nullable(Type.String()),
    user_preferences: Type.Object({ focus_on: Type.String(), dont_focus_on: Type.String() }),
    notification_severities: Type.Array(Type.String()),
    created_at: Nullable(DateTime),
    updated_at: Nullable(DateTime),
  },
  { title: 'SignalsConfiguration' },
);

export const SignalsConfigurationEnvelope = Type.Object({ data: SignalsConfiguration });

/** PUT body: the configuration fields at the top level; a field left out keeps its saved value. */
export const UpdateSignalsConfiguration = Type.Object({
  run_mode: Type.Optional(enumOf(RUN_MODES)),
  schedule: Type.Optional(
    Type.Object({
      type: Type.Optional(enumOf(SCHEDULE_TYPES)),
      cron: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    }),
  ),
  start_date: Type.Optional(Nullable(CalendarDate)),
  end_date: Type.Optional(Nullable(CalendarDate)),
  scheduled_runs_enabled: Type.Optional(Type.Boolean()),
  model: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  integration_id: Type.Optional(Nullable(Uuid)),
  user_preferences: Type.Optional(
    Type.Object({
      focus_on: Type.Optional(Type.String({ maxLength: PREFERENCE_MAX })),
      dont_focus_on: Type.Optional(Type.String({ maxLength: PREFERENCE_MAX })),
    }),
  ),
  notification_severities: Type.Optional(Type.Array(enumOf(SEVERITIES), { maxItems: 16 })),
});

export interface SignalsUpdate {
  run_mode?: string;
  schedule?: { type?: string; cron?: string; timezone?: string };
  start_date?: string | null;
  end_date?: string | null;
  scheduled_runs_enabled?: boolean;
  model?: string | null;
  integration_id?: string | null;
  user_preferences?: { focus_on?: string; dont_focus_on?: string };
  notification_severities?: string[];
}
