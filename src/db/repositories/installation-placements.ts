import { and, asc, count, eq, gte, inArray, isNull, ne, or, sql } from 'drizzle-orm'
import type { Database, Db } from '../types.js'
import type { InstallationRow } from './installation-rows.js'

/** A satellite an installation may be placed on, with its load. */
export interface SatelliteLoad {
  id: string
  name: string
  teamId: string | null
  satelliteType: 'global' | 'team'
  isolation: 'none' | 'process-sandbox' | 'container'
  /** Installations placed on it (the one being placed again left out). */
  installations: number
  /** Of those, the team's. */
  ofTeam: number
}

/** An unplaced installation, with what placement needs to know of its server. */
export interface Unplaced {
  id: string
  teamId: string
}

/** What a global satellite takes of the waiting installations: the team servers' only when allowed there, and nothing of a team at its quota. */
export interface GlobalIntake {
  satelliteId: string
  teamServers: boolean
  quota: number
}

/**
 * Where installations are placed: the satellites that may take one, with their load, the
 * installations waiting for a satellite, and the moves between them (placing, releasing).
 */
export function installationPlacements(database: Database, db: Db = database.db) {
  const { t } = database
  const i = t.mcpInstallations

  return {
    /**
     * The satellites an installation of `teamId` may be placed on automatically — the team's own
     * and the global ones that are enabled and sent a heartbeat with a working status since
     * `onlineSince` — with how many installations each runs and how many of them are the team's
     * (`leaving` out: the installation being placed again).
     */
    async onlineSatellites(teamId: string, onlineSince: Date, leaving = ''): Promise<SatelliteLoad[]> {
      const s = t.satellites
      return db
        .select({
          id: s.id, name: s.name, teamId: s.teamId, satelliteType: s.satelliteType, isolation: s.isolation,
          installations: count(i.id),
          ofTeam: sql<number>`coalesce(sum(case when ${i.teamId} = ${teamId} then 1 else 0 end), 0)`.mapWith(Number),
        })
        .from(s)
        .leftJoin(i, and(eq(i.satelliteId, s.id), ne(i.id, leaving)))
        .where(and(
          or(eq(s.teamId, teamId), eq(s.satelliteType, 'global')),
          isNull(s.disabledAt),
          isNull(s.offlineAt),
          inArray(s.status, ['active', 'degraded']),
          gte(s.lastHeartbeatAt, onlineSince),
        ))
        .groupBy(s.id, s.name, s.teamId, s.satelliteType, s.isolation)
    },

    /** Every online satellite (as above, of any team), to hand each the installations waiting for it. */
    async allOnline(onlineSince: Date): Promise<Array<{ id: string; teamId: string | null; satelliteType: 'global' | 'team'; isolation: SatelliteLoad['isolation'] }>> {
      const s = t.satellites
      return db
        .select({ id: s.id, teamId: s.teamId, satelliteType: s.satelliteType, isolation: s.isolation })
        .from(s)
        .where(and(isNull(s.disabledAt), inArray(s.status, ['active', 'degraded']), gte(s.lastHeartbeatAt, onlineSince)))
        .orderBy(asc(s.id))
    },

    /** How many installations of the team are placed on the satellite (`leaving` out: the one being moved). */
    async teamCountOn(satelliteId: string, teamId: string, leaving = ''): Promise<number> {
      const [row] = await db.select({ n: count() }).from(i).where(and(eq(i.satelliteId, satelliteId), eq(i.teamId, teamId), ne(i.id, leaving)))
      return row?.n ?? 0
    },

    /**
     * Unplaced installations a satellite may take, oldest first: a team satellite its team's; a
     * global one those of global servers (and of team servers when `teamServers`), of teams below
     * the quota on it. Installations that could not go there are not listed, so that they never
     * crowd out those that could.
     */
    async unplaced(intake: { teamId: string } | GlobalIntake, limit: number): Promise<Unplaced[]> {
      const columns = { id: i.id, teamId: i.teamId }
      if ('teamId' in intake) {
        return db.select(columns).from(i).where(and(isNull(i.satelliteId), eq(i.teamId, intake.teamId))).orderBy(asc(i.createdAt), asc(i.id)).limit(limit)
      }
      if (intake.quota <= 0) return []
      const full = sql`${i.teamId} not in (select team_id from ${i} where satellite_id = ${intake.satelliteId} group by team_id having count(*) >= ${intake.quota})`
      return db
        .select(columns)
        .from(i)
        .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
        .where(and(isNull(i.satelliteId), intake.teamServers ? undefined : eq(t.mcpServers.visibility, 'global'), full))
        .orderBy(asc(i.createdAt), asc(i.id))
        .limit(limit)
    },

    /** An unplaced installation with its server's visibility (read again once its team is locked). */
    async unplacedOne(id: string): Promise<{ installation: InstallationRow; visibility: 'global' | 'team' } | undefined> {
      const [row] = await db
        .select({ installation: i, visibility: t.mcpServers.visibility })
        .from(i)
        .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
        .where(and(eq(i.id, id), isNull(i.satelliteId)))
      return row
    },

    /**
     * Unplaces the installations of team-defined servers on global satellites (one, or all of
     * them): they may no longer run there. Answers what was released, and from where.
     */
    async releaseTeamServers(from: { satelliteId: string } | 'every global satellite', now: Date): Promise<Array<{ id: string; teamId: string; satelliteId: string }>> {
      const s = t.satellites
      const globals = db.select({ id: s.id }).from(s).where(from === 'every global satellite' ? eq(s.satelliteType, 'global') : and(eq(s.satelliteType, 'global'), eq(s.id, from.satelliteId)))
      const teamServers = db.select({ id: t.mcpServers.id }).from(t.mcpServers).where(eq(t.mcpServers.visibility, 'team'))
      const placed = await db
        .select({ satelliteId: i.satelliteId })
        .from(i)
        .where(and(inArray(i.satelliteId, globals), inArray(i.serverId, teamServers)))
        .groupBy(i.satelliteId)
      const released: Array<{ id: string; teamId: string; satelliteId: string }> = []
      // One satellite at a time, so that each row released is known to come from that satellite.
      for (const { satelliteId } of placed) {
        const rows = await db
          .update(i)
          .set({ satelliteId: null, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
          .where(and(eq(i.satelliteId, satelliteId!), inArray(i.serverId, teamServers)))
          .returning({ id: i.id, teamId: i.teamId })
        released.push(...rows.map((row) => ({ ...row, satelliteId: satelliteId! })))
      }
      return released
    },

    /** Places an installation that is still unplaced; false when someone placed it meanwhile. */
    async place(id: string, satelliteId: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(i)
        .set({ satelliteId, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
        .where(and(eq(i.id, id), isNull(i.satelliteId)))
        .returning({ id: i.id })
      return rows.length === 1
    },

    /** Unplaces every installation of a satellite (disabled): they are placed again elsewhere. */
    async unplaceFrom(satelliteId: string, now: Date): Promise<Unplaced[]> {
      return db
        .update(i)
        .set({ satelliteId: null, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
        .where(eq(i.satelliteId, satelliteId))
        .returning({ id: i.id, teamId: i.teamId })
    },
  }
}
