import { and, asc, desc, eq, inArray, isNull, lt, notInArray, or, sql } from 'drizzle-orm'
import { UNRESOLVED_SPEC_HASH, type ReportedTool } from '../../formats/satellite-reports.js'
import { rowReader } from '../readers/row-reader.js'
import type { Database, Db } from '../types.js'
import type { InstallationRow, ValueRow } from './installations.js'
import type { ServerRow } from './server-filters.js'
import type { VersionRow } from './server-versions.js'

export type InstanceStateRow = Database['t']['mcpInstanceStates']['$inferSelect']
export type InstanceLogRow = Database['t']['mcpInstanceLogs']['$inferSelect']

/** What a satellite's document is built from: its installations with their server and version. */
export interface PlacedInstallation {
  installation: InstallationRow
  server: Pick<ServerRow, 'id' | 'slug' | 'packages' | 'remotes' | 'transportType' | 'visibility'>
  version: Pick<VersionRow, 'id' | 'version' | 'serverJson' | 'packages' | 'remotes'>
}

/** The satellite facts a document depends on. */
export interface SatelliteFacts {
  id: string
  satelliteType: 'global' | 'team'
  publicKey: string | null
  desiredStamp: number
  disabledAt: Date | null
}

/** An instance a document build left out, as recorded for its team. */
export interface UnresolvedRecord {
  instanceId: string
  installationId: string
  userId: string | null
  specRevision: number
  reason: string
}

/** How many log lines are kept per instance; older ones are deleted as new ones come. */
export const LOG_LINES_KEPT = 1000

export type ChannelRepository = ReturnType<typeof channelRepository>

