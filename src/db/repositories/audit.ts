import { and, count, desc, eq, gte, type SQL } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type AuditRow = Database['t']['auditEvents']['$inferSelect']
export type NewAuditEvent = Database['t']['auditEvents']['$inferInsert']

export interface AuditFilter {
  type?: string
  actorId?: string
  since?: Date
  limit: number
  offset: number
}

export type AuditRepository = ReturnType<typeof auditRepository>

export function auditRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  return {
    with: (tx: Db) => auditRepository(database, tx),

    async insert(event: NewAuditEvent): Promise<void> {
      await db.insert(t.auditEvents).values(event)
    },

    async list(filter: AuditFilter): Promise<{ rows: AuditRow[]; total: number }> {
      const conditions: SQL[] = []
      if (filter.type) conditions.push(eq(t.auditEvents.type, filter.type))
      if (filter.actorId) conditions.push(eq(t.auditEvents.actorId, filter.actorId))
      if (filter.since) conditions.push(gte(t.auditEvents.createdAt, filter.since))
      const where = conditions.length > 0 ? and(...conditions) : undefined
      const [rows, [total]] = await Promise.all([
        db.select().from(t.auditEvents).where(where).orderBy(desc(t.auditEvents.createdAt), desc(t.auditEvents.id)).limit(filter.limit).offset(filter.offset),
        db.select({ n: count() }).from(t.auditEvents).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },
  }
}
