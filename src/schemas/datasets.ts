/** Datasets: the hosted shapes (`DatasetDB`, `DatasetContent`, `DatasetVersionDB`, ...) and their requests. */
import { Type } from '@sinclair/typebox';
import { AnyKeyMap, DateTime, Nullable, PageEnvelope, Pagination, Uuid } from './common.ts';

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

const Name = Type.String({ minLength: 1, maxLength: 255 });

export const UserInfo = Type.Object(
  {
    id: Uuid,
    email: Type.String(),
    first_name: Type.Optional(Nullable(Type.String())),
    last_name: Type.Optional(Nullable(Type.String())),
  },
  { title: 'UserInfo' },
);

const Permission = Type.Object({
  action: enumOf(['update', 'rename', 'export', 'delete', 'share']),
  allowed: Type.Boolean(),
  message: Type.Optional(Nullable(Type.String())),
});

export const DatasetDB = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    created_at: DateTime,
    updated_at: DateTime,
    project_count: Type.Integer({ description: 'Projects that use the dataset' }),
    num_rows: Nullable(Type.Integer()),
    column_names: Nullable(Type.Array(Type.String())),
    created_by_user: Nullable(UserInfo),
    current_version_index: Type.Integer({
      description: 'Versions count from 1 (the upload); each edit adds one',
    }),
    draft: Type.Boolean(),
    permissions: Type.Array(Permission, { description: 'What the caller may do with the dataset' }),
  },
  { title: 'DatasetDB' },
);

export const ListDatasetResponse = Type.Object(
  { ...PageEnvelope, datasets: Type.Array(DatasetDB) },
  { title: 'ListDatasetResponse' },
);

export const DatasetParams = Type.Object({ dataset_id: Uuid });
export const DatasetVersionParams = Type.Object({
  dataset_id: Uuid,
  version_index: Type.Integer({ minimum: 1 }),
});
export const DatasetProjectParams = Type.Object({ dataset_id: Uuid, project_id: Uuid });
export const PageQuery = Type.Object({
  starting_token: Type.Optional(Pagination.starting_token),
  limit: Type.Optional(Pagination.limit),
});

export const CreateDatasetQuery = Type.Object({
  format: Type.Optional(
    enumOf(
      ['jsonl', 'csv', 'json', 'feather'],
      "The uploaded file's format (jsonl or csv; default from the file name, else jsonl)",
    ),
  ),
  hidden: Type.Optional(Type.Boolean()),
});

const CreateFields = {
  name: Type.Optional(Nullable(Name)),
  project_id: Type.Optional(Nullable(Uuid)),
  draft: Type.Optional(Type.Boolean()),
  hidden: Type.Optional(Type.Boolean()),
  append_suffix_if_duplicate: Type.Optional(
    Type.Boolean({ description: "A taken name gets ' (1)', ' (2)', ... instead of answering 409" }),
  ),
  copy_from_dataset_id: Type.Optional(Nullable(Uuid)),
  copy_from_dataset_version_index: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
};

/** The multipart form as the official client sends it (every field a text part, the file last). */
export const CreateDatasetMultipart = Type.Object(
  {
    ...CreateFields,
    file: Type.Optional(
      Type.String({
        format: 'binary',
        description:
          'JSONL (one JSON object a line) or CSV (a header line naming the columns), UTF-8. Each object key or CSV column becomes a column. Send the other fields before the file.',
      }),
    ),
  },
  { title: 'Body_create_dataset_datasets_post' },
);

/** Spanbase extension: the same, with the rows in a JSON body instead of a file. */
export const CreateDatasetJson = Type.Object(
  {
    ...CreateFields,
    name: Name,
    rows: Type.Optional(
      Type.Array(AnyKeyMap(Type.Unknown()), { description: 'Rows as objects: column name -> value' }),
    ),
  },
  { title: 'CreateDatasetFromRows' },
);

export const CreateDatasetBody = {
  content: {
    'multipart/form-data': { schema: CreateDatasetMultipart },
    'application/json': { schema: CreateDatasetJson },
  },
};

export const UpdateDataset = Type.Object(
  {
    name: Type.Optional(
      Nullable(
        Type.Union([
          Name,
          Type.Object({ value: Name, append_suffix_if_duplicate: Type.Optional(Type.Boolean()) }),
        ]),
      ),
    ),
    draft: Type.Optional(Nullable(Type.Boolean())),
  },
  { title: 'UpdateDatasetRequest' },
);

const StringFilterOp = enumOf(['eq', 'ne', 'contains', 'one_of', 'not_in']);
const FilterValue = Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 1000 })]);

