import { eq } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

/**
 * Runs a catalogue write in one transaction that first takes the catalogue's revision row (see
 * schema `catalogueRevision`), which the triggers of every catalogue table update anyway. Taking it
 * first gives every catalogue writer the same lock order on PostgreSQL: without it, a transaction
 * that already moved the revision could wait for a row held by another writer that is itself
 * waiting for the revision — a deadlock. SQLite transactions are serialized already.
 */
export function catalogueTransaction<T>(database: Database, fn: (tx: Db) => Promise<T>): Promise<T> {
  return database.transaction(async (tx) => {
    if (database.dialect === 'postgresql') {
      const { catalogueRevision: revision } = database.t
      await tx.select({ id: revision.id }).from(revision).where(eq(revision.id, 1)).for('update')
    }
    return fn(tx)
  })
}
