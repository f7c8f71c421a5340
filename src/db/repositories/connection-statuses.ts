import { and, eq, inArray, isNull, or } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

/** Whether a connection an installation needs is there: what its status (needs_auth) is derived from. */
export interface ConnectionStatusRow {
  installationId: string
  /** Null for the team's connection. */
  userId: string | null
  inputKey: string
  status: 'connected' | 'expired'
}

export type ConnectionStatuses = ReturnType<typeof connectionStatuses>

/**
 * The status of the connections one caller's views of installations depend on: the team's and the
 * caller's own, for a page of installations in one query. No token is read.
 */
export function connectionStatuses(database: Database, executor: Db = database.db) {
  const c = database.t.oauthConnections
  return {
    async of(installationIds: readonly string[], viewer: string): Promise<ConnectionStatusRow[]> {
      if (installationIds.length === 0) return []
      const rows = await executor
        .select({ installationId: c.installationId, userId: c.userId, inputKey: c.inputKey, status: c.status })
        .from(c)
        .where(and(inArray(c.installationId, [...installationIds]), or(isNull(c.userId), eq(c.userId, viewer))))
      return rows.map((row) => ({ ...row, status: row.status === 'connected' ? 'connected' : 'expired' }))
    },
  }
}
