import { Type } from '@sinclair/typebox';
import { Uuid } from './common.ts';

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Settings = Type.Object({}, { additionalProperties: true, maxProperties: 100 });

export const ExperimentParams = Type.Object({ project_id: Uuid, experiment_id: Uuid });
export const TagParams = Type.Object({ project_id: Uuid, experiment_id: Uuid, tag_id: Uuid });
export const JobParams = Type.Object({ job_id: Uuid });
export const RunJobParams = Type.Object({ project_id: Uuid, run_id: Uuid });

export const CreateExperiment = Type.Object({
  name: Name,
  task_type: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  dataset: Type.Optional(
    Type.Union([
      Type.Object({
        dataset_id: Uuid,
        version_index: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
      }),
      Type.Null(),
    ]),
  ),
  prompt_template_version_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
  prompt_settings: Type.Optional(Type.Union([Settings, Type.Null()])),
  playground_id: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
});

export const UpdateExperiment = Type.Object({
  name: Type.Optional(Name),
  task_type: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
});

export const TagBody = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 200 }),
  value: Type.String({ maxLength: 2000 }),
  tag_type: Type.Optional(Type.String({ maxLength: 50 })),
});

export const MetricsBody = Type.Object(
  {
    filters: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 50 })),
    experiment_ids: Type.Optional(Type.Array(Uuid, { maxItems: 100 })),
  },
  { additionalProperties: true },
);

export const PageQuery = Type.Object({
  starting_token: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
});

export const CompareQuery = Type.Object({
  experiment_ids: Type.String({ minLength: 1, maxLength: 2000 }),
  sort_by: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  starting_token: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
});

export const CreateJob = Type.Object(
  {
    job_name: Type.String({ minLength: 1, maxLength: 100 }),
    project_id: Uuid,
    run_id: Uuid,
    prompt_template_version_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    dataset_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    dataset_version_index: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
    prompt_settings: Type.Optional(Type.Union([Settings, Type.Null()])),
    scorers: Type.Optional(
      Type.Union([
        Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 100 }),
        Type.Null(),
      ]),
    ),
    task_type: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    integration_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 32 })),
  },
  { additionalProperties: true },
);

/** A job's statuses: any other `status` filter is a 422 (it could match nothing, and PostgreSQL refuses a NUL). */
export const JOB_STATUSES = ['pending', 'processing', 'completed', 'failed', 'cancelled'] as const;

export const JobsQuery = Type.Object({
  status: Type.Optional(Type.Union(JOB_STATUSES.map((v) => Type.Literal(v)))),
});

/** Answers are described loosely: their fields are those of the hosted ExperimentResponse / JobDB. */
export const Loose = Type.Object({}, { additionalProperties: true });
