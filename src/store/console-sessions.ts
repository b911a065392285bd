import type { Kysely } from 'kysely';
import type { ConsoleSessionsTable, DB, UsersTable } from './tables.ts';

export type ConsoleSessionRow = ConsoleSessionsTable;

/** Browser sessions of the console, found by the hash of their cookie token. */
export class ConsoleSessionsRepo {
  constructor(private readonly db: Kysely<DB>) {}

  async insert(row: ConsoleSessionRow): Promise<void> {
    await this.db.insertInto('console_sessions').values(row).execute();
  }

  /** The user of a session that is still open at `now`. */
  userOf(tokenHash: string, now: number): Promise<UsersTable | undefined> {
    return this.db
      .selectFrom('console_sessions')
      .innerJoin('users', 'users.id', 'console_sessions.user_id')
      .selectAll('users')
      .where('console_sessions.token_hash', '=', tokenHash)
      .where('console_sessions.expires_at', '>', now)
      .executeTakeFirst();
  }

  async delete(tokenHash: string): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
  }

  /** Drops sessions that ended before `now` (they no longer sign anyone in either way). */
  async deleteExpired(now: number): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('expires_at', '<=', now).execute();
  }
}
