import { and, asc, count, eq } from 'drizzle-orm'
import type { Database } from '../types.js'

export interface PluginItemRow {
  id: string
  document: Record<string, unknown>
  createdAt: Date
  updatedAt: Date
}

/** Which collection of which plugin: every query is bound to one. */
export interface CollectionKey {
  pluginId: string
  collection: string
}

export type PluginItemsRepository = ReturnType<typeof pluginItemsRepository>

/**
 * The plugin collections' store. Every statement filters by plugin id and collection name (the
 * first two columns of the primary key), so an item is reachable only through its own
 * collection. Documents are JSON text on SQLite and `jsonb` on PostgreSQL; the column's mode
 * converts them both ways.
 */
export function pluginItemsRepository({ db, t }: Database) {
  const items = t.pluginItems
  const columns = { id: items.id, document: items.document, createdAt: items.createdAt, updatedAt: items.updatedAt }
  const inCollection = ({ pluginId, collection }: CollectionKey) => and(eq(items.pluginId, pluginId), eq(items.collection, collection))
  const itemIn = (key: CollectionKey, id: string) => and(inCollection(key), eq(items.id, id))

  return {
    /** One page in id order (UUIDv7: creation order), and the collection's size. */
    async page(key: CollectionKey, limit: number, offset: number): Promise<{ rows: PluginItemRow[]; total: number }> {
      const [rows, [counted]] = await Promise.all([
        db.select(columns).from(items).where(inCollection(key)).orderBy(asc(items.id)).limit(limit).offset(offset),
        db.select({ n: count() }).from(items).where(inCollection(key)),
      ])
      return { rows, total: counted?.n ?? 0 }
    },

    async find(key: CollectionKey, id: string): Promise<PluginItemRow | null> {
      const [row] = await db.select(columns).from(items).where(itemIn(key, id))
      return row ?? null
    },

    async insert(key: CollectionKey, row: PluginItemRow): Promise<PluginItemRow> {
      const [inserted] = await db.insert(items).values({ ...key, ...row }).returning(columns)
      return inserted!
    },

    /** The replaced item, or null when there is none with this id (a concurrent delete included). */
    async replace(key: CollectionKey, id: string, document: Record<string, unknown>, at: Date): Promise<PluginItemRow | null> {
      const [row] = await db.update(items).set({ document, updatedAt: at }).where(itemIn(key, id)).returning(columns)
      return row ?? null
    },

    /** Whether an item was deleted; of two concurrent deletes, one sees true. */
    async remove(key: CollectionKey, id: string): Promise<boolean> {
      const deleted = await db.delete(items).where(itemIn(key, id)).returning({ id: items.id })
      return deleted.length > 0
    },
  }
}
