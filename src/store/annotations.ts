/**
 * Annotation templates and annotations, with the aggregate of each record, template and source
 * rewritten in the transaction that changes one of its annotations; and the feedback a page of
 * records shows (its annotations, aggregates and queues).
 */
import type { Kysely, Transaction } from 'kysely';
import {
  type AggregateView,
  type AnnotationSource,
  type AnnotationView,
  type RecordFeedback,
  type StoredValue,
  type TemplateType,
  aggregate,
} from '../domain/annotations.ts';
import { type Dialect, parseJson, toJson } from './db.ts';
import type { AnnotationTemplatesTable, AnnotationsTable, DB } from './tables.ts';

export type TemplateRow = AnnotationTemplatesTable;
export type AnnotationRow = AnnotationsTable;

/** Raised when a template's or queue's name is taken in the project. */
export class NameTaken extends Error {}

/** What one write of an annotation says. */
export interface AnnotationWrite {
  id: string;
  projectId: string;
  recordId: string;
  templateId: string;
  templateType: TemplateType;
  source: AnnotationSource;
  author: string;
  userId: string;
  externalUserId: string | null;
  stored: StoredValue;
  explanation: string | null;
  now: number;
}

export class AnnotationsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  templates(projectId: string): Promise<TemplateRow[]> {
    return this.db
      .selectFrom('annotation_templates')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
  }

  template(projectId: string, id: string): Promise<TemplateRow | undefined> {
    return this.db
      .selectFrom('annotation_templates')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  private async nameTaken(projectId: string, name: string, except: string | null): Promise<boolean> {
    let q = this.db
      .selectFrom('annotation_templates')
      .select('id')
      .where('project_id', '=', projectId)
      .where('name', '=', name);
    if (except) q = q.where('id', '<>', except);
    return (await q.executeTakeFirst()) !== undefined;
  }

  /** Inserts a template; a name taken in the project (also by a concurrent insert) throws NameTaken. */
  async insertTemplate(row: TemplateRow): Promise<void> {
    if (await this.nameTaken(row.project_id, row.name, null)) throw new NameTaken();
    try {
      await this.db.insertInto('annotation_templates').values(row).execute();
    } catch (err) {
      if (await this.nameTaken(row.project_id, row.name, null)) throw new NameTaken();
      throw err;
    }
  }

  async updateTemplate(
    row: TemplateRow,
    patch: { name?: string; description?: string | null; updated_at: number },
  ) {
    if (patch.name !== undefined && (await this.nameTaken(row.project_id, patch.name, row.id)))
      throw new NameTaken();
    try {
      await this.db.updateTable('annotation_templates').set(patch).where('id', '=', row.id).execute();
    } catch (err) {
      if (patch.name !== undefined && (await this.nameTaken(row.project_id, patch.name, row.id)))
        throw new NameTaken();
      throw err;
    }
  }

  /** Whether the template has any reviewer annotation (the annotations index by template). */
  async annotated(templateId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('annotations')
      .select('record_id')
      .where('template_id', '=', templateId)
      .where('source', '=', 'reviewer')
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Deletes a template with its annotations, aggregates and places in queues. */
  async deleteTemplate(id: string): Promise<void> {
    await this.db.deleteFrom('annotation_templates').where('id', '=', id).execute();
  }

  /**
   * Sets one author's annotation (replacing theirs) and rewrites the aggregate in the same
   * transaction. The aggregate row is locked first, so concurrent writes of one record and template
   * take turns and each aggregate counts every committed annotation.
   */
  async set(w: AnnotationWrite): Promise<AnnotationRow | null> {
    return this.db.transaction().execute(async (tx) => {
      if (!(await this.holdRecord(tx, w.projectId, w.recordId))) return null;
      await this.lockAggregate(tx, w.recordId, w.templateId, w.source, w.projectId, w.now);
      await tx
        .insertInto('annotations')
        .values({
          id: w.id,
          project_id: w.projectId,
          record_id: w.recordId,
          template_id: w.templateId,
          source: w.source,
          author: w.author,
          user_id: w.userId,
          external_user_id: w.externalUserId,
          value: JSON.stringify(w.stored.value),
          num_value: w.stored.num,
          text_value: w.stored.text,
          items: toJson(w.stored.items),
          explanation: w.explanation,
          created_at: w.now,
          updated_at: w.now,
        })
        .onConflict((oc) =>
          oc.columns(['record_id', 'template_id', 'author']).doUpdateSet((eb) => ({
            user_id: eb.ref('excluded.user_id'),
            value: eb.ref('excluded.value'),
            num_value: eb.ref('excluded.num_value'),
            text_value: eb.ref('excluded.text_value'),
            items: eb.ref('excluded.items'),
            explanation: eb.ref('excluded.explanation'),
            updated_at: eb.ref('excluded.updated_at'),
          })),
        )
        .execute();
      await this.rewriteAggregate(tx, w.recordId, w.templateId, w.templateType, w.source, w.now);
      return tx
        .selectFrom('annotations')
        .selectAll()
        .where('record_id', '=', w.recordId)
        .where('template_id', '=', w.templateId)
        .where('author', '=', w.author)
        .executeTakeFirstOrThrow();
    });
  }

  /** Deletes one author's annotation and rewrites the aggregate; false when there was none. */
  async delete(
    projectId: string,
    recordId: string,
    template: { id: string; type: TemplateType },
    source: AnnotationSource,
    author: string,
    now: number,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      await this.lockAggregate(tx, recordId, template.id, source, projectId, now);
      const res = await tx
        .deleteFrom('annotations')
        .where('record_id', '=', recordId)
        .where('template_id', '=', template.id)
        .where('author', '=', author)
        .executeTakeFirst();
      await this.rewriteAggregate(tx, recordId, template.id, template.type, source, now);
      return Number(res.numDeletedRows) > 0;
    });
  }

  /**
   * Whether the record is still there, checked inside the annotation's transaction: a delete of the
   * record then either ran first (nothing to annotate) or waits for this transaction (PostgreSQL: the
   * key-share lock) and takes the new annotation with the record. SQLite's writes take turns anyway.
   */
  private async holdRecord(tx: Transaction<DB>, projectId: string, recordId: string): Promise<boolean> {
    let q = tx
      .selectFrom('records')
      .select('id')
      .where('id', '=', recordId)
      .where('project_id', '=', projectId);
    if (this.dialect === 'postgres') q = q.forKeyShare();
    return (await q.executeTakeFirst()) !== undefined;
  }

  /** Creates the aggregate row if missing and locks it (PostgreSQL: a row lock until commit). */
  private async lockAggregate(
    tx: Transaction<DB>,
    recordId: string,
    templateId: string,
    source: string,
    projectId: string,
    now: number,
  ): Promise<void> {
    await tx
      .insertInto('annotation_aggregates')
      .values({
        record_id: recordId,
        template_id: templateId,
        source,
        project_id: projectId,
        n: 0,
        sum: null,
        min: null,
        max: null,
        mean: null,
        counts: null,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc
          .columns(['record_id', 'template_id', 'source'])
          .doUpdateSet((eb) => ({ updated_at: eb.ref('excluded.updated_at') })),
      )
      .execute();
  }

  /** The aggregate of the record's annotations on the template from the source, from its rows. */
  private async rewriteAggregate(
    tx: Transaction<DB>,
    recordId: string,
    templateId: string,
    type: TemplateType,
    source: string,
    now: number,
  ): Promise<void> {
    const rows = await tx
      .selectFrom('annotations')
      .select(['num_value', 'items'])
      .where('record_id', '=', recordId)
      .where('template_id', '=', templateId)
      .where('source', '=', source)
      .execute();
    const key = (q: any) =>
      q.where('record_id', '=', recordId).where('template_id', '=', templateId).where('source', '=', source);
    if (!rows.length) {
      await key(tx.deleteFrom('annotation_aggregates')).execute();
      return;
    }
    const a = aggregate(
      type,
      rows.map((r) => ({
        value: null,
        num: r.num_value === null ? null : Number(r.num_value),
        text: null,
        items: parseJson<string[]>(r.items),
      })),
    );
    await key(
      tx.updateTable('annotation_aggregates').set({
        n: a.n,
        sum: a.sum,
        min: a.min,
        max: a.max,
        mean: a.sum === null ? null : a.sum / a.n,
        counts: toJson(a.counts),
        updated_at: now,
      }),
    ).execute();
  }
}

