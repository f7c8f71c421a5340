import { and, eq, gt, lt } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type ProviderStateRow = Database['t']['providerStates']['$inferSelect']

export type ProviderStatesRepository = ReturnType<typeof providerStatesRepository>

export function providerStatesRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  return {
    async insert(row: ProviderStateRow): Promise<void> {
      await db.insert(t.providerStates).values(row)
    },

    /** Single use by one conditional delete: of two callbacks with one state, one gets the row. */
    async consume(digest: string, now: Date): Promise<ProviderStateRow | undefined> {
      const [row] = await db
        .delete(t.providerStates)
        .where(and(eq(t.providerStates.digest, digest), gt(t.providerStates.expiresAt, now)))
        .returning()
      return row
    },

    async purgeExpired(now: Date): Promise<void> {
      await db.delete(t.providerStates).where(lt(t.providerStates.expiresAt, now))
    },
  }
}
