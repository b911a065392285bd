/** Trends dashboards with their sections and widgets (the widget data: widget-cells.ts). */
import type { Kysely } from 'kysely';
import type { Dialect } from '../query/compile.ts';
import type { DB, DashboardSectionsTable, DashboardWidgetsTable, DashboardsTable } from './tables.ts';

export type DashboardRow = DashboardsTable;
export type SectionRow = DashboardSectionsTable;
export type WidgetRow = DashboardWidgetsTable;

/** Raised when a second default dashboard for one log stream loses the race to the first. */
export class DefaultExists extends Error {}

/** Trends dashboards with their sections and widgets. */
export class DashboardsRepo {
  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
  ) {}

  byId(logStreamId: string, id: string): Promise<DashboardRow | undefined> {
    return this.db
      .selectFrom('dashboards')
      .selectAll()
      .where('log_stream_id', '=', logStreamId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  defaultOf(logStreamId: string): Promise<DashboardRow | undefined> {
    return this.db
      .selectFrom('dashboards')
      .selectAll()
      .where('log_stream_id', '=', logStreamId)
      .where('is_default', '=', 1)
      .executeTakeFirst();
  }

  /** The dashboards of a log stream: the default first, then the others by creation. */
  list(logStreamId: string): Promise<DashboardRow[]> {
    return this.db
      .selectFrom('dashboards')
      .selectAll()
      .where('log_stream_id', '=', logStreamId)
      .orderBy('is_default', 'desc')
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
  }

  /** Inserts a dashboard; a default one that another request created first throws DefaultExists. */
  async insert(row: DashboardRow): Promise<void> {
    try {
      await this.db.insertInto('dashboards').values(row).execute();
    } catch (err) {
      if (row.is_default && (await this.defaultOf(row.log_stream_id))) throw new DefaultExists();
      throw err;
    }
  }

  async update(id: string, patch: Partial<Omit<DashboardRow, 'id' | 'project_id' | 'log_stream_id'>>) {
    await this.db.updateTable('dashboards').set(patch).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('dashboards').where('id', '=', id).execute();
  }

  sectionsOf(dashboardIds: string[]): Promise<SectionRow[]> {
    if (dashboardIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('dashboard_sections')
      .selectAll()
      .where('dashboard_id', 'in', dashboardIds)
      .orderBy('position', 'asc')
      .execute();
  }

  widgetsOf(dashboardIds: string[]): Promise<WidgetRow[]> {
    if (dashboardIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('dashboard_widgets')
      .selectAll()
      .where('dashboard_id', 'in', dashboardIds)
      .orderBy('position', 'asc')
      .execute();
  }

  section(dashboardId: string, id: string): Promise<SectionRow | undefined> {
    return this.db
      .selectFrom('dashboard_sections')
      .selectAll()
      .where('dashboard_id', '=', dashboardId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  widget(dashboardId: string, id: string): Promise<WidgetRow | undefined> {
    return this.db
      .selectFrom('dashboard_widgets')
      .selectAll()
      .where('dashboard_id', '=', dashboardId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async countSections(dashboardId: string): Promise<number> {
    const r = await this.db
      .selectFrom('dashboard_sections')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('dashboard_id', '=', dashboardId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Widgets of a dashboard in one section, or outside every section when `sectionId` is null. */
  async countWidgets(dashboardId: string, sectionId: string | null): Promise<number> {
    let q = this.db
      .selectFrom('dashboard_widgets')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('dashboard_id', '=', dashboardId);
    q = sectionId === null ? q.where('section_id', 'is', null) : q.where('section_id', '=', sectionId);
    const r = await q.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** The position after every widget or section of the dashboard (call under `locked`). */
  async nextPosition(
    table: 'dashboard_widgets' | 'dashboard_sections',
    dashboardId: string,
  ): Promise<number> {
    const r = await this.db
      .selectFrom(table)
      .select((eb) => eb.fn.max('position').as('p'))
      .where('dashboard_id', '=', dashboardId)
      .executeTakeFirst();
    return r?.p === null || r?.p === undefined ? 0 : Number(r.p) + 1;
  }

  async insertSection(row: SectionRow): Promise<void> {
    await this.db.insertInto('dashboard_sections').values(row).execute();
  }

  async updateSection(id: string, patch: Partial<Omit<SectionRow, 'id' | 'dashboard_id'>>): Promise<void> {
    await this.db.updateTable('dashboard_sections').set(patch).where('id', '=', id).execute();
  }

  /** Deletes a section and (by cascade) its widgets. */
  async deleteSection(id: string): Promise<void> {
    await this.db.deleteFrom('dashboard_widgets').where('section_id', '=', id).execute();
    await this.db.deleteFrom('dashboard_sections').where('id', '=', id).execute();
  }

  async insertWidget(row: WidgetRow): Promise<void> {
    await this.db.insertInto('dashboard_widgets').values(row).execute();
  }

  async updateWidget(id: string, patch: Partial<Omit<WidgetRow, 'id' | 'dashboard_id'>>): Promise<void> {
    await this.db.updateTable('dashboard_widgets').set(patch).where('id', '=', id).execute();
  }

  async deleteWidget(id: string): Promise<void> {
    await this.db.deleteFrom('dashboard_widgets').where('id', '=', id).execute();
  }

  /**
   * Runs `fn` in a transaction that holds the dashboard's row lock (PostgreSQL; SQLite transactions
   * are serial), so that counting widgets or sections and then adding one cannot exceed a limit
   * under concurrent requests.
   */
  locked<T>(dashboardId: string, fn: (repo: DashboardsRepo) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (tx) => {
      await LOCK[this.dialect](tx, dashboardId);
      return fn(new DashboardsRepo(tx, this.dialect));
    });
  }
}

/** Takes a dashboard's row lock for the rest of the transaction. */
const LOCK: Record<Dialect, (tx: Kysely<DB>, dashboardId: string) => Promise<unknown>> = {
  // Transactions are serial: nothing to lock.
  sqlite: async () => {},
  postgres: (tx, id) => tx.selectFrom('dashboards').select('id').where('id', '=', id).forUpdate().execute(),
};
