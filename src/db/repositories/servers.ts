import { and, asc, count, eq, inArray, or, sql } from 'drizzle-orm'
import { violatedUniqueIndex } from '../errors.js'
import { rowReader } from '../readers/row-reader.js'
import type { Database, Db } from '../types.js'
import { serverColumns, serverConditions, serverOrder, type CatalogueViewer, type ServerFilter, type ServerRow, type ServerSort } from './server-filters.js'

export type NewServer = Omit<ServerRow, 'latestVersion'>
export type ServerPatch = Partial<Omit<ServerRow, 'id' | 'visibility' | 'ownerTeamId' | 'createdBy' | 'createdAt' | 'latestVersion'>>

export interface Page<T> {
  rows: T[]
  total: number
}

export type ServersRepository = ReturnType<typeof serversRepository>

export function serversRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const s = t.mcpServers
  const columns = serverColumns(database)

  async function replaceTags(serverId: string, tags: string[]): Promise<void> {
    await db.delete(t.mcpServerTags).where(eq(t.mcpServerTags.serverId, serverId))
    if (tags.length > 0) await db.insert(t.mcpServerTags).values(tags.map((tag) => ({ serverId, tag })))
  }

  return {
    with: (tx: Db) => serversRepository(database, tx),

    async list(viewer: CatalogueViewer, filter: ServerFilter, sort: ServerSort, limit: number, offset: number): Promise<Page<ServerRow>> {
      const where = and(...serverConditions(database, viewer, filter))
      const counted = (part?: 'global' | 'team') => db.select({ n: count() }).from(s).where(and(...serverConditions(database, viewer, filter, part)))
      const [rows, totals] = await Promise.all([
        db.select(columns).from(s).where(where).orderBy(...serverOrder(database, sort)).limit(limit).offset(offset),
        Promise.all(viewer.isGlobalAdmin ? [counted()] : [counted('global'), counted('team')]),
      ])
      return { rows, total: totals.reduce((sum, [row]) => sum + (row?.n ?? 0), 0) }
    },

    /** By id, else by slug; only a server the viewer can see. */
    async find(idOrSlug: string, viewer: CatalogueViewer): Promise<ServerRow | undefined> {
      const [row] = await db
        .select(columns)
        .from(s)
        .where(and(or(eq(s.id, idOrSlug), eq(s.slug, idOrSlug)), ...serverConditions(database, viewer)))
        .orderBy(sql`case when ${s.id} = ${idOrSlug} then 0 else 1 end`)
        .limit(1)
      return row
    },

    /**
     * The server imported under this MCP Registry name, whatever its visibility (registry names are
     * unique). Run in the importing catalogue transaction: it decides whether the document creates a server.
     */
    async findByRegistryName(registryName: string): Promise<ServerRow | undefined> {
      const [row] = await db.select(columns).from(s).where(eq(s.registryName, registryName)).limit(1)
      return row
    },

    /** Null when the slug is taken (the unique index decides, also between concurrent requests). */
    async insert(server: NewServer): Promise<ServerRow | null> {
      const [row] = await db.insert(s).values({ ...server, latestVersion: null }).onConflictDoNothing({ target: s.slug }).returning(columns)
      if (row === undefined) return null
      await replaceTags(row.id, row.tags)
      return row
    },

    /** 'slug_taken' when the new slug belongs to another server; null when there is no such server. */
    async update(id: string, patch: ServerPatch): Promise<ServerRow | null | 'slug_taken'> {
      let row: ServerRow | undefined
      try {
        ;[row] = await db.update(s).set(patch).where(eq(s.id, id)).returning(columns)
      } catch (error) {
        if (violatedUniqueIndex(error)?.includes('slug') === true) return 'slug_taken'
        throw error
      }
      if (row === undefined) return null
      if (patch.tags !== undefined) await replaceTags(id, patch.tags)
      return row
    },

    async delete(id: string): Promise<boolean> {
      const rows = await db.delete(s).where(eq(s.id, id)).returning({ id: s.id })
      return rows.length === 1
    },

    async setLatestVersion(id: string, version: string | null, now: Date): Promise<void> {
      await db.update(s).set({ latestVersion: version, updatedAt: now }).where(and(eq(s.id, id), sql`${s.latestVersion} is distinct from ${version}`))
    },
  }
}
