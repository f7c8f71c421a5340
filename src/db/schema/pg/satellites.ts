import { sql } from 'drizzle-orm'
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { SatelliteMetrics, SatelliteSystemInfo } from '../../../formats/satellite-reports.js'
import { teams } from './accounts.js'

/**
 * One row per registration token, keyed by its JWT `jti`. The token itself is never stored: it is
 * a signed JWT, and this row is what makes it single-use and revocable.
 */
export const satelliteRegistrationTokens = pgTable('satellite_registration_tokens', {
  id: text('id').primaryKey(),
  scope: text('scope', { enum: ['global', 'team'] }).notNull(),
  teamId: text('team_id').references(() => teams.id, { onDelete: 'cascade' }),
  /** No foreign key: the record outlives a deleted admin, like the audit trail. */
  createdBy: text('created_by').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
  usedBySatelliteId: text('used_by_satellite_id'),
  revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  index('satellite_registration_tokens_created_idx').on(t.createdAt),
  index('satellite_registration_tokens_team_idx').on(t.teamId, t.createdAt),
  index('satellite_registration_tokens_expires_idx').on(t.expiresAt),
])

export const satellites = pgTable('satellites', {
  id: text('id').primaryKey(),
  /** Unique across scopes and teams: a name is how a satellite re-registers. */
  name: text('name').notNull(),
  satelliteType: text('satellite_type', { enum: ['global', 'team'] }).notNull(),
  teamId: text('team_id').references(() => teams.id, { onDelete: 'cascade' }),
  /**
   * `inactive` until the first heartbeat, then what the last one reported. Readers see `offline`
   * when that heartbeat is old, and `disabled` while `disabled_at` is set.
   */
  status: text('status', { enum: ['inactive', 'active', 'degraded', 'error'] }).notNull(),
  /** Set while an admin has the satellite disabled: its key is refused. */
  disabledAt: timestamp('disabled_at', { withTimezone: true, mode: 'date' }),
  /** HMAC-SHA256 of the API key's secret; the key itself is never stored. */
  keyDigest: text('key_digest').notNull(),
  capabilities: jsonb('capabilities').$type<string[]>().notNull(),
  satelliteUrl: text('satellite_url'),
  /** base64url of the raw X25519 public key that secrets in its documents are sealed to; null: it gets no instance with secrets. */
  publicKey: text('public_key'),
  /** When the public key was last replaced (not when first set); null: never replaced. */
  publicKeyChangedAt: timestamp('public_key_changed_at', { withTimezone: true, mode: 'date' }),
  /** How the satellite keeps its instances apart, as it reports: `none`, `process-sandbox` or `container`. */
  isolation: text('isolation', { enum: ['none', 'process-sandbox', 'container'] }).notNull().default('none'),
  /** The runtimes it reports it can run (`node`, `npx`, `uvx`, `docker`, …). */
  runtimes: jsonb('runtimes').$type<string[]>().notNull().default(sql`'[]'::jsonb`),
  /** Set when the satellite said it stopped cleanly; cleared by its next heartbeat. */
  offlineAt: timestamp('offline_at', { withTimezone: true, mode: 'date' }),
  /**
   * Moves in every transaction that changes what this satellite's desired-state document holds
   * (with a change notification): a document kept in memory is current while the stamp is.
   */
  desiredStamp: integer('desired_stamp').notNull().default(0),
  systemInfo: jsonb('system_info').$type<SatelliteSystemInfo>(),
  systemMetrics: jsonb('system_metrics').$type<SatelliteMetrics>(),
  version: text('version'),
  lastHeartbeatAt: timestamp('last_heartbeat_at', { withTimezone: true, mode: 'date' }),
  registeredAt: timestamp('registered_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
}, (t) => [
  uniqueIndex('satellites_name_unique').on(t.name),
  uniqueIndex('satellites_key_digest_unique').on(t.keyDigest),
  index('satellites_team_idx').on(t.teamId, t.createdAt),
  index('satellites_created_idx').on(t.createdAt),
])
