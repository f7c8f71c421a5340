import { and, asc, count, eq, inArray, ne, sql } from 'drizzle-orm'
import { slugCandidates, slugify } from '../../lib/slug.js'
import { newId } from '../ids.js'
import { desiredStamps } from './desired-stamps.js'
import { rowReader } from '../readers/row-reader.js'
import { families, topics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'

export type TeamRow = Database['t']['teams']['$inferSelect']
export type MembershipRow = Database['t']['teamMembers']['$inferSelect']
/** The roles the membership table holds; the permissions they grant are auth's (auth/permissions.ts). */
type TeamRole = MembershipRow['role']

export interface TeamWithCount extends TeamRow {
  memberCount: number
}

export interface CallerTeam extends TeamWithCount {
  role: TeamRole
}

export interface MemberView {
  userId: string
  username: string
  email: string
  role: TeamRole
  joinedAt: Date
}

const MAX_SLUG_ATTEMPTS = 1000

export type TeamsRepository = ReturnType<typeof teamsRepository>

/**
 * The join condition of a user's default team, for the credential lookups that carry it (so that
 * `/api/teams/me/default` needs no second query). A literal, not a bound parameter: only then can
 * SQLite use the partial index teams_one_default_per_owner.
 */
export function defaultTeamOfUser({ t, dialect }: Database) {
  return and(eq(t.teams.ownerId, t.users.id), dialect === 'sqlite' ? sql`${t.teams.isDefault} = 1` : sql`${t.teams.isDefault}`)
}

/**
 * A default team as its owner sees it. A default team has no member but its owner, who stays its
 * team_admin (it cannot be given members or transferred), so the row alone says everything.
 */
export const asOwnDefaultTeam = (team: TeamRow): CallerTeam => ({ ...team, memberCount: 1, role: 'team_admin' })

/** The membership lookup of the root repository, built on first use (one per database). */
const membershipRows = new WeakMap<Database, ReturnType<typeof membershipReader>>()
const membershipReader = (database: Database) => rowReader(database, 'team_membership_row', { member: database.t.teamMembers }, (selection) => database.db
  .select(selection)
  .from(database.t.teamMembers)
  .where(and(eq(database.t.teamMembers.userId, sql.placeholder('userId')), eq(database.t.teamMembers.teamId, sql.placeholder('teamId')))), {
  // Every team route asks it: kept until the member's teams change (`member:<id>`, sent by the
  // database for every write to team_members and told here at the commit of this instance's own).
  reuse: true,
  topics: { families: [families.member], of: ({ member }) => [topics.member(member.userId)] },
})

export function teamsRepository(database: Database, executor: Db = database.db) {
  const { t, dialect } = database
  const db = executor
  // What the credential checks keep includes the caller's default team (kept-answers.ts).
  const told = (topic: string) => database.changes.tell(db, topic)
  // The installation lists keep whose teams they are (kept-lists.ts); the database's trigger tells the others.
  const memberChanged = (teamId: string, userId: string) => {
    told(topics.member(userId))
    told(topics.installations(teamId))
  }
  // A literal, not a bound parameter: only then can SQLite use the partial index
  // teams_one_default_per_owner (measured: 6 µs instead of 29 µs for the default-team read).
  const isDefaultTeam = dialect === 'sqlite' ? sql`${t.teams.isDefault} = 1` : sql`${t.teams.isDefault}`
  const memberCount = sql<number>`(select count(*) from ${t.teamMembers} where ${t.teamMembers.teamId} = ${t.teams.id})`.mapWith(Number)

  /**
   * Inserts under the first free slug derived from the name. The unique index decides: a taken
   * slug makes the insert a no-op (ON CONFLICT DO NOTHING, which leaves a PostgreSQL transaction
   * usable) and the next candidate is tried, so concurrent creations get distinct slugs.
   */
  async function insertWithFreeSlug(team: Omit<TeamRow, 'slug'>): Promise<TeamRow> {
    let attempts = 0
    for (const slug of slugCandidates(slugify(team.name))) {
      const [row] = await db.insert(t.teams).values({ ...team, slug }).onConflictDoNothing({ target: t.teams.slug }).returning()
      if (row !== undefined) return row
      if (++attempts >= MAX_SLUG_ATTEMPTS) break
    }
    throw new Error(`no free slug for team name ${JSON.stringify(team.name)}`)
  }

  async function create(team: { ownerId: string; name: string; description: string | null; isDefault: boolean }, now: Date): Promise<TeamRow> {
    const row = await insertWithFreeSlug({ id: newId(), ...team, createdAt: now, updatedAt: now })
    // A default team is part of what the credential checks keep about its owner, also when it appears.
    if (team.isDefault) told(topics.user(team.ownerId))
    await db.insert(t.teamMembers).values({ teamId: row.id, userId: team.ownerId, role: 'team_admin', joinedAt: now })
    memberChanged(row.id, team.ownerId)
    return row
  }

  let defaultOfStatement: ReturnType<typeof prepareDefaultOf> | undefined
  function prepareDefaultOf() {
    return db
      .select({ team: t.teams, role: t.teamMembers.role, memberCount })
      .from(t.teams)
      .innerJoin(t.teamMembers, and(eq(t.teamMembers.teamId, t.teams.id), eq(t.teamMembers.userId, sql.placeholder('userId'))))
      .where(and(eq(t.teams.ownerId, sql.placeholder('userId')), isDefaultTeam))
      .prepare('team_default_of')
  }

  return {
    with: (tx: Db) => teamsRepository(database, tx),
    create,

    /**
     * Serializes changes to one team (members, limits, ownership) for the rest of the
     * transaction. SQLite transactions are serialized already.
     */
    async lock(teamId: string): Promise<void> {
      if (dialect === 'postgresql') await db.execute(sql`select 1 from ${t.teams} where ${t.teams.id} = ${teamId} for update`)
    },

    /** Serializes team creation by one owner, so the creation limit holds under concurrency. */
    async lockOwner(userId: string): Promise<void> {
      if (dialect === 'postgresql') await db.execute(sql`select 1 from ${t.users} where ${t.users.id} = ${userId} for update`)
    },

    /** The user's default team (name = username), with the user as owner and team_admin. */
    async createDefault(ownerId: string, username: string, now: Date): Promise<TeamRow> {
      return create({ ownerId, name: username, description: null, isDefault: true }, now)
    },

    async find(teamId: string): Promise<TeamWithCount | undefined> {
      const [row] = await db.select({ team: t.teams, memberCount }).from(t.teams).where(eq(t.teams.id, teamId))
      return row === undefined ? undefined : { ...row.team, memberCount: row.memberCount }
    },

    /** The user's teams with their role in each, default team first, then by name. */
    async forUser(userId: string): Promise<CallerTeam[]> {
      const rows = await db
        .select({ team: t.teams, role: t.teamMembers.role, memberCount })
        .from(t.teamMembers)
        .innerJoin(t.teams, eq(t.teams.id, t.teamMembers.teamId))
        .where(eq(t.teamMembers.userId, userId))
        .orderBy(sql`${t.teams.isDefault} desc`, asc(t.teams.name), asc(t.teams.id))
      return rows.map((row) => ({ ...row.team, memberCount: row.memberCount, role: row.role }))
    },

    /** The ids of the teams the user is a member of. */
    async idsFor(userId: string): Promise<string[]> {
      const rows = await db.select({ id: t.teamMembers.teamId }).from(t.teamMembers).where(eq(t.teamMembers.userId, userId))
      return rows.map((row) => row.id)
    },

    /** A hot path (every CLI start reads it): one prepared statement, built on first use. */
    async defaultOf(userId: string): Promise<CallerTeam | undefined> {
      defaultOfStatement ??= prepareDefaultOf()
      const [row] = await defaultOfStatement.execute({ userId })
      return row === undefined ? undefined : { ...row.team, memberCount: row.memberCount, role: row.role }
    },

    async update(teamId: string, patch: { name?: string; description?: string | null }, now: Date): Promise<void> {
      await db.update(t.teams).set({ ...patch, updatedAt: now }).where(eq(t.teams.id, teamId))
      told(topics.team(teamId))
    },

    async delete(teamId: string): Promise<void> {
      // Its installations go with it: their satellites' documents change.
      await desiredStamps(database, db).ofTeam(teamId)
      // Its memberships and servers go by cascade: what this instance keeps of them ends at the
      // commit (the database's triggers tell the other instances).
      const members = await db.select({ userId: t.teamMembers.userId }).from(t.teamMembers).where(eq(t.teamMembers.teamId, teamId))
      await db.delete(t.teams).where(eq(t.teams.id, teamId))
      told(topics.team(teamId))
      for (const { userId } of members) memberChanged(teamId, userId)
      told(topics.catalogue)
    },

    async setOwner(teamId: string, ownerId: string, now: Date): Promise<void> {
      await db.update(t.teams).set({ ownerId, updatedAt: now }).where(eq(t.teams.id, teamId))
      told(topics.team(teamId))
    },

    async countOwnedNonDefault(userId: string): Promise<number> {
      const [row] = await db.select({ n: count() }).from(t.teams).where(and(eq(t.teams.ownerId, userId), eq(t.teams.isDefault, false)))
      return row?.n ?? 0
    },

    async ownedNonDefault(userId: string): Promise<TeamRow[]> {
      return db.select().from(t.teams).where(and(eq(t.teams.ownerId, userId), eq(t.teams.isDefault, false)))
    },

    /**
     * The route policy asks this on every team-scoped request: outside a transaction it runs on the
     * driver (row-reader.ts). Inside one it must see the transaction's own writes, on its connection.
     */
    async roleOf(userId: string, teamId: string): Promise<TeamRole | null> {
      if (executor === database.db) {
        let read = membershipRows.get(database)
        if (read === undefined) membershipRows.set(database, (read = membershipReader(database)))
        return (await read({ userId, teamId }))?.member.role ?? null
      }
      const [row] = await db
        .select({ role: t.teamMembers.role })
        .from(t.teamMembers)
        .where(and(eq(t.teamMembers.userId, userId), eq(t.teamMembers.teamId, teamId)))
      return row?.role ?? null
    },

    async countMemberships(userId: string): Promise<number> {
      const [row] = await db.select({ n: count() }).from(t.teamMembers).where(eq(t.teamMembers.userId, userId))
      return row?.n ?? 0
    },

    async members(teamId: string): Promise<MemberView[]> {
      return db
        .select({ userId: t.users.id, username: t.users.username, email: t.users.email, role: t.teamMembers.role, joinedAt: t.teamMembers.joinedAt })
        .from(t.teamMembers)
        .innerJoin(t.users, eq(t.users.id, t.teamMembers.userId))
        .where(eq(t.teamMembers.teamId, teamId))
        .orderBy(asc(t.teamMembers.joinedAt), asc(t.users.id))
    },

    async countMembers(teamId: string, role?: TeamRole): Promise<number> {
      const where = role === undefined ? eq(t.teamMembers.teamId, teamId) : and(eq(t.teamMembers.teamId, teamId), eq(t.teamMembers.role, role))
      const [row] = await db.select({ n: count() }).from(t.teamMembers).where(where)
      return row?.n ?? 0
    },

    /** False when the user is a member already (the primary key decides). */
    async addMember(teamId: string, userId: string, role: TeamRole, now: Date): Promise<boolean> {
      const rows = await db.insert(t.teamMembers).values({ teamId, userId, role, joinedAt: now }).onConflictDoNothing().returning({ userId: t.teamMembers.userId })
      // A new member may have an instance of their own in a per-user installation (once they set their values).
      if (rows.length === 1) await desiredStamps(database, db).ofTeam(teamId)
      if (rows.length === 1) memberChanged(teamId, userId)
      return rows.length === 1
    },

    async setRole(teamId: string, userId: string, role: TeamRole): Promise<void> {
      await db.update(t.teamMembers).set({ role }).where(and(eq(t.teamMembers.teamId, teamId), eq(t.teamMembers.userId, userId)))
      memberChanged(teamId, userId)
    },

    /** Ends a membership, and with it the member's own values in the team's installations (a personal token leaves with its owner). */
    async removeMember(teamId: string, userId: string): Promise<void> {
      await db.delete(t.teamMembers).where(and(eq(t.teamMembers.teamId, teamId), eq(t.teamMembers.userId, userId)))
      // A per-user installation's instance of the member goes: their satellites' documents change.
      await desiredStamps(database, db).ofTeam(teamId)
      const values = t.mcpInstallationValues
      const teamInstallations = db.select({ id: t.mcpInstallations.id }).from(t.mcpInstallations).where(eq(t.mcpInstallations.teamId, teamId))
      await db.delete(values).where(and(eq(values.userId, userId), inArray(values.installationId, teamInstallations)))
      memberChanged(teamId, userId)
    },

    /** Another team_admin of the team (the longest-standing), to inherit it from a leaving owner. */
    async successor(teamId: string, leavingUserId: string): Promise<string | null> {
      const [row] = await db
        .select({ userId: t.teamMembers.userId })
        .from(t.teamMembers)
        .where(and(eq(t.teamMembers.teamId, teamId), eq(t.teamMembers.role, 'team_admin'), ne(t.teamMembers.userId, leavingUserId)))
        .orderBy(asc(t.teamMembers.joinedAt), asc(t.teamMembers.userId))
        .limit(1)
      return row?.userId ?? null
    },

    async deleteDefaultOf(ownerId: string): Promise<void> {
      await desiredStamps(database, db).ofMember(ownerId)
      await db.delete(t.teams).where(and(eq(t.teams.ownerId, ownerId), isDefaultTeam))
      told(topics.user(ownerId))
    },
  }
}
