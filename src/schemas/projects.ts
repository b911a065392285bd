import { Type } from '@sinclair/typebox';
import { OPERATORS } from '../query/filter-kinds.ts';
import { DateTime, Nullable, PageEnvelope, Pagination, Uuid } from './common.ts';

export const CreateProject = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  created_by: Type.Optional(Nullable(Type.String())),
  type: Type.Optional(
    Type.Unsafe<string>({ type: 'string', enum: ['gen_ai', 'llm_monitor', 'prompt_evaluation', 'protect'] }),
  ),
  create_example_templates: Type.Optional(Type.Boolean()),
});

export const Project = Type.Object({
  id: Uuid,
  name: Type.String(),
  type: Type.String(),
  created_by: Type.String(),
  created_at: DateTime,
  updated_at: DateTime,
  retention_days: Nullable(Type.Integer({ description: 'Days records are kept (null: forever)' })),
});

export const ListProjectsQuery = Type.Object({
  project_name: Type.Optional(Type.String()),
  type: Type.Optional(Type.String()),
});

/** The caller's own role on a project: what the console shows or hides controls by. */
export const ProjectRole = Type.Object(
  {
    project_id: Uuid,
    role: Type.Unsafe<'owner' | 'editor' | 'annotator' | 'viewer'>({
      type: 'string',
      enum: ['owner', 'editor', 'annotator', 'viewer'],
      description:
        "The strongest of the caller's own share and their groups' shares; an admin's is owner (admins may do everything)",
    }),
  },
  { title: 'ProjectRole' },
);

export const ShareProject = Type.Object({
  user_id: Type.Optional(Uuid),
  group_id: Type.Optional(Uuid),
  role: Type.Unsafe<'owner' | 'editor' | 'annotator' | 'viewer'>({
    type: 'string',
    enum: ['owner', 'editor', 'annotator', 'viewer'],
  }),
});

export const CreateRun = Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }) });

export const Run = Type.Object({
  id: Uuid,
  name: Type.String(),
  project_id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
  created_by: Type.String(),
  created_by_user: Nullable(
    Type.Object({
      id: Type.String(),
      email: Type.String(),
      first_name: Type.String(),
      last_name: Type.String(),
    }),
  ),
  num_traces: Nullable(Type.Integer()),
  num_spans: Nullable(Type.Integer()),
  has_user_created_sessions: Type.Boolean(),
  retention_days: Nullable(
    Type.Integer({ description: "Days records are kept (null: the project's setting)" }),
  ),
});

const CaseSensitive = Type.Optional(Type.Boolean({ default: true }));
const IdOperator = Type.Unsafe<string>({
  type: 'string',
  enum: [...OPERATORS.id],
  default: 'eq',
});
const DateOperator = Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.date] });
const StringOrList = Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 1000 })]);

const RunIDFilter = Type.Object(
  { name: Type.Literal('id'), operator: Type.Optional(IdOperator), value: StringOrList },
  { title: 'RunIDFilter' },
);
const RunNameFilter = Type.Object(
  {
    name: Type.Literal('name'),
    operator: Type.Unsafe<string>({ type: 'string', enum: [...OPERATORS.text] }),
    value: StringOrList,
    case_sensitive: CaseSensitive,
  },
  { title: 'RunNameFilter' },
);
const RunCreatedByFilter = Type.Object(
  { name: Type.Literal('created_by'), operator: Type.Optional(IdOperator), value: StringOrList },
  { title: 'RunCreatedByFilter' },
);
const RunCreatedAtFilter = Type.Object(
  { name: Type.Literal('created_at'), operator: DateOperator, value: DateTime },
  { title: 'RunCreatedAtFilter' },
);
const RunUpdatedAtFilter = Type.Object(
  { name: Type.Literal('updated_at'), operator: DateOperator, value: DateTime },
  { title: 'RunUpdatedAtFilter' },
);

const RunFilter = Type.Union(
  [RunIDFilter, RunNameFilter, RunCreatedByFilter, RunCreatedAtFilter, RunUpdatedAtFilter],
  {
    discriminator: { propertyName: 'name' },
  },
);
// Ajv's discriminator keyword wants oneOf.
(RunFilter as any).oneOf = (RunFilter as any).anyOf;
delete (RunFilter as any).anyOf;

const sortOf = (name: string, title: string) =>
  Type.Object(
    {
      name: Type.Literal(name),
      ascending: Type.Optional(Type.Boolean({ default: true })),
      sort_type: Type.Optional(Type.Literal('column')),
    },
    { title },
  );
const RunSort = Type.Unsafe<{ name: 'name' | 'created_at' | 'updated_at'; ascending?: boolean }>({
  oneOf: [
    sortOf('name', 'RunNameSort'),
    sortOf('created_at', 'RunCreatedAtSort'),
    sortOf('updated_at', 'RunUpdatedAtSort'),
  ],
  discriminator: { propertyName: 'name' },
});

export const SearchRuns = Type.Object({
  ...Pagination,
  filters: Type.Optional(Type.Array(RunFilter, { maxItems: 100 })),
  sort: Type.Optional(Nullable(RunSort)),
  include_counts: Type.Optional(Type.Boolean({ default: false })),
});

export const RunsPage = Type.Object({ log_streams: Type.Array(Run), ...PageEnvelope });
