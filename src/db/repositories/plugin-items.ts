import { and, asc, count, eq, type SQL } from 'drizzle-orm'
import type { Database, Db } from '../types.js'

export interface PluginItemRow {
  id: string
  /** The user who created the item, in a collection declared `owned`; null elsewhere. */
  ownerId: string | null
  document: Record<string, unknown>
  createdAt: Date
  updatedAt: Date
}

/** Which collection of which plugin: every query is bound to one. */
export interface CollectionKey {
  pluginId: string
  collection: string
}

/** Narrows a statement to one owner's items; `undefined` reaches every item of the collection. */
export interface OwnerFilter {
  ownerId?: string
}

export type PluginItemsRepository = ReturnType<typeof pluginItemsRepository>

/**
 * The plugin collections' store. Every statement filters by plugin id and collection name (the
 * first two columns of the primary key), so an item is reachable only through its own
 * collection; with an owner filter, only through its owner too (an item of someone else is then
 * simply not found). Documents are JSON text on SQLite and `jsonb` on PostgreSQL; the column's
 * mode converts them both ways.
 */
export function pluginItemsRepository(database: Database, db: Db = database.db) {
  const items = database.t.pluginItems
  const columns = { id: items.id, ownerId: items.ownerId, document: items.document, createdAt: items.createdAt, updatedAt: items.updatedAt }
  const inCollection = ({ pluginId, collection }: CollectionKey, { ownerId }: OwnerFilter = {}): SQL =>
    and(eq(items.pluginId, pluginId), eq(items.collection, collection), ownerId === undefined ? undefined : eq(items.ownerId, ownerId))!
  const itemIn = (key: CollectionKey, id: string, owner?: OwnerFilter) => and(inCollection(key, owner), eq(items.id, id))

  return {
    /** The same statements inside an open transaction. */
    with: (tx: Db) => pluginItemsRepository(database, tx),

    /** One page in id order (UUIDv7: creation order), and how many items the filter reaches. */
    async page(key: CollectionKey, limit: number, offset: number, owner?: OwnerFilter): Promise<{ rows: PluginItemRow[]; total: number }> {
      const [rows, [counted]] = await Promise.all([
        db.select(columns).from(items).where(inCollection(key, owner)).orderBy(asc(items.id)).limit(limit).offset(offset),
        db.select({ n: count() }).from(items).where(inCollection(key, owner)),
      ])
      return { rows, total: counted?.n ?? 0 }
    },

    async find(key: CollectionKey, id: string, owner?: OwnerFilter): Promise<PluginItemRow | null> {
      const [row] = await db.select(columns).from(items).where(itemIn(key, id, owner))
      return row ?? null
    },

    async insert(key: CollectionKey, row: PluginItemRow): Promise<PluginItemRow> {
      const [inserted] = await db.insert(items).values({ ...key, ...row }).returning(columns)
      return inserted!
    },

    /** The replaced item, or null when there is none with this id (a concurrent delete included). */
    async replace(key: CollectionKey, id: string, document: Record<string, unknown>, at: Date, owner?: OwnerFilter): Promise<PluginItemRow | null> {
      const [row] = await db.update(items).set({ document, updatedAt: at }).where(itemIn(key, id, owner)).returning(columns)
      return row ?? null
    },

    /** The deleted item, or null when there was none; of two concurrent deletes, one gets it. */
    async remove(key: CollectionKey, id: string, owner?: OwnerFilter): Promise<PluginItemRow | null> {
      const [deleted] = await db.delete(items).where(itemIn(key, id, owner)).returning(columns)
      return deleted ?? null
    },
  }
}
