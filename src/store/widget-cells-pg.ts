/**
 * Widget data on PostgreSQL: one statement over the whole range (hash aggregation keeps it cheap),
 * and one more for the whole-range percentiles when a widget needs them, in one snapshot with the
 * text candidates (search-text-pg.ts): a record is either queued for the text index or indexed as
 * it is.
 */
import { CellCollector, groupCounts, rowsOf } from '../domain/cell-columns.ts';
import { postgresSql } from '../query/sql-postgres.ts';
import { inSnapshot, type Store } from './db.ts';
import type { PgTextCandidates } from './search-text-pg.ts';
import {
  type CellQuery,
  type WidgetCells,
  type WidgetCellsStore,
  cellStatement,
  shownGroups,
} from './widget-cells.ts';

export class PgWidgetCells implements WidgetCellsStore {
  constructor(
    private readonly store: Store,
    private readonly text: PgTextCandidates,
  ) {}

  cells(q: CellQuery, groupLimit: number): Promise<WidgetCells> {
    const needTotals = q.metrics.some((m) => m.totalPercentiles.size > 0);
    return inSnapshot(this.store.db, 'postgres', async (trx) => {
      const candidates = await this.text.candidates(trx, q.tree);
      const whole = { low: q.startUs, high: q.endUs };
      const run = async (o: { bucket: boolean; percentilesOnly: boolean }) => {
        const { query, aggregates } = cellStatement(q, { ...o, ...whole }, postgresSql, candidates);
        const out = new CellCollector(aggregates);
        const names = ['b', 'g', ...aggregates];
        for (const row of (await query.execute(trx)).rows)
          out.add(names.map((k) => (row as Record<string, unknown>)[k]));
        return out.done();
      };
      const cells = await run({ bucket: true, percentilesOnly: false });
      const totals = needTotals ? await run({ bucket: false, percentilesOnly: true }) : null;
      const { shown, groupCount } = shownGroups(q, groupCounts([cells]), groupLimit);
      return {
        shown,
        groupCount,
        cells: rowsOf([cells], shown),
        percentileTotals: totals ? rowsOf([totals], shown) : null,
      };
    });
  }
}
