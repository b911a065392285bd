import type { Kysely } from 'kysely';
import type { DB, WebhookDeliveriesTable, WebhooksTable } from './tables.ts';

export type WebhookRow = WebhooksTable;
export type DeliveryRow = WebhookDeliveriesTable;

/** A project's webhooks and the deliveries made to them. */
export class WebhooksRepo {
  constructor(private readonly db: Kysely<DB>) {}

  list(projectId: string): Promise<WebhookRow[]> {
    return this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('created_at')
      .execute();
  }

  get(id: string): Promise<WebhookRow | undefined> {
    return this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insert(row: WebhookRow): Promise<void> {
    await this.db.insertInto('webhooks').values(row).execute();
  }

  async update(id: string, fields: Partial<WebhookRow>): Promise<void> {
    await this.db.updateTable('webhooks').set(fields).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('webhooks').where('id', '=', id).execute();
  }

  async enqueue(rows: DeliveryRow[]): Promise<void> {
    if (rows.length) await this.db.insertInto('webhook_deliveries').values(rows).execute();
  }

  /** Pending deliveries due at `nowUs`, oldest first. */
  due(nowUs: number, limit: number): Promise<DeliveryRow[]> {
    return this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', nowUs)
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute();
  }

  /** Records an attempt, if the delivery is still at `attempts` (another process did not take it). */
  async attempted(id: string, attempts: number, fields: Partial<DeliveryRow>): Promise<boolean> {
    const r = await this.db
      .updateTable('webhook_deliveries')
      .set(fields)
      .where('id', '=', id)
      .where('attempts', '=', attempts)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  deliveries(webhookId: string, limit: number): Promise<DeliveryRow[]> {
    return this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', webhookId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(limit)
      .execute();
  }
}
