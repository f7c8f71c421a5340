import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { teams, users } from './accounts.js'

/**
 * Personal access tokens: a user's long-lived bearer credentials for scripts and CI. The token is
 * shown once; only its HMAC digest is stored, under a unique index, so a check is one lookup.
 * Deleting a row is the revocation (the audit trail keeps what it was). A token bound to a team
 * goes with that team; every token goes with its user.
 */
export const personalTokens = sqliteTable('personal_tokens', {
  id: text('id').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  /** The one team the token reaches; null: every team of its user. */
  teamId: text('team_id').references(() => teams.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  /** Granted scopes, space-separated like an OAuth token's `scope`. */
  scope: text('scope').notNull(),
  digest: text('digest').notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  /** Moved at most once a minute. */
  lastUsedAt: integer('last_used_at', { mode: 'timestamp_ms' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
}, (t) => [
  uniqueIndex('personal_tokens_digest_unique').on(t.digest),
  index('personal_tokens_user_idx').on(t.userId, t.createdAt),
  index('personal_tokens_team_idx').on(t.teamId),
  index('personal_tokens_expires_idx').on(t.expiresAt),
  index('personal_tokens_created_idx').on(t.createdAt),
])
