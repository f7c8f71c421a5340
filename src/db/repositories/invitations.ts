import { and, count, desc, eq, gt, isNotNull, isNull, lt, lte, ne, notExists, sql, type SQL } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

/** An invitation as stored: its token only as a digest. */
export type InvitationRow = Database['t']['teamInvitations']['$inferSelect']
/** Derived from the row and the time, never stored. */
export type InvitationStatus = 'pending' | 'accepted' | 'revoked' | 'expired'

/** An invitation with what its public view names: the team and who sent it. */
export interface InvitationWithNames extends InvitationRow {
  teamName: string
  inviterUsername: string
}

/** A page of one team's invitations, optionally of one status at `now`. */
export interface InvitationFilter {
  teamId: string
  status?: InvitationStatus
  now: Date
  limit: number
  offset: number
}

/** The queries on team invitations, on the database or inside a transaction (`with`). */
export type InvitationsRepository = ReturnType<typeof invitationsRepository>

/** SQL for team invitations, one implementation for both dialects. */
export function invitationsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const invitations = t.teamInvitations

  /** The derived status as a condition (accepted, else revoked, else expired, else pending). */
  const hasStatus = (status: InvitationStatus, now: Date): SQL => {
    switch (status) {
      case 'accepted': return isNotNull(invitations.acceptedAt)
      case 'revoked': return and(isNull(invitations.acceptedAt), isNotNull(invitations.revokedAt))!
      case 'expired': return and(isNull(invitations.acceptedAt), isNull(invitations.revokedAt), lte(invitations.expiresAt, now))!
      case 'pending': return and(isNull(invitations.acceptedAt), isNull(invitations.revokedAt), gt(invitations.expiresAt, now))!
    }
  }

  return {
    with: (tx: Db) => invitationsRepository(database, tx),

    async insert(row: InvitationRow): Promise<void> {
      await db.insert(invitations).values(row)
    },

    /** One indexed lookup by the token's digest, with the team's name and the inviter's username. */
    async findByDigest(digest: string): Promise<InvitationWithNames | undefined> {
      const [row] = await db
        .select({ invitation: invitations, teamName: t.teams.name, inviterUsername: t.users.username })
        .from(invitations)
        .innerJoin(t.teams, eq(t.teams.id, invitations.teamId))
        .innerJoin(t.users, eq(t.users.id, invitations.invitedBy))
        .where(eq(invitations.digest, digest))
      return row === undefined ? undefined : { ...row.invitation, teamName: row.teamName, inviterUsername: row.inviterUsername }
    },

    async findInTeam(teamId: string, id: string): Promise<InvitationRow | undefined> {
      const [row] = await db.select().from(invitations).where(and(eq(invitations.id, id), eq(invitations.teamId, teamId)))
      return row
    },

    /**
     * The seats pending invitations hold in the team, optionally all but one (the one being
     * accepted). An invitation to someone who is a member already (added directly meanwhile) holds none.
     */
    async countPending(teamId: string, now: Date, except?: string): Promise<number> {
      const memberHasAddress = db.select({ one: sql`1` }).from(t.teamMembers)
        .innerJoin(t.users, eq(t.users.id, t.teamMembers.userId))
        .where(and(eq(t.teamMembers.teamId, invitations.teamId), eq(sql`lower(${t.users.email})`, invitations.email)))
      const conditions = [eq(invitations.teamId, teamId), hasStatus('pending', now), notExists(memberHasAddress)]
      if (except !== undefined) conditions.push(ne(invitations.id, except))
      const [row] = await db.select({ n: count() }).from(invitations).where(and(...conditions))
      return row?.n ?? 0
    },

    async pendingFor(teamId: string, email: string, now: Date): Promise<InvitationRow | undefined> {
      const [row] = await db.select().from(invitations)
        .where(and(eq(invitations.teamId, teamId), eq(invitations.email, email), hasStatus('pending', now)))
        .limit(1)
      return row
    },

    /**
     * Single use, enforced by one conditional update: of concurrent acceptances exactly one gets
     * `true`, and only while the invitation is still pending.
     */
    async accept(id: string, userId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(invitations)
        .set({ acceptedAt: now, acceptedBy: userId })
        .where(and(eq(invitations.id, id), hasStatus('pending', now)))
        .returning({ id: invitations.id })
      return rows.length === 1
    },

    /** Revokes an unaccepted, unrevoked invitation; false when it was accepted or revoked meanwhile. */
    async revoke(id: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(invitations)
        .set({ revokedAt: now })
        .where(and(eq(invitations.id, id), isNull(invitations.acceptedAt), isNull(invitations.revokedAt)))
        .returning({ id: invitations.id })
      return rows.length === 1
    },

    /** A team's invitations, newest first, with the inviter's username. */
    async list(filter: InvitationFilter): Promise<{ rows: Array<InvitationRow & { inviterUsername: string }>; total: number }> {
      const conditions: SQL[] = [eq(invitations.teamId, filter.teamId)]
      if (filter.status !== undefined) conditions.push(hasStatus(filter.status, filter.now))
      const where = and(...conditions)
      const [rows, [total]] = await Promise.all([
        db.select({ invitation: invitations, inviterUsername: t.users.username })
          .from(invitations)
          .innerJoin(t.users, eq(t.users.id, invitations.invitedBy))
          .where(where)
          .orderBy(desc(invitations.createdAt), desc(invitations.id))
          .limit(filter.limit)
          .offset(filter.offset),
        db.select({ n: count() }).from(invitations).where(where),
      ])
      return { rows: rows.map((row) => ({ ...row.invitation, inviterUsername: row.inviterUsername })), total: total?.n ?? 0 }
    },

    /** Invitations past their lifetime, used or not: a pending one holds a seat only until then. */
    async purgeExpired(now: Date): Promise<void> {
      await db.delete(invitations).where(lt(invitations.expiresAt, now))
    },
  }
}

/** The status an invitation shows at `now`. */
export function invitationStatus(row: InvitationRow, now: Date): InvitationStatus {
  if (row.acceptedAt !== null) return 'accepted'
  if (row.revokedAt !== null) return 'revoked'
  return row.expiresAt.getTime() <= now.getTime() ? 'expired' : 'pending'
}
