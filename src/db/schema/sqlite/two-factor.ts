import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { users } from './accounts.js'

/**
 * Two-factor authentication (TOTP, RFC 6238). Whether it is on is `users.two_factor_enabled_at`,
 * read with the user row by every credential check; these tables hold what only the two-factor
 * flows read.
 */

/**
 * A user's TOTP secret: pending (set up, not confirmed) while `users.two_factor_enabled_at` is
 * null. Sealed with AES-256-GCM, bound to the user id: a row copied to another user does not open.
 */
export const twoFactorSecrets = sqliteTable('two_factor_secrets', {
  userId: text('user_id').primaryKey().references(() => users.id, { onDelete: 'cascade' }),
  secretSealed: text('secret_sealed').notNull(),
  /** The last time step a code was accepted for: only a later one is accepted (no replay within the window). */
  lastUsedStep: integer('last_used_step'),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
})

/** Single-use recovery codes, stored only as HMAC digests; a used code is deleted. */
export const recoveryCodes = sqliteTable('recovery_codes', {
  id: text('id').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  digest: text('digest').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [uniqueIndex('recovery_codes_digest_unique').on(t.digest), index('recovery_codes_user_idx').on(t.userId)])

/**
 * Sign-ins waiting for their second step: the password was right, the code is still due. Keyed
 * by the digest of the challenge cookie's random value, so the second step may land on any
 * instance; single use, short-lived, with a count of wrong codes.
 */
export const twoFactorChallenges = sqliteTable('two_factor_challenges', {
  id: text('id').primaryKey(),
  digest: text('digest').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  attempts: integer('attempts').notNull().default(0),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [uniqueIndex('two_factor_challenges_digest_unique').on(t.digest), index('two_factor_challenges_expires_idx').on(t.expiresAt)])
