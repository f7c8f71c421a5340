import { and, count, eq } from 'drizzle-orm'
import type { TeamRole } from '../../auth/permissions.js'
import { slugCandidates, slugify } from '../../lib/slug.js'
import { newId } from '../ids.js'
import type { Database, Db } from '../types.js'

export type TeamRow = Database['t']['teams']['$inferSelect']

const MAX_SLUG_ATTEMPTS = 1000

export type TeamsRepository = ReturnType<typeof teamsRepository>

export function teamsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor

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

  return {
    with: (tx: Db) => teamsRepository(database, tx),

    /** The user's default team (name = username), with the user as owner and team_admin. */
    async createDefault(ownerId: string, username: string, now: Date): Promise<TeamRow> {
      const team = await insertWithFreeSlug({
        id: newId(), name: username, description: null, ownerId, isDefault: true, createdAt: now, updatedAt: now,
      })
      await db.insert(t.teamMembers).values({ teamId: team.id, userId: ownerId, role: 'team_admin', joinedAt: now })
      return team
    },

    async roleOf(userId: string, teamId: string): Promise<TeamRole | null> {
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

    async deleteDefaultOf(ownerId: string): Promise<void> {
      await db.delete(t.teams).where(and(eq(t.teams.ownerId, ownerId), eq(t.teams.isDefault, true)))
    },
  }
}
