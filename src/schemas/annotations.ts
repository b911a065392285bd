/** Annotation templates, annotations of records, annotation queues and their records. */
import { Type } from '@sinclair/typebox';
import { MAX_OPTIONS, MAX_OPTION_LENGTH, SOURCES, TEMPLATE_TYPES } from '../domain/annotations.ts';
import { DateTime, Nullable, Uuid } from './common.ts';
import { SearchRecordsBody } from './search.ts';

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

const Name = Type.String({ minLength: 1, maxLength: 255 });
const Description = Type.String({ maxLength: 1000 });

export const TemplateParams = Type.Object({ project_id: Uuid, template_id: Uuid });
export const AnnotationParams = Type.Object({ project_id: Uuid, record_id: Uuid, template_id: Uuid });
export const QueueParams = Type.Object({ project_id: Uuid, queue_id: Uuid });

export const CreateTemplate = Type.Object(
  {
    name: Name,
    description: Type.Optional(Nullable(Description)),
    type: enumOf(
      TEMPLATE_TYPES,
      'thumbs (true: up), stars (1–5), score (min..max), categorical (options), text, tags',
    ),
    min: Type.Optional(Nullable(Type.Number({ description: 'score templates: the lowest score' }))),
    max: Type.Optional(Nullable(Type.Number({ description: 'score templates: the highest score' }))),
    options: Type.Optional(
      Nullable(
        Type.Array(Type.String({ minLength: 1, maxLength: MAX_OPTION_LENGTH }), {
          minItems: 1,
          maxItems: MAX_OPTIONS,
          description: 'categorical templates: the choices',
        }),
      ),
    ),
    multiple: Type.Optional(
      Nullable(Type.Boolean({ description: 'categorical templates: several choices per annotation' })),
    ),
  },
  { title: 'AnnotationTemplateCreate' },
);

export const UpdateTemplate = Type.Object(
  { name: Type.Optional(Nullable(Name)), description: Type.Optional(Nullable(Description)) },
  { title: 'AnnotationTemplateUpdate', description: 'The type and its settings cannot change' },
);

export const Template = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    type: Type.String(),
    min: Nullable(Type.Number()),
    max: Nullable(Type.Number()),
    options: Nullable(Type.Array(Type.String())),
    multiple: Nullable(Type.Boolean()),
    column_id: Type.String({ description: 'The column of its annotations in searches and dashboards' }),
    created_by: Nullable(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { title: 'AnnotationTemplate' },
);

const Source = enumOf(SOURCES, "reviewer (default): the caller's own; end_user: an end user's feedback");
const ExternalUserId = Type.String({ minLength: 1, maxLength: 512 });

export const SetAnnotation = Type.Object(
  {
    value: Type.Unknown({ description: "A value of the template's type" }),
    explanation: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    source: Type.Optional(Nullable(Source)),
    external_user_id: Type.Optional(
      Nullable({ ...ExternalUserId, description: 'The end user (source end_user only)' }),
    ),
  },
  { title: 'AnnotationSet' },
);

export const AnnotationAuthorQuery = Type.Object({
  source: Type.Optional(Source),
  external_user_id: Type.Optional(ExternalUserId),
});

export const Annotation = Type.Object(
  {
    record_id: Uuid,
    template_id: Uuid,
    source: Type.String(),
    user_id: Type.String(),
    external_user_id: Nullable(Type.String()),
    value: Type.Unknown(),
    explanation: Nullable(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { title: 'Annotation' },
);

const Ids = (description: string) => Type.Array(Uuid, { maxItems: 1000, description });

export const CreateQueue = Type.Object(
  {
    name: Name,
    description: Type.Optional(Nullable(Description)),
    template_ids: Type.Optional(Ids('The templates each record of the queue is annotated on')),
    user_ids: Type.Optional(Ids('The members: users who annotate the queue (the annotator role or up)')),
  },
  { title: 'AnnotationQueueCreate' },
);

export const UpdateQueue = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Nullable(Description)),
    template_ids: Type.Optional(Ids('Replaces the templates')),
    user_ids: Type.Optional(Ids('Replaces the members')),
  },
  { title: 'AnnotationQueueUpdate' },
);

export const Queue = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    name: Type.String(),
    description: Nullable(Type.String()),
    template_ids: Type.Array(Uuid),
    user_ids: Type.Array(Uuid),
    num_records: Type.Integer(),
    created_by: Nullable(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { title: 'AnnotationQueue' },
);

export const AddQueueRecords = Type.Object(
  {
    record_ids: Type.Optional(Nullable(Type.Array(Uuid, { minItems: 1, maxItems: 1000 }))),
    log_stream_id: SearchRecordsBody.properties.log_stream_id,
    experiment_id: SearchRecordsBody.properties.experiment_id,
    filters: SearchRecordsBody.properties.filters,
    filter_tree: SearchRecordsBody.properties.filter_tree,
  },
  {
    title: 'AnnotationQueueRecordsAdd',
    description:
      'record_ids, or a run (log_stream_id or experiment_id) with optional filters: every record of any type that search finds',
  },
);

export const RemoveQueueRecords = Type.Object(
  { record_ids: Type.Array(Uuid, { minItems: 1, maxItems: 1000 }) },
  { title: 'AnnotationQueueRecordsRemove' },
);

export const QueueRecordsChanged = Type.Object({
  added: Type.Optional(Type.Integer()),
  removed: Type.Optional(Type.Integer()),
  num_records: Type.Integer(),
});

export const Deleted = Type.Object({ message: Type.String() });

export const QueueProgress = Type.Object(
  {
    queue_id: Uuid,
    num_records: Type.Integer(),
    num_templates: Type.Integer(),
    num_complete: Type.Integer({
      description:
        'Records annotated on every template of the queue by every member (what fully_annotated matches)',
    }),
    users: Type.Array(
      Type.Object({
        user_id: Uuid,
        email: Type.String(),
        member: Type.Boolean({
          description: 'A member of the queue; the caller is listed last when not one',
        }),
        num_annotated: Type.Integer({
          description: "The queue's records this user has annotated on every template",
        }),
      }),
    ),
  },
  { title: 'AnnotationQueueProgress' },
);
