import { and, eq, gt, lt } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

/** A pending sign-in as stored: the state's digest, never the state. */
export type OidcStateRow = Database['t']['oidcStates']['$inferSelect']

/** The repository's interface, for services that take it. */
export type OidcStatesRepository = ReturnType<typeof oidcStatesRepository>

/** Pending OpenID Connect sign-ins, found by the digest of their state. */
export function oidcStatesRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  return {
    async insert(row: OidcStateRow): Promise<void> {
      await db.insert(t.oidcStates).values(row)
    },

    /** Single use by one conditional delete: of two callbacks with one state, on any instances, one gets the row. */
    async consume(digest: string, now: Date): Promise<OidcStateRow | undefined> {
      const [row] = await db
        .delete(t.oidcStates)
        .where(and(eq(t.oidcStates.digest, digest), gt(t.oidcStates.expiresAt, now)))
        .returning()
      return row
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.oidcStates).where(lt(t.oidcStates.expiresAt, now))
    },
  }
}
