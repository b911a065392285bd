import type { Kysely } from 'kysely';
import { jsonType } from './helpers.ts';

/**
 * Human feedback: annotation templates of a project, annotations of records (one per template,
 * record and author), their aggregates per record, template and source (kept in the transaction
 * that writes an annotation), and annotation queues with their templates, members and records.
 *
 * Records have no foreign key here (their deletes stay cheap): `annotations`,
 * `annotation_aggregates` and `annotation_queue_records` hold record ids that whoever deletes
 * records deletes too. Everything goes with its project, template or queue.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const json = jsonType(db);
  const project = (c: any) => c.notNull().references('projects.id').onDelete('cascade');
  await db.schema
    .createTable('annotation_templates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', project)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('config', json, (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('annotation_templates_name')
    .unique()
    .on('annotation_templates')
    .columns(['project_id', 'name'])
    .execute();

  const template = (c: any) => c.notNull().references('annotation_templates.id').onDelete('cascade');
  await db.schema
    .createTable('annotations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', project)
    .addColumn('record_id', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text', template)
    /** 'reviewer' | 'end_user' */
    .addColumn('source', 'text', (c) => c.notNull())
    /** The reviewer's user id, or `end_user:<external id>` (domain/annotations.ts authorKey). */
    .addColumn('author', 'text', (c) => c.notNull())
    /** Who sent it: the reviewer, or the user whose key the application used. */
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('external_user_id', 'text')
    /** JSON text of the value as sent (text on both stores: PostgreSQL would hand back a JSON string unquoted). */
    .addColumn('value', 'text', (c) => c.notNull())
    /** What filters read: thumbs 1/0, stars and score; text; choices and tags (a JSON list). */
    .addColumn('num_value', 'double precision')
    .addColumn('text_value', 'text')
    .addColumn('items', json)
    .addColumn('explanation', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // One annotation per record, template and author; it also answers "has every template of the
  // queue from each of these users" with one range per record (fully_annotated).
  await db.schema
    .createIndex('annotations_author')
    .unique()
    .on('annotations')
    .columns(['record_id', 'template_id', 'author'])
    .execute();
  // Filters on `annotation/<template id>` start from the template's annotations, not from the run.
  await db.schema
    .createIndex('annotations_template')
    .on('annotations')
    .columns(['template_id', 'source', 'record_id'])
    .execute();

  await db.schema
    .createTable('annotation_aggregates')
    .addColumn('record_id', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text', template)
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', project)
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addColumn('sum', 'double precision')
    .addColumn('min', 'double precision')
    .addColumn('max', 'double precision')
    /** sum / n, what sorts read. */
    .addColumn('mean', 'double precision')
    .addColumn('counts', json)
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('annotation_aggregates_pk', ['record_id', 'template_id', 'source'])
    .execute();

  await db.schema
    .createTable('annotation_queues')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', project)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('annotation_queues_project')
    .on('annotation_queues')
    .columns(['project_id', 'created_at'])
    .execute();
  const queue = (c: any) => c.notNull().references('annotation_queues.id').onDelete('cascade');
  await db.schema
    .createTable('annotation_queue_templates')
    .addColumn('queue_id', 'text', queue)
    .addColumn('template_id', 'text', template)
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('annotation_queue_templates_pk', ['queue_id', 'template_id'])
    .execute();
  await db.schema
    .createIndex('annotation_queue_templates_template')
    .on('annotation_queue_templates')
    .column('template_id')
    .execute();
  await db.schema
    .createTable('annotation_queue_members')
    .addColumn('queue_id', 'text', queue)
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('annotation_queue_members_pk', ['queue_id', 'user_id'])
    .execute();
  await db.schema
    .createIndex('annotation_queue_members_user')
    .on('annotation_queue_members')
    .column('user_id')
    .execute();
  await db.schema
    .createTable('annotation_queue_records')
    .addColumn('queue_id', 'text', queue)
    .addColumn('record_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', project)
    /** The record's created_at (which never changes): a queue search reads the queue in time order. */
    .addColumn('record_created_at', 'bigint', (c) => c.notNull())
    .addColumn('added_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('annotation_queue_records_pk', ['queue_id', 'record_id'])
    .execute();
  await db.schema
    .createIndex('annotation_queue_records_order')
    .on('annotation_queue_records')
    .columns(['queue_id', 'record_created_at', 'record_id'])
    .execute();
  await db.schema
    .createIndex('annotation_queue_records_record')
    .on('annotation_queue_records')
    .column('record_id')
    .execute();
}
