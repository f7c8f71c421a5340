import { and, asc, count, eq, gte, inArray, isNotNull, isNull, or, sql, type SQL } from 'drizzle-orm'
import { violatedUniqueIndex } from '../errors.js'
import type { Database, Db } from '../types.js'

export type InstallationRow = Database['t']['mcpInstallations']['$inferSelect']
export type InstallationPatch = Partial<Pick<InstallationRow,
  'name' | 'versionId' | 'trackLatest' | 'targetKind' | 'targetIndex' | 'transport' | 'inputs' | 'satelliteId' | 'desired' | 'restartGeneration'>>
export type ValueRow = Database['t']['mcpInstallationValues']['$inferSelect']

/** What a reader of an installation sees with it: its server, its version string and its satellite. */
export interface InstallationDetail {
  installation: InstallationRow
  server: { id: string; slug: string; name: string }
  version: string
  satellite: { name: string; url: string | null; status: string; lastHeartbeatAt: Date | null; disabledAt: Date | null } | null
  team: { slug: string }
}

/** A value as readers see it: never the sealed secret, only that it is set. */
export interface SetValue {
  installationId: string
  userId: string | null
  key: string
  /** The plain value of a non-secret input; null for a secret one. */
  value: string | null
}

export interface SatelliteLoad {
  id: string
  teamId: string | null
  installations: number
}

export type InstallationsRepository = ReturnType<typeof installationsRepository>

