import type { Kysely } from 'kysely';

/**
 * Browser sessions of the web console. The cookie holds a random token; only its SHA-256 is stored,
 * so a copy of the database cannot sign anyone in. Signing out deletes the row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('console_sessions_expires')
    .on('console_sessions')
    .column('expires_at')
    .execute();
}
