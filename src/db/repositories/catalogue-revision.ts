import { eq } from 'drizzle-orm'
import { topics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'

export interface CatalogueTransactionOptions {
  /**
   * Runs before the revision row is taken: the lock of a row outside the catalogue that another
   * transaction holds while its cascade reaches the catalogue's tables (and so the revision), such
   * as a team's row, which deleting the team locks before the cascade deletes the team's servers.
   * Taken first by both, that row orders the two instead of letting them deadlock.
   */
  first?: (tx: Db) => Promise<void>
}

/**
 * Runs a catalogue write in one transaction that first takes the catalogue's revision row (see
 * schema `catalogueRevision`), which the triggers of every catalogue table update anyway. So
 * catalogue writers run one at a time, as SQLite's transactions do already: what a writer checked
 * (a category exists, which version is the latest) still holds when it writes, and every writer
 * takes its locks in the same order — without that, a transaction that already moved the revision
 * could wait for a row held by another writer waiting for the revision: a deadlock.
 */
export function catalogueTransaction<T>(database: Database, fn: (tx: Db) => Promise<T>, options: CatalogueTransactionOptions = {}): Promise<T> {
  return database.transaction(async (tx) => {
    // What this instance keeps of the catalogue ends at the commit (the trigger tells the others).
    database.changes.tell(tx, topics.catalogue)
    await options.first?.(tx)
    if (database.dialect === 'postgresql') {
      const { catalogueRevision: revision } = database.t
      await tx.select({ id: revision.id }).from(revision).where(eq(revision.id, 1)).for('update')
    }
    return fn(tx)
  })
}
