import { and, count, desc, eq, gte, inArray, isNotNull, isNull, lt, or, sql, type SQL } from 'drizzle-orm'
import type { SatelliteMetrics } from '../../formats/satellite-reports.js'
import { rowReader } from '../readers/row-reader.js'
import { families, topics } from '../feed/topics.js'
import type { Database, Db } from '../types.js'

export type SatelliteRow = Database['t']['satellites']['$inferSelect']
/** What a reader sees: the stored status, `offline` for a reporting one gone silent, or `disabled`. */
export type SatelliteStatus = SatelliteRow['status'] | 'offline' | 'disabled'

/** The statuses a heartbeat sets; they turn into `offline` when heartbeats stop. */
export const REPORTED_STATUSES = ['active', 'degraded', 'error'] as const
export type ReportedStatus = (typeof REPORTED_STATUSES)[number]
export type SatelliteIsolation = SatelliteRow['isolation']

export interface SatelliteFilter {
  status?: SatelliteStatus
  satelliteType?: 'global' | 'team'
  teamId?: string
  /** Heartbeats older than this mean `offline`. */
  silentSince: Date
  limit: number
  offset: number
}

/** What the satellite-key check needs: one indexed lookup per request. */
export interface SatelliteKeyOwner { id: string; teamId: string | null; disabledAt: Date | null }

export type SatellitesRepository = ReturnType<typeof satellitesRepository>

