import { and, asc, count, desc, eq, ne, sql } from 'drizzle-orm'
import type { Database, Db } from '../types.js'
import { binary } from './server-filters.js'
import type { Page } from './servers.js'

export type VersionRow = Database['t']['mcpServerVersions']['$inferSelect']
export type VersionPatch = Partial<Pick<VersionRow, 'status' | 'changelog' | 'releaseDate'>>
/** What an import refreshes on a version it has already: the stored document and what follows from it. */
export type ImportedVersionPatch = Pick<VersionRow, 'serverJson' | 'packages' | 'remotes' | 'status'>

export type ServerVersionsRepository = ReturnType<typeof serverVersionsRepository>

export function serverVersionsRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const v = t.mcpServerVersions
  const newestFirst = [desc(binary(database, sql`${v.precedence}`)), desc(v.id)]

  return {
    with: (tx: Db) => serverVersionsRepository(database, tx),

    /** Newest first by semver precedence. */
    async list(serverId: string, limit: number, offset: number): Promise<Page<VersionRow>> {
      const where = eq(v.serverId, serverId)
      const [rows, [total]] = await Promise.all([
        db.select().from(v).where(where).orderBy(...newestFirst).limit(limit).offset(offset),
        db.select({ n: count() }).from(v).where(where),
      ])
      return { rows, total: total?.n ?? 0 }
    },

    async find(serverId: string, versionId: string): Promise<VersionRow | undefined> {
      const [row] = await db.select().from(v).where(and(eq(v.serverId, serverId), eq(v.id, versionId)))
      return row
    },

    /** The version spelled exactly so (build metadata included). */
    async findByVersion(serverId: string, version: string): Promise<VersionRow | undefined> {
      const [row] = await db.select().from(v).where(and(eq(v.serverId, serverId), eq(v.version, version)))
      return row
    },

    /** The version marked latest, if any is (see markLatest). */
    async latest(serverId: string): Promise<VersionRow | undefined> {
      const [row] = await db.select().from(v).where(and(eq(v.serverId, serverId), eq(v.isLatest, true)))
      return row
    },

    async findById(versionId: string): Promise<VersionRow | undefined> {
      const [row] = await db.select().from(v).where(eq(v.id, versionId))
      return row
    },

    /** The version of equal semver precedence (build metadata ignored), as the unique index compares them. */
    async findByPrecedence(serverId: string, precedence: string): Promise<VersionRow | undefined> {
      const [row] = await db.select().from(v).where(and(eq(v.serverId, serverId), eq(v.precedence, precedence)))
      return row
    },

    /** The version marked latest, else the newest by precedence, else undefined (a server without versions). */
    async latestOrNewest(serverId: string): Promise<VersionRow | undefined> {
      const [row] = await db.select().from(v).where(eq(v.serverId, serverId)).orderBy(desc(v.isLatest), ...newestFirst).limit(1)
      return row
    },

    /** Null when the server has this version already (equal precedence: build metadata does not count). */
    async insert(row: VersionRow): Promise<VersionRow | null> {
      const [inserted] = await db.insert(v).values(row).onConflictDoNothing().returning()
      return inserted ?? null
    },

    async update(versionId: string, patch: VersionPatch, now: Date): Promise<void> {
      await db.update(v).set({ ...patch, updatedAt: now }).where(eq(v.id, versionId))
    },

    async refreshImported(versionId: string, patch: ImportedVersionPatch, now: Date): Promise<void> {
      await db.update(v).set({ ...patch, updatedAt: now }).where(eq(v.id, versionId))
    },

    /**
     * Marks the latest version: the highest active release, or with none the highest active
     * pre-release, or nothing. Run in the catalogue transaction that changed a version (catalogue
     * writers run one at a time), so that concurrent changes cannot leave two marks or a stale one.
     * Returns the latest version string, or null.
     */
    async markLatest(serverId: string, now: Date): Promise<string | null> {
      const [winner] = await db
        .select({ id: v.id, version: v.version })
        .from(v)
        .where(and(eq(v.serverId, serverId), eq(v.status, 'active')))
        .orderBy(asc(v.prerelease), ...newestFirst)
        .limit(1)
      const stale = winner === undefined ? and(eq(v.serverId, serverId), eq(v.isLatest, true)) : and(eq(v.serverId, serverId), eq(v.isLatest, true), ne(v.id, winner.id))
      await db.update(v).set({ isLatest: false, updatedAt: now }).where(stale)
      if (winner !== undefined) await db.update(v).set({ isLatest: true, updatedAt: now }).where(and(eq(v.id, winner.id), eq(v.isLatest, false)))
      return winner?.version ?? null
    },
  }
}
