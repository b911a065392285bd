/**
 * The read side of a store, each part picked once for its dialect (as ingestStore picks the write
 * side): record search and its text index, widget data, the column catalogue.
 */
import { CatalogueRepo } from './catalogue.ts';
import type { Store } from './db.ts';
import type { SearchStore, TextIndexer } from './search-query.ts';
import { PgSearch } from './search-postgres.ts';
import { SqliteSearch } from './search-sqlite.ts';
import { PgTextCandidates, PgTextIndexer } from './search-text-pg.ts';
import { SqliteTextIndexer } from './search-text-indexer.ts';
import type { WidgetCellsStore } from './widget-cells.ts';
import { PgWidgetCells } from './widget-cells-pg.ts';
import { SqliteWidgetCells } from './widget-cells-sqlite.ts';

export interface ReadStores {
  search: SearchStore;
  textIndexer: TextIndexer;
  widgetCells: WidgetCellsStore;
  catalogue: CatalogueRepo;
}

export function readStores(store: Store): ReadStores {
  const catalogue = new CatalogueRepo(store.db);
  if (store.dialect === 'sqlite')
    return {
      search: new SqliteSearch(store),
      textIndexer: new SqliteTextIndexer(store),
      widgetCells: new SqliteWidgetCells(store),
      catalogue,
    };
  return {
    search: new PgSearch(store),
    // The indexer job runs on the pool of the one process holding its lease (store/leases.ts).
    textIndexer: new PgTextIndexer(store.db),
    widgetCells: new PgWidgetCells(store, new PgTextCandidates()),
    catalogue,
  };
}