/** The satellite control channel's reads and writes: documents' sources, reported states, tools and logs. */
export function channelRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const s = t.satellites
  const i = t.mcpInstallations
  const states = t.mcpInstanceStates
  const logs = t.mcpInstanceLogs
  // On SQLite every poll of a kept document reads its stamp: built once, run on the driver
  // directly, and answered again while nothing in the database has changed (row-reader.ts).
  const satelliteRow = rowReader(database, 'channel_satellite', { satellite: s }, (selection) => database.db
    .select(selection).from(s).where(eq(s.id, sql.placeholder('id'))), { reuse: true })

  return {
    with: (tx: Db) => channelRepository(database, tx),

    /** The stamp and key of a satellite; undefined when it is gone. */
    async satellite(id: string): Promise<SatelliteFacts | undefined> {
      return (await satelliteRow({ id }))?.satellite
    },

    /** The stamp alone: the one read a kept document costs when it is not trusted without one. */
    async stamp(id: string): Promise<number | undefined> {
      return (await satelliteRow({ id }))?.satellite.desiredStamp
    },

    async placedOn(satelliteId: string): Promise<PlacedInstallation[]> {
      return db
        .select({
          installation: i,
          server: {
            id: t.mcpServers.id, slug: t.mcpServers.slug, packages: t.mcpServers.packages, remotes: t.mcpServers.remotes,
            transportType: t.mcpServers.transportType, visibility: t.mcpServers.visibility,
          },
          version: { id: t.mcpServerVersions.id, version: t.mcpServerVersions.version, serverJson: t.mcpServerVersions.serverJson, packages: t.mcpServerVersions.packages, remotes: t.mcpServerVersions.remotes },
        })
        .from(i)
        .innerJoin(t.mcpServers, eq(t.mcpServers.id, i.serverId))
        .innerJoin(t.mcpServerVersions, eq(t.mcpServerVersions.id, i.versionId))
        .where(eq(i.satelliteId, satelliteId))
        .orderBy(asc(i.id))
    },

    /** Every value of these installations, sealed text included (to build documents). */
    async valuesOf(installationIds: readonly string[]): Promise<ValueRow[]> {
      if (installationIds.length === 0) return []
      return db.select().from(t.mcpInstallationValues).where(inArray(t.mcpInstallationValues.installationId, [...installationIds]))
    },

    /** The tools each reported instance of these installations serves, by instance id (for documents' effective `disabled_tools`). */
    async reportedToolsOf(installationIds: readonly string[]): Promise<Map<string, ReportedTool[]>> {
      const tools = new Map<string, ReportedTool[]>()
      if (installationIds.length === 0) return tools
      const rows = await db.select({ instanceId: states.instanceId, tools: states.tools }).from(states).where(inArray(states.installationId, [...installationIds]))
      for (const row of rows) tools.set(row.instanceId, row.tools)
      return tools
    },

    /** The approved tool definitions of these installations (name, hash), by installation. */
    async approvalsOf(installationIds: readonly string[]): Promise<Map<string, Array<{ name: string; hash: string }>>> {
      const out = new Map<string, Array<{ name: string; hash: string }>>()
      if (installationIds.length === 0) return out
      const a = t.installationToolApprovals
      const rows = await db.select({ installationId: a.installationId, name: a.name, hash: a.hash }).from(a).where(inArray(a.installationId, [...installationIds])).orderBy(asc(a.name))
      for (const row of rows) out.set(row.installationId, [...(out.get(row.installationId) ?? []), { name: row.name, hash: row.hash }])
      return out
    },

    /** The members of these teams, by team. */
    async membersOf(teamIds: readonly string[]): Promise<Map<string, string[]>> {
      const members = new Map<string, string[]>()
      if (teamIds.length === 0) return members
      const rows = await db
        .select({ teamId: t.teamMembers.teamId, userId: t.teamMembers.userId })
        .from(t.teamMembers)
        .where(inArray(t.teamMembers.teamId, [...teamIds]))
        .orderBy(asc(t.teamMembers.userId))
      for (const row of rows) members.set(row.teamId, [...(members.get(row.teamId) ?? []), row.userId])
      return members
    },

    /**
     * Records what a build of the satellite's document found (see UNRESOLVED_SPEC_HASH): each
     * unresolved instance reads `failed` with its reason for the installation's current
     * spec_revision; the record of an instance of `placed` that is not unresolved any more is
     * dropped (its satellite reports it again once it runs). Written only while the satellite's
     * stamp is still `stamp`: a build a later change overtook no longer says what runs, and the
     * build after that change records in its place.
     */
    async recordUnresolved(satelliteId: string, stamp: number, placed: readonly string[], unresolved: readonly UnresolvedRecord[], at: Date): Promise<void> {
      if (placed.length === 0) return
      const stillUnresolved = unresolved.map((row) => row.instanceId)
      await database.transaction(async (tx) => {
        const [current] = await tx.select({ stamp: s.desiredStamp }).from(s).where(eq(s.id, satelliteId))
        if (current?.stamp !== stamp) return
        await tx.delete(states).where(and(
          inArray(states.installationId, [...placed]),
          eq(states.specHash, UNRESOLVED_SPEC_HASH),
          ...(stillUnresolved.length === 0 ? [] : [notInArray(states.instanceId, stillUnresolved)]),
        ))
        for (const row of unresolved) {
          const record = {
            installationId: row.installationId, userId: row.userId, satelliteId, specRevision: row.specRevision, specHash: UNRESOLVED_SPEC_HASH,
            phase: 'failed' as const, message: row.reason, startedAt: null, reportedAt: at,
          }
          await tx.insert(states).values({ instanceId: row.instanceId, ...record, tools: [] }).onConflictDoUpdate({ target: states.instanceId, set: record })
        }
      })
    },

    /** Records a reported phase (the tools reported earlier stay). */
    async putPhase(row: Omit<InstanceStateRow, 'tools'>): Promise<void> {
      const { instanceId, ...rest } = row
      await db.insert(states).values({ ...row, tools: [] }).onConflictDoUpdate({ target: states.instanceId, set: rest })
    },

    /** Replaces the reported tools (a state row is made if the instance had none yet). */
    async putTools(row: Omit<InstanceStateRow, 'phase' | 'message' | 'startedAt'>): Promise<void> {
      await db.insert(states).values({ ...row, phase: 'starting', message: null, startedAt: null }).onConflictDoUpdate({
        target: states.instanceId, set: { tools: row.tools, reportedAt: row.reportedAt, satelliteId: row.satelliteId },
      })
    },

    /** The reported states of these installations that `viewer` may see: the shared instance's and the viewer's own. */
    async statesOf(installationIds: readonly string[], viewer: string | null): Promise<InstanceStateRow[]> {
      if (installationIds.length === 0) return []
      const whose = viewer === null ? isNull(states.userId) : or(isNull(states.userId), eq(states.userId, viewer))
      return db.select().from(states).where(and(inArray(states.installationId, [...installationIds]), whose))
    },

    /** Every reported state of an installation, most recent first. */
    async allStatesOf(installationId: string): Promise<InstanceStateRow[]> {
      return db.select().from(states).where(eq(states.installationId, installationId)).orderBy(desc(states.reportedAt))
    },

    /** Appends lines, then deletes the instance's lines beyond the newest LOG_LINES_KEPT. */
    async appendLogs(instanceId: string, lines: InstanceLogRow[]): Promise<void> {
      if (lines.length === 0) return
      await db.insert(logs).values(lines)
      const [oldestKept] = await db
        .select({ id: logs.id })
        .from(logs)
        .where(eq(logs.instanceId, instanceId))
        .orderBy(desc(logs.id))
        .limit(1)
        .offset(LOG_LINES_KEPT - 1)
      if (oldestKept !== undefined) await db.delete(logs).where(and(eq(logs.instanceId, instanceId), lt(logs.id, oldestKept.id)))
    },

    /** An installation's lines, newest first: all of them, or one member's own instance's. */
    async logsOf(installationId: string, userId: string | null, limit: number, offset: number): Promise<{ rows: InstanceLogRow[]; total: number }> {
      const where = userId === null ? eq(logs.installationId, installationId) : and(eq(logs.installationId, installationId), eq(logs.userId, userId))
      const [rows, [total]] = await Promise.all([
        db.select().from(logs).where(where).orderBy(desc(logs.id)).limit(limit).offset(offset),
        db.select({ n: sql<number>`count(*)`.mapWith(Number) }).from(logs).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },
  }
}
