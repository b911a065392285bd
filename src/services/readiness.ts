/** Readiness (`GET /readyz`): the store answers and every migration has run. */
import { latestMigration, migratedTo } from '../store/migrate.ts';
import type { Store } from '../store/db.ts';

export class ReadinessService {
  constructor(private readonly store: Store) {}

  /** Null when ready, else why not. */
  async problem(): Promise<string | null> {
    let applied: string | null;
    try {
      applied = await migratedTo(this.store);
    } catch {
      return 'The store does not answer';
    }
    return applied === latestMigration() ? null : 'The store is not migrated';
  }
}
