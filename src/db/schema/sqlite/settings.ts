import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Global settings: definitions live in code (modules/settings/definitions.ts); rows hold values. */
export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  groupId: text('group_id').notNull(),
  type: text('type', { enum: ['string', 'number', 'boolean'] }).notNull(),
  /** JSON text of the value, or the sealed ciphertext when `encrypted`. */
  value: text('value').notNull(),
  encrypted: integer('encrypted', { mode: 'boolean' }).notNull().default(false),
  /** null while the value is the seeded default; set once an operator (or env seeding) chose it. */
  setAt: integer('set_at', { mode: 'timestamp_ms' }),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
})

/** One row (id = 1): bumped with every settings change so other instances drop their cache. */
export const settingsRevision = sqliteTable('settings_revision', {
  id: integer('id').primaryKey(),
  revision: integer('revision').notNull(),
})
