import { and, count, desc, eq, gt, isNotNull, isNull, lt, lte, type SQL } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type RegistrationTokenRow = Database['t']['satelliteRegistrationTokens']['$inferSelect']
export type RegistrationTokenStatus = 'active' | 'used' | 'revoked' | 'expired'

export interface RegistrationTokenFilter {
  scope?: 'global' | 'team'
  teamId?: string
  status?: RegistrationTokenStatus
  now: Date
  limit: number
  offset: number
}

export type RegistrationTokensRepository = ReturnType<typeof registrationTokensRepository>

export function registrationTokensRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const tokens = t.satelliteRegistrationTokens

  /** The derived status as a condition (a token is used, else revoked, else expired, else active). */
  const hasStatus = (status: RegistrationTokenStatus, now: Date): SQL => {
    switch (status) {
      case 'used': return isNotNull(tokens.usedAt)
      case 'revoked': return and(isNull(tokens.usedAt), isNotNull(tokens.revokedAt))!
      case 'expired': return and(isNull(tokens.usedAt), isNull(tokens.revokedAt), lte(tokens.expiresAt, now))!
      case 'active': return and(isNull(tokens.usedAt), isNull(tokens.revokedAt), gt(tokens.expiresAt, now))!
    }
  }

  return {
    with: (tx: Db) => registrationTokensRepository(database, tx),

    async insert(row: RegistrationTokenRow): Promise<void> {
      await db.insert(tokens).values(row)
    },

    async find(id: string): Promise<RegistrationTokenRow | undefined> {
      const [row] = await db.select().from(tokens).where(eq(tokens.id, id))
      return row
    },

    /**
     * Single use: one conditional update marks the token spent only if it is still unused,
     * unrevoked and unexpired. Of concurrent uses exactly one gets `true`; run it in the
     * transaction that creates the satellite, so a failed registration does not spend it.
     */
    async spend(id: string, satelliteId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(tokens)
        .set({ usedAt: now, usedBySatelliteId: satelliteId })
        .where(and(eq(tokens.id, id), isNull(tokens.usedAt), isNull(tokens.revokedAt), gt(tokens.expiresAt, now)))
        .returning({ id: tokens.id })
      return rows.length === 1
    },

    /** Revokes an unused, unrevoked token; false when it was used or revoked meanwhile. */
    async revoke(id: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(tokens)
        .set({ revokedAt: now })
        .where(and(eq(tokens.id, id), isNull(tokens.usedAt), isNull(tokens.revokedAt)))
        .returning({ id: tokens.id })
      return rows.length === 1
    },

    async list(filter: RegistrationTokenFilter): Promise<{ rows: RegistrationTokenRow[]; total: number }> {
      const conditions: SQL[] = []
      if (filter.scope !== undefined) conditions.push(eq(tokens.scope, filter.scope))
      if (filter.teamId !== undefined) conditions.push(eq(tokens.teamId, filter.teamId))
      if (filter.status !== undefined) conditions.push(hasStatus(filter.status, filter.now))
      const where = conditions.length > 0 ? and(...conditions) : undefined
      const [rows, [total]] = await Promise.all([
        db.select().from(tokens).where(where).orderBy(desc(tokens.createdAt), desc(tokens.id)).limit(filter.limit).offset(filter.offset),
        db.select({ n: count() }).from(tokens).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },

    /** Tokens whose lifetime ended before `before` (the purge keeps recent ones listable). */
    async purgeExpired(before: Date): Promise<void> {
      await db.delete(tokens).where(lt(tokens.expiresAt, before))
    },
  }
}

/** The status a token row shows at `now`. */
export function registrationTokenStatus(row: RegistrationTokenRow, now: Date): RegistrationTokenStatus {
  if (row.usedAt !== null) return 'used'
  if (row.revokedAt !== null) return 'revoked'
  return row.expiresAt.getTime() <= now.getTime() ? 'expired' : 'active'
}
