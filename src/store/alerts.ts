import type { Kysely } from 'kysely';
import type { AlertEventsTable, AlertRulesTable, DB } from './tables.ts';

export type AlertRuleRow = AlertRulesTable;
export type AlertEventRow = AlertEventsTable;

/** Alert rules of log streams and the history of their firing and recovering. */
export class AlertsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  list(runId: string): Promise<AlertRuleRow[]> {
    return this.db
      .selectFrom('alert_rules')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('created_at')
      .execute();
  }

  enabled(): Promise<AlertRuleRow[]> {
    return this.db.selectFrom('alert_rules').selectAll().where('enabled', '=', 1).execute();
  }

  get(id: string): Promise<AlertRuleRow | undefined> {
    return this.db.selectFrom('alert_rules').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async insert(row: AlertRuleRow): Promise<void> {
    await this.db.insertInto('alert_rules').values(row).execute();
  }

  async update(id: string, fields: Partial<AlertRuleRow>): Promise<void> {
    await this.db.updateTable('alert_rules').set(fields).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('alert_rules').where('id', '=', id).execute();
  }

  /**
   * Moves a rule from state `from` to `to` and records the event, in one transaction; false (nothing
   * written) when the rule was no longer in `from`, so a transition is recorded once.
   */
  async transition(rule: AlertRuleRow, from: string, to: string, event: AlertEventRow): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const r = await tx
        .updateTable('alert_rules')
        .set({ state: to, last_value: event.value, last_evaluated_at: event.at })
        .where('id', '=', rule.id)
        .where('state', '=', from)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return false;
      await tx.insertInto('alert_events').values(event).execute();
      return true;
    });
  }

  events(ruleId: string, limit: number): Promise<AlertEventRow[]> {
    return this.db
      .selectFrom('alert_events')
      .selectAll()
      .where('rule_id', '=', ruleId)
      .orderBy('at', 'desc')
      .orderBy('id')
      .limit(limit)
      .execute();
  }
}