export const ListDatasetParams = Type.Object(
  {
    filters: Type.Optional(
      Type.Array(
        Type.Union([
          Type.Object({
            name: Type.Literal('name'),
            operator: StringFilterOp,
            value: FilterValue,
            case_sensitive: Type.Optional(Type.Boolean()),
          }),
          Type.Object({
            name: Type.Literal('id'),
            operator: Type.Optional(StringFilterOp),
            value: FilterValue,
          }),
          Type.Object({ name: Type.Literal('draft'), operator: enumOf(['eq', 'ne']), value: Type.Boolean() }),
          Type.Object({ name: Type.Literal('used_in_project'), value: Uuid }),
          Type.Object({ name: Type.Literal('not_in_project'), value: Uuid }),
        ]),
        { maxItems: 20 },
      ),
    ),
    sort: Type.Optional(
      Nullable(
        Type.Object({
          name: enumOf(['name', 'created_at', 'updated_at', 'num_rows', 'project_count']),
          ascending: Type.Optional(Type.Boolean()),
          sort_type: Type.Optional(Type.String()),
        }),
      ),
    ),
  },
  { title: 'ListDatasetParams' },
);

const DictValue = Nullable(Type.Union([Type.String(), Type.Number()]));
export const DatasetValue = Type.Union([Type.String(), Type.Number(), AnyKeyMap(DictValue), Type.Null()]);

export const DatasetRow = Type.Object(
  {
    row_id: Uuid,
    index: Type.Integer({ description: 'Place of the row in the version, from 0' }),
    values: Type.Array(DatasetValue, { description: 'The values in column_names order' }),
    values_dict: AnyKeyMap(DatasetValue),
    metadata: Nullable(
      Type.Object({
        created_in_version: Type.Integer(),
        created_at: DateTime,
        created_by_user: Nullable(UserInfo),
        updated_in_version: Type.Integer(),
        updated_at: DateTime,
        updated_by_user: Nullable(UserInfo),
      }),
    ),
  },
  { title: 'DatasetRow' },
);

export const DatasetContent = Type.Object(
  {
    ...PageEnvelope,
    column_names: Type.Array(Type.String()),
    warning_message: Type.Optional(Nullable(Type.String())),
    rows: Type.Array(DatasetRow),
  },
  { title: 'DatasetContent' },
);

const EditValues = AnyKeyMap(Type.Unknown(), {
  description:
    'Column name -> value: strings, numbers, null and flat objects are kept; other values are stored as their JSON text',
});

export const UpdateDatasetContent = Type.Object(
  {
    edits: Type.Array(
      Type.Union([
        Type.Object({
          edit_type: Type.Literal('append_row'),
          values: EditValues,
          row_id: Type.Optional(Nullable(Uuid)),
        }),
        Type.Object({
          edit_type: Type.Literal('prepend_row'),
          values: EditValues,
          row_id: Type.Optional(Nullable(Uuid)),
        }),
        Type.Object({ edit_type: Type.Literal('update_row'), row_id: Uuid, values: EditValues }),
        Type.Object({ edit_type: Type.Literal('delete_row'), row_id: Uuid }),
      ]),
      { minItems: 1, maxItems: 10_000 },
    ),
  },
  { title: 'UpdateDatasetContentRequest' },
);

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description: 'The ETag of GET /datasets/{id}/content: 412 when the dataset changed since',
    }),
  ),
});

export const DatasetVersionDB = Type.Object(
  {
    version_index: Type.Integer(),
    name: Nullable(Type.String()),
    created_at: DateTime,
    created_by_user: Nullable(UserInfo),
    num_rows: Type.Integer(),
    column_names: Type.Array(Type.String()),
    rows_added: Type.Integer(),
    rows_removed: Type.Integer(),
    rows_edited: Type.Integer(),
    columns_added: Type.Integer(),
    columns_removed: Type.Integer(),
    columns_renamed: Type.Integer(),
  },
  { title: 'DatasetVersionDB' },
);

export const ListDatasetVersionParams = Nullable(
  Type.Object(
    {
      sort: Type.Optional(
        Nullable(
          Type.Object({
            name: Type.Literal('version_index'),
            ascending: Type.Optional(Type.Boolean()),
            sort_type: Type.Optional(Type.String()),
          }),
        ),
      ),
    },
    { title: 'ListDatasetVersionParams' },
  ),
);

export const ListDatasetVersionResponse = Type.Object(
  { ...PageEnvelope, versions: Type.Array(DatasetVersionDB) },
  { title: 'ListDatasetVersionResponse' },
);

export const UpdateDatasetVersion = Type.Object(
  { name: Type.Optional(Nullable(Type.String({ maxLength: 255 }))) },
  { title: 'UpdateDatasetVersionRequest' },
);

export const DatasetProject = Type.Object({
  id: Uuid,
  name: Type.String(),
  created_at: DateTime,
  updated_at: DateTime,
  created_by_user: Nullable(UserInfo),
});

export const ListDatasetProjectsResponse = Type.Object(
  { ...PageEnvelope, projects: Type.Array(DatasetProject) },
  { title: 'ListDatasetProjectsResponse' },
);

export const LinkDatasetProject = Type.Object({ project_id: Uuid }, { title: 'DatasetProjectLink' });
