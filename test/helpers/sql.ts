import type { SQL } from 'drizzle-orm'
import type { SqliteRemoteDatabase } from 'drizzle-orm/sqlite-proxy'
import type { Database } from '../../src/db/types.js'

/**
 * Raw SQL for tests that inspect the database behind the repositories (pragmas, catalogues,
 * stored ciphertext). Rows come back as arrays of column values on both dialects: SQLite's proxy
 * driver returns them that way, PostgreSQL's rows are turned into arrays in column order.
 */
export async function rawRows(database: Database, query: SQL): Promise<unknown[][]> {
  if (database.dialect === 'sqlite') {
    return (database.db as unknown as SqliteRemoteDatabase).all<unknown[]>(query)
  }
  const result = await database.db.execute(query)
  return result.rows.map((row) => Object.values(row))
}
