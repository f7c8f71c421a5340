import { and, eq, inArray } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type ToolApprovalRow = Database['t']['installationToolApprovals']['$inferSelect']

export type ToolApprovalsRepository = ReturnType<typeof toolApprovalsRepository>

/** The tool definitions team admins approved per installation (pinning). */
export function toolApprovalsRepository(database: Database, executor: Db = database.db) {
  const a = database.t.installationToolApprovals
  const db = executor
  return {
    with: (tx: Db) => toolApprovalsRepository(database, tx),

    async of(installationIds: readonly string[]): Promise<ToolApprovalRow[]> {
      if (installationIds.length === 0) return []
      return db.select().from(a).where(inArray(a.installationId, [...installationIds]))
    },

    /** Approves (or approves again, replacing) one definition per name. */
    async put(rows: ToolApprovalRow[]): Promise<void> {
      for (const row of rows) {
        await db.delete(a).where(and(eq(a.installationId, row.installationId), eq(a.name, row.name)))
        await db.insert(a).values(row)
      }
    },
  }
}
