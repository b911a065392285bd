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

// --- runs and signals (Spanbase extension, shaped after the hosted experimental logstream_insights) ---

export const SIGNAL_STATUSES = ['open', 'resolved', 'dismissed'] as const;

export const SignalRunParams = Type.Object({ project_id: Uuid, run_id: Uuid, signal_run_id: Uuid });
export const SignalParams = Type.Object({ project_id: Uuid, run_id: Uuid, signal_id: Uuid });

export const SignalRun = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    run_id: Uuid,
    trigger: Type.String({ description: '`scheduled` (one per cron slot) or `on_demand`' }),
    slot_time: Nullable(DateTime),
    status: Type.String({
      description: 'queued | running | succeeded | partial (the model step failed) | failed',
    }),
    window_start: DateTime,
    window_end: DateTime,
    model: Nullable(Type.String()),
    integration_id: Nullable(Type.String()),
    records_read: Type.Integer({ description: 'Records in the window' }),
    records_sampled: Type.Integer({ description: 'Records sent to the model' }),
    tokens_in: Type.Integer(),
    tokens_out: Type.Integer(),
    cost: Nullable(Type.Number({ description: 'Dollars spent on the model step (null: none, or no price)' })),
    signals_found: Type.Integer(),
    skipped_reason: Nullable(Type.String({ description: 'Why the model step did not run' })),
    error: Nullable(Type.String()),
    created_by: Nullable(Type.String()),
    created_at: DateTime,
    started_at: Nullable(DateTime),
    finished_at: Nullable(DateTime),
  },
  { title: 'SignalRun' },
);

export const SignalRunEnvelope = Type.Object({ data: SignalRun });
export const SignalRunList = Type.Object({
  runs: Type.Array(SignalRun),
  next_starting_token: Nullable(Type.Integer()),
});
export const SignalRunsQuery = Type.Object({
  starting_token: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
});

export const Signal = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    run_id: Uuid,
    source: Type.String({
      description: '`model`, or a model-free finding: `errors`, `scores` (low scores), `latency`, `cost`',
    }),
    title: Type.String(),
    observation: Type.String(),
    details: Type.String(),
    suggested_action: Type.String(),
    severity: enumOf(SEVERITIES),
    priority_category: Type.String({ description: 'As hosted: error | warning | info' }),
    status: enumOf(SIGNAL_STATUSES),
    occurrence_count: Type.Integer(),
    runs_seen: Type.Integer(),
    first_seen: DateTime,
    last_seen: DateTime,
    first_signal_run_id: Uuid,
    last_signal_run_id: Uuid,
    all_occurrences: Type.Array(
      Type.Object({
        record_id: Type.String(),
        record_type: Type.String(),
        session_id: Nullable(Type.String()),
        trace_id: Nullable(Type.String()),
        span_id: Nullable(Type.String()),
        created_at: DateTime,
      }),
    ),
    example_occurrences: Type.Array(
      Type.Object({
        record_id: Type.String(),
        trace_id: Nullable(Type.String()),
        example_narrative: Type.String(),
      }),
    ),
  },
  { title: 'Signal' },
);

export const SignalList = Type.Object({
  signals: Type.Array(Signal),
  next_starting_token: Nullable(Type.Integer()),
});
export const SignalsQuery = Type.Object({
  severity: Type.Optional(Type.Array(enumOf(SEVERITIES), { maxItems: 4 })),
  status: Type.Optional(Type.Array(enumOf(SIGNAL_STATUSES), { maxItems: 3 })),
  signal_run_id: Type.Optional(Uuid),
  starting_token: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
});
export const UpdateSignal = Type.Object({ status: enumOf(SIGNAL_STATUSES) });