export function satellitesRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const satellites = t.satellites
  // Every satellite-authenticated request runs this lookup: built once, run on the driver directly,
  // and answered again from memory while nothing it read has changed: on SQLite while nothing in
  // the database has, on PostgreSQL until a notification names the satellite or its team
  // (row-reader.ts, kept-answers.ts). Of the row, only what findByKeyDigest returns is used: the
  // database announces changes to those columns, not every heartbeat.
  const byDigest = rowReader(database, 'satellite_by_key', { satellite: satellites }, (selection) => database.db
    .select(selection).from(satellites).where(eq(satellites.keyDigest, sql.placeholder('digest'))), {
    reuse: true,
    topics: {
      families: [families.satellite, families.team],
      of: ({ satellite }) => satellite.teamId === null ? [topics.satellite(satellite.id)] : [topics.satellite(satellite.id), topics.team(satellite.teamId)],
    },
  })

  const silent = (since: Date): SQL => or(isNull(satellites.lastHeartbeatAt), lt(satellites.lastHeartbeatAt, since))!
  const enabled = isNull(satellites.disabledAt)
  const stillUp = isNull(satellites.offlineAt)
  const hasStatus = (status: SatelliteStatus, since: Date): SQL => {
    if (status === 'disabled') return isNotNull(satellites.disabledAt)
    if (status === 'offline') return and(enabled, or(isNotNull(satellites.offlineAt), and(inArray(satellites.status, [...REPORTED_STATUSES]), silent(since))))!
    if (status === 'inactive') return and(enabled, stillUp, eq(satellites.status, status))!
    return and(enabled, stillUp, eq(satellites.status, status), gte(satellites.lastHeartbeatAt, since))!
  }

  return {
    with: (tx: Db) => satellitesRepository(database, tx),

    async findByKeyDigest(digest: string): Promise<SatelliteKeyOwner | undefined> {
      const found = await byDigest({ digest })
      return found === undefined ? undefined : { id: found.satellite.id, teamId: found.satellite.teamId, disabledAt: found.satellite.disabledAt }
    },

    async find(id: string): Promise<SatelliteRow | undefined> {
      const [row] = await db.select().from(satellites).where(eq(satellites.id, id))
      return row
    },

    async findByName(name: string): Promise<SatelliteRow | undefined> {
      const [row] = await db.select().from(satellites).where(eq(satellites.name, name))
      return row
    },

    /** Inserts unless the name is taken (then null: a concurrent registration won it). */
    async insert(row: SatelliteRow): Promise<SatelliteRow | null> {
      const [inserted] = await db.insert(satellites).values(row).onConflictDoNothing({ target: satellites.name }).returning()
      return inserted ?? null
    },

    /** A re-registration: a new key (the old one dies), new details, back to `inactive`. Null if it is gone or disabled. */
    async reRegister(id: string, patch: Pick<SatelliteRow, 'keyDigest' | 'capabilities' | 'satelliteUrl' | 'publicKey' | 'systemInfo' | 'isolation' | 'runtimes' | 'registeredAt' | 'updatedAt'> & Partial<Pick<SatelliteRow, 'publicKeyChangedAt'>>): Promise<SatelliteRow | null> {
      const [row] = await db
        .update(satellites)
        .set({ ...patch, status: 'inactive' })
        .where(and(eq(satellites.id, id), enabled))
        .returning()
      return row ?? null
    },

    /** Records a heartbeat, unless the satellite was disabled (or deleted) meanwhile. */
    async heartbeat(id: string, report: {
      status: ReportedStatus; metrics: SatelliteMetrics; version: string | null | undefined
      isolation?: SatelliteIsolation | undefined; runtimes?: string[] | undefined; now: Date
    }): Promise<SatelliteRow | null> {
      const [row] = await db
        .update(satellites)
        .set({
          status: report.status, systemMetrics: report.metrics, lastHeartbeatAt: report.now, updatedAt: report.now,
          // Back from a clean stop.
          offlineAt: null,
          ...(report.version === undefined ? {} : { version: report.version }),
          ...(report.isolation === undefined ? {} : { isolation: report.isolation }),
          ...(report.runtimes === undefined ? {} : { runtimes: report.runtimes }),
        })
        .where(and(eq(satellites.id, id), enabled))
        .returning()
      return row ?? null
    },

    /**
     * Replaces the key secrets are sealed to, only if it is still `expected` (null: none yet), so
     * that of two concurrent changes one wins and the other is decided again; `changedAt` is left
     * alone when undefined (a first key is not a replacement). Null when it changed meanwhile or is gone.
     */
    async setPublicKey(id: string, expected: string | null, publicKey: string, changedAt: Date | undefined, now: Date): Promise<SatelliteRow | null> {
      const [row] = await db.update(satellites)
        .set({ publicKey, updatedAt: now, ...(changedAt === undefined ? {} : { publicKeyChangedAt: changedAt }) })
        .where(and(eq(satellites.id, id), expected === null ? isNull(satellites.publicKey) : eq(satellites.publicKey, expected)))
        .returning()
      return row ?? null
    },

    /** The satellite said it stopped cleanly: `offline` until its next heartbeat. Null when it is disabled or gone. */
    /** The teams with installations placed on the satellite: the ones whose lists show it. */
    async teamsPlacedOn(id: string): Promise<string[]> {
      const installations = t.mcpInstallations
      const rows = await db.selectDistinct({ teamId: installations.teamId }).from(installations).where(eq(installations.satelliteId, id))
      return rows.map((row) => row.teamId)
    },

    async markOffline(id: string, now: Date): Promise<SatelliteRow | null> {
      const [row] = await db.update(satellites).set({ offlineAt: now, updatedAt: now }).where(and(eq(satellites.id, id), enabled)).returning()
      return row ?? null
    },

    /** Disables (a date) or enables (null) the satellite. */
    async setDisabled(id: string, disabledAt: Date | null, now: Date): Promise<SatelliteRow | null> {
      const [row] = await db.update(satellites).set({ disabledAt, updatedAt: now }).where(eq(satellites.id, id)).returning()
      return row ?? null
    },

    async delete(id: string): Promise<SatelliteRow | null> {
      const [row] = await db.delete(satellites).where(eq(satellites.id, id)).returning()
      return row ?? null
    },

    async list(filter: SatelliteFilter): Promise<{ rows: SatelliteRow[]; total: number }> {
      const conditions: SQL[] = []
      if (filter.status !== undefined) conditions.push(hasStatus(filter.status, filter.silentSince))
      if (filter.satelliteType !== undefined) conditions.push(eq(satellites.satelliteType, filter.satelliteType))
      if (filter.teamId !== undefined) conditions.push(eq(satellites.teamId, filter.teamId))
      const where = conditions.length > 0 ? and(...conditions) : undefined
      const [rows, [total]] = await Promise.all([
        db.select().from(satellites).where(where).orderBy(desc(satellites.createdAt), desc(satellites.id)).limit(filter.limit).offset(filter.offset),
        db.select({ n: count() }).from(satellites).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },
  }
}

/** The status a reader sees at `silentSince` (heartbeats before it mean `offline`, as does a clean stop until the next one). */
export function satelliteStatus(row: SatelliteRow, silentSince: Date): SatelliteStatus {
  if (row.disabledAt !== null) return 'disabled'
  if (row.offlineAt !== null) return 'offline'
  const reporting = (REPORTED_STATUSES as readonly string[]).includes(row.status)
  if (reporting && (row.lastHeartbeatAt === null || row.lastHeartbeatAt.getTime() < silentSince.getTime())) return 'offline'
  return row.status
}
