import { and, eq, isNull, lt, or } from 'drizzle-orm'
import type { Database, Db } from '../../db/types.js'

/** The one row of registry_sync_state: the lease that keeps runs apart and where the last run ended. */
const ROW = 1

export type SyncStateRow = Database['t']['registrySyncState']['$inferSelect']
export type SyncStateRepository = ReturnType<typeof syncStateRepository>

/**
 * The sync's state, shared by every instance through the database. The lease is a conditional
 * UPDATE of one row, so it needs no dialect-specific locking: of concurrent takers the database
 * lets exactly one match the condition (PostgreSQL re-checks it after the row lock; SQLite runs
 * the statements one after the other). A holder that died leaves a lease that expires.
 */
export function syncStateRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const state = t.registrySyncState

  return {
    async read(): Promise<SyncStateRow> {
      const [row] = await db.select().from(state).where(eq(state.id, ROW))
      return row ?? { id: ROW, lockToken: null, lockedUntil: null, nextSince: null, upstreamUrl: null, lastSyncedAt: null }
    },

    /** Takes the lease until `until` when nobody holds it, or its holder's time has run out; false otherwise. */
    async take(token: string, now: Date, until: Date): Promise<boolean> {
      // The row is made by the first run on a database.
      await db.insert(state).values({ id: ROW }).onConflictDoNothing()
      const rows = await db
        .update(state)
        .set({ lockToken: token, lockedUntil: until })
        .where(and(eq(state.id, ROW), or(isNull(state.lockedUntil), lt(state.lockedUntil, now))))
        .returning({ id: state.id })
      return rows.length === 1
    },

    /** Extends the lease of `token`; false when it is no longer the holder (its lease ran out and was taken). */
    async renew(token: string, until: Date): Promise<boolean> {
      const rows = await db
        .update(state)
        .set({ lockedUntil: until })
        .where(and(eq(state.id, ROW), eq(state.lockToken, token)))
        .returning({ id: state.id })
      return rows.length === 1
    },

    /** Records a successful run on `upstreamUrl`, if `token` still holds the lease. */
    async finish(token: string, nextSince: string | null, upstreamUrl: string, at: Date): Promise<boolean> {
      const rows = await db
        .update(state)
        .set({ nextSince, upstreamUrl, lastSyncedAt: at })
        .where(and(eq(state.id, ROW), eq(state.lockToken, token)))
        .returning({ id: state.id })
      return rows.length === 1
    },

    /** Gives the lease back; a no-op when another holder has it by now. */
    async release(token: string): Promise<void> {
      await db
        .update(state)
        .set({ lockToken: null, lockedUntil: null })
        .where(and(eq(state.id, ROW), eq(state.lockToken, token)))
    },
  }
}
