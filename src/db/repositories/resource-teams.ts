import { and, count, eq, inArray, isNull } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

/** A satellite as the consent page names it. */
export interface ServingSatellite {
  id: string
  name: string
  satelliteType: 'global' | 'team'
  teamId: string | null
}

export type ResourceTeamsRepository = ReturnType<typeof resourceTeamsRepository>

/**
 * What the consent step reads to find the team an authorization request is about: the satellites
 * behind a resource identifier, the installation an endpoint URL names, and where a user's teams
 * have installations. Each is one indexed (or tiny) read.
 */
export function resourceTeamsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const s = t.satellites
  const i = t.mcpInstallations

  return {
    /** The enabled satellites registered with this exact `satellite_url` (stored without a trailing slash). */
    async satellitesAt(url: string): Promise<ServingSatellite[]> {
      return db
        .select({ id: s.id, name: s.name, satelliteType: s.satelliteType, teamId: s.teamId })
        .from(s)
        .where(and(eq(s.satelliteUrl, url), isNull(s.disabledAt)))
        .orderBy(s.id)
    },

    /** An installation's team and the enabled satellite it is placed on, if any. */
    async placement(installationId: string): Promise<{ teamId: string; satellite: ServingSatellite & { url: string | null } | null } | undefined> {
      const [row] = await db
        .select({ teamId: i.teamId, id: s.id, name: s.name, satelliteType: s.satelliteType, satelliteTeamId: s.teamId, url: s.satelliteUrl })
        .from(i)
        .leftJoin(s, and(eq(s.id, i.satelliteId), isNull(s.disabledAt)))
        .where(eq(i.id, installationId))
      if (row === undefined) return undefined
      const satellite = row.id === null || row.name === null || row.satelliteType === null
        ? null
        : { id: row.id, name: row.name, satelliteType: row.satelliteType, teamId: row.satelliteTeamId, url: row.url }
      return { teamId: row.teamId, satellite }
    },

    /** How many installations each of `teamIds` has (only those placed on `satelliteIds`, when given); teams with none are left out. */
    async installationCounts(teamIds: readonly string[], satelliteIds?: readonly string[]): Promise<Map<string, number>> {
      if (teamIds.length === 0 || satelliteIds?.length === 0) return new Map()
      const rows = await db
        .select({ teamId: i.teamId, n: count() })
        .from(i)
        .where(and(inArray(i.teamId, [...teamIds]), satelliteIds === undefined ? undefined : inArray(i.satelliteId, [...satelliteIds])))
        .groupBy(i.teamId)
      return new Map(rows.map((row) => [row.teamId, Number(row.n)]))
    },
  }
}
