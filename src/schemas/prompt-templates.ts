/** Prompt templates, their versions, and rendering (the hosted `/templates` shapes). */
import { Type } from '@sinclair/typebox';
import { DateTime, Nullable, PageEnvelope, Pagination, Uuid } from './common.ts';

const NameText = Type.String({ minLength: 1, maxLength: 255 });

export const ChatMessage = Type.Object(
  { role: Type.String({ minLength: 1, maxLength: 64 }), content: Type.String({ maxLength: 200_000 }) },
  { additionalProperties: true, title: 'PromptMessage' },
);

const Content = Type.Union(
  [
    Type.String({ maxLength: 200_000, description: 'Text with {{variables}} (Mustache)' }),
    Type.Array(ChatMessage, { minItems: 1, maxItems: 500, description: 'Chat messages with {{variables}}' }),
  ],
  { description: 'A text template, or chat messages' },
);

export const PromptRunSettings = Type.Object(
  {
    model_alias: Type.Optional(Type.String({ maxLength: 255, description: 'The model' })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_k: Type.Optional(Type.Integer({ minimum: 0 })),
    frequency_penalty: Type.Optional(Type.Number()),
    presence_penalty: Type.Optional(Type.Number()),
    stop_sequences: Type.Optional(Nullable(Type.Array(Type.String()))),
    n: Type.Optional(Type.Integer({ minimum: 1 })),
    tools: Type.Optional(Nullable(Type.Array(Type.Record(Type.String(), Type.Unknown())))),
    response_format: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
  },
  { additionalProperties: true, title: 'PromptRunSettings', description: 'Model settings of a version' },
);

const VersionFields = {
  template: Content,
  raw: Type.Optional(Type.Boolean({ default: false })),
  version: Type.Optional(
    Nullable(Type.Integer({ minimum: 0, description: 'The version number (default: the next one)' })),
  ),
  settings: Type.Optional(PromptRunSettings),
  output_type: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
};

export const CreateTemplateBody = Type.Object(
  {
    ...VersionFields,
    name: Type.Union([
      NameText,
      Type.Object({ value: NameText, append_suffix_if_duplicate: Type.Optional(Type.Boolean()) }),
    ]),
    hidden: Type.Optional(Type.Boolean()),
  },
  { title: 'CreatePromptTemplateWithVersionRequestBody' },
);

export const CreateVersionBody = Type.Object(VersionFields, { title: 'BasePromptTemplateVersion' });

export const UpdateTemplateBody = Type.Object(
  { name: Type.Optional(Nullable(NameText)) },
  { title: 'UpdatePromptTemplateRequest' },
);

const UserInfo = Type.Object({
  id: Type.String(),
  email: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
});

export const TemplateVersion = Type.Object(
  {
    id: Uuid,
    template: Content,
    raw: Type.Boolean(),
    version: Type.Integer(),
    settings: PromptRunSettings,
    output_type: Nullable(Type.String()),
    content_changed: Type.Boolean({ description: 'The content differs from the version before' }),
    settings_changed: Type.Boolean({ description: 'Settings other than the model differ' }),
    model_changed: Type.Boolean(),
    lines_added: Type.Integer(),
    lines_edited: Type.Integer(),
    lines_removed: Type.Integer(),
    created_at: DateTime,
    updated_at: DateTime,
    created_by_user: Nullable(UserInfo),
  },
  { title: 'BasePromptTemplateVersionResponse' },
);

export const PromptTemplate = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    project_id: Nullable(
      Type.String({
        format: 'uuid',
        description: 'The project of a project template; null for a global one',
      }),
    ),
    shared_with_projects: Type.Array(Uuid, { description: 'Projects a global template is shared with' }),
    template: Type.String({ description: "The selected version's content (chat messages as JSON text)" }),
    selected_version: TemplateVersion,
    selected_version_id: Uuid,
    all_versions: Type.Optional(Type.Array(TemplateVersion)),
    all_available_versions: Type.Array(Type.Integer()),
    total_versions: Type.Integer(),
    max_version: Type.Integer(),
    created_at: DateTime,
    updated_at: DateTime,
    created_by_user: Nullable(UserInfo),
  },
  { title: 'BasePromptTemplateResponse' },
);

