import { boolean, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/** Global settings: definitions live in code (modules/settings/definitions.ts); rows hold values. */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  groupId: text('group_id').notNull(),
  type: text('type', { enum: ['string', 'number', 'boolean'] }).notNull(),
  /** JSON text of the value, or the sealed ciphertext when `encrypted`. */
  value: text('value').notNull(),
  encrypted: boolean('encrypted').notNull().default(false),
  /** null while the value is the seeded default; set once an operator (or env seeding) chose it. */
  setAt: timestamp('set_at', { withTimezone: true, mode: 'date' }),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/** One row (id = 1): bumped with every settings change so other instances drop their cache. */
export const settingsRevision = pgTable('settings_revision', {
  id: integer('id').primaryKey(),
  revision: integer('revision').notNull(),
})
