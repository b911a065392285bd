import type { Kysely } from 'kysely';

/**
 * Datasets (the hosted /v2/datasets routes): a dataset, its versions, the projects that use it, and
 * its rows. A row is stored once per change with the versions it is valid in, `valid_from` to
 * `valid_to` (exclusive; 2^31-1 while current), so reading any version is one range read of the
 * `(dataset_id, position)` index: `valid_from <= v AND valid_to > v`. Row data is JSON text on both
 * stores (jsonb would reorder the keys of a row).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('datasets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    /** 'importing' while an upload streams in (hidden from every read), then 'ready'. */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('draft', 'integer', (c) => c.notNull())
    .addColumn('hidden', 'integer', (c) => c.notNull())
    .addColumn('current_version', 'integer', (c) => c.notNull())
    .addColumn('num_rows', 'bigint', (c) => c.notNull())
    /** JSON list of the current version's column names. */
    .addColumn('column_names', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('datasets_name').unique().on('datasets').column('name').execute();
  await db.schema.createIndex('datasets_created').on('datasets').columns(['created_at', 'id']).execute();

  const dataset = (c: any) => c.notNull().references('datasets.id').onDelete('cascade');
  await db.schema
    .createTable('dataset_versions')
    .addColumn('dataset_id', 'text', dataset)
    .addColumn('version_index', 'integer', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('num_rows', 'bigint', (c) => c.notNull())
    .addColumn('column_names', 'text', (c) => c.notNull())
    .addColumn('rows_added', 'bigint', (c) => c.notNull())
    .addColumn('rows_removed', 'bigint', (c) => c.notNull())
    .addColumn('rows_edited', 'bigint', (c) => c.notNull())
    .addColumn('columns_added', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('dataset_versions_pk', ['dataset_id', 'version_index'])
    .execute();

  await db.schema
    .createTable('dataset_projects')
    .addColumn('dataset_id', 'text', dataset)
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('dataset_projects_pk', ['dataset_id', 'project_id'])
    .execute();
  await db.schema
    .createIndex('dataset_projects_project')
    .on('dataset_projects')
    .columns(['project_id', 'dataset_id'])
    .execute();

  await db.schema
    .createTable('dataset_rows')
    .addColumn('dataset_id', 'text', dataset)
    .addColumn('row_id', 'text', (c) => c.notNull())
    /** Order within every version: a row keeps its position; appends go past the largest, prepends before the smallest. */
    .addColumn('position', 'bigint', (c) => c.notNull())
    .addColumn('valid_from', 'integer', (c) => c.notNull())
    .addColumn('valid_to', 'integer', (c) => c.notNull())
    /** JSON object: column name -> value. */
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_in_version', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_by', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('dataset_rows_pk', ['dataset_id', 'row_id', 'valid_from'])
    .execute();
  await db.schema
    .createIndex('dataset_rows_order')
    .on('dataset_rows')
    .columns(['dataset_id', 'position', 'valid_from'])
    .execute();
}
