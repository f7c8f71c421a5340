import { index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'
import { users } from './accounts.js'

/**
 * The items of every plugin collection, in one table. The key starts with the plugin id and the
 * collection name, so every read and write names both and one plugin cannot reach another's
 * items, even with a guessed id; the same key orders a collection's page by id (UUIDv7, so by
 * creation time).
 * `owner_id` is set only in collections declared `owned`: the user who created the item. Their
 * items go with the user (ON DELETE CASCADE), and a caller's own page is read through
 * `plugin_items_owner_idx` in the same id order.
 */
export const pluginItems = pgTable('plugin_items', {
  pluginId: text('plugin_id').notNull(),
  collection: text('collection').notNull(),
  id: text('id').notNull(),
  ownerId: text('owner_id').references(() => users.id, { onDelete: 'cascade' }),
  /** The item's document, validated by the collection's schema before it is written. */
  document: jsonb('document').$type<Record<string, unknown>>().notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  primaryKey({ columns: [t.pluginId, t.collection, t.id] }),
  index('plugin_items_owner_idx').on(t.pluginId, t.collection, t.ownerId, t.id),
])
