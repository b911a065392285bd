import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * Prompt templates and their versions (the hosted `/templates` and `/projects/{p}/templates`
 * routes). A project template has `project_id`; a global one has none and is shared with the
 * projects in `prompt_template_projects` (the hosted `used_in_project`). Names are unique per
 * project, and among global templates. Each version keeps what changed from the version before it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const project = (c: any) => c.notNull().references('projects.id').onDelete('cascade');
  await db.schema
    .createTable('prompt_templates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('selected_version', 'bigint', (c) => c.notNull())
    .addColumn('max_version', 'bigint', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('prompt_templates_project_name')
    .unique()
    .on('prompt_templates')
    .columns(['project_id', 'name'])
    .where(sql<boolean>`project_id IS NOT NULL`)
    .execute();
  await db.schema
    .createIndex('prompt_templates_global_name')
    .unique()
    .on('prompt_templates')
    .column('name')
    .where(sql<boolean>`project_id IS NULL`)
    .execute();

  await db.schema
    .createTable('prompt_template_projects')
    .addColumn('template_id', 'text', (c) =>
      c.notNull().references('prompt_templates.id').onDelete('cascade'),
    )
    .addColumn('project_id', 'text', project)
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('prompt_template_projects_pk', ['template_id', 'project_id'])
    .execute();
  await db.schema
    .createIndex('prompt_template_projects_project')
    .on('prompt_template_projects')
    .column('project_id')
    .execute();

  await db.schema
    .createTable('prompt_template_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('template_id', 'text', (c) =>
      c.notNull().references('prompt_templates.id').onDelete('cascade'),
    )
    .addColumn('version', 'bigint', (c) => c.notNull())
    /** JSON text of the template: a string, or a list of chat messages (text on both stores). */
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('raw', 'integer', (c) => c.notNull())
    /** JSON text of the model settings (PromptRunSettings). */
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('output_type', 'text')
    .addColumn('content_changed', 'integer', (c) => c.notNull())
    .addColumn('settings_changed', 'integer', (c) => c.notNull())
    .addColumn('model_changed', 'integer', (c) => c.notNull())
    .addColumn('lines_added', 'bigint', (c) => c.notNull())
    .addColumn('lines_edited', 'bigint', (c) => c.notNull())
    .addColumn('lines_removed', 'bigint', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('prompt_template_versions_number')
    .unique()
    .on('prompt_template_versions')
    .columns(['template_id', 'version'])
    .execute();
}
