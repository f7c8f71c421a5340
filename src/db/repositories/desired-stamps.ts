import { eq, inArray, sql } from 'drizzle-orm'
import { topics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'

/** The change topic of one satellite's desired-state document. */
export const satelliteTopic = topics.satellite

export type DesiredStamps = ReturnType<typeof desiredStamps>

/**
 * Marks satellites' desired-state documents as changed, inside the transaction that changes them:
 * each satellite's `desired_stamp` moves and a change notification for it is sent, delivered when
 * the transaction commits (see db/feed/changes.ts). A document kept in memory is current exactly while
 * its stamp is, so every write that can change what a satellite runs calls one of these.
 */
export function desiredStamps(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const s = t.satellites
  const i = t.mcpInstallations

  async function touch(where: ReturnType<typeof inArray>): Promise<string[]> {
    const rows = await db.update(s).set({ desiredStamp: sql`${s.desiredStamp} + 1` }).where(where).returning({ id: s.id })
    for (const { id } of rows) await database.changes.notify(db, satelliteTopic(id))
    return rows.map((row) => row.id)
  }

  return {
    with: (tx: Db) => desiredStamps(database, tx),

    /** These satellites (nulls, an unplaced installation's, are skipped). */
    async satellites(ids: ReadonlyArray<string | null>): Promise<void> {
      const known = [...new Set(ids.filter((id): id is string => id !== null))]
      if (known.length > 0) await touch(inArray(s.id, known))
    },

    /** The satellites running installations of a team (a member joined or left; the team goes). */
    async ofTeam(teamId: string): Promise<void> {
      await touch(inArray(s.id, db.select({ id: i.satelliteId }).from(i).where(eq(i.teamId, teamId))))
    },

    /** The satellites running installations of any team of a user (the user goes, and their memberships with them). */
    async ofMember(userId: string): Promise<void> {
      const teams = db.select({ id: t.teamMembers.teamId }).from(t.teamMembers).where(eq(t.teamMembers.userId, userId))
      await touch(inArray(s.id, db.select({ id: i.satelliteId }).from(i).where(inArray(i.teamId, teams))))
    },

    /** The satellites these installations are placed on (an OAuth connection's tokens or status changed). */
    async ofInstallations(installationIds: readonly string[]): Promise<void> {
      if (installationIds.length > 0) await touch(inArray(s.id, db.select({ id: i.satelliteId }).from(i).where(inArray(i.id, [...installationIds]))))
    },

    /** The satellites running installations of a server (its stored versions changed). */
    async ofServer(serverId: string): Promise<void> {
      await touch(inArray(s.id, db.select({ id: i.satelliteId }).from(i).where(eq(i.serverId, serverId))))
    },
  }
}