export function installationsRepository(database: Database, executor: Db = database.db) {
  const { t, dialect } = database
  const db = executor
  const i = t.mcpInstallations
  const values = t.mcpInstallationValues

  const detail = () => db
    .select({
      installation: i,
      server: { id: t.mcpServers.id, slug: t.mcpServers.slug, name: t.mcpServers.name },
      version: t.mcpServerVersions.version,
      satelliteId: t.satellites.id,
      satelliteName: t.satellites.name,
      satelliteUrl: t.satellites.satelliteUrl,
      satelliteStatus: t.satellites.status,
      lastHeartbeatAt: t.satellites.lastHeartbeatAt,
      disabledAt: t.satellites.disabledAt,
      teamSlug: t.teams.slug,
    })
    .from(i)
    .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
    .innerJoin(t.mcpServerVersions, eq(t.mcpServerVersions.id, i.versionId))
    .innerJoin(t.teams, eq(t.teams.id, i.teamId))
    .leftJoin(t.satellites, eq(t.satellites.id, i.satelliteId))

  type DetailRow = Awaited<ReturnType<ReturnType<typeof detail>['execute']>>[number]
  const toDetail = (row: DetailRow): InstallationDetail => ({
    installation: row.installation,
    server: row.server,
    version: row.version,
    team: { slug: row.teamSlug },
    satellite: row.satelliteId === null ? null : {
      name: row.satelliteName!, url: row.satelliteUrl, status: row.satelliteStatus!, lastHeartbeatAt: row.lastHeartbeatAt, disabledAt: row.disabledAt,
    },
  })
  const byName = [asc(i.name), asc(i.id)]
  const memberTeams = (userId: string) => db.select({ teamId: t.teamMembers.teamId }).from(t.teamMembers).where(eq(t.teamMembers.userId, userId))

  return {
    with: (tx: Db) => installationsRepository(database, tx),

    /** Null when the team has an installation of that name already (the unique index decides). */
    async insert(row: InstallationRow): Promise<InstallationRow | null> {
      const [inserted] = await db.insert(i).values(row).onConflictDoNothing({ target: [i.teamId, i.name] }).returning()
      return inserted ?? null
    },

    async find(teamId: string, id: string): Promise<InstallationDetail | undefined> {
      const [row] = await detail().where(and(eq(i.teamId, teamId), eq(i.id, id)))
      return row === undefined ? undefined : toDetail(row)
    },

    /** Takes the installation's row for the rest of the transaction (PostgreSQL; SQLite transactions are serialized). */
    async lock(teamId: string, id: string): Promise<InstallationRow | undefined> {
      const query = db.select().from(i).where(and(eq(i.teamId, teamId), eq(i.id, id)))
      const [row] = dialect === 'postgresql' ? await query.for('update') : await query
      return row
    },

    /** The team's installations by name. */
    async listForTeam(teamId: string, limit: number, offset: number): Promise<{ rows: InstallationDetail[]; total: number }> {
      const where = eq(i.teamId, teamId)
      const [rows, [total]] = await Promise.all([
        detail().where(where).orderBy(...byName).limit(limit).offset(offset),
        db.select({ n: count() }).from(i).where(where),
      ])
      return { rows: rows.map(toDetail), total: total?.n ?? 0 }
    },

    /** The installations of every team the user is a member of (or of one of them), by team, then name. */
    async listForMember(userId: string, teamId: string | undefined, limit: number, offset: number): Promise<{ rows: InstallationDetail[]; total: number }> {
      const where = teamId === undefined
        ? inArray(i.teamId, memberTeams(userId))
        : and(eq(i.teamId, teamId), inArray(i.teamId, memberTeams(userId)))
      const [rows, [total]] = await Promise.all([
        detail().where(where).orderBy(asc(t.teams.slug), ...byName).limit(limit).offset(offset),
        db.select({ n: count() }).from(i).where(where),
      ])
      return { rows: rows.map(toDetail), total: total?.n ?? 0 }
    },

    /** Names in the team starting with `prefix` (to pick a free default name). */
    async namesLike(teamId: string, prefix: string): Promise<string[]> {
      const rows = await db.select({ name: i.name }).from(i).where(and(eq(i.teamId, teamId), sql`${i.name} like ${`${prefix}%`}`))
      return rows.map((row) => row.name)
    },

    /**
     * Changes the row, and moves `spec_revision` when `respec` (the change alters what runs).
     * Null when the name is taken in the team ('name_taken') or the row is gone.
     */
    async update(id: string, patch: InstallationPatch, options: { respec: boolean; now: Date }): Promise<InstallationRow | 'name_taken' | null> {
      try {
        const [row] = await db
          .update(i)
          .set({ ...patch, updatedAt: options.now, ...(options.respec ? { specRevision: sql`${i.specRevision} + 1` } : {}) })
          .where(eq(i.id, id))
          .returning()
        return row ?? null
      } catch (error) {
        if (isNameTaken(error)) return 'name_taken'
        throw error
      }
    },

    async delete(id: string): Promise<InstallationRow | null> {
      const [row] = await db.delete(i).where(eq(i.id, id)).returning()
      return row ?? null
    },

    /** The values set for these installations: the team's and those of `userId` (never anyone else's), without sealed text. */
    async valuesOf(installationIds: readonly string[], userId: string | null): Promise<SetValue[]> {
      if (installationIds.length === 0) return []
      const whose = userId === null ? isNull(values.userId) : or(isNull(values.userId), eq(values.userId, userId))
      return db
        .select({ installationId: values.installationId, userId: values.userId, key: values.key, value: values.value })
        .from(values)
        .where(and(inArray(values.installationId, [...installationIds]), whose))
    },

    /** Every value row of one installation, sealed text included (to re-store them when inputs change). */
    async allValuesOf(installationId: string): Promise<ValueRow[]> {
      return db.select().from(values).where(eq(values.installationId, installationId))
    },

    /** Sets one value (the team's when `userId` is null), replacing the one there. */
    async putValue(row: ValueRow): Promise<void> {
      const update = { value: row.value, sealed: row.sealed, updatedAt: row.updatedAt }
      if (row.userId === null) {
        await db.insert(values).values(row).onConflictDoUpdate({ target: [values.installationId, values.key], targetWhere: isNull(values.userId), set: update })
      } else {
        await db.insert(values).values(row).onConflictDoUpdate({ target: [values.installationId, values.userId, values.key], targetWhere: isNotNull(values.userId), set: update })
      }
    },

    async deleteValue(installationId: string, userId: string | null, key: string): Promise<void> {
      await db.delete(values).where(and(eq(values.installationId, installationId), userId === null ? isNull(values.userId) : eq(values.userId, userId), eq(values.key, key)))
    },

    /** Every sealed value with its place (secret rotation). */
    async sealedValues(): Promise<Array<Pick<ValueRow, 'installationId' | 'userId' | 'key'> & { sealed: string }>> {
      const rows = await db
        .select({ installationId: values.installationId, userId: values.userId, key: values.key, sealed: values.sealed })
        .from(values)
        .where(isNotNull(values.sealed))
      return rows.map((row) => ({ ...row, sealed: row.sealed! }))
    },

    /**
     * Replaces one sealed value, only if it still holds `previous` (nobody set it meanwhile);
     * false otherwise. `updatedAt` stays: the value did not change, only the key sealing it.
     */
    async reseal(place: { installationId: string; userId: string | null; key: string }, sealed: string, previous: string): Promise<boolean> {
      const rows = await db
        .update(values)
        .set({ sealed })
        .where(and(
          eq(values.installationId, place.installationId),
          place.userId === null ? isNull(values.userId) : eq(values.userId, place.userId),
          eq(values.key, place.key),
          eq(values.sealed, previous),
        ))
        .returning({ key: values.key })
      return rows.length === 1
    },

    /** How many installations use a server (a server in use is not deleted). */
    async countForServer(serverId: string): Promise<number> {
      const [row] = await db.select({ n: count() }).from(i).where(eq(i.serverId, serverId))
      return row?.n ?? 0
    },

    /** The installations that follow a server's latest version. */
    async trackingLatest(serverId: string): Promise<InstallationRow[]> {
      return db.select().from(i).where(and(eq(i.serverId, serverId), eq(i.trackLatest, true)))
    },

    /**
     * The satellites an installation of `teamId` may be placed on automatically — the team's own
     * and the global ones that are enabled and sent a heartbeat with a working status since
     * `onlineSince` — with how many installations each runs.
     */
    async onlineSatellites(teamId: string, onlineSince: Date): Promise<SatelliteLoad[]> {
      const s = t.satellites
      return db
        .select({ id: s.id, teamId: s.teamId, installations: count(i.id) })
        .from(s)
        .leftJoin(i, eq(i.satelliteId, s.id))
        .where(and(
          or(eq(s.teamId, teamId), eq(s.satelliteType, 'global')),
          isNull(s.disabledAt),
          inArray(s.status, ['active', 'degraded']),
          gte(s.lastHeartbeatAt, onlineSince),
        ))
        .groupBy(s.id, s.teamId)
    },

    /** Unplaced installations, oldest first: of one team, or of every team (a global satellite came online). */
    async unplaced(teamId: string | null, limit: number): Promise<InstallationRow[]> {
      const where: SQL = teamId === null ? isNull(i.satelliteId) : and(isNull(i.satelliteId), eq(i.teamId, teamId))!
      return db.select().from(i).where(where).orderBy(asc(i.createdAt), asc(i.id)).limit(limit)
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
    async unplaceFrom(satelliteId: string, now: Date): Promise<number> {
      const rows = await db
        .update(i)
        .set({ satelliteId: null, updatedAt: now, specRevision: sql`${i.specRevision} + 1` })
        .where(eq(i.satelliteId, satelliteId))
        .returning({ id: i.id })
      return rows.length
    },
  }
}

/** The team's name index (PostgreSQL names the index; SQLite the columns). */
function isNameTaken(error: unknown): boolean {
  const index = violatedUniqueIndex(error)
  return index === 'mcp_installations_team_name_unique' || (index?.includes('mcp_installations.name') ?? false)
}
