/**
 * Annotation queues: their templates and members (in the order given) and their records, added by
 * id or as every record a search finds.
 */
import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../query/compile.ts';
import { NameTaken } from './annotations.ts';
import { type RecordSearch, matchQuery } from './search-query.ts';
import type { AnnotationQueuesTable, DB } from './tables.ts';

export type QueueRow = AnnotationQueuesTable;

/** How far a queue's annotation has come: per user, and for all of them together. */
export interface QueueProgressCounts {
  /** User id → how many of the queue's records that user has annotated on every template. */
  annotated: Map<string, number>;
  /** Records annotated on every template by every member. */
  complete: number;
}

/** A queue with its templates, members and how many records it holds. */
export interface QueueView extends QueueRow {
  template_ids: string[];
  user_ids: string[];
  num_records: number;
}

export class AnnotationQueuesRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  /** The queues of a project (only those `memberId` is a member of, when given), oldest first. */
  async list(projectId: string, memberId: string | null): Promise<QueueView[]> {
    let q = this.db.selectFrom('annotation_queues').selectAll().where('project_id', '=', projectId);
    if (memberId)
      q = q.where('id', 'in', (eb) =>
        eb.selectFrom('annotation_queue_members').select('queue_id').where('user_id', '=', memberId),
      );
    const rows = await q.orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
    return this.views(rows);
  }

  async byId(projectId: string, id: string): Promise<QueueView | undefined> {
    const row = await this.db
      .selectFrom('annotation_queues')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && (await this.views([row]))[0];
  }

  private async views(rows: QueueRow[]): Promise<QueueView[]> {
    if (!rows.length) return [];
    const ids = rows.map((r) => r.id);
    const [templates, members, counts] = await Promise.all([
      this.db
        .selectFrom('annotation_queue_templates')
        .select(['queue_id', 'template_id'])
        .where('queue_id', 'in', ids)
        .orderBy('position')
        .execute(),
      this.db
        .selectFrom('annotation_queue_members')
        .select(['queue_id', 'user_id'])
        .where('queue_id', 'in', ids)
        .orderBy('position')
        .execute(),
      this.db
        .selectFrom('annotation_queue_records')
        .select(['queue_id', sql<number>`count(*)`.as('n')])
        .where('queue_id', 'in', ids)
        .groupBy('queue_id')
        .execute(),
    ]);
    return rows.map((r) => ({
      ...r,
      template_ids: templates.filter((t) => t.queue_id === r.id).map((t) => t.template_id),
      user_ids: members.filter((m) => m.queue_id === r.id).map((m) => m.user_id),
      num_records: Number(counts.find((c) => c.queue_id === r.id)?.n ?? 0),
    }));
  }

  /** Inserts a queue, or replaces its fields and lists (those given), in one transaction. */
  /** Inserts or updates a queue with its lists; a name taken in the project throws NameTaken. */
  async save(
    row: QueueRow,
    lists: { templateIds?: string[]; userIds?: string[] },
    isNew: boolean,
  ): Promise<void> {
    try {
      await this.write(row, lists, isNew);
    } catch (err) {
      // The unique (project, name) index refused it (also a concurrent save of the same name).
      if (await this.nameTaken(row)) throw new NameTaken();
      throw err;
    }
  }

  private async nameTaken(row: QueueRow): Promise<boolean> {
    const other = await this.db
      .selectFrom('annotation_queues')
      .select('id')
      .where('project_id', '=', row.project_id)
      .where('name', '=', row.name)
      .where('id', '<>', row.id)
      .executeTakeFirst();
    return other !== undefined;
  }

  private async write(
    row: QueueRow,
    lists: { templateIds?: string[]; userIds?: string[] },
    isNew: boolean,
  ): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      if (isNew) await tx.insertInto('annotation_queues').values(row).execute();
      else {
        const { id, project_id, created_at, created_by, ...fields } = row;
        await tx.updateTable('annotation_queues').set(fields).where('id', '=', id).execute();
      }
      if (lists.templateIds) {
        await tx.deleteFrom('annotation_queue_templates').where('queue_id', '=', row.id).execute();
        if (lists.templateIds.length)
          await tx
            .insertInto('annotation_queue_templates')
            .values(lists.templateIds.map((t, position) => ({ queue_id: row.id, template_id: t, position })))
            .execute();
      }
      if (lists.userIds) {
        await tx.deleteFrom('annotation_queue_members').where('queue_id', '=', row.id).execute();
        if (lists.userIds.length)
          await tx
            .insertInto('annotation_queue_members')
            .values(lists.userIds.map((u, position) => ({ queue_id: row.id, user_id: u, position })))
            .execute();
      }
    });
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('annotation_queues').where('id', '=', id).execute();
  }

  /** Adds the project's records among `recordIds` (others are ignored); how many were new. */
  async addRecords(queueId: string, projectId: string, recordIds: string[], now: number): Promise<number> {
    if (!recordIds.length) return 0;
    const select = this.db
      .selectFrom('records')
      .select([
        sql<string>`cast(${queueId} as text)`.as('queue_id'),
        'records.id as record_id',
        'records.project_id as project_id',
        'records.created_at as record_created_at',
        sql<number>`cast(${now} as bigint)`.as('added_at'),
      ])
      .where('records.project_id', '=', projectId)
      .where('records.id', 'in', recordIds);
    return this.insertSelect(select);
  }

  /** Adds every record a search finds (scope, types and filters; no page); how many were new. */
  async addMatching(queueId: string, q: RecordSearch, now: number): Promise<number> {
    const select = matchQuery(
      this.db
        .selectFrom('records')
        .select([
          sql<string>`cast(${queueId} as text)`.as('queue_id'),
          'records.id as record_id',
          'records.project_id as project_id',
          'records.created_at as record_created_at',
          sql<number>`cast(${now} as bigint)`.as('added_at'),
        ]),
      q,
      { dialect: this.dialect },
    );
    return this.insertSelect(select);
  }

  /**
   * On PostgreSQL the records are key-share locked as they are read: a concurrent delete of one of
   * them then either committed first (the row is skipped) or waits for this insert and takes the new
   * queue place with the record. (A single statement on SQLite, where writes take turns.)
   */
  private async insertSelect(select: any): Promise<number> {
    const res = await this.db
      .insertInto('annotation_queue_records')
      .columns(['queue_id', 'record_id', 'project_id', 'record_created_at', 'added_at'])
      .expression(this.dialect === 'postgres' ? select.forKeyShare() : select)
      .onConflict((oc) => oc.columns(['queue_id', 'record_id']).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0);
  }

  /**
   * For each of `userIds`, the queue's records with their reviewer annotation on every one of
   * `templateIds`; and the records every one of `memberIds` (among `userIds`) has done so on. One statement: the queue's
   * records by its primary key, their annotations through the (record_id, template_id, author)
   * index, where one row per template and author means a count equal to the templates is all of them.
   */
  async progress(
    queueId: string,
    templateIds: string[],
    userIds: string[],
    memberIds: string[],
  ): Promise<QueueProgressCounts> {
    if (!templateIds.length || !userIds.length) return { annotated: new Map(), complete: 0 };
    // The row with a null user: how many records all members finished.
    const everyone = memberIds.length
      ? sql`union all select null, count(*) from (
          select record_id from done where author in (${sql.join(memberIds)})
          group by record_id having count(*) = ${memberIds.length}) as everyone`
      : sql``;
    const rows = await sql<{ user_id: string | null; n: number | string }>`
      with done as (
        select a.record_id, a.author
        from annotation_queue_records as qr
        join annotations as a on a.record_id = qr.record_id
        where qr.queue_id = ${queueId} and a.source = 'reviewer'
          and a.template_id in (${sql.join(templateIds)}) and a.author in (${sql.join(userIds)})
        group by a.record_id, a.author
        having count(*) = ${templateIds.length}
      )
      select author as user_id, count(*) as n from done group by author
      ${everyone}`.execute(this.db);
    const annotated = new Map<string, number>();
    let complete = 0;
    for (const r of rows.rows) {
      if (r.user_id === null) complete = Number(r.n);
      else annotated.set(r.user_id, Number(r.n));
    }
    return { annotated, complete };
  }

  /** Removes records from a queue; how many were in it. */
  async removeRecords(queueId: string, recordIds: string[]): Promise<number> {
    if (!recordIds.length) return 0;
    const res = await this.db
      .deleteFrom('annotation_queue_records')
      .where('queue_id', '=', queueId)
      .where('record_id', 'in', recordIds)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
