import { and, eq, inArray, isNotNull, isNull, or, sql, type SQL } from 'drizzle-orm'
import type { Database, Db, Tables } from '../types.js'
import type { ValueRow } from './installation-rows.js'

/** A value as readers see it: never the sealed secret, only that it is set. */
export interface SetValue {
  installationId: string
  userId: string | null
  key: string
  /** The plain value of a non-secret input; null for a secret one. */
  value: string | null
  /** False for a member's value dropped when the installation moved (the row remains so that the member is told). */
  held: boolean
  /** A member's own value: the fingerprint of the satellite key it was set for. */
  approvedKey: string | null
}

/** Whether a value row holds a value (a member's value dropped by a move keeps its row, empty). */
export const valueHeld = (values: Tables['mcpInstallationValues']): SQL => sql`(${values.value} is not null or ${values.sealed} is not null)`

/**
 * The values of installations' inputs: the team's (`userId` null) and each member's own, plain
 * for a non-secret input, sealed for a secret one. Readers get them without the sealed text.
 */
export function installationValues(database: Database, db: Db = database.db) {
  const values = database.t.mcpInstallationValues
  const held = valueHeld(values)

  return {
    /** The values set for these installations: the team's and those of `userId` (never anyone else's), without sealed text. */
    async valuesOf(installationIds: readonly string[], userId: string | null): Promise<SetValue[]> {
      if (installationIds.length === 0) return []
      const whose = userId === null ? isNull(values.userId) : or(isNull(values.userId), eq(values.userId, userId))
      const rows = await db
        .select({
          installationId: values.installationId, userId: values.userId, key: values.key, value: values.value, approvedKey: values.approvedKey,
          held: sql<number>`case when ${held} then 1 else 0 end`.mapWith(Number),
        })
        .from(values)
        .where(and(inArray(values.installationId, [...installationIds]), whose))
      return rows.map((row) => ({ ...row, held: row.held === 1 }))
    },

    /** Every value row of one installation, sealed text included (to re-store them when inputs change). */
    async allValuesOf(installationId: string): Promise<ValueRow[]> {
      return db.select().from(values).where(eq(values.installationId, installationId))
    },

    /** Sets one value (the team's when `userId` is null), replacing the one there. */
    async putValue(row: ValueRow): Promise<void> {
      const update = { value: row.value, sealed: row.sealed, approvedKey: row.approvedKey, updatedAt: row.updatedAt }
      if (row.userId === null) {
        await db.insert(values).values(row).onConflictDoUpdate({ target: [values.installationId, values.key], targetWhere: isNull(values.userId), set: update })
      } else {
        await db.insert(values).values(row).onConflictDoUpdate({ target: [values.installationId, values.userId, values.key], targetWhere: isNotNull(values.userId), set: update })
      }
    },

    /**
     * Drops a member's own value but keeps its row, empty, so that the member's views can say why
     * it is missing; setting it again fills the row, unsetting it deletes it.
     */
    async dropValue(installationId: string, userId: string, key: string, now: Date): Promise<void> {
      await db.update(values).set({ value: null, sealed: null, updatedAt: now })
        .where(and(eq(values.installationId, installationId), eq(values.userId, userId), eq(values.key, key)))
    },

    async deleteValue(installationId: string, userId: string | null, key: string): Promise<void> {
      await db.delete(values).where(and(eq(values.installationId, installationId), userId === null ? isNull(values.userId) : eq(values.userId, userId), eq(values.key, key)))
    },

    /** Every sealed value with its place (secret rotation). */
    async sealedValues(): Promise<Array<Pick<ValueRow, 'installationId' | 'userId' | 'key'> & { sealed: string }>> {
      const rows = await db
        .select({ installationId: values.installationId, userId: values.userId, key: values.key, sealed: values.sealed })
        .from(values)
        .where(isNotNull(values.sealed))
      return rows.map((row) => ({ ...row, sealed: row.sealed! }))
    },

    /**
     * Replaces one sealed value, only if it still holds `previous` (nobody set it meanwhile);
     * false otherwise. `updatedAt` stays: the value did not change, only the key sealing it.
     */
    async reseal(place: { installationId: string; userId: string | null; key: string }, sealed: string, previous: string): Promise<boolean> {
      const rows = await db
        .update(values)
        .set({ sealed })
        .where(and(
          eq(values.installationId, place.installationId),
          place.userId === null ? isNull(values.userId) : eq(values.userId, place.userId),
          eq(values.key, place.key),
          eq(values.sealed, previous),
        ))
        .returning({ key: values.key })
      return rows.length === 1
    },
  }
}
