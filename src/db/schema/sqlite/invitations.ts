import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { teams, users } from './accounts.js'

/**
 * Invitations to join a team by email. The token is random and stored only as its digest (unique,
 * so checking one is a single indexed lookup). An invitation is pending until it is accepted,
 * revoked or past `expires_at`; pending ones hold a seat of the team's member limit. It ends with
 * its team, and with the account of whoever sent it (their word is what it carries).
 */
export const teamInvitations = sqliteTable('team_invitations', {
  id: text('id').primaryKey(),
  teamId: text('team_id').notNull().references(() => teams.id, { onDelete: 'cascade' }),
  /** Stored lowercased. */
  email: text('email').notNull(),
  role: text('role', { enum: ['team_admin', 'team_user'] }).notNull(),
  /** HMAC-SHA256 of the token; the token itself is never stored. */
  digest: text('digest').notNull(),
  invitedBy: text('invited_by').notNull().references(() => users.id, { onDelete: 'cascade' }),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
  acceptedAt: integer('accepted_at', { mode: 'timestamp_ms' }),
  /** Who accepted it; null once that account is deleted. */
  acceptedBy: text('accepted_by').references(() => users.id, { onDelete: 'set null' }),
  revokedAt: integer('revoked_at', { mode: 'timestamp_ms' }),
}, (t) => [
  uniqueIndex('team_invitations_digest_unique').on(t.digest),
  index('team_invitations_team_idx').on(t.teamId, t.createdAt),
  index('team_invitations_team_email_idx').on(t.teamId, t.email),
  index('team_invitations_expires_idx').on(t.expiresAt),
  index('team_invitations_invited_by_idx').on(t.invitedBy),
])
