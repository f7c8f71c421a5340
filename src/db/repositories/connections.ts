import { and, asc, eq, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export type ConnectionRow = Database['t']['oauthConnections']['$inferSelect']
export type ConnectionFlowRow = Database['t']['oauthConnectionFlows']['$inferSelect']

/** What a satellite's document needs of a live connection: whose it is and its sealed tokens. */
export interface ConnectionTokenRow {
  installationId: string
  userId: string | null
  inputKey: string
  sealed: string
  tokenRevision: number
}

/** Which connections an ending concerns; every given member narrows it. */
export interface ConnectionFilter {
  id?: string
  installationId?: string
  teamId?: string
  userId?: string
  inputKey?: string
  owner?: string
}

/** Why connections end (the audit event's `details.reason`). */
export type EndingReason = 'deleted' | 'member_left' | 'member_removed' | 'installation_deleted' | 'input_removed' | 'user_deleted' | 'team_deleted'

/**
 * How other modules end connections inside their own transaction (a member leaving, an
 * installation, user or team deleted): the rows `filter` names are deleted there, and the answer
 * is what to run once that transaction committed (revoking the tokens upstream).
 */
export type ConnectionEnding = (filter: ConnectionFilter, reason: EndingReason, tx: Db) => Promise<() => Promise<void>>

/** The fields a new or replaced connection is written with. */
export type NewConnection = Omit<ConnectionRow, 'tokenRevision' | 'failures' | 'leaseOwner' | 'leaseUntil'>

export type ConnectionsRepository = ReturnType<typeof connectionsRepository>

export function connectionsRepository(database: Database, executor: Db = database.db) {
  const { t, dialect } = database
  const db = executor
  const c = t.oauthConnections
  const flows = t.oauthConnectionFlows

  const matching = (filter: ConnectionFilter): SQL | undefined => {
    const conditions: SQL[] = []
    if (filter.id !== undefined) conditions.push(eq(c.id, filter.id))
    if (filter.installationId !== undefined) conditions.push(eq(c.installationId, filter.installationId))
    if (filter.teamId !== undefined) conditions.push(eq(c.teamId, filter.teamId))
    if (filter.userId !== undefined) conditions.push(eq(c.userId, filter.userId))
    if (filter.inputKey !== undefined) conditions.push(eq(c.inputKey, filter.inputKey))
    if (filter.owner !== undefined) conditions.push(eq(c.owner, filter.owner))
    if (conditions.length === 0) throw new Error('A connection filter names at least one field')
    return and(...conditions)
  }
  const leased = (id: string, owner: string) => and(eq(c.id, id), eq(c.leaseOwner, owner))

  return {
    with: (tx: Db) => connectionsRepository(database, tx),

    /**
     * Stores the tokens of a new connection, or replaces those of the same (installation, key,
     * owner): a reconnect starts afresh (connected, no failures, no lease) and moves the revision on.
     */
    async upsert(row: NewConnection): Promise<ConnectionRow> {
      const [stored] = await db.insert(c).values({ ...row, tokenRevision: 0, failures: 0 })
        .onConflictDoUpdate({
          target: [c.installationId, c.inputKey, c.owner],
          set: {
            issuer: row.issuer, clientId: row.clientId, status: row.status, sealed: row.sealed, refreshAt: row.refreshAt,
            tokenRevision: sql`${c.tokenRevision} + 1`, failures: 0, leaseOwner: null, leaseUntil: null,
            connectedAt: row.connectedAt, updatedAt: row.updatedAt,
          },
        })
        .returning()
      return stored!
    },

    async find(installationId: string, inputKey: string, owner: string): Promise<ConnectionRow | undefined> {
      const [row] = await db.select().from(c).where(and(eq(c.installationId, installationId), eq(c.inputKey, inputKey), eq(c.owner, owner)))
      return row
    },

    /** The connections of one installation belonging to any of `owners` (a member's id, 'team'). */
    async ofInstallation(installationId: string, owners: string[]): Promise<ConnectionRow[]> {
      if (owners.length === 0) return []
      return db.select().from(c).where(and(eq(c.installationId, installationId), inArray(c.owner, owners))).orderBy(asc(c.inputKey))
    },

    /** A member's own connections, every team. */
    async ofUser(userId: string): Promise<ConnectionRow[]> {
      return db.select().from(c).where(eq(c.userId, userId)).orderBy(asc(c.connectedAt), asc(c.id))
    },

    /** Every row an ending concerns (read before deleting, to revoke after the commit). */
    async select(filter: ConnectionFilter): Promise<ConnectionRow[]> {
      return db.select().from(c).where(matching(filter))
    },

    /** Deletes the rows of `filter` and answers them (what is gone is what to revoke). */
    async delete(filter: ConnectionFilter): Promise<ConnectionRow[]> {
      return db.delete(c).where(matching(filter)).returning()
    },

    /** The live (connected) tokens of those installations. */
    async liveTokensFor(installationIds: string[]): Promise<ConnectionTokenRow[]> {
      if (installationIds.length === 0) return []
      return db
        .select({ installationId: c.installationId, userId: c.userId, inputKey: c.inputKey, sealed: c.sealed, tokenRevision: c.tokenRevision })
        .from(c)
        .where(and(inArray(c.installationId, installationIds), eq(c.status, 'connected')))
    },

    /**
     * Takes a lease on up to `limit` connected rows due for refresh whose lease is free or ran out.
     * On PostgreSQL the candidate rows are locked with SKIP LOCKED, so concurrent instances take
     * disjoint sets; SQLite has a single writer.
     */
    async claimDue(now: Date, owner: string, leaseMs: number, limit: number): Promise<ConnectionRow[]> {
      const due = and(lte(c.refreshAt, now), eq(c.status, 'connected'), or(isNull(c.leaseUntil), lt(c.leaseUntil, now)))
      const candidates = db.select({ id: c.id }).from(c).where(due).orderBy(asc(c.refreshAt)).limit(limit)
      const ids = dialect === 'postgresql' ? candidates.for('update', { skipLocked: true }) : candidates
      return db.update(c)
        .set({ leaseOwner: owner, leaseUntil: new Date(now.getTime() + leaseMs) })
        .where(and(inArray(c.id, ids), due))
        .returning()
    },

    /** New tokens after a refresh: revision + 1, failures cleared, lease released; only while `owner` holds the lease. */
    async completeRefresh(id: string, owner: string, update: { sealed: string; refreshAt: Date | null; now?: Date }): Promise<boolean> {
      const rows = await db.update(c)
        .set({
          sealed: update.sealed, refreshAt: update.refreshAt, tokenRevision: sql`${c.tokenRevision} + 1`, failures: 0,
          leaseOwner: null, leaseUntil: null, updatedAt: update.now ?? new Date(),
        })
        .where(leased(id, owner))
        .returning({ id: c.id })
      return rows.length === 1
    },

    /** The refresh token was refused for good: expired, never refreshed again. */
    async markExpired(id: string, owner: string, now: Date = new Date()): Promise<boolean> {
      const rows = await db.update(c)
        .set({ status: 'expired', refreshAt: null, leaseOwner: null, leaseUntil: null, updatedAt: now })
        .where(leased(id, owner))
        .returning({ id: c.id })
      return rows.length === 1
    },

    /** A failure worth retrying: try again at `refreshAt`, counting failures. */
    async postpone(id: string, owner: string, refreshAt: Date, failures: number): Promise<boolean> {
      const rows = await db.update(c)
        .set({ refreshAt, failures, leaseOwner: null, leaseUntil: null })
        .where(leased(id, owner))
        .returning({ id: c.id })
      return rows.length === 1
    },

    /** Every sealed token set, for a change of ENCRYPTION_SECRET. */
    async sealedConnections(): Promise<Array<Pick<ConnectionRow, 'id' | 'installationId' | 'userId' | 'inputKey' | 'sealed'>>> {
      return db.select({ id: c.id, installationId: c.installationId, userId: c.userId, inputKey: c.inputKey, sealed: c.sealed }).from(c)
    },

    /** Replaces one sealed token set only if it still holds `previous`. */
    async reseal(id: string, sealed: string, previous: string): Promise<boolean> {
      const rows = await db.update(c).set({ sealed }).where(and(eq(c.id, id), eq(c.sealed, previous))).returning({ id: c.id })
      return rows.length === 1
    },

    /** The satellites those installations are placed on (whose documents a change of connections moves). */
    async satellitesOf(installationIds: string[]): Promise<Array<string | null>> {
      if (installationIds.length === 0) return []
      const i = t.mcpInstallations
      const rows = await db.select({ satelliteId: i.satelliteId }).from(i).where(inArray(i.id, installationIds))
      return rows.map((row) => row.satelliteId)
    },

    async insertFlow(row: ConnectionFlowRow): Promise<void> {
      await db.insert(flows).values(row)
    },

    /** Single use by one conditional delete: of two callbacks with one state, one gets the row. */
    async consumeFlow(stateDigest: string): Promise<ConnectionFlowRow | undefined> {
      const [row] = await db.delete(flows).where(eq(flows.stateDigest, stateDigest)).returning()
      return row
    },

    /** Pending authorizations of a member (leaving a team, deletion) go with the connections. */
    async deleteFlows(filter: { userId?: string; teamId?: string; installationId?: string }): Promise<void> {
      const conditions: SQL[] = []
      if (filter.userId !== undefined) conditions.push(eq(flows.userId, filter.userId))
      if (filter.teamId !== undefined) conditions.push(eq(flows.teamId, filter.teamId))
      if (filter.installationId !== undefined) conditions.push(eq(flows.installationId, filter.installationId))
      if (conditions.length === 0) return
      await db.delete(flows).where(and(...conditions))
    },

    async purgeExpiredFlows(now: Date): Promise<void> {
      await db.delete(flows).where(lt(flows.expiresAt, now))
    },
  }
}