export function annotationView(a: AnnotationRow): AnnotationView {
  return {
    template_id: a.template_id,
    author: a.author,
    source: a.source as AnnotationSource,
    user_id: a.user_id,
    external_user_id: a.external_user_id,
    value: JSON.parse(a.value),
    explanation: a.explanation,
    created_at: Number(a.created_at),
    updated_at: Number(a.updated_at),
  };
}

/**
 * SQL true when the record `recordRef` (a column reference such as `r.id`) has feedback to show:
 * annotations or a place in a queue. An aggregate exists only beside its annotations, so a record
 * without either has none of the three, and its page entry needs no `recordFeedback` read.
 */
export function hasFeedbackSql(recordRef: string): string {
  return `(exists (select 1 from annotations as fa where fa.record_id = ${recordRef})
    or exists (select 1 from annotation_queue_records as fq where fq.record_id = ${recordRef}))`;
}

/**
 * The feedback of each record in `recordIds` (records without any are left out), read on `db` (a
 * connection or transaction of the caller, so that it comes from the page's snapshot).
 */
export async function recordFeedback(
  db: Kysely<DB>,
  recordIds: readonly string[],
): Promise<Map<string, RecordFeedback>> {
  const out = new Map<string, RecordFeedback>();
  if (!recordIds.length) return out;
  const ids = [...new Set(recordIds)];
  const of = (id: string) => {
    let f = out.get(id);
    if (!f) {
      f = { annotations: [], aggregates: [], queueIds: [] };
      out.set(id, f);
    }
    return f;
  };
  for (let i = 0; i < ids.length; i += 500) {
    const part = ids.slice(i, i + 500);
    const [annotations, aggregates, queues] = await Promise.all([
      db.selectFrom('annotations').selectAll().where('record_id', 'in', part).execute(),
      db
        .selectFrom('annotation_aggregates as a')
        .innerJoin('annotation_templates as t', 't.id', 'a.template_id')
        .select([
          'a.record_id',
          'a.template_id',
          'a.source',
          'a.n',
          'a.sum',
          'a.min',
          'a.max',
          'a.counts',
          't.type',
        ])
        .where('a.record_id', 'in', part)
        .execute(),
      db
        .selectFrom('annotation_queue_records')
        .select(['record_id', 'queue_id'])
        .where('record_id', 'in', part)
        .execute(),
    ]);
    for (const a of annotations) of(a.record_id).annotations.push(annotationView(a));
    for (const a of aggregates) {
      const view: AggregateView = {
        template_id: a.template_id,
        template_type: a.type as TemplateType,
        source: a.source as AnnotationSource,
        aggregate: {
          n: Number(a.n),
          sum: a.sum === null ? null : Number(a.sum),
          min: a.min === null ? null : Number(a.min),
          max: a.max === null ? null : Number(a.max),
          counts: parseJson(a.counts),
        },
      };
      of(a.record_id).aggregates.push(view);
    }
    for (const q of queues) of(q.record_id).queueIds.push(q.queue_id);
  }
  return out;
}