const NameOperator = Type.Union(['eq', 'ne', 'contains', 'one_of', 'not_in'].map((o) => Type.Literal(o)));
const TextValue = Type.Union([
  Type.String({ maxLength: 255 }),
  Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 }),
]);
const sortOf = (names: string[]) =>
  Nullable(
    Type.Object({
      name: Type.Union(names.map((n) => Type.Literal(n))),
      ascending: Type.Optional(Type.Boolean({ default: false })),
      sort_type: Type.Optional(Type.Literal('column')),
    }),
  );

export const TemplateQueryBody = Type.Object(
  {
    filters: Type.Optional(
      Nullable(
        Type.Array(
          Type.Union([
            Type.Object({
              name: Type.Literal('name'),
              operator: NameOperator,
              value: TextValue,
              case_sensitive: Type.Optional(Type.Boolean({ default: true })),
            }),
            Type.Object({
              name: Type.Literal('creator'),
              operator: Type.Optional(NameOperator),
              value: TextValue,
            }),
            Type.Object({ name: Type.Literal('used_in_project'), value: Uuid }),
            Type.Object({ name: Type.Literal('not_in_project'), value: Uuid }),
          ]),
          { maxItems: 20 },
        ),
      ),
    ),
    sort: Type.Optional(sortOf(['name', 'created_at', 'updated_at'])),
  },
  { title: 'ListPromptTemplateParams' },
);

export const TemplateList = Type.Object(
  { ...PageEnvelope, templates: Type.Array(PromptTemplate) },
  { title: 'ListPromptTemplateResponse' },
);

export const VersionQueryBody = Type.Object(
  { sort: Type.Optional(sortOf(['version', 'created_at', 'updated_at'])) },
  { title: 'ListPromptTemplateVersionParams' },
);

export const VersionList = Type.Object(
  { ...PageEnvelope, versions: Type.Array(TemplateVersion) },
  { title: 'ListPromptTemplateVersionResponse' },
);

export const PageQuery = Type.Object({
  starting_token: Type.Optional(Pagination.starting_token),
  limit: Type.Optional(Pagination.limit),
});

export const GlobalCreateQuery = Type.Object({ project_id: Type.Optional(Nullable(Uuid)) });

export const ByNameQuery = Type.Object({
  template_name: NameText,
  version: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
});

export const TemplateParams = Type.Object({ template_id: Uuid });
export const ProjectTemplateParams = Type.Object({ project_id: Uuid, template_id: Uuid });
export const VersionParams = Type.Object({ template_id: Uuid, version: Type.Integer({ minimum: 0 }) });
export const ProjectVersionParams = Type.Object({
  project_id: Uuid,
  template_id: Uuid,
  version: Type.Integer({ minimum: 0 }),
});

export const TemplateDeleted = Type.Object({ message: Type.String() }, { title: 'DeletePromptResponse' });

export const RenderBody = Type.Object(
  {
    template: Type.String({ maxLength: 200_000, description: 'The template text, with {{variables}}' }),
    data: Type.Union([
      Type.Object(
        {
          dataset_id: Uuid,
          dataset_version_index: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
        },
        {
          title: 'DatasetData',
          description: 'Render for each row of a dataset version (default: the latest)',
        },
      ),
      Type.Object(
        {
          input_strings: Type.Array(Type.String({ maxLength: 200_000 }), {
            maxItems: 10_000,
            description: 'Each a JSON object of variables, or plain text rendered as {{input}}',
          }),
        },
        { title: 'StringData' },
      ),
    ]),
  },
  { title: 'RenderTemplateRequest' },
);

export const RenderResult = Type.Object(
  {
    ...PageEnvelope,
    rendered_templates: Type.Array(
      Type.Object({
        result: Type.String(),
        warning: Nullable(Type.String({ description: 'One sentence per variable that had no value' })),
      }),
    ),
  },
  { title: 'RenderTemplateResponse' },
);
