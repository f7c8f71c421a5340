import { and, asc, count, eq, sql } from 'drizzle-orm'
import type { Database, Db } from '../types.js'
import { binary, serverConditions, type CatalogueViewer } from './server-filters.js'

export type CategoryRow = Database['t']['mcpCategories']['$inferSelect']
export type CategoryWithCount = CategoryRow & { serverCount: number }
export type CategoryPatch = Partial<Pick<CategoryRow, 'name' | 'nameKey' | 'description' | 'icon' | 'sortOrder'>>

export type CategoriesRepository = ReturnType<typeof categoriesRepository>

export function categoriesRepository(database: Database, executor: Db = database.db) {
  const { t } = database
  const db = executor
  const c = t.mcpCategories

  /** Servers of the category the viewer can see, counted in the same query. */
  const serverCount = (viewer: CatalogueViewer) =>
    db.select({ n: count() }).from(t.mcpServers).where(and(eq(t.mcpServers.categoryId, c.id), ...serverConditions(database, viewer)))

  async function withCount(viewer: CatalogueViewer, where?: ReturnType<typeof eq>): Promise<CategoryWithCount[]> {
    const rows = await db
      .select({ category: c, serverCount: sql<number>`(${serverCount(viewer)})`.mapWith(Number) })
      .from(c)
      .where(where)
      .orderBy(asc(c.sortOrder), asc(binary(database, sql`${c.name}`)), asc(c.id))
    return rows.map((row) => ({ ...row.category, serverCount: row.serverCount }))
  }

  return {
    with: (tx: Db) => categoriesRepository(database, tx),

    list: (viewer: CatalogueViewer) => withCount(viewer),

    async find(id: string, viewer: CatalogueViewer): Promise<CategoryWithCount | undefined> {
      const [row] = await withCount(viewer, eq(c.id, id))
      return row
    },

    /** Whether it exists. (Catalogue writes are serialized by the revision row, so it cannot vanish before the caller's write.) */
    async exists(id: string): Promise<boolean> {
      const rows = await db.select({ id: c.id }).from(c).where(eq(c.id, id))
      return rows.length === 1
    },

    /** Null when the name is taken (the case-insensitive unique index decides). */
    async insert(row: CategoryRow): Promise<CategoryRow | null> {
      const [inserted] = await db.insert(c).values(row).onConflictDoNothing().returning()
      return inserted ?? null
    },

    async update(id: string, patch: CategoryPatch, now: Date): Promise<boolean> {
      const rows = await db.update(c).set({ ...patch, updatedAt: now }).where(eq(c.id, id)).returning({ id: c.id })
      return rows.length === 1
    },

    /** Leaves its servers uncategorized (their updated_at moves); the number of those servers. */
    async delete(id: string, now: Date): Promise<number | null> {
      const moved = await db.update(t.mcpServers).set({ categoryId: null, updatedAt: now }).where(eq(t.mcpServers.categoryId, id)).returning({ id: t.mcpServers.id })
      const deleted = await db.delete(c).where(eq(c.id, id)).returning({ id: c.id })
      return deleted.length === 1 ? moved.length : null
    },
  }
}
